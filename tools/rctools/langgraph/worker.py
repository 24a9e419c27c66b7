"""One invocation of a scenario, run inside a forked worker process.

The worker calls the saver factory itself (so each process has its own connections), wraps
the saver in the recorder, runs one invocation through the API the saver implements (sync or
async) and reports what state the thread is left in, read through the bare saver so that the
report is not part of the trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.types import Command

from rctools.langgraph import ledger
from rctools.langgraph.callbacks import NodeCallbacks
from rctools.langgraph.recorder import KillSwitch, PendingResume, Recorder, TaskNames
from rctools.langgraph.saver import RecordingSaver, SaverLock
from rctools.langgraph.tracefile import TraceFile
from rctools.langgraph_backends import BackendError, aopen_saver, api_of, open_saver

THREAD = "t1"
SaverFactory = Callable[[], Any]


@dataclass(frozen=True)
class Invocation:
    """What a worker does: `start` (run the input), `auto` (resume a parked interrupt or
    continue an unfinished run), `resume` (answer the given interrupt), `fork` (time travel
    from the checkpoint before node `fork_at`), `pinned` (answer the given interrupt on its
    own, older checkpoint)."""

    kind: str
    proc: str
    nonce: str
    parked: dict[str, Any] | None = None
    fork_at: str = ""
    kill_at: int | None = None
    kill_label: tuple[str, int] | None = None  # (label, occurrence in this process)


@dataclass(frozen=True)
class Cell:
    """Where a cell's processes meet: the trace, the task-name table, the world."""

    folder: Path
    trace: Path
    durability: str
    build: Callable[[], StateGraph]
    factory: SaverFactory
    nodes: tuple[str, ...]


def answer(parked: dict[str, Any], nonce: str) -> dict[str, str]:
    """A resume value unique to this process, so the trace can tell two answers apart."""
    return {"answer": f"ok {parked['node']}#{parked['index']}", "nonce": nonce}


def run(
    cell: Cell, job: Invocation, kill_fd: int | None, saver: BaseCheckpointSaver | None = None
) -> dict[str, Any]:
    """Runs the invocation in this (forked) process and returns the report. The graph is
    driven through the sync API when the saver has one, else through the async API; `saver`
    is given only when all invocations of a cell share one process (an in-memory saver)."""
    if saver is not None:
        return _run_sync(cell, job, kill_fd, saver)
    try:
        with open_saver(cell.factory) as opened:
            if "sync" in api_of(opened):
                return _run_sync(cell, job, kill_fd, opened)
    except BackendError as exc:
        if "asynchronously" not in str(exc):
            raise
    return asyncio.run(_run_async(cell, job, kill_fd))


def _prepare(
    cell: Cell, job: Invocation, kill_fd: int | None, saver: BaseCheckpointSaver
) -> tuple[Any, Any, Recorder, dict[str, Any]]:
    recorder = Recorder(
        TraceFile(cell.trace, job.proc),
        cell.nodes,
        TaskNames(cell.folder / "tasks"),
        KillSwitch(job.kill_at, kill_fd, *(job.kill_label or (None, None))),
        cell.durability,
    )
    ledger.install(recorder, cell.folder / "world")
    graph = cell.build()
    app = graph.compile(
        checkpointer=RecordingSaver(saver, recorder, SaverLock(cell.folder / "saver.lock"))
    )
    quiet = cell.build().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": THREAD}, "callbacks": [NodeCallbacks(recorder)]}
    return app, quiet, recorder, config


def _plan(
    job: Invocation, state: Any, history: list[Any], recorder: Recorder
) -> tuple[Any, dict[str, Any]] | None:
    """The input and config of this invocation, or None when there is nothing to do. A
    resume value is also announced to the recorder, which records it once it is given."""
    base = {"configurable": {"thread_id": THREAD}}
    if job.kind == "start":
        return {"log": []}, base
    if job.kind == "fork":
        before = [s for s in history if s.next == (job.fork_at,)]
        return (None, before[-1].config) if before else None
    parked = job.parked or next(iter(_parked(state)), None)
    if job.kind in ("resume", "pinned", "auto") and parked:
        value = answer(parked, job.nonce)
        recorder.expect_resume(
            PendingResume(value, parked["checkpoint"], parked["node"], parked["index"])
        )
        if job.kind == "pinned":
            pinned = {"configurable": {"thread_id": THREAD, "checkpoint_id": parked["checkpoint"]}}
            return Command(resume=value), pinned
        return Command(resume=value), base
    if state.next or state.tasks:
        return None, base
    return None


def _parked(state: Any) -> list[dict[str, Any]]:
    found = []
    for task in state.tasks:
        for intr in task.interrupts:
            value = intr.value if isinstance(intr.value, dict) else {}
            found.append(
                {
                    "checkpoint": state.config["configurable"]["checkpoint_id"],
                    "node": value.get("node", task.name),
                    "index": value.get("index", 1),
                }
            )
    return found


def _report(state: Any, error: str | None, recorder: Recorder, ran: bool) -> dict[str, Any]:
    return {
        "ran": ran,
        "error": error,
        # After a crash `next` can be empty while a task is still due: look at both.
        "done": not state.next and not state.tasks,
        "parked": _parked(state),
        "hooks": recorder.kill.count,
        "points": recorder.kill.seen,
    }


def _with_job_config(config: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    return {**config, "configurable": dict(target["configurable"])}


def _run_sync(
    cell: Cell, job: Invocation, kill_fd: int | None, saver: BaseCheckpointSaver
) -> dict[str, Any]:
    app, quiet, recorder, config = _prepare(cell, job, kill_fd, saver)
    base = {"configurable": {"thread_id": THREAD}}
    plan = _plan(job, quiet.get_state(base), list(quiet.get_state_history(base)), recorder)
    error = None
    if plan is not None:
        payload, target = plan
        try:
            app.invoke(payload, _with_job_config(config, target), durability=cell.durability)
        except Exception as exc:  # a node error ends the invocation; the trace shows it
            error = f"{type(exc).__name__}: {exc}"
        recorder.finished()
    return _report(quiet.get_state(base), error, recorder, plan is not None)


async def _run_async(cell: Cell, job: Invocation, kill_fd: int | None) -> dict[str, Any]:
    async with aopen_saver(cell.factory) as real:
        app, quiet, recorder, config = _prepare(cell, job, kill_fd, real)
        base = {"configurable": {"thread_id": THREAD}}
        history = [s async for s in quiet.aget_state_history(base)]
        plan = _plan(job, await quiet.aget_state(base), history, recorder)
        error = None
        if plan is not None:
            payload, target = plan
            try:
                await app.ainvoke(
                    payload, _with_job_config(config, target), durability=cell.durability
                )
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            recorder.finished()
        return _report(await quiet.aget_state(base), error, recorder, plan is not None)
