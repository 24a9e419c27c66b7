"""The four recovery policies: what to cancel and invalidate after a revision.

A policy sees the work (attempts in flight and current committed attempts) and which of it is
stale, and answers with a plan: a mode, the attempts to cancel and the nodes whose committed
output to invalidate. Everything else is kept. `stale` never plans: it is the naive baseline
that keeps running on whatever it already read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import networkx as nx

POLICIES = ("full", "suffix", "stale", "validity")


@dataclass(frozen=True)
class Work:
    """One piece of work a plan decides about."""

    attempt: str
    node: str
    in_flight: bool
    stale: bool
    blind: bool
    """Its reads escaped tracking and something was revised since it started."""


@dataclass(frozen=True)
class Plan:
    mode: str  # "selective", "suffix" or "full"
    cancel: frozenset[str]
    invalidate: frozenset[str]


@dataclass(frozen=True)
class Graph:
    """The workflow as the planner sees it: the DAG, the order, who is on the route now."""

    dag: nx.DiGraph
    order: list[str]
    active: frozenset[str]


def conflicts(work: Collection[Work]) -> set[str]:
    return {w.node for w in work if w.stale}


def affected(graph: Graph, work: Collection[Work]) -> set[str]:
    """The nodes whose work is stale and everything downstream of them, on the route."""
    found = conflicts(work)
    for node in list(found):
        found |= nx.descendants(graph.dag, node)
    return found & graph.active


def suffix(graph: Graph, work: Collection[Work]) -> set[str]:
    """Every node on the route from the earliest conflict on, in the workflow's order."""
    hit = conflicts(work)
    if not hit:
        return set()
    first = min(graph.order.index(n) for n in hit)
    return {n for n in graph.order[first:] if n in graph.active}


def _plan(mode: str, nodes: set[str], graph: Graph, work: Collection[Work]) -> Plan:
    drop = nodes | (set(graph.order) - graph.active)  # off the route: never kept
    return Plan(
        mode,
        frozenset(w.attempt for w in work if w.in_flight and w.node in drop),
        frozenset(w.node for w in work if not w.in_flight and w.node in drop),
    )


def full(graph: Graph, work: Collection[Work]) -> Plan:
    return _plan("full", set(graph.order), graph, work)


def suffix_plan(graph: Graph, work: Collection[Work]) -> Plan:
    return _plan("suffix", suffix(graph, work), graph, work)


def validity(graph: Graph, work: Collection[Work]) -> Plan:
    """The affected set when provenance is complete; the suffix when any is unknown."""
    if any(w.blind for w in work):
        return suffix_plan(graph, work)
    return _plan("selective", affected(graph, work), graph, work)


Planner = Callable[[Graph, Collection[Work]], Plan]

PLANNERS: dict[str, Planner | None] = {
    "full": full,
    "suffix": suffix_plan,
    "stale": None,
    "validity": validity,
}
