"""A loop of a user's StateGraph, as DagRevision's DAG: bounded laps.

A graph with a cycle runs a node several times in one run -- a ReAct agent (agent -> tools ->
agent until the model answers), LLMCompiler (plan -> join -> plan until the joiner is done),
plan-and-execute (agent -> replan -> agent) -- and DagRevision's workflow is a DAG whose nodes
have one current output each. So the loop is stated as K *laps* (`--loop-bound K`): every node
the loop's head reaches is K nodes of the workflow, `N(1)..N(K)`; an edge back to the head goes
from lap k to lap k+1; the lap-k copy of a router chooses among lap-k nodes (lap k+1 for the
head), so lap k+1 is a branch of lap k's router and runs only while that router chose to go
round again. The k-th run of N on the current route is an attempt of `N(k)`: a revision that
re-runs lap 1 makes every later lap stale with it, and a lap the new route no longer takes
leaves the route. A run that would start a lap beyond K is said (`LoopBound`), never truncated.

A `Send` fan-out inside the loop (LangGraph's prebuilt ReAct agent sends one task per tool call)
sends, in lap k, to that lap's slots `T#1(k)..T#B(k)`.

Supported: one loop, entered only at its head (every edge into it from outside, and START's,
goes to the head), with no loop inside it (the body without its edges back to the head is a
DAG), and no `Send` fan-out into it from outside. Anything else is said up front.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import networkx as nx
from langgraph.graph import END

from rctools.revision.routing import Router, UnsupportedApp


class LoopBound(UnsupportedApp):
    """A run went round its loop more times than the laps the workflow declares."""


DEFAULT_LOOP_BOUND = 4
"""Laps of a loop when `--loop-bound` is not given."""


def lap(node: str, k: int) -> str:
    """The workflow node of `node`'s k-th lap: `agent(2)`."""
    return f"{node}({k})"


def beyond(node: str, runs: int, bound: int) -> LoopBound:
    return LoopBound(
        f"run revision --app: {node} runs {runs} times round the graph's loop, above the bound "
        f"of {bound} lap{'s' * (bound > 1)}; give --loop-bound {runs} (or more)"
    )


@dataclass
class Unrolled:
    """The graph with its loop unrolled: nodes, edges, routers (keyed by workflow node),
    START's nodes, `laps` (a LangGraph node of the loop -> its laps, in order) and `slots` (a
    Send target -> its slots in every lap)."""

    nodes: list[str]
    edges: set[tuple[str, str]]
    routers: dict[str, Router]
    entry: set[str]
    laps: dict[str, list[str]]
    slots: dict[str, list[str]]


def unroll(
    dag: nx.DiGraph,
    routers: dict[str, Router],
    entry: set[str],
    slots: dict[str, list[str]],
    bound: int,
) -> Unrolled:
    """`dag` (static and conditional edges, with a cycle) as `bound` laps of its loop, or why
    the loop is not one this can state."""
    loops = [c for c in nx.strongly_connected_components(dag) if len(c) > 1]
    loops += [{n} for n in dag.nodes if dag.has_edge(n, n)]
    if len(loops) > 1:
        raise UnsupportedApp(
            "run revision --app: the graph has several loops; one loop is supported"
        )
    (loop,) = loops
    heads = {b for a, b in dag.edges if b in loop and a not in loop} | (entry & loop)
    if len(heads) != 1:
        raise UnsupportedApp(
            f"run revision --app: the graph's loop is entered at {', '.join(sorted(heads))}; "
            "a loop entered at one node (its head) is supported"
        )
    (head,) = heads
    body = nx.descendants(dag, head) | {head}
    forward = nx.DiGraph([(a, b) for a, b in dag.edges if a in body and b in body and b != head])
    if not nx.is_directed_acyclic_graph(forward):
        raise UnsupportedApp(
            f"run revision --app: the loop through {head} has a loop inside it; one loop is "
            "supported"
        )
    into = sorted(
        n
        for n, r in routers.items()
        if r.bound and n not in body and body & {s for t in r.sent_to for s in slots.get(t, [])}
    )
    if into:
        raise UnsupportedApp(
            f"run revision --app: a Send fan-out into the loop through {head} from "
            f"{', '.join(into)}; a fan-out inside the loop is supported"
        )

    def at(node: str, k: int) -> str | None:
        """Where an edge of lap k to `node` goes: the next lap for the head (None past the
        last), this lap inside the body, `node` itself outside it."""
        if node == head:
            return lap(head, k + 1) if k < bound else None
        return lap(node, k) if node in body else node

    nodes = [n for n in dag.nodes if n not in body]
    nodes += [lap(n, k) for k in range(1, bound + 1) for n in sorted(body)]
    edges = {(a, b) for a, b in dag.edges if a not in body and b not in body}
    edges |= {(a, lap(head, 1)) for a, b in dag.edges if a not in body and b == head}
    for k in range(1, bound + 1):
        edges |= {(lap(a, k), to) for a, b in dag.edges if a in body and (to := at(b, k))}
    laid: dict[str, Router] = {}
    for n, r in routers.items():
        if r.bound and n in body:  # a fan-out: lap k sends to its own slots T#i(k)
            laid |= {lap(n, k): replace(r, node=lap(n, k), lap=k) for k in range(1, bound + 1)}
            continue
        if n not in body:
            ends = {label: lap(head, 1) if d == head else d for label, d in r.ends.items()}
            laid[n] = replace(r, ends=ends)
            continue
        for k in range(1, bound + 1):
            ends = {
                label: to
                for label, d in r.ends.items()
                if (to := END if d == END else at(d, k)) is not None
            }
            laid[lap(n, k)] = replace(r, node=lap(n, k), ends=ends)
    entry = {lap(head, 1) if n == head else n for n in entry}
    laps = {n: [lap(n, k) for k in range(1, bound + 1)] for n in sorted(body)}
    # a Send target's slots are every lap's: a task sent there runs as one of them
    slots = {t: [c for s in ss for c in laps.get(s, [s])] for t, ss in slots.items()}
    return Unrolled(nodes, edges, laid, entry, laps, slots)
