"""A checkpointer that delegates every call to the saver under test and records it.

This is the ground truth of what was persisted and of what a run loaded. It forwards `serde`
and `get_next_version` (savers version channels differently), keeps the `task_path`
parameter of `put_writes` (LangGraph's loop looks for it) and implements the sync and async
API the saver under test implements.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from rctools.langgraph import coverage, effect
from rctools.langgraph.killpoints import hook_statements
from rctools.langgraph.observe import is_replay_load, is_run_start
from rctools.langgraph.recorder import Recorder


class SaverLock:
    """Orders saver calls and the lines that record them, across the processes of a trace
    (flock) and the threads or tasks of one process.

    `serialize` (the default): each saver call and its lines are one step. Without it, a
    process could read the store before another's write and log the read after the other
    logged its write, and the trace would show an order that never happened. The store's
    own atomicity within a call is what the contract assumes. The kernel drops a killed
    process's flock. `path` None: one process, a thread lock is enough.

    `serialize=False`: write calls (`put`, `put_writes`) of different processes run at once,
    so races between them happen. The trace stays true by three rules (docs/langgraph.md,
    "How the trace tells the order of racing calls"): a write is *made* in the trace (its
    `step`/`task_end`/`resume`) before the saver is called; its acknowledgement (`put`,
    `put_writes`) is written after the saver returned, under the flock; a read holds the
    flock from before it calls the saver until its `load`/`read` line is written. Sync API
    only: a saver driven through its async API is serialized as before.
    """

    def __init__(self, path: Path | None, *, serialize: bool = True) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if path else None
        self.serialize = serialize
        self.calls = path.parent / "calls.jsonl" if path and not serialize else None
        self._thread_lock = threading.Lock()
        self._task_lock: asyncio.Lock | None = None
        self._order = threading.RLock()
        self._depth = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._thread_lock:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextlib.asynccontextmanager
    async def held_async(self) -> AsyncIterator[None]:
        if self._task_lock is None:
            self._task_lock = asyncio.Lock()
        async with self._task_lock:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Around a write call: the whole call when serialized, nothing otherwise."""
        return self.held() if self.serialize else contextlib.nullcontext()

    @contextlib.contextmanager
    def reading(self, recorder: Recorder) -> Iterator[None]:
        """Around a read call and its line. Unserialized: the recorder's lock first (every
        line of this process is written under it, so the lock order is always recorder,
        then flock), then the flock that acknowledgements are written under."""
        if self.serialize:
            with self.held():
                yield
            return
        with recorder.lock, self.ordered():
            yield

    @contextlib.contextmanager
    def ordered(self) -> Iterator[None]:
        """The flock, re-entrant in one thread: a read that holds it may write held
        acknowledgements of its own process."""
        with self._order:
            self._depth += 1
            if self._depth == 1 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def timed(self, proc: str, call: str) -> Iterator[None]:
        """Unserialized: logs the call's interval (CLOCK_MONOTONIC, shared by the processes
        of the machine) to `calls.jsonl`, so a test can show that calls overlapped."""
        if self.calls is None:
            yield
            return
        start = time.monotonic_ns()
        try:
            yield
        finally:
            line = {"proc": proc, "call": call, "start": start, "end": time.monotonic_ns()}
            fd = os.open(self.calls, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (json.dumps(line) + "\n").encode())
            finally:
                os.close(fd)


# How long a `put` waits for the `put_writes` calls of the tasks its checkpoint follows
# (normally microseconds: they were submitted before it).
STEP_WAIT = 5.0


def _label(task_path: str) -> str:
    """A write's kill-point label: its task path without LangGraph's prefix."""
    return task_path.replace("~__pregel_pull, ", "").replace("~__pregel_push, ", "push ") or "-"


T = TypeVar("T")


class RecordingSaver(BaseCheckpointSaver):
    """Wraps `inner`; each call's entry and exit, and points inside write calls, are points
    where a SIGKILL may land (`killpoints`). Each call's shape is counted in `tally`
    (`coverage.py`): a write at its entry, so a call a kill cut counts; a load once it is
    answered, outside the saver lock."""

    def __init__(
        self,
        inner: BaseCheckpointSaver,
        recorder: Recorder,
        lock: SaverLock,
        tally: coverage.CallTally | None = None,
    ) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.recorder = recorder
        self.lock = lock
        self.tally = tally or coverage.CallTally()
        recorder.inner = inner
        recorder.serde = inner.serde
        hook_statements(inner, recorder.kill)

    @property
    def config_specs(self) -> list:
        return self.inner.config_specs

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)

    def get_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
        self.tally.note(coverage.Shape("get_delta_channel_history"))
        return self.inner.get_delta_channel_history(*args, **kwargs)

    async def aget_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
        self.tally.note(coverage.Shape("aget_delta_channel_history"))
        return await self.inner.aget_delta_channel_history(*args, **kwargs)

    def _made(self, submit: Callable[[], T]) -> T:
        """Notes that a write is made (`submit`). Unserialized, the call waits until those
        lines are written: another process may read the store while the call runs, and
        what it can see must already be in the trace."""
        if self.lock.serialize:
            return submit()
        return self.recorder.made_before_call(submit, STEP_WAIT)

    def _sync(self) -> None:
        """The graph is driven through the sync API: unserialized, acknowledgements are
        written under the flock from now on (the async API stays serialized, and its flock
        must not be taken and dropped by a line written in between)."""
        if not self.lock.serialize and self.recorder.trace.order is None:
            self.recorder.trace.order = self.lock.ordered

    # -- sync --------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        self._sync()
        start = is_run_start()
        with self.lock.reading(self.recorder):
            with self.recorder.kill.call("get_tuple"):
                tup = self.inner.get_tuple(config)
            self.recorder.read(config, tup, start)
        self.tally.note(coverage.load_shape("get_tuple", config, tup, start))
        return tup

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        given = {"before": before, "limit": limit, "filter": filter}
        if not is_replay_load():
            self.tally.note(coverage.list_shape("list", config, given, None))
            return self.inner.list(config, filter=filter, before=before, limit=limit)
        # a subgraph's run starting under a replaying parent loads through `list`
        self._sync()
        with self.lock.reading(self.recorder):
            with self.recorder.kill.call("get_tuple"):
                found = list(self.inner.list(config, filter=filter, before=before, limit=limit))
            self.recorder.replay_load(config, before, found[0] if found else None)
        self.tally.note(coverage.list_shape("list", config, given, found))
        return iter(found)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.tally.note(coverage.put_shape("put", config, metadata))
        self._sync()
        self.recorder.wait_step(config, dict(metadata), STEP_WAIT)
        with self.lock.writing():
            digest = self._made(lambda: self.recorder.putting(config, checkpoint, dict(metadata)))
            identity = effect.of_put(config, checkpoint)
            with (
                self.lock.timed(self.recorder.trace.proc, "put"),
                self.recorder.kill.call("put", identity=identity),
            ):
                result = self.inner.put(config, checkpoint, metadata, new_versions)
            self.recorder.put_done(config, checkpoint, digest)
        return result

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.tally.note(coverage.writes_shape("put_writes", config, writes))
        self._sync()
        done = self._made(
            lambda: self.recorder.writes_called(config, list(writes), task_id, task_path)
        )
        label = f"put_writes {_label(task_path)}"
        identity = effect.of_writes(config, writes, task_id)
        with self.lock.writing():
            with (
                self.lock.timed(self.recorder.trace.proc, label),
                self.recorder.kill.call(label, identity=identity),
            ):
                self.inner.put_writes(config, writes, task_id, task_path)
            done()

    def delete_thread(self, thread_id: str) -> None:
        self.tally.note(coverage.Shape("delete_thread"))
        with self.lock.held():
            self.inner.delete_thread(thread_id)
            self.recorder.deleted(str(thread_id))

    # -- async: always serialized (an asyncio task cannot hold the recorder's thread lock
    # across an await without letting the loop's other tasks in) ------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        start = is_run_start()
        async with self.lock.held_async():
            with self.recorder.kill.call("get_tuple", inside=False):
                tup = await self.inner.aget_tuple(config)
            self.recorder.read(config, tup, start)
        self.tally.note(coverage.load_shape("aget_tuple", config, tup, start))
        return tup

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        given = {"before": before, "limit": limit, "filter": filter}
        if not is_replay_load():
            self.tally.note(coverage.list_shape("alist", config, given, None))
            async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
                yield item
            return
        # a subgraph's run starting under a replaying parent loads through `alist`
        async with self.lock.held_async():
            with self.recorder.kill.call("get_tuple", inside=False):
                found = [
                    item
                    async for item in self.inner.alist(
                        config, filter=filter, before=before, limit=limit
                    )
                ]
            self.recorder.replay_load(config, before, found[0] if found else None)
        self.tally.note(coverage.list_shape("alist", config, given, found))
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.tally.note(coverage.put_shape("aput", config, metadata))
        waited = 0.0
        while waited < STEP_WAIT and not self.recorder.can_step(config, dict(metadata)):
            await asyncio.sleep(0.002)  # the writes' tasks run on this loop
            waited += 0.002
        async with self.lock.held_async():
            digest = self.recorder.putting(config, checkpoint, dict(metadata))
            identity = effect.of_put(config, checkpoint)
            with self.recorder.kill.call("put", inside=False, identity=identity):
                result = await self.inner.aput(config, checkpoint, metadata, new_versions)
            self.recorder.put_done(config, checkpoint, digest)
        return result

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.tally.note(coverage.writes_shape("aput_writes", config, writes))
        done = self.recorder.writes_called(config, list(writes), task_id, task_path)
        identity = effect.of_writes(config, writes, task_id)
        label = f"put_writes {_label(task_path)}"
        async with self.lock.held_async():
            with self.recorder.kill.call(label, inside=False, identity=identity):
                await self.inner.aput_writes(config, writes, task_id, task_path)
            done()

    async def adelete_thread(self, thread_id: str) -> None:
        self.tally.note(coverage.Shape("adelete_thread"))
        async with self.lock.held_async():
            await self.inner.adelete_thread(thread_id)
            self.recorder.deleted(str(thread_id))
