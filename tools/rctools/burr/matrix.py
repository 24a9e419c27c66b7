"""The Burr crash matrix: a four-action line and a loop on SQLitePersister, SIGKILL at every
action's start, after its effect, before and after its state was saved; recovery by
`initialize_from(persister, resume_at_next_action=True)` as the docs show; resumers at once."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from rctools.burr.worker import GRAPHS
from rctools.suite.cells import worker as w
from rctools.suite.command import require
from rctools.suite.phases import record_phased_cell
from rctools.suite.reports import Cell, CellReport

require("burr")

DOCS = "docs/runtimes/burr.md"
# Burr saves after every step before the next one starts (sync); it documents nothing about an
# action's side effects (strictest level) and no lease on an app id.
DECLARED = {"durability": "sync", "effects_default": "exactly-once", "fencing": "none"}
POINTS = (
    ("start", "as it starts"),
    ("effect", "after its effect"),
    ("saving", "after it returned, before its state was saved"),
    ("saved", "after its state was saved"),
)
DEFAULT_STATE = {"done": [], "made_by": "init", "loops": 0}


def cells() -> list[Cell]:
    out: list[Cell] = []

    def add(name: str, graph: str, what: str, phases: list[list[dict[str, Any]]]) -> None:
        out.append(Cell(name, graph, what, {"graph": graph, "phases": phases}))

    for graph in ("linear", "loop"):
        add(f"{graph}-clean", graph, "no fault", [[w("run", "w1")]])
        for node in GRAPHS[graph]:
            visits = 3 if node == "work" else 1
            points = POINTS if graph == "linear" or node == "work" else (POINTS[1], POINTS[3])
            for nth in range(1, visits + 1):
                for point, words in points:
                    suffix = f"-{nth}" if visits > 1 else ""
                    at = f"{node}.{point}" + (f"#{nth}" if visits > 1 else "")
                    add(
                        f"{graph}-kill-{node}{suffix}-{point}",
                        graph,
                        f"SIGKILL in {node}"
                        + (f" (visit {nth})" if visits > 1 else "")
                        + f" {words}; initialize_from(resume_at_next_action=True)",
                        [[w("run", "w1", kill_at=at)], [w("recover", "w2")]],
                    )
    add(
        "linear-kill-returned-recover",
        "linear",
        "SIGKILL after the run returned; the application is built again from the persister",
        [[w("run", "w1", kill_at="returned")], [w("recover", "w2")]],
    )
    add(
        "linear-kill-recovery-loaded",
        "linear",
        "SIGKILL in charge after its effect; the recovery is SIGKILLed right after it loaded",
        [
            [w("run", "w1", kill_at="charge.effect")],
            [w("recover", "w2", kill_at="loaded")],
            [w("recover", "w3")],
        ],
    )
    add(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect, the recovery in mail after its effect; again",
        [
            [w("run", "w1", kill_at="charge.effect")],
            [w("recover", "w2", kill_at="mail.effect")],
            [w("recover", "w3")],
        ],
    )
    add(
        "loop-double-kill",
        "loop",
        "SIGKILL after the 1st work was saved, the recovery after its 1st work; again",
        [
            [w("run", "w1", kill_at="work.saved#1")],
            [w("recover", "w2", kill_at="work.saved#1")],
            [w("recover", "w3")],
        ],
    )
    add(
        "linear-two-resumers",
        "linear",
        "SIGKILL after charge was saved; two processes resume at once, both through the next "
        "action's effect before either saves",
        [
            [w("run", "w1", kill_at="charge.saved")],
            [w("recover", "w2", barrier=2), w("recover", "w3", barrier=2)],
        ],
    )
    add(
        "loop-two-resumers",
        "loop",
        "SIGKILL after the 2nd work was saved; two processes resume at once, both through the "
        "next action's effect before either saves",
        [
            [w("run", "w1", kill_at="work.saved#2")],
            [w("recover", "w2", barrier=2), w("recover", "w3", barrier=2)],
        ],
    )
    return out


def runtime() -> dict[str, str]:
    return {"name": "burr", "version": importlib.metadata.version("apache-burr")}


def record_cell(cell: Cell, traces: Path, scratch: Path) -> CellReport:
    thread = f"app-{cell.name}"
    meta = {
        "runtime": "burr",
        "version": runtime()["version"],
        "backend": "sqlite",
        "nodes": GRAPHS[cell.params["graph"]],
        **DECLARED,
    }

    def job(work: Path) -> dict[str, Any]:
        return {
            "graph": cell.params["graph"],
            "app": thread,
            "db": str(work / "burr.sqlite"),
            "effects": str(work / "effects.jsonl"),
            "default_state": DEFAULT_STATE,
        }

    return record_phased_cell(
        cell, traces, scratch, worker="rctools.burr.worker", thread=thread, meta=meta, job=job
    )
