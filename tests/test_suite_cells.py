"""The cell table every runtime suite fills in: its families name and phase their cells the
same way in every suite (a suite's cell names are what `--cells` and the committed manifests
know them by), also in a suite whose cells are steps of its own (Restate's driver script), and
a name twice is an error, not a cell silently recorded twice."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Sequence
from typing import Any

import pytest
from rctools.suite.cells import BOUNDARY_POINTS, SYNC_ONLY, CellTable, RuntimeSuite, Table


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


def test_answers_sent_while_the_run_waits_are_resent_only_where_the_kill_came_first() -> None:
    """The families of a runtime whose wait takes messages (DBOS's recv, Temporal's signals):
    a resumer sends the answer again only where the kill came before the run took it, and a
    killed request handler leaves the resent answers to the new process."""
    yes, again = {"value": "approve"}, {"value": "approve", "remember": 2}
    table = CellTable()
    table.sent("live", "approval", "sent while it waits", yes, again)
    table.kill_waiting("approval", [("q.effect", "in q")], "restart", yes, resend=True)
    table.kill_waiting("approval", [("b.effect", "in b")], "restart", yes, resend=False)
    table.kill_handler("h", "approval", "handler", "wait.waiting", yes, "answer.sent", again)
    table.reanswered("done", "approval", "again after done", yes, again)
    phases = {c.name: c.params["phases"] for c in table.cells}
    assert phases["live"] == [[{"role": "run", "proc": "w1", "answers": [yes, again]}]]
    assert [c.what for c in table.cells[1:3]] == ["SIGKILL in q; restart", "SIGKILL in b; restart"]
    assert phases["approval-kill-q-effect"][1] == [
        {"role": "recover", "proc": "w2", "answers": [yes]}
    ]
    assert phases["approval-kill-b-effect"] == [
        [{"role": "run", "proc": "w1", "answers": [yes], "kill_at": "b.effect"}],
        [{"role": "recover", "proc": "w2"}],
    ]
    assert phases["h"] == [
        [{"role": "run", "proc": "w1", "kill_at": "wait.waiting"}],
        [{"role": "answer", "proc": "w2", "answers": [yes], "kill_at": "answer.sent"}],
        [{"role": "recover", "proc": "w3", "answers": [again]}],
    ]
    assert phases["done"][1] == [{"role": "answer", "proc": "w2", "answers": [again]}]


def matrix_table() -> CellTable:
    return CellTable()


def test_a_runtime_suite_finds_its_worker_and_docs_page_from_its_package() -> None:
    """A suite declares only what is its runtime's: its package (where its matrix's `table`
    is) names the worker and the docs page, its name the distribution unless it says one."""
    matrix_table.__module__ = "rctools.pydantic_graph.matrix"
    suite = RuntimeSuite(
        name="pydantic-graph",
        backend="file",
        declared=SYNC_ONLY,
        nodes=lambda graph: [],
        table=matrix_table,
        thread="run",
    )
    assert (suite.worker, suite.DOCS) == (
        "rctools.pydantic_graph.worker",
        "docs/runtimes/pydantic-graph.md",
    )
    # a runtime named as the installed distribution it is (click: installed wherever this is)
    named = dataclasses.replace(suite, name="click")
    assert named.runtime()["version"] == importlib.metadata.version("click")
    pinned = dataclasses.replace(named, distribution="pytest")
    assert pinned.runtime()["version"] == importlib.metadata.version("pytest")


def test_forks_start_from_a_clean_or_recovered_run_and_a_killed_fork_is_resumed() -> None:
    """The families of a runtime that forks a run after its j-th operation (DBOS's
    fork_workflow, Temporal's reset)."""
    table = CellTable()
    table.forks_at("fork-at", "linear", "fork after the {j}th", (1, 3))
    table.fork_after_crash("after-crash", "linear", "crash, then fork", "mail.effect", 1)
    table.fork_twice("twice", "linear", "two forks", 2)
    table.fork_killed("killed", "linear", "a killed fork", 2, "ship.effect", "recover-forks")
    phases = {c.name: c.params["phases"] for c in table.cells}
    assert [(c.name, c.what) for c in table.cells[:2]] == [
        ("fork-at-1", "fork after the 1th"),
        ("fork-at-3", "fork after the 3th"),
    ]
    assert phases["fork-at-3"][1] == [{"role": "fork", "proc": "w2", "fork_at": 3}]
    assert [p[0]["role"] for p in phases["after-crash"]] == ["run", "recover", "fork"]
    assert phases["after-crash"][0][0]["kill_at"] == "mail.effect"
    assert [p[0].get("fork_at") for p in phases["twice"]] == [None, 2, 2]
    assert phases["killed"][1:] == [
        [{"role": "fork", "proc": "w2", "fork_at": 2, "kill_at": "ship.effect"}],
        [{"role": "recover-forks", "proc": "w3"}],
    ]


def test_in_a_loop_only_the_looping_step_is_killed_at_every_point_of_every_visit() -> None:
    table = CellTable()
    table.kill_loop("loop", ["plan", "work"], "resume", BOUNDARY_POINTS, loop="work", visits=2)
    names = [c.name for c in table.cells]
    assert names[:2] == ["loop-kill-plan-effect", "loop-kill-plan-saved"]
    assert names[2:] == [
        f"loop-kill-work-{n}-{point}" for n in (1, 2) for point, _ in BOUNDARY_POINTS
    ]
