"""What one worker process saw, turned into ResumeCore events (trace format v1).

The recorder is fed by the checkpointer wrapper (`saver`), the node callbacks (`callbacks`)
and the helpers the scenario apps call (`ledger`). It translates; it never decides whether
what happened was right.

Ordering. LangGraph saves checkpoints on background threads: in "async" durability the next
step's tasks can start before `put` of the checkpoint they run from is even called. The
checkpoint was nevertheless made (in memory) before those tasks started, so an event that
belongs to a checkpoint this process has not announced yet is held back and written right
after that checkpoint's `step` event. Only the order of lines changes, never what happened.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rctools.langgraph.tracefile import TraceFile

NULL_TASK = "00000000-0000-0000-0000-000000000000"
START = "__start__"
# Channels LangGraph writes for its own bookkeeping rather than for a task's result.
_BOOKKEEPING = frozenset({"__interrupt__", "__error__", "__resume__", "__no_writes__"})


def value_id(value: Any) -> str:
    """A resume value's identity in a trace: a digest, so the value itself never leaves."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class TaskNames:
    """Task id -> node name, shared by the processes of a cell through an append-only file.

    A loaded checkpoint's pending writes carry task ids only; the process that wrote them
    knew the node. The entry is written before the write reaches the saver, so every durable
    write has its name here.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._names: dict[str, str] = {}
        self._lock = threading.Lock()
        self._fd: int | None = None

    def add(self, task_id: str, node: str) -> None:
        with self._lock:
            if self._names.get(task_id) == node:
                return
            self._names[task_id] = node
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(self._fd, f"{task_id} {node}\n".encode())

    def get(self, task_id: str) -> str:
        with self._lock:
            if task_id not in self._names and self.path.exists():
                for line in self.path.read_text(encoding="utf-8").splitlines():
                    tid, _, node = line.partition(" ")
                    if node:
                        self._names.setdefault(tid, node)
            return self._names.get(task_id, f"unknown-task-{task_id[:8]}")


class KillSwitch:
    """Counts the points where a SIGKILL may land; at the chosen one it tells the parent
    process through a pipe and waits to be killed. Points: each saver call's entry and exit,
    each node's start and end, except while the recorder holds back events. A point is chosen
    by its number in this process (`at`) or as the n-th occurrence of a label (`label`,
    `occurrence`), which finds the same moment in a run on another saver."""

    def __init__(
        self,
        at: int | None = None,
        pipe_fd: int | None = None,
        label: str | None = None,
        occurrence: int | None = None,
    ) -> None:
        self.at, self.pipe_fd = at, pipe_fd
        self.label, self.occurrence = label, occurrence
        self.count = 0
        self.seen: dict[str, int] = {}
        self._lock = threading.Lock()
        # While it returns True the process is at no kill point: the recorder holds events it
        # cannot write in order yet, and a kill would leave the trace without them.
        self.paused: Callable[[], bool] = lambda: False

    def point(self, label: str) -> None:
        if self.paused():
            return
        with self._lock:
            self.count += 1
            nth = self.seen[label] = self.seen.get(label, 0) + 1
            hit = self.count == self.at or (label == self.label and nth == self.occurrence)
        if hit and self.pipe_fd is not None:
            os.write(self.pipe_fd, f"{label}\t{nth}\n".encode())
            while True:  # the parent sends SIGKILL
                time.sleep(60)


@dataclass(frozen=True)
class Observed:
    """A checkpoint as a read returned it, in the contract's terms."""

    checkpoint: str | None
    parent: str | None
    step: int | None
    done: list[str]
    ok: list[str]
    values: list[str]

    def fields(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint,
            "parent": self.parent,
            "done": self.done,
            "ok": self.ok,
            "values": self.values,
        }


@dataclass(frozen=True)
class PendingResume:
    """The resume value this process was started with and the interrupt it answers."""

    value: Any
    checkpoint: str
    node: str
    index: int


class Recorder:
    """Turns one process's observations into events, in an order the contract can follow."""

    def __init__(
        self,
        trace: TraceFile,
        nodes: Iterable[str],
        tasks: TaskNames,
        kill: KillSwitch | None = None,
        durability: str = "sync",
    ) -> None:
        self.trace = trace
        self.sync = durability == "sync"
        self.nodes = frozenset(nodes)
        self.tasks = tasks
        self.kill = kill or KillSwitch()
        self.kill.paused = lambda: bool(self._held)
        self._resume: PendingResume | None = None
        self._start_pending = False
        self._input_write_called = False
        self._at_saved = False
        self._inputs_applied: set[str] = set()
        self._lock = threading.RLock()
        self._loaded = False
        self._pinned: Observed | None = None
        self._at: str | None = None
        self._at_step: int | None = None
        self._announced: set[str] = set()
        self._held: list[tuple[tuple[str, Any], str, dict[str, Any]]] = []
        self._positions: dict[str, int] = {}
        self._parked: dict[str, int] = {}

    # -- reads -------------------------------------------------------------------------

    def observe(self, tup: Any) -> Observed:
        """The contract's view of a CheckpointTuple (None: the thread has no checkpoint)."""
        if tup is None:
            return Observed(None, None, None, [], [], [])
        checkpoint = tup.checkpoint
        ok: set[str] = set()
        values: list[str] = []
        by_task: dict[str, set[str]] = {}
        for task_id, channel, value in tup.pending_writes or ():
            if task_id == NULL_TASK and channel == "__resume__":
                values.append(value_id(value))
            elif channel == "__resume__" and isinstance(value, list):
                # The values a re-executed task consumed, kept with the task: LangGraph
                # stores one pending resume value per checkpoint and a later one replaces
                # it, so an answer already consumed survives only here.
                values.extend(value_id(v) for v in value)
            else:
                by_task.setdefault(task_id, set()).add(channel)
        for task_id, channels in by_task.items():
            # A task's result: any write to a state channel. An earlier failed attempt of
            # the same task (an `__error__` write) does not undo a later success.
            if channels - _BOOKKEEPING:
                ok.add(self.tasks.get(task_id))
        parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        return Observed(
            checkpoint=checkpoint["id"],
            parent=parent,
            step=(tup.metadata or {}).get("step"),
            done=self.done_of(checkpoint),
            ok=sorted(ok),
            values=sorted(set(values)),
        )

    def done_of(self, checkpoint: dict[str, Any]) -> list[str]:
        """The workflow nodes a checkpoint records as done: those it has seen run."""
        return sorted(set(checkpoint.get("versions_seen", {})) & self.nodes)

    def read(self, config: dict[str, Any], tup: Any) -> None:
        """A `get_tuple` by the runtime. Its first read is the invocation's load; a read of
        a pinned checkpoint (time travel) becomes a fork once we see what the run does."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            seen = self.observe(tup)
            if config.get("configurable", {}).get("checkpoint_id"):
                self._pinned = seen
                return
            self.trace.event("load", **seen.fields())
            # Loaded the input checkpoint: its input task runs, unless its write is saved.
            self._start_pending = seen.step == -1 and START not in seen.ok
            self._move_to(seen.checkpoint, seen.step, saved=True)

    # -- checkpoints -------------------------------------------------------------------

    def checkpoint_made(
        self, parent: str | None, checkpoint: dict[str, Any], metadata: dict[str, Any]
    ) -> None:
        """`put` was called: the loop made this checkpoint (and moved on to it)."""
        cid, step = checkpoint["id"], metadata.get("step")
        with self._lock:
            pinned = self._pinned
            if metadata.get("source") == "fork" and pinned is not None:
                # The fork checkpoint is new and holds no pending writes of its own; writes
                # leaked from its source would show in what its run does (RD, PC).
                self._pinned = None
                self.trace.event(
                    "fork",
                    parent=pinned.checkpoint,
                    checkpoint=cid,
                    done=self.done_of(checkpoint),
                    ok=[],
                    values=[],
                )
            else:
                self._activate_pinned()
                done = self.done_of(checkpoint)
                if START in done:
                    self._input_applied()
                self.trace.event("step", checkpoint=cid, parent=parent, done=done)
                if metadata.get("source") == "input":
                    self._start_pending = True
                    self._input_write_called = False
            self._move_to(cid, step)

    def checkpoint_saved(self, cid: str) -> None:
        self.emit(("ckpt", cid), "put", checkpoint=cid)
        with self._lock:
            if cid == self._at:
                self._at_saved = True
                if self._input_write_called:
                    self._input_applied()

    def _input_applied(self) -> None:
        """LangGraph applies the input as a task with no node callbacks. It is recorded as
        run at the first evidence, once its checkpoint is saved: its write is being made, or
        the next checkpoint shows it done (the write can reach the saver even later)."""
        if not self._start_pending:
            return
        self._start_pending = False
        self._inputs_applied.add(self._at or "")
        self.trace.event("task_start", node=START)
        self.trace.event("task_end", node=START, outcome="ok")
        self._release()

    # -- writes ------------------------------------------------------------------------

    def writes_called(self, cid: str, task_id: str, node: str) -> None:
        """`put_writes` was called: the moves that precede the saver's acknowledgement."""
        if task_id == NULL_TASK:
            self.announce_resume()
        elif node == START:
            with self._lock:
                self._input_write_called = True
                # Only "sync" promises that a step runs from a saved checkpoint.
                if cid == self._at and (self._at_saved or not self.sync):
                    self._input_applied()

    def writes_saved(
        self, cid: str, task_id: str, node: str, writes: list[tuple[str, Any]]
    ) -> None:
        """The saver acknowledged a `put_writes`: one put_writes event, if it is a result."""
        channels = {channel for channel, _ in writes}
        if task_id == NULL_TASK:
            for channel, value in writes:
                if channel == "__resume__":
                    self.emit(
                        ("ckpt", cid),
                        "put_writes",
                        checkpoint=cid,
                        node=None,
                        kind="resume",
                        index=0,
                        value=value_id(value),
                    )
            return
        if "__error__" in channels:
            kind, index = "error", 0
        elif "__interrupt__" in channels:
            kind, index = "interrupt", self._parked.get(task_id, 0)
        elif channels - _BOOKKEEPING:
            kind, index = "ok", 0
        else:
            return  # only the resume values a re-executed task consumed: bookkeeping
        # The input task's write can be acknowledged before the checkpoint that shows the
        # task ran is made: it waits for the task's (synthesized) end.
        key = ("input", cid) if node == START else ("ckpt", cid)
        self.emit(key, "put_writes", checkpoint=cid, node=node, kind=kind, index=index, value=None)

    # -- tasks -------------------------------------------------------------------------

    def task_started(self, step: int, task_id: str, node: str) -> None:
        self.tasks.add(task_id, node)
        with self._lock:
            self._positions[task_id] = 0
        self.emit(("step", step - 1), "task_start", node=node)

    def task_ended(self, step: int, node: str, outcome: str) -> None:
        self.emit(("step", step - 1), "task_end", node=node, outcome=outcome)

    def next_position(self, task_id: str) -> int:
        with self._lock:
            self._positions[task_id] = self._positions.get(task_id, 0) + 1
            return self._positions[task_id]

    def interrupted(self, step: int, task_id: str, node: str, index: int, value: Any) -> None:
        """interrupt() number `index` of a task returned `value`, or parked (NO_VALUE)."""
        if value is NO_VALUE:
            with self._lock:
                self._parked[task_id] = index
            self.emit(("step", step - 1), "interrupt", node=node, index=index, value=None)
        else:
            self.announce_resume()
            self.emit(
                ("step", step - 1), "interrupt", node=node, index=index, value=value_id(value)
            )

    def effect(self, step: int, node: str, intent: str) -> None:
        self.emit(("step", step - 1), "effect", node=node, intent=intent)

    def expect_resume(self, resume: PendingResume) -> None:
        """This invocation will give `resume`; it is recorded when LangGraph writes or
        delivers it, whichever comes first, after the load."""
        self._resume = resume

    def announce_resume(self) -> None:
        """The resume value this process was given, once it has loaded what it resumes."""
        with self._lock:
            resume, self._resume = self._resume, None
            if resume is None:
                return
            self._activate_pinned()
            self.trace.event(
                "resume",
                value=value_id(resume.value),
                checkpoint=resume.checkpoint,
                node=resume.node,
                index=resume.index,
            )

    def finished(self) -> None:
        with self._lock:
            self._activate_pinned()
            held, self._held = self._held, []
            for _, ev, fields in held:  # nothing may be lost at the end
                self.trace.event(ev, **fields)
            self.trace.event("finish")

    # -- ordering ----------------------------------------------------------------------

    def emit(self, key: tuple[str, Any], ev: str, **fields: Any) -> None:
        """Writes the event now, or holds it until the checkpoint it belongs to is made."""
        with self._lock:
            if self._pinned is not None and key in (
                ("step", self._pinned.step),
                ("ckpt", self._pinned.checkpoint),
            ):
                self._activate_pinned()
            if self._ready(key):
                self.trace.event(ev, **fields)
            else:
                self._held.append((key, ev, fields))

    def _ready(self, key: tuple[str, Any]) -> bool:
        kind, what = key
        if kind == "ckpt":
            return what in self._announced
        if kind == "input":
            return what in self._inputs_applied
        return self._at_step is not None and self._at_step >= what

    def _activate_pinned(self) -> None:
        """The run goes on from the pinned checkpoint itself, without a fork checkpoint."""
        pinned, self._pinned = self._pinned, None
        if pinned is None:
            return
        self.trace.event("fork", **{**pinned.fields(), "parent": pinned.checkpoint})
        self._move_to(pinned.checkpoint, pinned.step)

    def _move_to(self, cid: str | None, step: int | None, saved: bool = False) -> None:
        self._at, self._at_step, self._at_saved = cid, step, saved
        if cid is None:
            return
        self._announced.add(cid)
        self._release()

    def _release(self) -> None:
        ready = [held for held in self._held if self._ready(held[0])]
        self._held = [held for held in self._held if not self._ready(held[0])]
        for _, ev, fields in ready:
            self.trace.event(ev, **fields)


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE = _NoValue()
