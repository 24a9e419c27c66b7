"""`run revision --app` on graph shapes it cannot run yet, each a fixture app written as a user
writes one (tests/fixtures/apps/): every one is refused before any cell, with its own message
and exit code 2 -- never a traceback, never a verdict on a run the suite could not follow.

Before these refusals an async-only graph ended in an internal error (exit 3) and a graph that
parks at `interrupt()` was recorded as if it had finished, and judged violating
OracleEquivalence in every cell.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, invoke

APPS = ROOT / "tests" / "fixtures" / "apps"

STATIC_INTERRUPT = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    request: str
    reply: str

def build(checkpointer):
    graph = StateGraph(S)
    graph.add_node("answer", lambda s: {"reply": s["request"]})
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=checkpointer, interrupt_before=["answer"])
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
        (
            "react_refunds.py",
            '{"customer": "ada", "order": "o1"}',
            'order="o2"',
            "conditional edges (add_conditional_edges, Send) are not supported yet (nodes "
            "['agent'])",
        ),
        (
            "fanout_digest.py",
            '{"topic": "tla"}',
            'topic="pluscal"',
            "conditional edges (add_conditional_edges, Send) are not supported yet (nodes "
            "['split'])",
        ),
        ("research_subgraph.py", '{"topic": "tla"}', 'topic="x"', "subgraphs are not supported"),
        (
            "async_shop.py",
            '{"customer": "ada"}',
            'customer="bob"',
            "async-only nodes are not supported yet (the runs stream synchronously): hold, "
            "notify, pick, send",
        ),
        (
            "approval_desk.py",
            '{"to": "ada", "request": "r"}',
            'request="r2"',
            "the fault-free run parked at an interrupt",
        ),
        ("<static>", '{"request": "r"}', 'request="r2"', "interrupt_before/interrupt_after"),
        ("<raises>", '{"request": "r"}', 'request="r2"', "raised ValueError: no model configured"),
    ],
)
def test_an_unseen_shape_is_refused_before_any_cell(
    tmp_path: Path, app: str, given: str, revise: str, says: str
) -> None:
    if app.startswith("<"):
        source = tmp_path / "userapp.py"
        source.write_text(STATIC_INTERRUPT if app == "<static>" else RAISES)
        path = source
    else:
        path = APPS / app
    done = invoke(
        "run", "revision", "--policy", "validity", "--app", f"{path}:build",
        "--input", given, "--revise", revise, "--out", tmp_path / "out", "--no-progress",
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 2, done
    assert says in done.stderr, done.stderr
    assert not (tmp_path / "out" / "traces").exists()
