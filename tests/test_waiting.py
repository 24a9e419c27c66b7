"""`resumecheck.waiting`: the one polling helper every recorder and server starter waits with."""

from __future__ import annotations

import asyncio

import pytest
from resumecheck.waiting import apoll, poll


def test_poll_returns_the_first_truthy_result_of_the_check() -> None:
    answers = iter([None, 0, "", "ready", "later"])
    assert poll(lambda: next(answers), timeout=60, every=0.001) == "ready"
    assert next(answers) == "later"  # nothing was asked after the answer


def test_poll_checks_once_even_with_no_time_and_gives_none_when_never_met() -> None:
    asked = []
    assert poll(lambda: asked.append(1), timeout=0, every=0.001) is None
    assert asked == [1]


def test_an_error_in_the_check_is_not_retried() -> None:
    asked = []

    def check() -> bool:
        asked.append(1)
        raise ValueError("the server exited")

    with pytest.raises(ValueError, match="the server exited"):
        poll(check, timeout=60, every=0.001)
    assert asked == [1]


def test_apoll_waits_on_the_event_loop() -> None:
    answers = iter([False, False, ("parked", "c1")])

    async def check() -> tuple[str, str] | bool:
        await asyncio.sleep(0)
        return next(answers)

    assert asyncio.run(apoll(check, timeout=60, every=0.001)) == ("parked", "c1")

    async def never() -> None:
        return None

    assert asyncio.run(apoll(never, timeout=0, every=0.001)) is None
