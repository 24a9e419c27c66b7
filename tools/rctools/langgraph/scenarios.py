"""The scenario apps: small real LangGraph graphs whose nodes act like an agent's.

Model calls are deterministic stand-ins; side effects go through `ledger.fire` and
human-in-the-loop questions through `ledger.ask`. Every graph is a DAG in which all paths to
a node have the same length, so LangGraph's supersteps coincide with the contract's steps
(a node runs once its predecessors are done).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from rctools.langgraph.ledger import ask, attempts, fire


class State(TypedDict):
    log: Annotated[list[str], operator.add]


class FlakyToolError(Exception):
    """A tool call that fails once and works when tried again."""


def _node(
    name: str, *, asks: int = 0, effect: bool = True, fail_first: bool = False
) -> Callable[[State, RunnableConfig], dict[str, Any]]:
    def run(state: State, config: RunnableConfig) -> dict[str, Any]:
        answers = [ask(config, f"{name}: approve step {i}?") for i in range(1, asks + 1)]
        if fail_first and attempts(name) == 1:
            raise FlakyToolError(f"{name}: tool unavailable")
        if effect:
            fire(config, f"notify:{name}")
        return {"log": [f"{name}({len(state['log'])}){answers or ''}"]}

    run.__name__ = name
    return run


@dataclass(frozen=True)
class Scenario:
    """A graph and what the driver does with it beyond running it to the end.

    `extra` names what follows the first complete run: `fork` (time travel from the
    checkpoint before `fork_at` runs), `pinned` (resume the parked interrupt's checkpoint a
    second time, with another value), `concurrent-N` (N processes resume the parked
    interrupt at once).
    """

    name: str
    description: str
    build: Callable[[], StateGraph]
    extra: tuple[str, ...] = ()
    fork_at: str = ""


def _chain(fail: bool = False) -> StateGraph:
    g = StateGraph(State)
    for name in ("A", "B", "C"):
        g.add_node(name, _node(name, fail_first=fail and name == "B"))
    g.add_edge(START, "A")
    g.add_edge("A", "B")
    g.add_edge("B", "C")
    g.add_edge("C", END)
    return g


def _fanout() -> StateGraph:
    g = StateGraph(State)
    g.add_node("plan", _node("plan"))
    g.add_node("search", _node("search"))
    g.add_node("lookup", _node("lookup", fail_first=True))
    g.add_node("answer", _node("answer"))
    g.add_edge(START, "plan")
    g.add_edge("plan", "search")
    g.add_edge("plan", "lookup")
    g.add_edge(["search", "lookup"], "answer")
    g.add_edge("answer", END)
    return g


def _asking(asks: int) -> Callable[[], StateGraph]:
    def build() -> StateGraph:
        g = StateGraph(State)
        g.add_node("draft", _node("draft"))
        g.add_node("review", _node("review", asks=asks))
        g.add_node("send", _node("send"))
        g.add_edge(START, "draft")
        g.add_edge("draft", "review")
        g.add_edge("review", "send")
        g.add_edge("send", END)
        return g

    return build


def _retrying() -> StateGraph:
    g = StateGraph(State)
    g.add_node("fetch", _node("fetch"))
    g.add_node(
        "call_tool",
        _node("call_tool", fail_first=True),
        retry_policy=RetryPolicy(
            max_attempts=3,
            initial_interval=0.01,
            jitter=False,
            retry_on=lambda exc: isinstance(exc, FlakyToolError),
        ),
    )
    g.add_node("report", _node("report"))
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "call_tool")
    g.add_edge("call_tool", "report")
    g.add_edge("report", END)
    return g


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("chain", "a linear chain A -> B -> C, each node notifies", lambda: _chain()),
        Scenario(
            "node-error",
            "a linear chain whose B raises on its first attempt; a second invocation resumes",
            lambda: _chain(fail=True),
        ),
        Scenario(
            "fanout",
            "plan -> {search, lookup} -> answer; lookup fails once, search's result is kept",
            _fanout,
        ),
        Scenario(
            "two-interrupts",
            "review asks twice (interrupt, resume, interrupt, resume), then notifies",
            _asking(2),
        ),
        Scenario(
            "retry",
            "call_tool fails once and its RetryPolicy runs it again inside the task",
            _retrying,
        ),
        Scenario(
            "fork",
            "a chain run to the end, then time travel: re-run from the checkpoint before B",
            lambda: _chain(),
            extra=("fork",),
            fork_at="B",
        ),
        Scenario(
            "pinned-twice",
            "review asks once; after it was answered, its checkpoint is resumed again "
            "with another value",
            _asking(1),
            extra=("pinned",),
        ),
        Scenario(
            "concurrent-2",
            "review asks once; two processes resume the parked interrupt at once",
            _asking(1),
            extra=("concurrent-2",),
        ),
        Scenario(
            "concurrent-3",
            "review asks once; three processes resume the parked interrupt at once",
            _asking(1),
            extra=("concurrent-3",),
        ),
    )
}


def workflow_of(graph: StateGraph) -> dict[str, list[Any]]:
    """The header's workflow: the graph's nodes (with the input task) and its edges."""
    nodes = [START, *graph.nodes]
    edges = {(a, b) for a, b in graph.edges if b != END}
    for starts, end in graph.waiting_edges:
        edges |= {(a, end) for a in starts if end != END}
    return {"nodes": nodes, "edges": sorted([a, b] for a, b in edges)}
