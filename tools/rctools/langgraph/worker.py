"""One invocation of a scenario, run inside a forked worker process.

The worker calls the saver factory itself (so each process has its own connections), records
the app through `Recording` (the checkpointer wrapped, the callbacks added), runs one
invocation through the API the saver implements (sync or async) and reports what state the
thread is left in. Its `get_state` checks, before and after, are `read` events of the trace
(judged for CV) but no kill points; the history it searches for time travel is listed
through the bare saver.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from rctools.langgraph.backends import BackendError, aopen_saver, api_of, open_saver
from rctools.langgraph.record import Recording, on_saver
from rctools.langgraph.recorder import KillSwitch
from rctools.langgraph.scenarios import WORLD_VAR
from rctools.suite.crash import barrier

THREAD = "t1"
SaverFactory = Callable[[], Any]


@dataclass(frozen=True)
class Invocation:
    """What a worker does: `start` (run the input), `auto` (resume a parked interrupt or
    continue an unfinished run), `continue` (after a kill: `invoke(None)` unless parked),
    `resume` (answer the given interrupt), `fork` (time travel from the checkpoint before
    node `target`), `pinned` (answer the given interrupt on its own, older checkpoint),
    `again` (answer the given interrupt, by its id, on the latest checkpoint: once it was
    answered, an answer to an id that is no longer pending),
    `update` (`update_state(values, as_node)` on the checkpoint `target` names: `latest`,
    `before:NODE` or `at:I`, the I-th checkpoint of the thread, oldest first), `none`
    (`invoke(None)` whatever the thread's state: on a parked thread too). `fork` names its
    checkpoint as `update` does (a bare node name: `before:NODE`)."""

    kind: str
    proc: str
    nonce: str
    parked: dict[str, Any] | None = None
    target: str = ""
    as_node: str = ""
    values: Any = None
    kill_label: tuple[str, int] | None = None  # (label, occurrence in this process)
    kill_line: int = 0  # a seeded instant: the line event of the call to kill at
    kill_delay: float = 0.0  # or (an async call) the seconds after its entry
    measure: bool = False  # count each write call's line events (a fault-free cell)
    recover: bool = False  # the previous process was killed: run even a finished thread
    barrier: int = 0  # wait until this many processes of the cell are about to invoke
    thread: str = THREAD
    answer: Any = None  # the resume value (None: one unique to this process)

    @property
    def base(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread}}


@dataclass(frozen=True)
class Cell:
    """Where a cell's processes meet: the trace, the saver lock, the world."""

    folder: Path
    trace: Path
    durability: str
    build: Callable[[], Any]
    make_input: Callable[[], Any]
    factory: SaverFactory
    serialize: bool = True  # False: saver calls of different processes may race
    # "async": drive the graph through the async API (ainvoke, aget_tuple, aput...) even
    # when the saver has the sync one too; "": the sync API where the saver has it
    api: str = ""


def answer(parked: dict[str, Any], job: Invocation) -> Any:
    """The job's resume value, else one unique to this interrupt and this process, so the
    trace tells every answer apart: one delivered to the wrong interrupt, or a stale one
    delivered again, then has a value that was never answered to it.

    The nonce is a UUID (derived from the process and the interrupt id, both of which differ
    from run to run) because the final-state digest reads every UUID as a placeholder: two runs
    of one cell that end alike digest alike, whichever process answered and whatever ids
    LangGraph gave the interrupts (`rctools.langgraph.final`)."""
    if job.answer is not None:
        return job.answer
    nonce = uuid.uuid5(uuid.NAMESPACE_URL, f"resume-check:{job.nonce}:{parked['interrupt']}")
    return {"answer": f"ok {parked['node']}", "nonce": str(nonce)}


def run(
    cell: Cell, job: Invocation, kill_fd: int | None, saver: BaseCheckpointSaver | None = None
) -> dict[str, Any]:
    """Runs the invocation in this (forked) process and returns the report. The graph is
    driven through the sync API when the saver has one (unless the cell asks for the async
    API), else through the async API; `saver` is given only when all invocations of a cell
    share one process (an in-memory saver)."""
    os.environ[WORLD_VAR] = str(cell.folder / "world")
    if saver is not None and cell.api == "async":
        return asyncio.run(_run_async_on(cell, job, kill_fd, saver))
    if saver is not None:
        return _run_sync(cell, job, kill_fd, saver)
    if cell.api == "async":
        return asyncio.run(_run_async(cell, job, kill_fd))
    try:
        with open_saver(cell.factory) as opened:
            if "sync" in api_of(opened):
                return _run_sync(cell, job, kill_fd, opened)
    except BackendError as exc:
        if "asynchronously" not in str(exc):
            raise
    return asyncio.run(_run_async(cell, job, kill_fd))


def _quiet(build: Callable[[], Any], saver: BaseCheckpointSaver) -> Any:
    """The app on the bare saver: the driver's own reads stay out of the trace."""
    return on_saver(build(), saver)


def _prepare(
    cell: Cell, job: Invocation, kill_fd: int | None, saver: BaseCheckpointSaver
) -> tuple[Recording, Any, Any]:
    recording = Recording(
        cell.trace,
        job.proc,
        durability=cell.durability,
        kill=KillSwitch(
            kill_fd,
            *(job.kill_label or (None, None)),
            job.kill_line,
            delay=job.kill_delay,
            measure=job.measure,
        ),
        lock=cell.folder / "saver.lock",
        serialize=cell.serialize,
    )
    if job.barrier >= 2:
        # and again once each has loaded and starts its first task: a quick resume would
        # otherwise be over before the other process loads, and nothing would overlap
        recording.recorder.kill.rendezvous = lambda: _meet(cell, job, "barrier-started")
    return recording, recording.attach(cell.build(), saver), _quiet(cell.build, saver)


def _plan(
    cell: Cell,
    job: Invocation,
    state: Any,
    history: list[Any],
    nested: list[Any],
    pending: Sequence[str] = (),
) -> tuple[Any, Any] | None:
    """The input and config of this invocation, or None when there is nothing to do;
    `pending`: the interrupts LangGraph waits at (`pending_ids`)."""
    base = job.base
    if job.kind == "start":
        return cell.make_input(), base
    if job.kind == "fork":
        target = job.target if ":" in job.target else f"before:{job.target}"
        config = _target(target, state, history, nested)
        return (None, config) if config is not None else None
    if job.kind == "none":
        return None, base
    parked = job.parked or next(iter(parked_of(state, pending)), None)
    if job.kind == "continue":
        # after a kill: run on from what was saved (even a finished thread: the invocation
        # loads it and returns), unless it waits for an answer, which the script gives
        return None if parked or state.created_at is None else (None, base)
    waiting = parked_of(state, pending)
    if job.kind in ("resume", "auto") and len(waiting) > 1:
        # several interrupts at once (parallel tasks that ask): LangGraph takes only a map
        # resume then, one answer per interrupt id
        return Command(resume={p["interrupt"]: answer(p, job) for p in waiting}), base
    if job.kind == "pinned" and parked and len(waiting) > 1 and _at_head(parked, state):
        # the head named in the config (as Studio sends it), several interrupts waiting
        return Command(resume={p["interrupt"]: answer(p, job) for p in waiting}), _pin(job, parked)
    if job.kind == "again" and job.parked:
        return Command(resume={job.parked["interrupt"]: answer(job.parked, job)}), base
    if job.kind in ("resume", "pinned", "auto") and parked:
        value = answer(parked, job)
        if job.kind == "pinned":
            return Command(resume=value), _pin(job, parked)
        return Command(resume=value), base
    if state.next or state.tasks or (job.recover and state.created_at is not None):
        return None, base
    return None


def _pin(job: Invocation, parked: dict[str, Any]) -> dict[str, Any]:
    """The config that names the checkpoint an interrupt parked at."""
    return {"configurable": {"thread_id": job.thread, "checkpoint_id": parked["checkpoint"]}}


def _at_head(parked: dict[str, Any], state: Any) -> bool:
    """Whether the interrupt parked at the thread's latest checkpoint."""
    return bool(parked.get("checkpoint") == state.config["configurable"].get("checkpoint_id"))


def _target(target: str, state: Any, history: list[Any], nested: Sequence[Any] = ()) -> Any:
    """The config of the checkpoint `target` names: `latest`, `before:NODE` (the last one
    that schedules just NODE), `at:I` (the I-th of the thread's top chain, oldest first) or
    `sub:I` (the I-th inside a subgraph that schedules a task, oldest first: `nested_walk`)."""
    if target == "latest":
        return state.config
    kind, _, what = target.partition(":")
    if kind in ("at", "sub"):
        oldest_first = history[::-1] if kind == "at" else nested
        index = int(what)
        return oldest_first[index].config if 0 <= index < len(oldest_first) else None
    before = [s for s in history if s.next == (what,)]
    return before[-1].config if before else None


def _as_node(job: Invocation, target: Any, history: list[Any]) -> str | None:
    """The node an edit is made as: the job's, else the one node the checkpoint before the
    target scheduled (the edit then reads as that node's result), else LangGraph infers it."""
    if job.as_node:
        return job.as_node
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    here = by_id.get(target["configurable"].get("checkpoint_id"))
    parent = (here.parent_config or {}).get("configurable", {}) if here is not None else {}
    before = by_id.get(parent.get("checkpoint_id"))
    return before.next[0] if before is not None and len(before.next) == 1 else None


def nested_walk(thread: str, root: list[Any]) -> Generator[dict[str, Any], list[Any], list[Any]]:
    """The checkpoints inside the thread's subgraphs that schedule a task, oldest first, as
    LangGraph shows them (a task that runs a subgraph carries the config of its namespace in
    `StateSnapshot.tasks[].state`; each namespace's history holds configs with the
    `checkpoint_map` that time travel into a subgraph takes). Sends each namespace's config
    out and takes its history back, so the sync and async drivers share it."""
    seen: set[str] = set()
    out: list[Any] = []
    todo = [root]
    while todo:
        for snapshot in todo.pop():
            for task in snapshot.tasks:
                conf = task.state.get("configurable", {}) if isinstance(task.state, dict) else {}
                ns = conf.get("checkpoint_ns")
                if ns and ns not in seen:
                    seen.add(ns)
                    sub = yield {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
                    out += [s for s in sub if s.next]
                    todo.append(sub)
    return sorted(out, key=lambda s: s.config["configurable"]["checkpoint_id"])


def _nested(quiet: Any, thread: str, root: list[Any]) -> list[Any]:
    walk = nested_walk(thread, root)
    try:
        config = next(walk)
        while True:
            config = walk.send(list(quiet.get_state_history(config)))
    except StopIteration as done:
        return list(done.value)


async def _anested(quiet: Any, thread: str, root: list[Any]) -> list[Any]:
    walk = nested_walk(thread, root)
    try:
        config = next(walk)
        while True:
            config = walk.send([s async for s in quiet.aget_state_history(config)])
    except StopIteration as done:
        return list(done.value)


def _meet(cell: Cell, job: Invocation, at: str = "barrier") -> None:
    """Waits (at most 10 s) until `job.barrier` processes reached this point: concurrent
    resumes that really overlap."""
    if job.barrier >= 2:
        barrier(cell.folder / at, job.proc, job.barrier, timeout=10, required=False)


def parked_of(state: Any, pending: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The interrupts the thread waits at: those `get_state` shows on its tasks, then those
    of `pending` (`pending_ids`) it does not show."""
    found = []
    where = {
        "checkpoint": state.config["configurable"].get("checkpoint_id"),
        "thread": state.config["configurable"].get("thread_id"),
    }
    for task in state.tasks:
        for intr in task.interrupts:
            found.append({**where, "node": task.name, "interrupt": intr.id})
    shown = {p["interrupt"] for p in found}
    # a functional-API @task call that asks: its interrupt is only in the checkpoint's writes
    found += [{**where, "node": "task", "interrupt": i} for i in pending if i not in shown]
    return found


def pending_ids(saved: Any) -> list[str]:
    """The interrupts LangGraph's own loop counts as waiting at the checkpoint tuple `saved`
    (its reading of the pending writes, where the release has one). `get_state` can show
    fewer -- the interrupts of functional-API `@task` calls that ask beside each other are in
    the writes alone -- and a resume that does not name them all by id then fails with
    "multiple pending interrupts": the driver answers what LangGraph waits for."""
    try:
        from langgraph.pregel._task_status import read_task_statuses
    except ImportError:
        return []
    if saved is None:
        return []
    statuses = read_task_statuses(saved.pending_writes or ())
    return sorted({i.id for status in statuses.values() for i in status.pending_interrupts})


def _report(
    state: Any, error: str | None, recording: Recording, ran: bool, pending: Sequence[str]
) -> dict[str, Any]:
    kill = recording.recorder.kill
    return {
        "ran": ran,
        "error": error,
        # After a crash `next` can be empty while a task is still due: look at both.
        "done": not state.next and not state.tasks,
        # nothing saved yet (a first invocation killed before its input checkpoint was)
        "empty": state.created_at is None,
        "parked": parked_of(state, pending),
        "points": kill.seen,
        "lines": kill.lines,
        "durations": kill.durations,
        "saver_calls": recording.calls.to_json(),
    }


def _run_sync(
    cell: Cell, job: Invocation, kill_fd: int | None, saver: BaseCheckpointSaver
) -> dict[str, Any]:
    recording, app, quiet = _prepare(cell, job, kill_fd, saver)
    mute = recording.recorder.kill.mute
    with mute():  # the driver's checks are `read` events (judged for CV), not kill points
        state = app.get_state(job.base)
    pending = pending_ids(saver.get_tuple(state.config)) if state.created_at else []
    history = list(quiet.get_state_history(job.base))
    nested = _nested(quiet, job.thread, history)
    error, ran = None, False
    if job.kind == "update":
        target = _target(job.target, state, history)
        if target is not None:
            app.update_state(target, job.values, as_node=_as_node(job, target, history))
        ran = target is not None
    elif job.kind == "delete":  # the user deletes the thread (a conversation thrown away)
        assert recording.saver is not None
        recording.saver.delete_thread(job.thread)
        ran = True
    elif (plan := _plan(cell, job, state, history, nested, pending)) is not None:
        payload, config = plan
        _meet(cell, job)
        ran = True
        try:
            recording.invoke(app, payload, config)
        except Exception as exc:  # a node error ends the invocation; the trace shows it
            error = f"{type(exc).__name__}: {exc}"
    with mute():
        state = app.get_state(job.base)
    pending = pending_ids(saver.get_tuple(state.config)) if state.created_at else []
    report = _report(state, error, recording, ran, pending)
    history = list(quiet.get_state_history(job.base))
    report["checkpoints"] = len(history)
    report["nested"] = len(_nested(quiet, job.thread, history))
    recording.close()
    return report


async def _run_async(cell: Cell, job: Invocation, kill_fd: int | None) -> dict[str, Any]:
    async with aopen_saver(cell.factory) as real:
        return await _run_async_on(cell, job, kill_fd, real)


async def _run_async_on(
    cell: Cell, job: Invocation, kill_fd: int | None, real: BaseCheckpointSaver
) -> dict[str, Any]:
    """`_run_sync` through the async API (an app whose nodes are async def, or a cell that
    asks for the async API), on an opened saver."""
    recording, app, quiet = _prepare(cell, job, kill_fd, real)
    mute = recording.recorder.kill.mute
    with mute():
        state = await app.aget_state(job.base)
    pending = pending_ids(await real.aget_tuple(state.config)) if state.created_at else []
    history = [s async for s in quiet.aget_state_history(job.base)]
    nested = await _anested(quiet, job.thread, history)
    error, ran = None, False
    if job.kind == "update":
        target = _target(job.target, state, history)
        if target is not None:
            await app.aupdate_state(target, job.values, as_node=_as_node(job, target, history))
        ran = target is not None
    elif job.kind == "delete":
        assert recording.saver is not None
        await recording.saver.adelete_thread(job.thread)
        ran = True
    elif (plan := _plan(cell, job, state, history, nested, pending)) is not None:
        payload, config = plan
        _meet(cell, job)
        ran = True
        try:
            await recording.ainvoke(app, payload, config)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
    with mute():
        state = await app.aget_state(job.base)
    pending = pending_ids(await real.aget_tuple(state.config)) if state.created_at else []
    report = _report(state, error, recording, ran, pending)
    history = [s async for s in quiet.aget_state_history(job.base)]
    report["checkpoints"] = len(history)
    report["nested"] = len(await _anested(quiet, job.thread, history))
    recording.close()
    return report
