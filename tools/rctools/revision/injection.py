"""Where a revision arrives in a run: before a node, inside its model call, or after the run."""

from __future__ import annotations

from dataclasses import dataclass

from rctools.revision.workloads import Revision, Workload


@dataclass(frozen=True)
class Injection:
    """Where the revision arrives: before a node starts, while it runs (inside its model
    call, after its reads), or after the run has finished."""

    point: str  # "before", "during" or "after"
    node: str | None
    revision: Revision

    @property
    def label(self) -> str:
        return f"{self.point}-{self.node}" if self.node else self.point


def injection_points(workload: Workload) -> list[Injection]:
    """Every point of a run: before and during each node on the initial route, and after."""
    points: list[Injection] = []
    for node in workload.nodes:
        if node.route and workload.inputs[node.route[0]] != node.route[1]:
            continue
        points += [
            Injection("before", node.name, workload.revision),
            Injection("during", node.name, workload.revision),
        ]
    return [*points, Injection("after", None, workload.revision)]
