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
import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from rctools.langgraph.observe import is_replay_load, is_run_start
from rctools.langgraph.recorder import Recorder


class SaverLock:
    """Makes each saver call and the lines that record it one step, across the processes of
    a trace (flock) and the threads or tasks of one process.

    Without it, a process could read the store before another's write and log the read after
    the other logged its write, and the trace would show an order that never happened.
    Concurrency under test is between calls; the store's own atomicity within a call is what
    the contract assumes. The kernel drops a killed process's flock. `path` None: one
    process, a thread lock is enough.
    """

    def __init__(self, path: Path | None) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if path else None
        self._thread_lock = threading.Lock()
        self._task_lock: asyncio.Lock | None = None

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


# How long a `put` waits for the `put_writes` calls of the tasks its checkpoint follows
# (normally microseconds: they were submitted before it).
STEP_WAIT = 5.0


def _label(task_path: str) -> str:
    """A write's kill-point label: its task path without LangGraph's prefix."""
    return task_path.replace("~__pregel_pull, ", "").replace("~__pregel_push, ", "push ") or "-"


class RecordingSaver(BaseCheckpointSaver):
    """Wraps `inner`; each call's entry and exit is also a point where a SIGKILL may land."""

    def __init__(self, inner: BaseCheckpointSaver, recorder: Recorder, lock: SaverLock) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.recorder = recorder
        self.lock = lock
        recorder.inner = inner
        recorder.serde = inner.serde

    @property
    def config_specs(self) -> list:
        return self.inner.config_specs

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)

    def get_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_delta_channel_history(*args, **kwargs)

    async def aget_delta_channel_history(self, *args: Any, **kwargs: Any) -> Any:
        return await self.inner.aget_delta_channel_history(*args, **kwargs)

    # -- sync --------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        start = is_run_start()
        with self.lock.held():
            self.recorder.kill.point("get_tuple entry")
            tup = self.inner.get_tuple(config)
            self.recorder.kill.point("get_tuple exit")
            self.recorder.read(config, tup, start)
        return tup

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        if not is_replay_load():
            return self.inner.list(config, filter=filter, before=before, limit=limit)
        # a subgraph's run starting under a replaying parent loads through `list`
        with self.lock.held():
            self.recorder.kill.point("get_tuple entry")
            found = list(self.inner.list(config, filter=filter, before=before, limit=limit))
            self.recorder.kill.point("get_tuple exit")
            self.recorder.replay_load(config, found[0] if found else None)
        return iter(found)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.recorder.wait_step(config, dict(metadata), STEP_WAIT)
        with self.lock.held():
            digest = self.recorder.putting(config, checkpoint, dict(metadata))
            self.recorder.kill.point("put entry")
            result = self.inner.put(config, checkpoint, metadata, new_versions)
            self.recorder.kill.point("put exit")
            self.recorder.put_done(config, checkpoint, digest)
        return result

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        done = self.recorder.writes_called(config, list(writes), task_id, task_path)
        with self.lock.held():
            self.recorder.kill.point(f"put_writes {_label(task_path)} entry")
            self.inner.put_writes(config, writes, task_id, task_path)
            self.recorder.kill.point(f"put_writes {_label(task_path)} exit")
            done()

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    # -- async -------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        start = is_run_start()
        async with self.lock.held_async():
            self.recorder.kill.point("get_tuple entry")
            tup = await self.inner.aget_tuple(config)
            self.recorder.kill.point("get_tuple exit")
            self.recorder.read(config, tup, start)
        return tup

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        if not is_replay_load():
            async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
                yield item
            return
        # a subgraph's run starting under a replaying parent loads through `alist`
        async with self.lock.held_async():
            self.recorder.kill.point("get_tuple entry")
            found = [
                item
                async for item in self.inner.alist(
                    config, filter=filter, before=before, limit=limit
                )
            ]
            self.recorder.kill.point("get_tuple exit")
            self.recorder.replay_load(config, found[0] if found else None)
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        waited = 0.0
        while waited < STEP_WAIT and not self.recorder.can_step(config, dict(metadata)):
            await asyncio.sleep(0.002)  # the writes' tasks run on this loop
            waited += 0.002
        async with self.lock.held_async():
            digest = self.recorder.putting(config, checkpoint, dict(metadata))
            self.recorder.kill.point("put entry")
            result = await self.inner.aput(config, checkpoint, metadata, new_versions)
            self.recorder.kill.point("put exit")
            self.recorder.put_done(config, checkpoint, digest)
        return result

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        done = self.recorder.writes_called(config, list(writes), task_id, task_path)
        async with self.lock.held_async():
            self.recorder.kill.point(f"put_writes {_label(task_path)} entry")
            await self.inner.aput_writes(config, writes, task_id, task_path)
            self.recorder.kill.point(f"put_writes {_label(task_path)} exit")
            done()

    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)
