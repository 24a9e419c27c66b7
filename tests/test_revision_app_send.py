"""`run revision --app` on a graph that fans out with `Send`.

tests/fixtures/revapp/fanout.py is plain user code: `plan` lists the topics of the request, its
conditional edge sends one `research` task per topic, and `write` joins their findings (an
`operator.add` reducer). The fan-out is stated in bounded slots: the i-th task sent to
`research` is an attempt of node `research#i`, a branch of `plan` (on the route only while
plan's current output sent it a task). A new request that adds a topic puts a new slot on the
route (it runs), one that drops a topic takes a slot off it (its finding must not reach
`write`), one that changes a topic changes a slot's argument. The recovering policies conform
at every point; `stale` is rejected; a runtime whose joiner still consumes the dropped slot, or
returns it, is rejected -- so the conforming verdicts are earned. A fan-out above the bound is
refused before any cell, with its own message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import revision_apps
from conftest import ROOT
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Send
from rctools.langgraph.app import load_factory
from rctools.revision.app import (
    APP_POLICIES,
    AppOutcome,
    AppRevisionRun,
    Point,
    points_of,
    workflow_of,
)
from rctools.revision.appmatrix import configure_app
from rctools.revision.routing import Router, SendBound, UnsupportedApp
from resumecheck.errors import UsageError
from resumecheck.verdict import Status

FIXTURE = ROOT / "tests" / "fixtures" / "revapp" / "fanout.py"
APP = f"{FIXTURE}:make_graph"
INPUTS = {"request": "solar, wind", "style": "plain"}
GROWS, SHRINKS, CHANGES = "solar, tidal, wind", "solar", "solar, geothermal"


def _run(folder: Path, new: str, point: Point, policy: str, app: str = APP) -> AppOutcome:
    return revision_apps.run_revised(folder, app, INPUTS, "request", new, point, policy)


def test_the_fan_out_is_read_off_langgraph_as_slots() -> None:
    wf = workflow_of(load_factory(APP)(InMemorySaver()), INPUTS, bound=3)
    assert wf.order == ["plan", "research#1", "research#2", "research#3", "write"]
    assert wf.slots == {"research": ["research#1", "research#2", "research#3"]}
    assert ("plan", "research#2") in wf.edges and ("research#2", "write") in wf.edges
    assert ("research#2", "plan", "research#2") in wf.branches
    assert wf.reads["research#1"] == []  # its input is its Send argument, plan's output
    labels = [p.label for p in points_of(load_factory(APP), INPUTS, 3)]
    assert "node-research#2" in labels
    assert "node-research#3" not in labels  # two topics: no task ran as slot 3


def test_a_task_list_that_shrinks_recovers_and_stale_is_caught(tmp_path: Path) -> None:
    """The new request (one topic) arrives while write runs (the fast representative of the
    matrix below): every recovering policy re-runs plan, which now sends one task; research#2
    is off the route and never reaches write; stale keeps both findings and is rejected."""
    point = Point("node", "write")
    runs = {p: _run(tmp_path, SHRINKS, point, p) for p in APP_POLICIES}
    for events in revision_apps.recovered(runs).values():
        routes = [e for e in events if e["ev"] == "route"]
        assert [r["to"] for r in routes] == [["research#1", "research#2"], ["research#1"]]
        assert routes[-1]["sends"] == [{"to": "research#1", "arg": {"topic": "solar"}}]
        starts = {e["attempt"]: e for e in events if e["ev"] == "start"}
        last_write = [s for s in starts.values() if s["node"] == "write"][-1]
        assert [starts[a]["node"] for a in last_write["parents"]] == ["research#1"]
        assert events[-1]["result"] == ["plan", "research#1", "write"]


def test_a_task_list_that_grows_runs_the_new_slot(tmp_path: Path) -> None:
    run = _run(tmp_path, GROWS, Point("commit", "write"), "validity")
    assert revision_apps.verdicts([run.trace])[run.trace.name].status is Status.CONFORMS
    events = revision_apps.events(run.trace)
    assert [e["to"] for e in events if e["ev"] == "route"][-1] == [
        "research#1",
        "research#2",
        "research#3",
    ]
    assert events[-1]["result"] == ["plan", "research#1", "research#2", "research#3", "write"]


def test_a_wrong_replan_of_the_fan_out_is_rejected(tmp_path: Path) -> None:
    """Two runtimes that get the shrinking list wrong, each the validity trace with one event
    changed: one's joiner consumes the dropped slot's finding beside the kept one's, one
    returns the dropped slot's finding in the result."""
    good = _run(tmp_path, SHRINKS, Point("node", "write"), "validity").trace
    events = revision_apps.events(good)
    starts = {e["attempt"]: e for e in events if e["ev"] == "start"}
    dropped = next(a for a, s in starts.items() if s["node"] == "research#2")
    rewrite = [e for e in events if e["ev"] == "start" and e["node"] == "write"][-1]["attempt"]

    def joins_dropped(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {**e, "parents": [*e["parents"], dropped]}
            if e["ev"] == "start" and e["attempt"] == rewrite
            else e
            for e in evs
        ]

    def returns_dropped(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {**e, "result": ["plan", "research#1", "research#2", "write"]}
            if e["ev"] == "finish"
            else e
            for e in evs
        ]

    traces = [
        revision_apps.edited(good, tmp_path / "joins-dropped.jsonl", joins_dropped),
        revision_apps.edited(good, tmp_path / "returns-dropped.jsonl", returns_dropped),
    ]
    verdicts = revision_apps.verdicts([good, *traces])
    assert verdicts[good.name].status is Status.CONFORMS
    joined = verdicts["joins-dropped.jsonl"]
    assert joined.properties == ["NoStaleCommit"]
    returned = verdicts["returns-dropped.jsonl"]
    assert returned.properties == ["RouteValidity"]


def test_an_irreversible_effect_of_the_send_target_is_one_per_slot(tmp_path: Path) -> None:
    """`research` declared irreversible (each task e-mails its finding): each slot's effect is
    held to its commit and sent once. A new style (read by `write` only) sends both; a new
    request while `research` commits withholds the stale ones and sends the re-run's; one
    that arrives once the e-mails are out is refused as too late; `stale` sends an e-mail
    computed from the old request and is rejected for IrreversibleEffects."""
    effects = {"research": False}
    wf = workflow_of(load_factory(APP)(InMemorySaver()), INPUTS, effects, bound=2)
    assert wf.effects == {"research#1": False, "research#2": False}
    cells = {
        "style": ("style", "formal", Point("commit", "research#2"), "validity"),
        "request": ("request", SHRINKS, Point("commit", "research#2"), "validity"),
        "late": ("request", SHRINKS, Point("node", "write"), "validity"),
        "stale": ("request", SHRINKS, Point("commit", "research#2"), "stale"),
    }
    traces = {}
    for name, (path, value, point, policy) in cells.items():
        run = AppRevisionRun(
            load_factory(APP), INPUTS, path, value, point, policy, tmp_path / f"{name}.db",
            effects,
        )  # fmt: skip
        traces[name] = run.run(tmp_path / f"{name}.jsonl").trace
    verdicts = revision_apps.verdicts(list(traces.values()))
    assert verdicts["stale.jsonl"].properties == ["IrreversibleEffects"]
    for name in ("style", "request", "late"):
        assert verdicts[f"{name}.jsonl"].status is Status.CONFORMS, verdicts[f"{name}.jsonl"]

    def sent(name: str) -> list[str]:
        events = revision_apps.events(traces[name])
        node = {e["attempt"]: e["node"] for e in events if e["ev"] == "start"}
        assert not [e for e in events if e["ev"] == "revoke"]
        return [node[e["attempt"]] for e in events if e["ev"] == "publish"]

    def accepted(name: str) -> list[bool]:
        """Each revision the run received: accepted, or refused as too late."""
        events = revision_apps.events(traces[name])
        return [e.get("accepted", True) for e in events if e["ev"] == "revise"]

    assert sorted(sent("style")) == ["research#1", "research#2"] and accepted("style") == [True]
    assert sent("request") == ["research#1"] and accepted("request") == [True]  # solar only
    assert sorted(sent("late")) == ["research#1", "research#2"] and accepted("late") == [False]
    assert accepted("stale") == [True]


def test_a_fan_out_above_the_bound_is_refused_up_front() -> None:
    with pytest.raises(SendBound, match=r"plan sent 2 tasks to research, above the bound of 1"):
        points_of(load_factory(APP), INPUTS, 1)
    with pytest.raises(UsageError, match=r"give --send-bound 2 \(or more\)"):
        configure_app(APP, json.dumps(INPUTS), 'request="x"', "validity", send_bound=1)


@pytest.mark.parametrize(
    ("returned", "says"),
    [
        ([Send("research", {"topic": "a"}), "write"], "Send packets and node names together"),
        ([Send("elsewhere", {})], "sent a task to elsewhere, which its conditional edge's"),
        ([Send("research", {"topic": t}) for t in "abc"], "sent 3 tasks to research, above"),
    ],
)
def test_a_fan_out_the_slots_cannot_state_is_said(returned: list[Any], says: str) -> None:
    router = Router("plan", {"research": "research"}, [], "fan_out", bound=2)
    assert router.sends([Send("research", {"topic": "a"}), Send("research", {"topic": "a"})]) == [
        ("research#1", {"topic": "a"}),
        ("research#2", {"topic": "a"}),
    ]
    with pytest.raises(UnsupportedApp, match=says):
        router.sends(returned)


def test_a_revision_that_grows_past_the_bound_is_said(tmp_path: Path) -> None:
    """The bound holds for the fault-free run, the revised request sends one task more: the
    run stops with the same message rather than truncating the fan-out."""
    run = AppRevisionRun(
        load_factory(APP), INPUTS, "request", GROWS, Point("node", "write"), "validity",
        tmp_path / "g.db", bound=2,
    )  # fmt: skip
    with pytest.raises(SendBound, match="plan sent 3 tasks to research, above the bound of 2"):
        run.run(tmp_path / "g.jsonl")


def test_a_router_without_a_return_type_is_seen_fanning_out(tmp_path: Path) -> None:
    """A lambda router says nothing of Send until it runs: the fault-free run before the
    cells finds the fan-out, and the cells run it in slots like the typed one."""
    app = APP.replace(":make_graph", ":make_untyped_graph")
    matrix = configure_app(app, json.dumps(INPUTS), f"request={json.dumps(SHRINKS)}", "validity")
    assert matrix.fanouts == {"plan"}
    assert "node-research#2" in [p.label for p in matrix.points]
    run = AppRevisionRun(
        load_factory(app), INPUTS, "request", SHRINKS, Point("node", "write"), "validity",
        tmp_path / "u.db", fanouts=matrix.fanouts,
    ).run(tmp_path / "u.jsonl")  # fmt: skip
    assert revision_apps.verdicts([run.trace])["u.jsonl"].status is Status.CONFORMS
    routes = [e["to"] for e in revision_apps.events(run.trace) if e["ev"] == "route"]
    assert routes == [["research#1", "research#2"], ["research#1"]]


def test_the_async_graph_records_the_same_fan_out(tmp_path: Path) -> None:
    app = APP.replace(":make_graph", ":make_async_graph")
    runs = {
        p: _run(tmp_path, SHRINKS, Point("node", "write"), p, app) for p in ("validity", "stale")
    }
    verdicts = revision_apps.verdicts([r.trace for r in runs.values()])
    assert verdicts[runs["validity"].trace.name].status is Status.CONFORMS
    assert verdicts[runs["stale"].trace.name].status is Status.VIOLATES
    routes = [e["to"] for e in revision_apps.events(runs["validity"].trace) if e["ev"] == "route"]
    assert routes == [["research#1", "research#2"], ["research#1"]]


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["make_graph", "make_async_graph"])
def test_every_point_conforms_and_stale_is_rejected(tmp_path: Path, factory: str) -> None:
    """Each new request (a topic added, dropped, changed) at every point of the run: full,
    suffix and validity conform in every cell; stale in none (plan always read the old
    request, so its task list is stale wherever the revision lands)."""
    app = APP.replace(":make_graph", f":{factory}")
    points = points_of(load_factory(app), INPUTS)
    assert len(points) == 12
    runs = [
        (new, policy, _run(tmp_path, new, point, policy, app))
        for new in (GROWS, SHRINKS, CHANGES)
        for point in points
        for policy in APP_POLICIES
    ]
    verdicts = revision_apps.verdicts([r.trace for _, _, r in runs])
    for new, policy, run in runs:
        status = verdicts[run.trace.name].status
        want = Status.VIOLATES if policy == "stale" else Status.CONFORMS
        assert status is want, (new, policy, run.trace.name, verdicts[run.trace.name].reason)
