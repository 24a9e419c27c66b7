"""The LlamaIndex Workflows crash matrix: a four-step line and a flow whose middle step waits for
a human answer (`ctx.wait_for_event`), `ctx.to_dict()` stored in SQLite at every step boundary;
SIGKILL at every step's start, after its effect, before and after its snapshot was stored;
resume by `workflow.run(ctx=Context.from_dict(workflow, snapshot))` as the docs show, the answer
by `ctx.send_event(HumanResponseEvent(...))`, forks from older snapshots, resumers at once."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from rctools.llamaindex.worker import nodes
from rctools.suite.cells import CellTable
from rctools.suite.cells import worker as w
from rctools.suite.command import require
from rctools.suite.phases import record_phased_cell
from rctools.suite.reports import Cell, CellReport

require("workflows")

DOCS = "docs/runtimes/llamaindex.md"
# The application stores a snapshot at every step boundary before the next step starts (sync);
# LlamaIndex documents that a step waiting for an event replays from its top, and no level for
# a step's side effects otherwise (the strictest applies); no lease on a stored run.
DECLARED = {"durability": "sync", "effects_default": "exactly-once", "fencing": "none"}
POINTS = (
    ("start", "as it starts"),
    ("effect", "after its effect"),
    ("saving", "after it returned, before its snapshot was stored"),
    ("saved", "after its snapshot was stored"),
)


def ans(proc: str, value: str = "approved", **extra: Any) -> dict[str, Any]:
    return w("answer", proc, value=value, **extra)


def cells() -> list[Cell]:
    table = CellTable()
    add = table.add
    add("linear-clean", "linear", "four steps, no fault", [[w("run", "w1")]])
    table.kill_every_boundary(
        "linear", nodes("linear"), "run(ctx=Context.from_dict(latest snapshot))", POINTS
    )
    add(
        "linear-kill-returned",
        "linear",
        "SIGKILL after the run returned; restored from the latest snapshot again",
        [[w("run", "w1", kill_at="returned")], [w("recover", "w2")]],
    )
    add(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect, the resume in mail after its effect; again",
        [
            [w("run", "w1", kill_at="charge.effect")],
            [w("recover", "w2", kill_at="mail.effect")],
            [w("recover", "w3")],
        ],
    )
    add(
        "linear-two-resumers",
        "linear",
        "SIGKILL after charge's snapshot; two processes restore the latest snapshot at once",
        [
            [w("run", "w1", kill_at="charge.saved")],
            [w("recover", "w2", barrier=2), w("recover", "w3", barrier=2)],
        ],
    )
    for index, after in enumerate(["start", "reserve", "charge", "mail"]):
        add(
            f"linear-fork-{after}",
            "linear",
            f"the run finished; a new run starts from the snapshot after {after}",
            [[w("run", "w1")], [w("fork", "w2", **{"from": index})]],
        )
    add(
        "linear-fork-killed",
        "linear",
        "a fork from the snapshot after reserve is SIGKILLed after charge's effect; forked again",
        [
            [w("run", "w1")],
            [w("fork", "w2", kill_at="charge.effect", **{"from": 1})],
            [w("fork", "w3", **{"from": 1})],
        ],
    )

    # quote, approve (wait_for_event for a HumanResponseEvent), book
    add(
        "approval-clean",
        "approval",
        "the run parks in approve; another process restores the snapshot and sends the answer",
        [[w("run", "w1")], [ans("w2")]],
    )
    for step, point, words in (
        ("quote", "effect", "after quote's effect"),
        ("quote", "saved", "after quote's snapshot"),
        ("approve", "start", "as approve starts, before it waits"),
        ("approve", "parking", "after it asked, before the waiting snapshot was stored"),
        ("approve", "parked", "after the waiting snapshot was stored"),
    ):
        add(
            f"approval-kill-{step}-{point}",
            "approval",
            f"SIGKILL {words}; restored from the latest snapshot, then answered",
            [[w("run", "w1", kill_at=f"{step}.{point}")], [w("recover", "w2")], [ans("w3")]],
        )
    for point, words in (
        ("loaded", "after it loaded the waiting snapshot"),
        ("answered", "after it took the answer, before send_event"),
        ("approve.effect", "in approve's replay, after its effect (it fires after the answer)"),
        ("approve.saving", "after approve returned, before its snapshot"),
        ("approve.saved", "after approve's snapshot"),
        ("book.effect", "after book's effect"),
    ):
        add(
            f"approval-kill-answer-{point.replace('.', '-')}",
            "approval",
            f"the answering process is SIGKILLed {words}; the answer is sent again",
            [[w("run", "w1")], [ans("w2", kill_at=point)], [ans("w3")]],
        )
    add(
        "approval-reanswer-after-done",
        "approval",
        "answered and finished; the latest snapshot is restored and answered again",
        [[w("run", "w1")], [ans("w2")], [ans("w3")]],
    )
    add(
        "approval-two-answerers",
        "approval",
        "two processes restore the waiting snapshot at once and answer differently",
        [[w("run", "w1")], [ans("w2", barrier=2), ans("w3", barrier=2, value="rejected")]],
    )
    add(
        "approval-fork-before-answer",
        "approval",
        "answered and finished; a new run from the first snapshot is answered 'rejected'",
        [[w("run", "w1")], [ans("w2")], [w("fork", "w3", value="rejected", **{"from": 0})]],
    )
    # the same flow with approve's effect before wait_for_event: the docs say the step replays
    add(
        "approval-early-clean",
        "approval-early",
        "approve fires its effect, then waits; another process answers (the step replays)",
        [[w("run", "w1")], [ans("w2")]],
    )
    add(
        "approval-early-answered-in-process",
        "approval-early",
        "approve fires its effect, then waits; the waiting process itself answers",
        [[w("run", "w1", value="approved")]],
    )
    return table.cells


def runtime() -> dict[str, str]:
    return {
        "name": "llama-index-workflows",
        "version": importlib.metadata.version("llama-index-workflows"),
    }


def record_cell(cell: Cell, traces: Path, scratch: Path) -> CellReport:
    run = f"run-{cell.name}"
    meta = {
        "runtime": "llama-index-workflows",
        "version": runtime()["version"],
        "backend": "sqlite",
        "nodes": nodes(cell.params["graph"]),
        **DECLARED,
    }

    def job(work: Path) -> dict[str, Any]:
        return {
            "graph": cell.params["graph"],
            "run": run,
            "db": str(work / "snapshots.sqlite"),
            "effects": str(work / "effects.jsonl"),
        }

    return record_phased_cell(
        cell, traces, scratch, worker="rctools.llamaindex.worker", thread=run, meta=meta, job=job
    )
