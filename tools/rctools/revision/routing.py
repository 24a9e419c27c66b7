"""The conditional edges of a user's StateGraph, as DagRevision's routes a node computes.

A conditional edge (`add_conditional_edges(node, router, path_map)`) is evaluated by LangGraph
inside `node`'s task, after the node's own function, on the channels of the router's input
schema (or the node's). So the choice is part of that node's attempt: the trace records it as a
`route` event of the attempt, and the router's input channels that are input paths are reads of
the attempt. A branch target, and every node it dominates (every path to it from START passes
through the target), is on the route only while the router's current output chose the target:
the header's `branches`. A node below several branches that every branch reaches (a joiner)
needs no guard: it runs whichever branch was chosen.

Said up front, never guessed (`UnsupportedApp`, exit code 2): a router whose destinations
LangGraph cannot name (no path_map, no `Literal` return type), `Send` (a fan-out whose tasks are
data, not nodes of the workflow), two conditional edges on one node, a branch target reached
another way too (its activity would be a disjunction the contract does not state), and a node
that joins only some of a router's branches, or all of them when the router may end the run
(the same).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, get_type_hints

import networkx as nx
from langgraph.graph import END, START

from rctools.langgraph.app import AppError


class UnsupportedApp(AppError):
    """The graph's shape is one `run revision --app` cannot run yet (a usage error, exit 2)."""


@dataclass(frozen=True)
class Router:
    """One node's conditional edge."""

    node: str
    ends: dict[str, str]
    """What the router may return -> the node it goes to (END: the run ends)."""
    reads: list[str]
    """The channels LangGraph hands the router."""
    name: str
    """The router function's run name (what its callback events are called)."""

    @property
    def targets(self) -> list[str]:
        return sorted({d for d in self.ends.values() if d != END})

    def destinations(self, returned: Any) -> list[str]:
        """The nodes a router's return value goes to (END left out)."""
        labels = returned if isinstance(returned, list | tuple) else [returned]
        return sorted({self.ends.get(str(x), x) for x in labels} - {END})

    def guards(
        self, dag: nx.DiGraph, entry: set[str], reachable_end: bool
    ) -> Iterator[tuple[str, str]]:
        """(node, target): `node` runs only while this router chose `target`."""
        for t in self.targets:
            others = set(dag.predecessors(t)) - {self.node}
            if others or t in entry:
                raise UnsupportedApp(
                    f"run revision --app: {t} is a branch of {self.node}'s conditional edge "
                    f"and is reached another way too ({', '.join(sorted(others)) or 'START'}); "
                    "not supported yet"
                )
        rooted = nx.DiGraph(dag)
        rooted.add_edges_from((START, n) for n in entry)
        idom = nx.immediate_dominators(rooted, START)
        below = {t: nx.descendants(dag, t) | {t} for t in self.targets}
        for n in sorted(set().union(*below.values())):
            doms = _dominators(idom, n)
            ts = [t for t in self.targets if t in doms]
            if ts:
                yield from ((n, t) for t in ts)
                continue
            if reachable_end or not all(n in below[t] for t in self.targets):
                raise UnsupportedApp(
                    f"run revision --app: {n} joins "
                    + (
                        f"the branches of {self.node}'s conditional edge, which may also end "
                        "the run (END)"
                        if reachable_end
                        else f"only some of the branches of {self.node}'s conditional edge"
                    )
                    + "; whether it runs is not stated by one branch: not supported yet"
                )


def _dominators(idom: dict[str, str], node: str) -> set[str]:
    """`node` and every node that dominates it (START excluded)."""
    out = set()
    while node != START:
        out.add(node)
        node = idom[node]
    return out


def _returns_send(func: Any) -> bool:
    try:
        hint = get_type_hints(func).get("return")
    except Exception:  # an annotation that does not resolve says nothing either way
        return False
    return hint is not None and "Send" in repr(hint)


def send_refusal(node: str) -> UnsupportedApp:
    return UnsupportedApp(
        f"run revision --app: Send (the conditional edge of {node} fans out tasks) is not "
        "supported yet: how many tasks run is data, not a node of the workflow"
    )


def routers_of(builder: Any) -> dict[str, Router]:
    """Every conditional edge of the builder, or why it cannot be followed."""
    routers: dict[str, Router] = {}
    for node, specs in builder.branches.items():
        if not specs:
            continue
        if len(specs) > 1:
            raise UnsupportedApp(
                f"run revision --app: {node} has {len(specs)} conditional edges; one per node "
                "is supported"
            )
        ((_, spec),) = specs.items()
        func = getattr(spec.path, "func", None) or getattr(spec.path, "afunc", None)
        if func is not None and _returns_send(func):
            raise send_refusal(node)
        if spec.ends is None:
            raise UnsupportedApp(
                f"run revision --app: the conditional edge of {node} does not name where it "
                "may go; give add_conditional_edges a path_map, or the router a Literal "
                "return type"
            )
        schema = spec.input_schema or builder.nodes[node].input_schema
        reads = sorted(builder.schemas[schema])
        ends = {str(k): v for k, v in spec.ends.items()}
        routers[node] = Router(node, ends, reads, spec.path.get_name())
    return routers
