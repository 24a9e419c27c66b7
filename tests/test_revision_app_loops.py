"""`run revision --app` on a graph with a loop, stated as bounded laps (rctools/revision/loops.py).

tests/fixtures/revapp/plan_execute_loop.py is plain user code in the shape of LangGraph's
plan-and-execute tutorial: a planner lists the `;`-separated steps of the request, then agent ->
replan -> agent until every step is done. Its k-th agent turn is node `agent(k)`, a branch of
`replan(k-1)` (on the route only while that replanner chose to go round again). A new request
that drops a step takes a lap off the route (it must not reach the result), one that adds a step
puts a lap on it; a new tone, read by the replanner only, keeps the planner and the first agent
turn. The recovering policies conform, `stale` and a runtime that returns a dropped lap are
rejected -- so the conforming verdicts are earned. A run that goes round more than the laps
declared is refused with its own message, up front or when a revision lengthens the loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import revision_apps
from conftest import ROOT, invoke
from langgraph.checkpoint.memory import InMemorySaver
from rctools.langgraph.app import load_factory
from rctools.revision.app import (
    APP_POLICIES,
    AppOutcome,
    Point,
    points_of,
    workflow_of,
)
from rctools.revision.loops import LoopBound
from resumecheck.verdict import Status

APP = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'plan_execute_loop.py'}:make_graph"
INPUTS = {"request": "a; b; c", "tone": "plain"}
REACT = f"{ROOT / 'tests' / 'fixtures' / 'apps' / 'react_refunds.py'}:build"

# A node after the loop, reached from the router inside it: it runs in the lap the loop ends in.
AFTER_THE_LOOP = """
import operator
from typing import Annotated, TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    q: str
    tone: str
    obs: Annotated[list[str], operator.add]
    answer: str

def route(s):
    if len(s.get("obs", [])) >= len(s["q"].split()):
        return "respond"
    return "tools"

def build(checkpointer):
    g = StateGraph(S)
    g.add_node("agent", lambda s: {})
    g.add_node("tools", lambda s: {"obs": [s["q"]]})
    g.add_node("respond", lambda s: {"answer": s["tone"] + str(len(s["obs"]))})
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route)
    g.add_edge("tools", "agent")
    g.add_edge("respond", END)
    return g.compile(checkpointer=checkpointer)
"""

# A loop back to the first node, its router a conditional expression.
BACK_TO_THE_START = """
import operator
from typing import Annotated, TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    q: str
    n: Annotated[int, operator.add]
    out: str

def again(s):
    return "planner" if s["n"] < 2 else END

def build(checkpointer):
    g = StateGraph(S)
    g.add_node("planner", lambda s: {"n": 1})
    g.add_node("worker", lambda s: {"out": f"{s['q']}-{s['n']}"})
    g.add_edge(START, "planner")
    g.add_edge("planner", "worker")
    g.add_conditional_edges("worker", again)
    return g.compile(checkpointer=checkpointer)
"""


def _run(
    folder: Path, path: str, new: str, point: Point, policy: str, loop_bound: int = 4
) -> AppOutcome:
    return revision_apps.run_revised(
        folder, APP, INPUTS, path, new, point, policy, loop_bound=loop_bound
    )


def test_the_loop_is_read_off_langgraph_as_laps() -> None:
    wf = workflow_of(load_factory(APP)(InMemorySaver()), INPUTS, loop_bound=3)
    assert wf.laps == {
        "agent": ["agent(1)", "agent(2)", "agent(3)"],
        "replan": ["replan(1)", "replan(2)", "replan(3)"],
    }
    assert wf.order[:3] == ["planner", "agent(1)", "replan(1)"]
    assert ("replan(1)", "agent(2)") in wf.edges and ("replan(3)", "agent(4)") not in wf.edges
    assert ("agent(2)", "replan(1)", "agent(2)") in wf.branches
    # the router (should_end, on the whole State) reads the request too
    assert wf.reads["agent(2)"] == [] and wf.reads["replan(2)"] == ["request", "tone"]
    labels = [p.label for p in points_of(load_factory(APP), INPUTS, loop_bound=3)]
    assert "node-replan(3)" in labels and "node-agent(1)" in labels


def _nodes(events: list[dict[str, Any]]) -> dict[str, str]:
    return {e["attempt"]: e["node"] for e in events if e["ev"] == "start"}


def test_a_loop_that_shrinks_recovers_and_stale_is_caught(tmp_path: Path) -> None:
    """The request drops its last step while the second replan runs: every recovering policy
    re-runs the planner and goes round twice; the third lap is off the route; stale keeps
    the old plan and is rejected."""
    point = Point("node", "replan(2)")
    runs = {p: _run(tmp_path, "request", "a; b", point, p) for p in APP_POLICIES}
    for events in revision_apps.recovered(runs).values():
        assert events[-1]["result"] == ["planner", "agent(1)", "replan(1)", "agent(2)", "replan(2)"]


def test_a_loop_that_grows_runs_the_new_lap(tmp_path: Path) -> None:
    point = Point("commit", "agent(1)")
    runs = {p: _run(tmp_path, "request", "a; b; c; d", point, p) for p in APP_POLICIES}
    for events in revision_apps.recovered(runs).values():
        assert events[-1]["result"][-2:] == ["agent(4)", "replan(4)"]


def test_a_new_tone_keeps_the_planner_and_the_first_turn(tmp_path: Path) -> None:
    """Read by the replanner only: validity re-runs the first replan and every lap after it
    (each lap's input is the one before it), and keeps the planner and agent(1)."""
    point = Point("node", "replan(3)")
    runs = {p: _run(tmp_path, "tone", "formal", point, p) for p in APP_POLICIES}
    events = revision_apps.recovered(runs)["validity"]
    nodes = _nodes(events)
    plan = next(e for e in events if e["ev"] == "plan")
    assert [nodes[a] for a in plan["cancel"]] == ["replan(3)"]
    assert "planner" not in plan["invalidate"] and "agent(1)" not in plan["invalidate"]
    assert "replan(1)" in plan["invalidate"]
    assert runs["validity"].calls < runs["full"].calls


def test_a_runtime_that_returns_a_dropped_lap_is_rejected(tmp_path: Path) -> None:
    good = _run(tmp_path, "request", "a; b", Point("node", "replan(2)"), "validity").trace

    def returns_dropped(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        old = ["planner", "agent(1)", "replan(1)", "agent(2)", "replan(2)", "agent(3)"]
        return [{**e, "result": old} if e["ev"] == "finish" else e for e in evs]

    bad = revision_apps.edited(good, tmp_path / "returns-dropped.jsonl", returns_dropped)
    found = revision_apps.verdicts([good, bad])
    assert found[good.name].status is Status.CONFORMS
    assert found[bad.name].properties == ["RouteValidity"]


def test_a_loop_beyond_the_bound_is_said(tmp_path: Path) -> None:
    """Up front, from the fault-free run (three turns, two laps declared); and when a
    revision lengthens the loop past the bound, the run stops saying so, never truncated."""
    with pytest.raises(
        LoopBound, match=r"agent runs 3 times .* bound of 2 laps; give --loop-bound 3"
    ):
        points_of(load_factory(APP), INPUTS, loop_bound=2)
    with pytest.raises(LoopBound, match=r"give --loop-bound 4 \(or more\)"):
        _run(tmp_path, "request", "a; b; c; d", Point("commit", "agent(1)"), "validity", 3)
    given = json.dumps(INPUTS)
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", APP, "--input", given,
        "--revise", 'tone="x"',
        "--loop-bound", "2", "--out", tmp_path / "out", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 2 and "give --loop-bound 3" in done.stderr, done
    done = invoke(
        "run", "revision", "--policy", "validity", "--loop-bound", "2", "--out", tmp_path / "o2"
    )
    assert done.returncode == 2 and "--loop-bound go with --app" in done.stderr, done


def test_an_unseen_react_agent_runs(tmp_path: Path) -> None:
    """tests/fixtures/apps/react_refunds.py (written for the recovery suite; refused before
    as a cycle): agent and tools take turns until the model answers. A new order number at
    every point conforms under validity, each turn a lap."""
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", REACT,
        "--input", '{"customer": "ada", "order": "o1"}', "--revise", 'order="o2"',
        "--out", tmp_path, "--format", "json", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    summary = done.json()
    assert done.returncode == 0, summary
    cells = [c["cell"] for c in summary["cells"]]
    assert len(cells) == 10 and "app-validity-node-agent(3)" in cells
    assert all(c["status"] == "conforms" for c in summary["cells"])


def test_an_llmcompiler_loop_without_a_path_map_runs(tmp_path: Path) -> None:
    """tests/fixtures/revapp/compiler_loop.py, LLMCompiler in the tutorial's shape: the
    joiner's router names no path_map (read off its source: END or the planner). A new
    language, read by the joiner only, keeps the first plan's round under validity; stale
    is rejected wherever the joiner had read the old one."""
    app = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'compiler_loop.py'}:make_graph"
    given = '{"question": "solar? wind? tides?", "language": "en"}'
    summaries = {}
    for policy in ("validity", "stale"):
        done = invoke(
            "run", "revision", "--policy", policy, "--app", app, "--input", given,
            "--revise", 'language="fr"', "--out", tmp_path / policy, "--format", "json",
            "--no-progress",
        )  # fmt: skip
        done.assert_no_traceback()
        summaries[policy] = done.json()
    validity = summaries["validity"]
    assert len(validity["cells"]) == 18
    assert all(c["status"] == "conforms" for c in validity["cells"])
    figures = validity["figures"]
    assert figures["model_calls"] < figures["full_calls"]
    assert sum(c["status"] == "violates" for c in summaries["stale"]["cells"]) == 15


def test_the_prebuilt_react_agent_runs_with_its_tool_calls_as_slots(tmp_path: Path) -> None:
    """tests/fixtures/revapp/react_prebuilt.py: LangGraph's `create_react_agent`, whose tool
    calls are Send tasks of `tools` inside the loop. In lap k they run as slots
    `tools#1(k)`, `tools#2(k)`; the next turn joins them, on the route while the turn before
    sent any (its first slot). A new user message at every point conforms under validity;
    stale is rejected in every cell."""
    app = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'react_prebuilt.py'}:make_graph"
    given = '{"messages": [["user", "where is my order o1?"]]}'
    wf = workflow_of(load_factory(app)(InMemorySaver()), json.loads(given), bound=2, loop_bound=2)
    assert wf.slots["tools"] == ["tools#1(1)", "tools#1(2)", "tools#2(1)", "tools#2(2)"]
    assert ("agent(2)", "agent(1)", "tools#1(1)") in wf.branches
    summaries = {}
    for policy in ("validity", "stale"):
        done = invoke(
            "run", "revision", "--policy", policy, "--app", app, "--input", given,
            "--revise", 'messages=[["user", "and order o2?"]]', "--out", tmp_path / policy,
            "--format", "json", "--no-progress",
        )  # fmt: skip
        done.assert_no_traceback()
        summaries[policy] = done.json()
    cells = [c["cell"] for c in summaries["validity"]["cells"]]
    assert "app-validity-node-tools#2(1)" in cells and "app-validity-node-agent(2)" in cells
    assert all(c["status"] == "conforms" for c in summaries["validity"]["cells"])
    assert all(c["status"] == "violates" for c in summaries["stale"]["cells"])


# A human approves each step of the loop (interrupt() in `act`, answered by --answer).
APPROVED_EACH_TURN = """
import operator
from typing import Annotated, TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

class S(TypedDict, total=False):
    q: str
    done: Annotated[list[str], operator.add]

def act(s):
    ok = interrupt({"step": len(s.get("done", []))})
    return {"done": [f"{s['q']}:{ok}"]}

def route(s):
    return "act" if len(s.get("done", [])) < len(s["q"].split()) else END

def build(checkpointer):
    g = StateGraph(S)
    g.add_node("agent", lambda s: {})
    g.add_node("act", act)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route)
    g.add_edge("act", "agent")
    return g.compile(checkpointer=checkpointer)
"""


@pytest.mark.parametrize(
    ("source", "given", "revise", "cells"),
    [
        (AFTER_THE_LOOP, '{"q": "a b", "tone": "t"}', 'q="a b c"', 12),
        (BACK_TO_THE_START, '{"q": "a"}', 'q="b"', 8),
        (APPROVED_EACH_TURN, '{"q": "a b"}', 'q="a b c"', 12),
    ],
    ids=["after-the-loop", "back-to-the-start", "approved-each-turn"],
)
def test_more_loop_shapes_conform_and_stale_is_caught(
    tmp_path: Path, source: str, given: str, revise: str, cells: int
) -> None:
    """`respond` runs in the lap the loop ends in (`respond(3)`), not in its first; a loop
    back to the first node with a router that returns `"planner" if ... else END`; a loop
    whose every turn waits for a human (`--answer`, the parked points included)."""
    app = tmp_path / "userapp.py"
    app.write_text(source)
    statuses = {}
    for policy in ("validity", "stale"):
        done = invoke(
            "run", "revision", "--policy", policy, "--app", f"{app}:build", "--input", given,
            "--revise", revise, "--answer", '"yes"', "--out", tmp_path / policy,
            "--format", "json", "--no-progress",
        )  # fmt: skip
        done.assert_no_traceback()
        statuses[policy] = [c["status"] for c in done.json()["cells"]]
    assert statuses["validity"] == ["conforms"] * cells
    assert statuses["stale"] == ["violates"] * cells
