"""A deleted thread (`delete`, LangGraph's `delete_thread`): the hand-written traces of
traces/core get their manifest's verdicts, and each depends on the delete -- the same history
without it is judged otherwise, so the move is what earns the verdict."""

from __future__ import annotations

import json

import pytest
from conftest import CORE, manifests
from resumecheck.judge import judge_events
from resumecheck.verdict import Status

TRACES = sorted(p.name for p in CORE.glob("*delete*.jsonl"))


def _history(name: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    lines = (CORE / name).read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def _without_delete(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [e for e in events if e["ev"] != "delete"]


def test_there_are_delete_traces_of_every_kind() -> None:
    """Conforming ones, one that violates CV and one that no move matches."""
    statuses = {manifests(CORE)[f"traces/core/{name}"]["status"] for name in TRACES}
    assert len(TRACES) >= 5
    assert statuses == {"conforms", "violates"}


@pytest.mark.parametrize("name", TRACES)
def test_a_delete_trace_gets_its_manifests_verdict(name: str) -> None:
    want = manifests(CORE)[f"traces/core/{name}"]
    header, events = _history(name)
    verdict = judge_events(header, events)
    assert verdict.status.value == want["status"]
    if want["status"] == "violates":
        assert verdict.event_index == want["event"]
        assert verdict.properties == want["properties"]


def test_without_the_delete_the_fresh_run_loading_nothing_is_cv() -> None:
    """Before the delete move, a correct saver's "finish, delete, start again" was a false CV."""
    header, events = _history("ok-delete-then-start-again.jsonl")
    verdict = judge_events(header, _without_delete(events))
    assert verdict.status is Status.VIOLATES
    assert verdict.properties == ["CV"]


def test_without_the_delete_the_fresh_runs_fire_is_a_second_one() -> None:
    """The fresh run's fire conforms only because the delete began a new execution."""
    header, events = _history("ok-delete-then-the-same-effect-fires-again.jsonl")
    # past the fresh load's CV (the store still has the chain), the second fire is EO
    kept = _without_delete(events)
    verdict = judge_events(header, kept, tolerate=frozenset({"CV"}))
    assert verdict.status is Status.VIOLATES
    assert verdict.properties == ["EO"]
    assert verdict.event_index is not None
    assert kept[verdict.event_index - 1]["ev"] == "effect"


def test_a_delete_of_another_thread_leaves_the_checkpoint_loadable() -> None:
    """The deleted checkpoint's load is CV only because its own thread was deleted."""
    header, events = _history("cv-load-after-delete-returns-the-deleted-checkpoint.jsonl")
    moved = [{**e, "thread": "t9"} if e["ev"] == "delete" else e for e in events]
    verdict = judge_events(header, moved)
    assert verdict.status is Status.CONFORMS
