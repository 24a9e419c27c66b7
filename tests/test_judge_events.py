"""`judge_events`: a history given as data is judged as its file would be, in-process."""

from __future__ import annotations

import json

from conftest import CORE, manifests
from resumecheck.judge import judge_events
from resumecheck.verdict import Status


def _history(name: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    lines = (CORE / name).read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_a_violating_history_gets_its_manifests_verdict() -> None:
    want = manifests(CORE)["traces/core/co-answer-of-other-task.jsonl"]
    header, events = _history("co-answer-of-other-task.jsonl")
    verdict = judge_events(header, events)
    assert verdict.status is Status.VIOLATES
    assert verdict.event_index == want["event"]
    assert verdict.properties == want["properties"]


def test_the_prefix_before_the_bad_event_conforms() -> None:
    """The same history cut before its bad event: a short history, stated in a test."""
    want = manifests(CORE)["traces/core/co-answer-of-other-task.jsonl"]
    header, events = _history("co-answer-of-other-task.jsonl")
    verdict = judge_events(header, events[: want["event"] - 1])
    assert verdict.status is Status.CONFORMS
    assert verdict.matched == want["event"] - 1


def test_a_history_that_is_not_a_trace_is_invalid_not_an_exception() -> None:
    header, events = _history("co-answer-of-other-task.jsonl")
    verdict = judge_events(header, [*events[:3], {"ev": "no-such-event"}])
    assert verdict.status is Status.INVALID
    assert "unknown event" in (verdict.reason or "")
