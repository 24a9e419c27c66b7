"""Writes what the runtime did as a DagRevision trace (format v1): it records, never judges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rctools.revision.workloads import Workload
from rctools.suite.trace import V1, TraceWriter, head


def header(workload: Workload, policy: str, scenario: str, runtime_version: str) -> dict[str, Any]:
    """The trace header: the workflow graph, the paths each node reads, routes and effects."""
    nodes = workload.nodes
    return head(
        "DagRevision",
        "langgraph",
        runtime_version,
        V1,
        policy=policy,
        workload=workload.name,
        scenario=scenario,
        workflow={
            "nodes": workload.order,
            "edges": [[m, n.name] for n in nodes for m in n.after],
            "paths": workload.declared_paths,
            "reads": [{"node": n.name, "path": p} for n in nodes for p in n.reads],
            "routes": [
                {"node": n.name, "path": n.route[0], "value": n.route[1]} for n in nodes if n.route
            ],
            "effects": [n.name for n in nodes if n.effect],
            "values": [{"path": p, "value": workload.inputs[p]} for p in sorted(workload.controls)],
        },
    )


def stage(record: Callable[..., None], attempt: str, *, revocable: bool) -> None:
    """Records that `attempt`'s effect waits in the outbox (staged, not out): every revision
    runtime writes it alike, marking only an irreversible effect (`revocable: false`), so
    the trace says the same of the same move whichever runtime made it."""
    if revocable:
        record("stage", attempt=attempt)
    else:
        record("stage", attempt=attempt, revocable=False)


class Recorder:
    """Collects the events of a run in this process in the order they happen; `write` puts
    them into a trace through the suites' one writer once the run is over."""

    def __init__(self, head: dict[str, Any]) -> None:
        self.head = head
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, ev: str, **fields: Any) -> None:
        self.events.append((ev, fields))

    def write(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        lines = TraceWriter(path, first_seq=1)
        lines.header(self.head)
        for ev, fields in self.events:
            lines.event(ev, **fields)
        lines.close()
