"""What a revision plan is told about each attempt: the one definition both revision runtimes use.

The sequential runtime (`rctools.revision.runtime`, one attempt at a time on a LangGraph graph)
and the racing one (`rctools.revision.racing`, several attempts on worker threads) decide
staleness alike -- an attempt is stale when a version it read, or the route that put it on the
graph, moved, when it left the route, or when its parents are no longer the current commits --
so that definition lives here once, and a planner sees the same `Work` from either runtime;
what a plan's invalidation does to the current commits (drop them, revoke a reversible effect
that is out) and how the plan is recorded are the same in both too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import networkx as nx

from rctools.revision.irreversible import on_route
from rctools.revision.policies import PLANNERS, Graph, Plan, Work
from rctools.revision.workloads import Workload


@dataclass
class Attempt:
    """One attempt of a node, as both runtimes keep it: what it ran under (its parents, the
    versions when it started, what it read) and where its effect is."""

    id: str
    node: str
    parents: tuple[str, ...]
    vers: dict[str, int]
    reads: set[tuple[str, int]] = field(default_factory=set)
    unknown: bool = False
    output: str = ""
    effect: str = "none"  # "none", "staged", "published", "revoked"


class Versioned(Protocol):
    """An input record (flat `Inputs` or `NestedInputs`): its values and each path's version."""

    values: Any
    versions: dict[str, int]


class Staleness:
    """The base of both runtimes: the workload and its DAG, the policy's planner, the current
    commits `cur` and the irreversible effects `sent`; a runtime keeps its `inputs`."""

    inputs: Versioned

    def __init__(self, workload: Workload, policy: str) -> None:
        self.workload = workload
        self.policy = policy
        self.planner = PLANNERS[policy]
        self.dag = nx.DiGraph([(m, n.name) for n in workload.nodes for m in n.after])
        self.dag.add_nodes_from(workload.order)
        self.cur: dict[str, Any] = {}
        self.sent: dict[str, Any] = {}
        """Per node, the attempt whose irreversible effect is out: never revoked, never resent."""

    def _active(self, name: str) -> bool:
        return on_route(self.workload.node(name), self.inputs.values)

    def _touched(self, a: Attempt) -> set[str]:
        return {p for p, v in self.inputs.versions.items() if a.vers[p] != v}

    def _stale(self, a: Attempt) -> bool:
        node = self.workload.node(a.node)
        current = {self.cur[m].id if m in self.cur else None for m in node.after if self._active(m)}
        return (
            any(self.inputs.versions[p] != v for p, v in a.reads)
            or (a.unknown and bool(self._touched(a)))
            or (node.route is not None and node.route[0] in self._touched(a))
            or not self._active(a.node)
            or set(a.parents) != current
        )

    def _graph(self) -> Graph:
        """The workflow as a planner sees it now (who is on the route under the current inputs)."""
        active = frozenset(n for n in self.workload.order if self._active(n))
        return Graph(self.dag, self.workload.order, active)

    def _plan_work(self, items: Iterable[tuple[Attempt, bool]]) -> list[Work]:
        """`Work` for each (attempt, in flight?) pair: blind when read untracked and touched."""
        return [
            Work(a.id, a.node, flight, self._stale(a), a.unknown and bool(self._touched(a)))
            for a, flight in items
        ]

    def _plan_fields(self, plan: Plan) -> dict[str, Any]:
        """The `plan` event's fields (invalidated nodes in the workflow's order)."""
        return {
            "mode": plan.mode,
            "cancel": sorted(plan.cancel),
            "invalidate": [n for n in self.workload.order if n in plan.invalidate],
        }

    def _invalidate(self, names: Iterable[str], record: Callable[..., None]) -> None:
        """Drops the current commits of `names`, in that order; a published effect of a
        reversible node is revoked (recorded with `record`), an irreversible one stays out."""
        for name in names:
            old = self.cur.pop(name)
            if old.effect == "published" and not self.workload.node(name).irreversible:
                old.effect = "revoked"
                record("revoke", attempt=old.id)
