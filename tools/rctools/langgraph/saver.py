"""A checkpointer that delegates every call to the saver under test and records it.

This is the ground truth of what was persisted and of what a resume loaded. It forwards
`serde` and `get_next_version` (savers version channels differently) and keeps the
`task_path` parameter of `put_writes`, which LangGraph's loop looks for.
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

from rctools.langgraph.recorder import Recorder


def _checkpoint_id(config: RunnableConfig) -> str | None:
    return config.get("configurable", {}).get("checkpoint_id")


def _node_of(task_path: str) -> str | None:
    """`put_writes`'s task_path looks like '~__pregel_pull, B'; the node is its last part."""
    return task_path.rsplit(", ", 1)[-1].strip() if task_path else None


class SaverLock:
    """Makes each saver call and the line that records it one step, across the processes of
    a cell (flock) and the threads or tasks of one process.

    Without it, a process could read the store before another's write and log the read after
    the other logged its write, and the trace would show an order that never happened.
    Concurrency under test is between calls; the store's own atomicity within a call is what
    the contract assumes. The kernel drops a killed process's flock.
    """

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._thread_lock = threading.Lock()
        self._task_lock: asyncio.Lock | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._thread_lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    @contextlib.asynccontextmanager
    async def held_async(self) -> AsyncIterator[None]:
        if self._task_lock is None:
            self._task_lock = asyncio.Lock()
        async with self._task_lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)


class RecordingSaver(BaseCheckpointSaver):
    """Wraps `inner`; each call's entry and exit is also a point where a SIGKILL may land."""

    def __init__(self, inner: BaseCheckpointSaver, recorder: Recorder, lock: SaverLock) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.recorder = recorder
        self.lock = lock

    @property
    def config_specs(self) -> list:
        return self.inner.config_specs

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self.inner.get_next_version(current, channel)

    # -- sync --------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        with self.lock.held():
            self.recorder.kill.point("get_tuple entry")
            tup = self.inner.get_tuple(config)
            self.recorder.kill.point("get_tuple exit")
            self.recorder.read(config, tup)
        return tup

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.recorder.checkpoint_made(_checkpoint_id(config), checkpoint, dict(metadata))
        with self.lock.held():
            self.recorder.kill.point("put entry")
            result = self.inner.put(config, checkpoint, metadata, new_versions)
            self.recorder.kill.point("put exit")
            self.recorder.checkpoint_saved(checkpoint["id"])
        return result

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self.lock.held():
            cid, node = self._before_writes(config, task_id, task_path)
            self.inner.put_writes(config, writes, task_id, task_path)
            self._after_writes(cid, task_id, node, writes)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    # -- async -------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        async with self.lock.held_async():
            self.recorder.kill.point("get_tuple entry")
            tup = await self.inner.aget_tuple(config)
            self.recorder.kill.point("get_tuple exit")
            self.recorder.read(config, tup)
        return tup

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self.recorder.checkpoint_made(_checkpoint_id(config), checkpoint, dict(metadata))
        async with self.lock.held_async():
            self.recorder.kill.point("put entry")
            result = await self.inner.aput(config, checkpoint, metadata, new_versions)
            self.recorder.kill.point("put exit")
            self.recorder.checkpoint_saved(checkpoint["id"])
        return result

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        async with self.lock.held_async():
            cid, node = self._before_writes(config, task_id, task_path)
            await self.inner.aput_writes(config, writes, task_id, task_path)
            self._after_writes(cid, task_id, node, writes)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)

    # -- shared ------------------------------------------------------------------------

    def _before_writes(
        self, config: RunnableConfig, task_id: str, task_path: str
    ) -> tuple[str, str]:
        cid = _checkpoint_id(config) or ""
        node = _node_of(task_path) or self.recorder.tasks.get(task_id)
        self.recorder.tasks.add(task_id, node)
        self.recorder.writes_called(cid, task_id, node)
        self.recorder.kill.point(f"put_writes {node} entry")
        return cid, node

    def _after_writes(
        self, cid: str, task_id: str, node: str, writes: Sequence[tuple[str, Any]]
    ) -> None:
        self.recorder.kill.point(f"put_writes {node} exit")
        self.recorder.writes_saved(cid, task_id, node, list(writes))
