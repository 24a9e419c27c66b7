"""`run revision --app` on graph shapes beyond plan_execute's, each a fixture app written as a
user writes one: async-only nodes run (tests/fixtures/revapp/plan_execute.py's
`make_async_graph`, through `astream`), and so do an unseen triage graph that routes with a
conditional edge (tests/fixtures/apps/triage.py) and an unseen digest that fans out with `Send`
(fanout_digest.py); the shapes it cannot run yet
(tests/fixtures/apps/) are refused before any cell, with their own message and exit code 2 --
never a traceback, never a verdict on a run the suite could not follow.

Before this, an async-only graph ended in an internal error (exit 3) and a graph that parks at
`interrupt()` was recorded as if it had finished, and judged violating OracleEquivalence in
every cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, invoke, read_trace_file, run_cli

APPS = ROOT / "tests" / "fixtures" / "apps"

STATIC_INTERRUPTS = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    request: str
    draft: str
    reply: str

def _graph():
    graph = StateGraph(S)
    graph.add_node("draft", lambda s: {"draft": "d:" + s["request"]})
    graph.add_node("answer", lambda s: {"reply": s["draft"] + "!"})
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "answer")
    graph.add_edge("answer", END)
    return graph

def before(checkpointer):
    return _graph().compile(checkpointer=checkpointer, interrupt_before=["answer"])

def after(checkpointer):
    return _graph().compile(checkpointer=checkpointer, interrupt_after=["draft"])
"""

TWO_LOOPS = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    request: str
    n: int

def build(checkpointer):
    graph = StateGraph(S)
    for name in ("a", "b", "c", "d"):
        graph.add_node(name, lambda s: {"n": s.get("n", 0) + 1})
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_conditional_edges("b", lambda s: "a" if s["n"] < 2 else "c", ["a", "c"])
    graph.add_edge("c", "d")
    graph.add_conditional_edges("d", lambda s: "c" if s["n"] < 4 else END, ["c", END])
    return graph.compile(checkpointer=checkpointer)
"""

SUPERVISORS = """
from typing import Literal, TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

class S(TypedDict, total=False):
    request: str
    research: str
    note: str

def _supervisor(s):
    return Command(goto=END if s.get("research") else "researcher")

def _annotated(s) -> Command[Literal["researcher", "__end__"]]:
    return _supervisor(s)

def _graph(supervisor):
    graph = StateGraph(S)
    graph.add_node("supervisor", supervisor)
    graph.add_node("researcher", lambda s: {"research": "r:" + s["request"]})
    graph.add_edge(START, "supervisor")
    graph.add_edge("researcher", "supervisor")
    return graph

def annotated(checkpointer):
    return _graph(_annotated).compile(checkpointer=checkpointer)

def plain(checkpointer):
    return _graph(_supervisor).compile(checkpointer=checkpointer)

def _two(s) -> Command[Literal["researcher", "writer", "__end__"]]:
    if not s.get("research"):
        return Command(goto="researcher")
    return Command(goto=END if s.get("note") else "writer")

def two_workers(checkpointer):
    graph = _graph(_two)
    graph.add_node("writer", lambda s: {"note": "n:" + s["research"]})
    graph.add_edge("writer", "supervisor")
    return graph.compile(checkpointer=checkpointer)
"""

RAISES = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    request: str
    reply: str

def answer(s):
    raise ValueError("no model configured")

def build(checkpointer):
    graph = StateGraph(S)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=checkpointer)
"""


@pytest.mark.parametrize(
    ("app", "given", "revise", "says"),
    [
        ("<two-loops>", '{"request": "r"}', 'request="r2"', "several loops; one loop is"),
        (
            "../revapp/subgraph_report.py:make_persistent_graph",
            '{"request": "r", "style": "plain"}',
            'style="formal"',
            "the subgraph research is compiled with a checkpointer of its own",
        ),
        (
            "approval_desk.py",
            '{"to": "ada", "request": "r"}',
            'request="r2"',
            "the fault-free run parked at an interrupt",
        ),
        ("<raises>", '{"request": "r"}', 'request="r2"', "raised ValueError: no model configured"),
        # routing by Command(goto=...): a supervisor of two workers joins its own branches (as
        # with a conditional edge); one with no destinations declared is seen in the fault-free
        # run
        ("<supervisors>:two_workers", '{"request": "r"}', 'request="r2"', "joins the branches"),
        ("<supervisors>:plain", '{"request": "r"}', 'request="r2"', "no destinations declared"),
        # LangChain's create_agent builds its routers untraced (RunnableCallable(trace=False)):
        # what they choose cannot be heard
        (
            "lc_agent.py",
            '{"messages": [{"role": "user", "content": "refund order 42"}]}',
            'messages=[{"role": "user", "content": "refund order 43"}]',
            "the conditional edge of HumanInTheLoopMiddleware.after_model runs untraced",
        ),
    ],
)
def test_an_unseen_shape_is_refused_before_any_cell(
    tmp_path: Path, app: str, given: str, revise: str, says: str
) -> None:
    if app.startswith("<"):  # <SOURCE> or <SOURCE>:FACTORY, written here
        key, _, factory = app.partition(":")
        source = tmp_path / "userapp.py"
        sources = {"<raises>": RAISES, "<two-loops>": TWO_LOOPS, "<supervisors>": SUPERVISORS}
        source.write_text(sources[key])
        spec = f"{source}:{factory or 'build'}"
    else:
        path = APPS / app
        spec = str(path) if ":" in app else f"{path}:build"
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", spec,
        "--input", given, "--revise", revise, "--out", tmp_path / "out", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 2, done
    assert says in done.stderr, done.stderr
    assert not (tmp_path / "out" / "traces").exists()


ONE_WAY = """
import operator
from typing import Annotated, TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

class S(TypedDict, total=False):
    topics: list[str]
    notes: Annotated[list[str], operator.add]
    digest: str

def fan(s):
    return [Send("research", t) for t in s["topics"]]

def back(s):
    return "digest"

def build(checkpointer):
    graph = StateGraph(S)
    graph.add_node("plan", lambda s: {})
    graph.add_node("research", lambda topic: {"notes": [f"n:{topic}"]})
    graph.add_node("digest", lambda s: {"digest": ";".join(sorted(s["notes"]))})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", fan, ["research"])
    graph.add_conditional_edges("research", back, ["digest"])
    graph.add_edge("digest", END)
    return graph.compile(checkpointer=checkpointer)
"""


def test_a_conditional_edge_with_one_destination_is_a_static_edge(tmp_path: Path) -> None:
    """A router whose path_map names one node can go nowhere else (LangGraph refuses a return
    outside the map), so it is an edge -- here out of a Send target, which was refused before
    ("research gets Send tasks and routes itself"), as LangChain's create_agent routes its tools
    node back to the model."""
    source = tmp_path / "oneway.py"
    source.write_text(ONE_WAY)
    given, revise = '{"topics": ["a", "b"]}', 'topics=["a", "c"]'
    valid = _run(tmp_path / "validity", f"{source}:build", given, revise, "validity")
    edges = read_trace_file(Path(valid["cells"][0]["trace"]))[0]["workflow"]["edges"]
    assert ["research#1", "digest"] in edges and ["research#2", "digest"] in edges
    assert len(valid["cells"]) == 8 and valid["exit"] == 0, valid
    assert {c["status"] for c in valid["cells"]} == {"conforms"}
    stale = _run(tmp_path / "stale", f"{source}:build", given, revise, "stale")
    statuses = {c["cell"]: c["properties"] for c in stale["cells"]}
    assert statuses["app-stale-commit-digest"] == ["NoStaleCommit"], statuses


ASYNC_APP = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'plan_execute.py'}:make_async_graph"


def _run(tmp_path: Path, app: str, given: str, revise: str, policy: str) -> dict[str, Any]:
    """`run revision --app` of `app` to its JSON summary, with its exit code as `exit`."""
    done = run_cli(
        "run", "revision", "--policy", policy, "--app", app, "--input", given,
        "--revise", revise, "--out", tmp_path, "--format", "json", "--no-progress", timeout=300,
    )  # fmt: skip
    done.assert_no_traceback()
    summary = done.json()
    summary["exit"] = done.returncode
    return summary


def _async_run(tmp_path: Path, policy: str) -> dict[str, Any]:
    return _run(tmp_path, ASYNC_APP, '{"request": "r0", "notes": "n0"}', 'notes="n1"', policy)


def test_an_async_graph_is_revised_through_astream(tmp_path: Path) -> None:
    """The async twin of plan_execute: the same points, verdicts and model calls as the
    synchronous graph (docs/revision.md: 60 against suffix's 69 and full's 81)."""
    summary = _async_run(tmp_path, "validity")
    assert summary["exit"] == 0, summary
    assert len(summary["cells"]) == 12
    assert all(c["status"] == "conforms" for c in summary["cells"])
    figures = summary["figures"]
    assert (figures["model_calls"], figures["suffix_calls"], figures["full_calls"]) == (60, 69, 81)


@pytest.mark.slow
def test_the_stale_baseline_is_caught_on_the_async_graph(tmp_path: Path) -> None:
    summary = _async_run(tmp_path, "stale")
    assert summary["exit"] == 1, summary
    assert sum(c["status"] == "violates" for c in summary["cells"]) == 9


def test_an_unseen_graph_with_a_conditional_edge_runs(tmp_path: Path) -> None:
    """tests/fixtures/apps/triage.py (written for the other suites, never for this one): a
    classifier routes a ticket to one of three desks. A new ticket text moves it from the bugs
    desk to billing: every cell conforms under validity."""
    app, given = f"{APPS / 'triage.py'}:build", '{"text": "my app crashed"}'
    summary = _run(tmp_path, app, given, 'text="I was charged twice"', "validity")
    assert summary["exit"] == 0, summary
    assert len(summary["cells"]) == 6
    assert all(c["status"] == "conforms" for c in summary["cells"])


@pytest.mark.slow
def test_an_unseen_graph_with_a_send_fan_out_runs(tmp_path: Path) -> None:
    """tests/fixtures/apps/fanout_digest.py (written for the other suites): a splitter names
    three documents of a topic and fans out one summarizer per document with `Send`; a new
    topic renames every document. Every cell conforms under validity (the three summarizers
    are slots summarize#1..#3 of split's fan-out); its cache writes, done inside the node,
    are not declared effects and are not judged."""
    app = f"{APPS / 'fanout_digest.py'}:build"
    summary = _run(tmp_path, app, '{"topic": "tla"}', 'topic="pluscal"', "validity")
    assert summary["exit"] == 0, summary
    assert len(summary["cells"]) == 13
    assert all(c["status"] == "conforms" for c in summary["cells"])


def test_an_unseen_graph_with_a_subgraph_runs(tmp_path: Path) -> None:
    """tests/fixtures/apps/research_subgraph.py (written for the recovery suite): a compiled
    research graph added as one node. A new topic re-runs it: every cell conforms under
    validity, the subgraph one node whose model call inside is a point like any other."""
    app = f"{APPS / 'research_subgraph.py'}:build"
    summary = _run(tmp_path, app, '{"topic": "tides"}', 'topic="waves"', "validity")
    assert summary["exit"] == 0, summary
    assert "app-validity-call-1" in [c["cell"] for c in summary["cells"]]  # inside the subgraph
    assert len(summary["cells"]) == 7
    assert all(c["status"] == "conforms" for c in summary["cells"])


def test_a_subgraph_reads_only_its_own_input_keys(tmp_path: Path) -> None:
    """tests/fixtures/revapp/subgraph_report.py: the subgraph is handed the whole state but
    takes in only `request` (its own state's keys). A new style, read by `write` only, keeps
    the subgraph's two model calls under validity; `stale`, which lets `write` commit on the
    old style, is rejected where `write` read it before the revision."""
    app = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'subgraph_report.py'}:make_graph"
    given = '{"request": "solar", "style": "plain"}'
    validity = _run(tmp_path / "v", app, given, 'style="formal"', "validity")
    assert validity["exit"] == 0, validity
    assert all(c["status"] == "conforms" for c in validity["cells"])
    figures = validity["figures"]
    assert (figures["model_calls"], figures["full_calls"]) == (24, 38)
    stale = _run(tmp_path / "s", app, given, 'style="formal"', "stale")
    assert stale["exit"] == 1, stale
    broken = [c for c in stale["cells"] if c["status"] == "violates"]
    assert len(broken) == 3 and all(c["properties"] == ["NoStaleCommit"] for c in broken)


ASKS_FOREVER = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

class S(TypedDict, total=False):
    request: str
    asked: int

def ask(s):
    interrupt("again?")
    return {"asked": s.get("asked", 0) + 1}

def build(checkpointer):
    graph = StateGraph(S)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", lambda s: "ask", ["ask"])
    return graph.compile(checkpointer=checkpointer)
"""


def test_a_graph_that_waits_for_a_human_runs_with_an_answer(tmp_path: Path) -> None:
    """tests/fixtures/apps/approval_desk.py (refused before: it parks at `interrupt()`): with
    `--answer true` every interrupt is answered, the approver's attempt spans its wait, and a
    new request also arrives while it waits (`parked-approve`). Every cell conforms under
    validity; stale is rejected in every cell."""
    app, given = f"{APPS / 'approval_desk.py'}:build", '{"to": "ada", "request": "r"}'
    statuses = {}
    for policy in ("validity", "stale"):
        done = run_cli(
            "run", "revision", "--policy", policy, "--app", app, "--input", given,
            "--revise", 'request="r2"', "--answer", "true", "--out", tmp_path / policy,
            "--format", "json", "--no-progress", timeout=300,
        )  # fmt: skip
        done.assert_no_traceback()
        statuses[policy] = {c["cell"]: c["status"] for c in done.json()["cells"]}
    assert "app-validity-parked-approve" in statuses["validity"]
    assert set(statuses["validity"].values()) == {"conforms"}
    assert set(statuses["stale"].values()) == {"violates"}
    source = tmp_path / "forever.py"
    source.write_text(ASKS_FOREVER)
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", f"{source}:build", "--input",
        '{"request": "r"}', "--revise", 'request="r2"', "--answer", '"yes"', "--out",
        tmp_path / "forever", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 2 and "still parked after 32 answers" in done.stderr, done


@pytest.mark.parametrize("compiled", ["before", "after"])
def test_a_static_interrupt_is_a_pause_a_revision_can_arrive_in(
    tmp_path: Path, compiled: str
) -> None:
    """interrupt_before/interrupt_after (refused before): the run waits between two steps, no
    attempt in flight, and goes on as LangGraph resumes it (`invoke(None)`); a revision may
    also arrive while it waits (`paused-answer`). Every cell conforms under validity; under
    stale the pause's cell is rejected too (the reply is computed from the old draft)."""
    source = tmp_path / "userapp.py"
    source.write_text(STATIC_INTERRUPTS)
    statuses = {}
    for policy in ("validity", "stale"):
        done = invoke(
            "run", "revision", "--policy", policy, "--app", f"{source}:{compiled}", "--input",
            '{"request": "r"}', "--revise", 'request="r2"', "--out", tmp_path / policy,
            "--format", "json", "--no-progress",
        )  # fmt: skip
        done.assert_no_traceback()
        statuses[policy] = {c["cell"]: c["status"] for c in done.json()["cells"]}
    assert "app-validity-paused-answer" in statuses["validity"]
    assert set(statuses["validity"].values()) == {"conforms"}, statuses
    assert set(statuses["stale"].values()) == {"violates"}, statuses


def test_the_prebuilt_agent_with_its_tools_approved_runs(tmp_path: Path) -> None:
    """tests/fixtures/revapp/react_prebuilt.py:make_approved_graph -- `create_react_agent`
    with `interrupt_before=["tools"]`, LangGraph's tutorial for a human approving tool calls:
    a new user message at every point, the wait for the approval included, conforms under
    validity."""
    app = f"{ROOT / 'tests' / 'fixtures' / 'revapp' / 'react_prebuilt.py'}:make_approved_graph"
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", app, "--input",
        '{"messages": [["user", "where is my order o1?"]]}', "--revise",
        'messages=[["user", "and order o2?"]]', "--send-bound", "2", "--loop-bound", "2",
        "--out", tmp_path / "out", "--format", "json", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    statuses = {c["cell"]: c["status"] for c in done.json()["cells"]}
    assert "app-validity-paused-tools" in statuses
    assert set(statuses.values()) == {"conforms"}, statuses


DEFERRED = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    question: str
    a: str
    b: str
    answer: str

def build(checkpointer):
    graph = StateGraph(S)
    graph.add_node("left", lambda s: {"a": "L" + s["question"]})
    graph.add_node("right", lambda s: {"b": "R" + s["question"]})
    graph.add_node("join", lambda s: {"answer": s.get("a", "") + s.get("b", "")}, defer=True)
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge("left", "join")
    graph.add_edge("right", "join")
    graph.add_edge("join", END)
    return graph.compile(checkpointer=checkpointer)
"""


def test_a_run_that_stops_with_work_left_and_no_interrupt_is_recorded_as_it_is(
    tmp_path: Path,
) -> None:
    """A deferred join under `stale`: after the write-through the run stops with `join` still
    next and no interrupt. That is no static interrupt to go on from (the graph has none): the
    trace ends as LangGraph left it and is judged (an early version of static interrupts went
    on from it 32 times and recorded no cell)."""
    source = tmp_path / "userapp.py"
    source.write_text(DEFERRED)
    done = invoke(
        "run", "revision", "--policy", "stale", "--app", f"{source}:build", "--input",
        '{"question": "q"}', "--revise", 'question="q2"', "--out", tmp_path / "out",
        "--format", "json", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    assert {c["status"] for c in done.json()["cells"]} == {"violates"}, done.json()["cells"]


COMMAND_TRIAGE = """
from typing import Literal, TypedDict
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

class S(TypedDict, total=False):
    request: str
    kind: str
    reply: str

def triage(s) -> Command[Literal["billing", "support"]]:
    kind = "billing" if "bill" in s["request"] else "support"
    return Command(update={"kind": kind}, goto=kind)

def build(checkpointer):
    graph = StateGraph(S)
    graph.add_node("triage", triage)
    graph.add_node("billing", lambda s: {"reply": "billing: " + s["request"]})
    graph.add_node("support", lambda s: {"reply": "support: " + s["request"]})
    graph.add_node("send", lambda s: {"reply": s["reply"] + "."})
    graph.add_edge(START, "triage")
    graph.add_edge("billing", "send")
    graph.add_edge("support", "send")
    graph.add_edge("send", END)
    return graph.compile(checkpointer=checkpointer)
"""


def test_a_node_that_routes_by_command_goto_is_a_router(tmp_path: Path) -> None:
    """`triage` returns Command(goto=...) with its destinations in its return annotation: it
    is read as a router whose choice is its own output (a `route` event of its attempt). A
    new request that moves the route from billing to support conforms under validity and
    suffix at every point; stale is rejected at every point. Before, such a graph ran with its
    routes unseen, and a correct policy was judged violating in every cell."""
    source = tmp_path / "userapp.py"
    source.write_text(COMMAND_TRIAGE)
    statuses = {}
    for policy in ("validity", "suffix", "stale"):
        done = invoke(
            "run", "revision", "--policy", policy, "--app", f"{source}:build", "--input",
            '{"request": "my bill"}', "--revise", 'request="my laptop"', "--out",
            tmp_path / policy, "--format", "json", "--no-progress",
        )  # fmt: skip
        done.assert_no_traceback()
        statuses[policy] = {c["status"] for c in done.json()["cells"]}
    assert statuses == {"validity": {"conforms"}, "suffix": {"conforms"}, "stale": {"violates"}}
    trace = (tmp_path / "validity" / "traces" / "app-validity-node-billing.jsonl").read_text()
    assert '"ev": "route", "attempt": "a1", "to": ["billing"]' in trace
    assert '"to": ["support"]' in trace and '"node": "support"' in trace
    # a supervisor of one worker, in a loop (supervisor -> researcher -> supervisor): its laps
    (tmp_path / "supervisor.py").write_text(SUPERVISORS)
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", f"{tmp_path / 'supervisor.py'}:"
        "annotated", "--input", '{"request": "r"}', "--revise", 'request="r2"', "--out",
        tmp_path / "supervisor", "--format", "json", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    cells = {c["cell"]: c["status"] for c in done.json()["cells"]}
    assert "app-validity-node-supervisor(2)" in cells, cells
    assert set(cells.values()) == {"conforms"}, cells
