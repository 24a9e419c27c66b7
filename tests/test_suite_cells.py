"""The cell table every runtime suite fills in: its families name and phase their cells the
same way in every suite (a suite's cell names are what `--cells` and the committed manifests
know them by), also in a suite whose cells are steps of its own (Restate's driver script), and
a name twice is an error, not a cell silently recorded twice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from rctools.suite.cells import BOUNDARY_POINTS, CellTable, Table


def test_a_loop_step_is_killed_at_each_visit_and_points_may_differ_per_step() -> None:
    table = CellTable()
    only = (BOUNDARY_POINTS[1],)
    table.kill_every_boundary(
        "loop", ["Plan", "Work"], "resume", {"Plan": only, "Work": only}, visits={"Work": 2}
    )
    assert [(c.name, c.what) for c in table.cells] == [
        ("loop-kill-plan-effect", "SIGKILL in Plan after its effect; resume"),
        ("loop-kill-work-1-effect", "SIGKILL in Work (visit 1) after its effect; resume"),
        ("loop-kill-work-2-effect", "SIGKILL in Work (visit 2) after its effect; resume"),
    ]
    assert table.cells[2].params["phases"] == [
        [{"role": "run", "proc": "w1", "kill_at": "Work.effect#2"}],
        [{"role": "recover", "proc": "w2"}],
    ]


def test_kills_chain_one_process_after_another_and_the_last_runs_to_the_end() -> None:
    table = CellTable()
    table.kills("double", "linear", "two kills", "a.effect", "b.effect", role="rerun")
    assert table.cells[0].params == {
        "graph": "linear",
        "phases": [
            [{"role": "run", "proc": "w1", "kill_at": "a.effect"}],
            [{"role": "rerun", "proc": "w2", "kill_at": "b.effect"}],
            [{"role": "rerun", "proc": "w3"}],
        ],
    }


def test_answerers_meet_and_a_name_twice_is_an_error() -> None:
    table = CellTable()
    table.answerers("two", "approval", "two answer at once")
    _, both = table.cells[0].params["phases"]
    assert [(w["value"], w["barrier"]) for w in both] == [("approved", 2), ("rejected", 2)]
    with pytest.raises(ValueError, match="twice"):
        table.clean("approval", "again")
        table.clean("approval", "again")


class Steps(Table):
    """A suite's own steps: a process started with its kill point, and `gone` once killed."""

    key = "script"

    def chain(self, roles: Sequence[str], points: Sequence[str | None]) -> list[Any]:
        steps: list[Any] = []
        for n, at in enumerate(points, start=1):
            steps += [("gone", f"w{n - 1}")] if n > 1 else []
            steps.append(("start", f"w{n}", at))
        return steps


def test_a_suite_with_steps_of_its_own_gets_the_same_names_from_its_chain() -> None:
    table = Steps()
    table.clean("linear")
    table.kill_every_boundary("linear", ["a"], "retry", (BOUNDARY_POINTS[1],), victim="it")
    table.kills("approval-kill", "approval", "then an answer", "q.effect", then=["answer"])
    assert [(c.name, c.what) for c in table.cells] == [
        ("linear-clean", "no fault"),
        ("linear-kill-a-effect", "SIGKILL of it in a after its effect; retry"),
        ("approval-kill", "then an answer"),
    ]
    assert table.cells[1].params == {
        "graph": "linear",
        "script": [("start", "w1", "a.effect"), ("gone", "w1"), ("start", "w2", None)],
    }
    assert table.cells[2].params["script"][-1] == "answer"
