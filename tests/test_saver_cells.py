"""The pytest plugin's adapter, in-process and quick: which savers it accepts as factories,
which settings it refuses, and what a test does with each finding of the matrix."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test
from langgraph.checkpoint.memory import InMemorySaver
from rctools.saver_cells import (
    Action,
    CellError,
    CellOutcome,
    Saver,
    Settings,
    _lifespan,
    action,
    as_factory,
    check_settings,
)


def _generator() -> Iterator[InMemorySaver]:
    yield InMemorySaver()


async def _async_generator() -> AsyncIterator[InMemorySaver]:
    yield InMemorySaver()


@checkpointer_test(name="Registered")
async def _registered() -> AsyncIterator[InMemorySaver]:
    yield InMemorySaver()


def test_a_generator_function_becomes_a_context_manager_factory() -> None:
    given = as_factory(_generator)
    assert given.name is None and given.lifespan is None
    with given.factory() as saver:
        assert isinstance(saver, InMemorySaver)


def test_an_async_generator_and_a_registered_checkpointer_become_async_factories() -> None:
    async def open_both() -> list[Any]:
        opened = []
        for saver in (_async_generator, _registered):
            async with as_factory(saver).factory() as made:
                opened.append(made)
        return opened

    assert all(isinstance(s, InMemorySaver) for s in asyncio.run(open_both()))
    assert as_factory(_registered).name == "Registered"


def test_a_plain_factory_is_kept_and_a_non_callable_refused() -> None:
    assert as_factory(InMemorySaver) == Saver(InMemorySaver)
    with pytest.raises(CellError, match="neither a factory"):
        as_factory(42)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scenarios": ("chain", "nope")}, "unknown scenario"),
        ({"scenarios": ()}, "no scenario"),
        ({"durabilities": ("sync", "later")}, "durability takes"),
        ({"durabilities": ()}, "durability takes"),
        ({"kill_stride": 0}, "kill_stride must be 1 or more"),
    ],
)
def test_settings_that_make_no_sense_are_refused(change: dict[str, Any], message: str) -> None:
    settings = Settings(InMemorySaver, "memory", ("chain",), ("sync",))
    check_settings(settings)
    fields = {**settings.__dict__, **change}
    with pytest.raises(CellError, match=message):
        check_settings(Settings(**fields))


@dataclass
class _Cell:
    finding: str


@pytest.mark.parametrize(
    ("finding", "lenient", "strict"),
    [
        ("conforms", Action.PASS, Action.PASS),
        ("saver", Action.FAIL, Action.FAIL),
        ("saver-error", Action.FAIL, Action.FAIL),
        ("unattributed", Action.FAIL, Action.FAIL),
        ("failed", Action.FAIL, Action.FAIL),
        ("runtime", Action.REPORT, Action.FAIL),
        # runs killed at different logical instants decide nothing: skipped, never failed
        ("inconclusive", Action.UNDECIDED, Action.UNDECIDED),
    ],
)
def test_only_a_runtime_finding_is_reported_rather_than_failed(
    finding: str, lenient: Action, strict: Action
) -> None:
    outcome = CellOutcome(_Cell(finding), 0.0)
    assert action(outcome) is lenient
    assert action(outcome, strict=True) is strict


def test_an_unknown_finding_fails() -> None:
    """A finding the matrix may add later must not pass silently."""
    assert action(CellOutcome(_Cell("something-new"), 0.0)) is Action.FAIL


def test_a_registered_lifespan_is_what_runs_around_the_matrix() -> None:
    """A registration's lifespan is taken, and `_lifespan` (what `run_cells` wraps the matrix
    in) runs it to its yield before and to its end after."""
    events: list[str] = []

    async def lifespan() -> AsyncIterator[None]:
        events.append("start")
        yield
        events.append("end")

    @checkpointer_test(name="WithLifespan", lifespan=lifespan)
    async def registered() -> AsyncIterator[InMemorySaver]:
        yield InMemorySaver()

    given = as_factory(registered)
    assert given.lifespan is lifespan
    with _lifespan(given.lifespan):
        assert events == ["start"]
    assert events == ["start", "end"]


def test_a_lifespan_that_fails_to_start_is_a_cell_error() -> None:
    async def broken() -> AsyncIterator[None]:
        raise OSError("no database server")
        yield

    with pytest.raises(CellError, match="lifespan failed to start: OSError"), _lifespan(broken):
        pass
