"""The pydantic-graph crash matrix: a four-node line and a loop, SIGKILL at every node's start,
after its effect, after its `success` was written, and after its successor's snapshot;
recovery by `Graph.iter_from_persistence` as the docs show; two resumers at once."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from rctools.suite.command import require
from rctools.suite.phases import record_phased_cell
from rctools.suite.reports import Cell, CellReport

require("pydantic_graph")

DOCS = "docs/runtimes/pydantic-graph.md"
# pydantic-graph documents snapshots written before the next node runs (sync) and nothing
# about effects or exclusion: the strictest levels for what it does not say, no lease.
DECLARED = {"durability": "sync", "effects_default": "exactly-once", "fencing": "none"}
NODES = {"linear": ["Reserve", "Charge", "Mail", "Ship"], "loop": ["Plan", "Work", "Report"]}
POINTS = (
    ("start", "after its run was marked running"),
    ("effect", "after its effect"),
    ("recorded", "after its success was written, before its successor's snapshot"),
    ("snapshotted", "after its successor's snapshot was written"),
)


def w(role: str, proc: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "proc": proc, **extra}


def cells() -> list[Cell]:
    out: list[Cell] = []

    def add(name: str, graph: str, what: str, phases: list[list[dict[str, Any]]]) -> None:
        out.append(Cell(name, graph, what, {"graph": graph, "phases": phases}))

    for graph in ("linear", "loop"):
        add(f"{graph}-clean", graph, "no fault", [[w("run", "w1")]])
        add(
            f"{graph}-kill-initialized",
            graph,
            "SIGKILL after initialize, before the first node; iter_from_persistence",
            [[w("run", "w1", kill_at="initialized")], [w("recover", "w2")]],
        )
        for node in NODES[graph]:
            visits = 3 if node == "Work" else 1
            points = POINTS if graph == "linear" or node == "Work" else (POINTS[1], POINTS[3])
            for nth in range(1, visits + 1):
                for point, words in points:
                    suffix = f"-{nth}" if visits > 1 else ""
                    at = f"{node}.{point}" + (f"#{nth}" if visits > 1 else "")
                    add(
                        f"{graph}-kill-{node.lower()}{suffix}-{point}",
                        graph,
                        f"SIGKILL in {node}"
                        + (f" (visit {nth})" if visits > 1 else "")
                        + f" {words}; iter_from_persistence",
                        [[w("run", "w1", kill_at=at)], [w("recover", "w2")]],
                    )
    add(
        "linear-two-resumers",
        "linear",
        "SIGKILL after Charge's successor snapshot; two processes resume at once",
        [[w("run", "w1", kill_at="Charge.snapshotted")], [w("recover", "w2"), w("recover", "w3")]],
    )
    add(
        "loop-two-resumers",
        "loop",
        "SIGKILL after the 2nd Work's successor snapshot; two processes resume at once",
        [[w("run", "w1", kill_at="Work.snapshotted#2")], [w("recover", "w2"), w("recover", "w3")]],
    )
    add(
        "linear-double-kill",
        "linear",
        "SIGKILL after Reserve's successor snapshot, the recovery after Mail's; resume again",
        [
            [w("run", "w1", kill_at="Reserve.snapshotted")],
            [w("recover", "w2", kill_at="Mail.snapshotted")],
            [w("recover", "w3")],
        ],
    )
    add(
        "loop-double-kill",
        "loop",
        "SIGKILL after the 1st Work's successor snapshot, the recovery after its 1st; again",
        [
            [w("run", "w1", kill_at="Work.snapshotted#1")],
            [w("recover", "w2", kill_at="Work.snapshotted#1")],
            [w("recover", "w3")],
        ],
    )
    add(
        "linear-kill-charge-effect-retry",
        "linear",
        "SIGKILL in Charge after its effect; the user resumes twice",
        [[w("run", "w1", kill_at="Charge.effect")], [w("recover", "w2")], [w("recover", "w3")]],
    )
    return out


def runtime() -> dict[str, str]:
    return {"name": "pydantic-graph", "version": importlib.metadata.version("pydantic-graph")}


def record_cell(cell: Cell, traces: Path, scratch: Path) -> CellReport:
    thread = f"run-{cell.name}"
    meta = {
        "runtime": "pydantic-graph",
        "version": runtime()["version"],
        "backend": "file",
        "nodes": NODES[cell.params["graph"]],
        **DECLARED,
    }

    def job(work: Path) -> dict[str, Any]:
        return {
            "graph": cell.params["graph"],
            "run": thread,
            "store": str(work / "run.json"),
            "effects": str(work / "effects.jsonl"),
        }

    return record_phased_cell(
        cell,
        traces,
        scratch,
        worker="rctools.pydantic_graph.worker",
        thread=thread,
        meta=meta,
        job=job,
    )
