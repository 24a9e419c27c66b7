"""`run revision --app` on a graph that routes with a conditional edge.

tests/fixtures/revapp/triage.py is plain user code: `classify` reads the customer's message,
its conditional edge (a router with a `Literal` return type) sends the ticket to `refund` or
`answer`, and `reply` polishes whichever draft came. The router's choice is recorded as a
`route` event of classify's attempt (DagRevision: a route a node computes, `branches` in the
header). A new message that turns a question into a refund request flips the route: the
recovering policies re-run classify, run refund and never let answer's draft reach the result;
`stale` keeps the old route and is rejected; and a runtime that lets the branch no longer taken
reach the result, or feeds its output to `reply`, is rejected for RouteValidity or
NoStaleCommit -- so the conforming verdicts are earned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest
import revision_apps
from conftest import ROOT
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, StateGraph
from rctools.langgraph.app import load_factory
from rctools.revision.app import (
    APP_POLICIES,
    AppRevisionRun,
    Point,
    UnsupportedApp,
    points_of,
    workflow_of,
)
from resumecheck.verdict import Status
from revision_apps import Judged, RevisedApp

APP = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'triage.py'}:make_graph"
INPUTS = {"message": "where is my parcel", "notes": "n0"}
NEW = {"message": "I want a refund", "notes": "n1"}


REVISED = RevisedApp(APP, INPUTS, NEW)


def test_the_router_is_read_off_langgraph() -> None:
    wf = workflow_of(load_factory(APP)(InMemorySaver()), INPUTS)
    assert ("classify", "refund") in wf.edges and ("classify", "answer") in wf.edges
    assert wf.branches == [("answer", "classify", "answer"), ("refund", "classify", "refund")]
    assert wf.routers["classify"].targets == ["answer", "refund"]
    header = wf.header("x", "validity")["workflow"]
    assert {"node": "refund", "by": "classify", "to": "refund"} in header["branches"]
    labels = [p.label for p in points_of(load_factory(APP), INPUTS)]
    assert "node-answer" in labels
    assert "node-refund" not in labels  # not taken in the fault-free run: no point there


def test_a_route_flip_recovers_and_stale_is_caught(tmp_path: Path) -> None:
    """The new message arrives while reply runs (the fast representative of the matrix
    below): every recovering policy re-runs classify, which now chooses refund; refund runs,
    answer's draft is not in the result; stale keeps answer and is rejected."""
    point = Point("node", "reply")
    runs = {p: REVISED.run(tmp_path, "message", point, p) for p in APP_POLICIES}
    for events in revision_apps.recovered(runs).values():
        assert [e["to"] for e in events if e["ev"] == "route"] == [["answer"], ["refund"]]
        assert events[-1] == {"seq": events[-1]["seq"], "ev": "finish",
                              "result": ["classify", "refund", "reply"]}  # fmt: skip
    assert not any(e["ev"] == "route" for e in revision_apps.events(runs["stale"].trace)[4:])


def test_the_async_graph_records_the_same_route_flip(tmp_path: Path) -> None:
    """Async nodes and an async router run through `astream` on the suite's own event loop;
    the router's choice is heard inside its task all the same."""
    app = APP.replace(":make_graph", ":make_async_graph")
    runs = {}
    for policy in ("validity", "stale"):
        run = AppRevisionRun(
            load_factory(app), INPUTS, "message", NEW["message"], Point("node", "reply"),
            policy, tmp_path / f"{policy}.db",
        )  # fmt: skip
        runs[policy] = run.run(tmp_path / f"{policy}.jsonl")
    verdicts = revision_apps.verdicts([r.trace for r in runs.values()])
    assert verdicts["validity.jsonl"].status is Status.CONFORMS
    assert verdicts["stale.jsonl"].status is Status.VIOLATES
    routes = [e["to"] for e in revision_apps.events(runs["validity"].trace) if e["ev"] == "route"]
    assert routes == [["answer"], ["refund"]]


def test_a_wrong_replan_of_the_route_is_rejected(tmp_path: Path) -> None:
    """Two runtimes that get the route flip wrong, each the validity trace with one event
    changed: one returns answer's draft too (the branch no longer taken), one feeds it to
    reply beside refund's."""
    good = REVISED.run(tmp_path, "message", Point("node", "reply"), "validity").trace
    events = revision_apps.events(good)
    old_answer = next(e["attempt"] for e in events if e["ev"] == "start" and e["node"] == "answer")
    new_reply = [e["attempt"] for e in events if e["ev"] == "start" and e["node"] == "reply"][-1]

    def returns_old_branch(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        evs[-1]["result"] = ["classify", "answer", "refund", "reply"]
        return evs

    def consumes_old_branch(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in evs:
            if e["ev"] == "start" and e["attempt"] == new_reply:
                e["parents"] = sorted([*e["parents"], old_answer])
        return evs

    traces = [
        revision_apps.edited(good, tmp_path / "returns-old-branch.jsonl", returns_old_branch),
        revision_apps.edited(good, tmp_path / "consumes-old-branch.jsonl", consumes_old_branch),
    ]
    verdicts = revision_apps.verdicts(traces)
    assert verdicts["returns-old-branch.jsonl"].properties == ["RouteValidity"]
    assert verdicts["consumes-old-branch.jsonl"].properties == ["NoStaleCommit"]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    return REVISED.judged(tmp_path_factory.mktemp("revroute"), ("message", "notes"))


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["full", "suffix", "validity"])
def test_every_cell_conforms(judged: Any, policy: str) -> None:
    mine = {k: v for k, (_, v) in judged.items() if k[1] == policy}
    assert len(mine) == 2 * 9
    assert {k: v.reason for k, v in mine.items() if v.status is not Status.CONFORMS} == {}


@pytest.mark.slow
def test_stale_is_rejected_wherever_the_route_flips(judged: Any) -> None:
    """Every new message flips the route (the question becomes a refund request); stale never
    re-runs classify, so every such cell is rejected."""
    flips = {k: v for k, (_, v) in judged.items() if k[:2] == ("message", "stale")}
    assert len(flips) == 9
    assert all(v.status is Status.VIOLATES for v in flips.values())


@pytest.mark.slow
def test_validity_keeps_the_router_when_only_the_branch_read_changed(judged: Any) -> None:
    """New account notes are read by answer alone: validity and suffix keep classify's route,
    a full restart runs it again."""
    for label in ("commit-answer", "node-reply"):
        validity, _ = judged[("notes", "validity", label)]
        full, _ = judged[("notes", "full", label)]
        assert "classify" not in validity.recomputed
        assert "classify" in full.recomputed
        assert validity.calls < full.calls


def _graph(wire: Any) -> Any:
    """A small graph of pass-through nodes a..e over one channel, wired by `wire`."""

    class S(TypedDict, total=False):
        x: str

    builder = StateGraph(S)
    for n in "abcde":
        builder.add_node(n, lambda s: {})
    wire(builder)
    return builder.compile(checkpointer=InMemorySaver())


def _no_map(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", lambda s: "b")


def _reached_twice(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", lambda s: "b", ["b", "c"])
    b.add_edge("c", "b")


def _joins_some(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", lambda s: "b", ["b", "c", "d"])
    b.add_edge("b", "e")
    b.add_edge("c", "e")


def _joins_after_end(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", lambda s: "b", ["b", "c", "__end__"])
    b.add_edge("b", "e")
    b.add_edge("c", "e")


def _joins_all(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", lambda s: "b", ["b", "c"])
    b.add_edge("b", "d")
    b.add_edge("c", "e")
    b.add_edge("d", "e")


def _to_c_or_end(s: Any) -> str:
    if s.get("x"):
        return END
    return "c"


def _computed(s: Any) -> str:
    return "c" if s.get("x") else s["next"]


target = "c"  # a module name bound to a node's name, which `_shadowed` binds again itself


def _shadowed(s: Any) -> str:
    target = s["next"]
    return target


def _shadowed_by_source(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", _shadowed)


def _named_by_source(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", _to_c_or_end)


def _not_named_by_source(b: Any) -> None:
    b.add_edge("__start__", "a")
    b.add_conditional_edges("a", _computed)


def test_a_router_without_a_path_map_is_read_off_its_source() -> None:
    """Every return a string constant or END: those are its branches (as LangGraph's own
    tutorials write routers); a computed return names nothing, and the edge is refused."""
    wf = workflow_of(_graph(_named_by_source), {"x": "0"})
    assert wf.routers["a"].ends == {"c": "c", END: END}
    assert wf.branches == [("c", "a", "c")]
    with pytest.raises(UnsupportedApp, match="does not name where it may go"):
        workflow_of(_graph(_not_named_by_source), {"x": "0"})
    with pytest.raises(UnsupportedApp, match="does not name where it may go"):
        workflow_of(_graph(_shadowed_by_source), {"x": "0"})  # its own `target`, not "c"


@pytest.mark.parametrize(
    ("wire", "says"),
    [
        (_no_map, "does not name where it may go"),
        (_reached_twice, "b is a branch of a's conditional edge and is reached another way"),
        (_joins_some, "e joins only some of the branches of a's conditional edge"),
        (_joins_after_end, "e joins the branches of a's conditional edge, which may also end"),
    ],
)
def test_a_route_the_contract_cannot_state_is_refused(wire: Any, says: str) -> None:
    with pytest.raises(UnsupportedApp, match=says):
        workflow_of(_graph(wire), {"x": "0"})


def test_what_a_branch_target_dominates_is_guarded_by_it() -> None:
    """d runs only after b (b dominates it); e joins both branches and needs no guard."""
    wf = workflow_of(_graph(_joins_all), {"x": "0"})
    assert wf.branches == [("b", "a", "b"), ("c", "a", "c"), ("d", "a", "b")]
