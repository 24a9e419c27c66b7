"""When a revision comes too late for an irreversible effect already out (DagRevision's TooLate).

A full restart's output of a node depends on the versions of the paths it and its ancestors on
the route read or route on (the contract's OracleIn). An irreversible effect out was computed
from exactly that (it went out fenced); a revision that changes one of those versions, or the
route to the node, would need the effect revoked -- which cannot be -- so the runtime refuses
it. Both runtimes (sequential and racing) ask here, from the workload's declared reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rctools.revision.workloads import Node, Workload


def on_route(node: Node, values: Mapping[str, Any]) -> bool:
    return node.route is None or values[node.route[0]] == node.route[1]


def closure(workload: Workload, name: str, values: Mapping[str, Any]) -> frozenset[str]:
    """The paths a full restart's output of `name` depends on, under control values `values`."""
    node = workload.node(name)
    found = set(node.reads) | ({node.route[0]} if node.route else set())
    for m in node.after:
        if on_route(workload.node(m), values):
            found |= closure(workload, m, values)
    return frozenset(found)


def too_late(
    workload: Workload,
    sent: Iterable[str],
    values: Mapping[str, Any],
    changed: set[str],
    control: tuple[str, Any] | None = None,
) -> bool:
    """Accepting a revision that gives the paths `changed` new versions (and, for a control
    revision, sets `control` = (path, value)) would change what an irreversible effect out of
    a node in `sent` was computed from, or take that node off the route."""
    after = {**values, control[0]: control[1]} if control else values
    for name in sent:
        if not on_route(workload.node(name), after):
            return True
        now, then = closure(workload, name, values), closure(workload, name, after)
        if now != then or now & changed:
            return True
    return False
