"""bench/simulate.py: the bench's traces from TLC simulating the contract's reference runtime.

The judge is the test of its mapping from the contract's history records to trace events:
every simulated trace must conform, and a mapping with one field wrong must not pass. Its
violating traces are mutants the history oracle labels; the checker must agree with the label.
One TLC `-simulate` run serves the module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from resumecheck.judge import judge
from resumecheck.verdict import Status

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import simulate  # noqa: E402  (bench/ is not a package)

COUNT = 20


@pytest.fixture(scope="module")
def walks() -> list[simulate.Walk]:
    return simulate.walks(COUNT, seed=1, events=simulate.TARGET_EVENTS)


def _judge(traces: list[simulate.Trace], folder: Path) -> list[object]:
    return judge([t.write(folder) for t in traces], spec_paths=[simulate.SPEC])


def test_every_walk_of_the_reference_is_a_conforming_complete_trace(
    walks: list[simulate.Walk], tmp_path: Path
) -> None:
    assert len(walks) == COUNT
    traces = [simulate.trace_of(w, i) for i, w in enumerate(walks)]
    assert all(len(t.events) >= simulate.TARGET_EVENTS for t in traces)
    kinds = {e["ev"] for t in traces for e in t.events}
    assert {"crash", "resume", "effect", "update", "put_writes", "task_end"} <= kinds
    assert len({e["proc"] for t in traces for e in t.events}) > 1
    verdicts = _judge(traces, tmp_path)
    assert [(v.status, v.complete) for v in verdicts] == [(Status.CONFORMS, True)] * COUNT


@pytest.fixture
def wrong_load() -> Iterator[None]:
    """The mapping with one field wrong: a load's checkpoint taken from what it asked for
    (none, for a load of the latest) instead of what it got."""
    right = simulate.EVENTS["load"]
    simulate.EVENTS["load"] = ("load", right[1].replace("checkpoint=got", "checkpoint=asked"))
    yield
    simulate.EVENTS["load"] = right


def test_a_mapping_with_one_field_wrong_is_caught_by_the_judge(
    walks: list[simulate.Walk], tmp_path: Path, wrong_load: None
) -> None:
    verdicts = _judge([simulate.trace_of(w, i) for i, w in enumerate(walks)], tmp_path)
    assert any(v.status is Status.VIOLATES for v in verdicts)


@pytest.mark.slow
def test_mutants_are_judged_as_the_history_oracle_labels_them(
    walks: list[simulate.Walk], tmp_path: Path
) -> None:
    conforming = [simulate.trace_of(w, i) for i, w in enumerate(walks)]
    slots = [7, 9, 13]
    mutants = simulate._mutate(conforming, slots, seed=1)
    assert sorted(mutants) == slots
    verdicts = _judge([mutants[s] for s in slots], tmp_path)
    for slot, verdict in zip(slots, verdicts, strict=True):
        expected = mutants[slot].expected
        assert expected.status == "violates"
        assert (verdict.status, verdict.event_index, tuple(sorted(verdict.properties))) == (
            Status.VIOLATES,
            expected.event,
            expected.properties,
        ), slot
