"""The CrewAI Flows crash matrix: a four-method line and a flow with an asynchronous human
review, class-level `@persist` on `SQLiteFlowPersistence`, SIGKILL at every method's start,
after its effect, before and after its state was saved; resume by `kickoff(inputs={"id": ...})`
as the docs show, fork by `kickoff(restore_from_state_id=...)`, answers by
`Flow.from_pending(...).resume(value)`, re-answered and answered by two processes at once."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

from rctools.crewai.worker import nodes
from rctools.suite.cells import CellTable
from rctools.suite.cells import worker as w
from rctools.suite.command import require
from rctools.suite.phases import record_phased_cell
from rctools.suite.reports import Cell, CellReport

require("crewai")

DOCS = "docs/runtimes/crewai.md"
# @persist saves the state after each method completes, before its listeners run (sync); CrewAI
# documents no level for a method's side effects (the strictest applies) and no lease on a flow
# id (docs/runtimes/crewai.md cites the pages).
DECLARED = {"durability": "sync", "effects_default": "exactly-once", "fencing": "none"}
# importing crewai alone takes ~3 CPU-s (it loads its agents, LLM clients, telemetry): the
# workers are forked from a server that imported it once
CHILD_TIMEOUT = 300.0


def ans(proc: str, value: str = "approved", **extra: Any) -> dict[str, Any]:
    return w("answer", proc, value=value, **extra)


def cells() -> list[Cell]:
    table = CellTable()
    add = table.add
    add("linear-clean", "linear", "four methods, no fault", [[w("run", "w1")]])
    table.kill_every_boundary("linear", nodes("linear"), "kickoff(inputs={'id': ...}) resumes")
    add(
        "linear-kill-returned",
        "linear",
        "SIGKILL after the flow returned; kickoff(inputs={'id': ...}) again",
        [[w("run", "w1", kill_at="returned")], [w("recover", "w2")]],
    )
    add(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect, the resume in reserve after its effect; again",
        [
            [w("run", "w1", kill_at="charge.effect")],
            [w("recover", "w2", kill_at="reserve.effect")],
            [w("recover", "w3")],
        ],
    )
    add(
        "linear-two-resumers",
        "linear",
        "SIGKILL after charge was saved; two processes resume the flow id at once",
        [
            [w("run", "w1", kill_at="charge.saved")],
            [w("recover", "w2", barrier=2), w("recover", "w3", barrier=2)],
        ],
    )
    for method in nodes("linear"):
        add(
            f"linear-fork-after-{method}",
            "linear",
            f"the flow ran to the end; kickoff(restore_from_state_id=...) forks it after {method}"
            if method == "ship"
            else f"SIGKILL after {method} was saved; kickoff(restore_from_state_id=...) forks it",
            [
                [w("run", "w1", kill_at=None if method == "ship" else f"{method}.saved")],
                [w("fork", "w2")],
            ],
        )
    add(
        "linear-fork-killed",
        "linear",
        "SIGKILL after charge was saved; the fork is SIGKILLed after its first effect",
        [
            [w("run", "w1", kill_at="charge.saved")],
            [w("fork", "w2", kill_at="reserve.effect")],
        ],
    )

    # the review flow: quote, approve (@human_feedback, asynchronous provider), book
    add(
        "approval-clean",
        "approval",
        "the flow parks at the review; another process answers with from_pending().resume()",
        [[w("run", "w1")], [ans("w2")]],
    )
    for method, point, words in (
        ("quote", "effect", "after quote's effect"),
        ("quote", "saved", "after quote was saved"),
        ("approve", "start", "as approve starts"),
        ("approve", "effect", "after approve's effect, before it asked"),
        ("approve", "parking", "after it asked, before the pending review was saved"),
        ("approve", "parked", "after the pending review was saved, before the flow returned"),
    ):
        add(
            f"approval-kill-{method}-{point}",
            "approval",
            f"SIGKILL {words}; the application resumes the flow id, then answers if it parked",
            [
                [w("run", "w1", kill_at=f"{method}.{point}")],
                [w("recover", "w2")],
                [ans("w3")],
            ],
        )
    for point, words in (
        ("loaded", "after from_pending loaded the review"),
        ("answered", "after it took the answer, before resume()"),
        ("approve.saving", "inside resume(), before approve's completion was saved"),
        ("approve.saved", "after approve's completion was saved"),
        ("clearing", "after approve's completion was saved, before the review was cleared"),
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
        "answered and finished; the same answer is sent again",
        [[w("run", "w1")], [ans("w2")], [ans("w3")]],
    )
    add(
        "approval-two-values",
        "approval",
        "answered 'approved', then 'rejected' to the same review",
        [[w("run", "w1")], [ans("w2")], [ans("w3", value="rejected")]],
    )
    add(
        "approval-two-answerers",
        "approval",
        "two processes answer the pending review at once (both load it before either resumes)",
        [[w("run", "w1")], [ans("w2", barrier=2), ans("w3", barrier=2, value="rejected")]],
    )
    add(
        "approval-resume-parked",
        "approval",
        "parked at the review; kickoff(inputs={'id': ...}) instead of an answer",
        [[w("run", "w1")], [w("recover", "w2")]],
    )
    add(
        "approval-fork-parked",
        "approval",
        "parked at the review; kickoff(restore_from_state_id=...) forks it",
        [[w("run", "w1")], [w("fork", "w2")]],
    )
    add(
        "approval-fork-after-done",
        "approval",
        "answered and finished; kickoff(restore_from_state_id=...) forks the finished flow",
        [[w("run", "w1")], [ans("w2")], [w("fork", "w3")]],
    )
    return table.cells


def runtime() -> dict[str, str]:
    return {"name": "crewai", "version": importlib.metadata.version("crewai")}


def record_cell(cell: Cell, traces: Path, scratch: Path) -> CellReport:
    flow = f"flow-{cell.name}"
    meta = {
        "runtime": "crewai",
        "version": runtime()["version"],
        "backend": "sqlite",
        "nodes": nodes(cell.params["graph"]),
        **DECLARED,
    }

    def job(work: Path) -> dict[str, Any]:
        return {
            "graph": cell.params["graph"],
            "flow": flow,
            "db": str(work / "crewai.sqlite"),
            "effects": str(work / "effects.jsonl"),
        }

    return record_phased_cell(
        cell,
        traces,
        scratch,
        worker="rctools.crewai.worker",
        thread=flow,
        meta=meta,
        job=job,
        timeout=CHILD_TIMEOUT,
        preload=("rctools.crewai.preload",),
    )
