"""How the `--app` suites drive a user's graph: synchronously, or on an event loop of its own.

A graph with async-only nodes runs through LangGraph's async API alone (`ainvoke`, `astream`),
and its checkpointer must be async too (AsyncSqliteSaver on aiosqlite). The engines
(rctools.recovery.appengine, rctools.revision.app) are the same for both: they call `invoke`
or `stream` here and LangGraph's synchronous `get_state`/`update_state`, which
AsyncSqliteSaver answers from any thread but its loop's -- so the async driver keeps the loop
on a thread of its own and the engines never run on it (`stream` hands each item over to the
calling thread). An async tool's undo is a coroutine: `settle` runs it on that loop.

Both savers tell a listener when a task's writes are saved (`saved(task_id)`), when a checkpoint
of the graph is (`saved(None)`: it holds every write of the step before it), and when a
subgraph's checkpoint is (`inner(namespace, step)`: a restore point inside the subgraph node's
task). That is when a
node's output is committed: LangGraph saves a task's writes in the background, so a node that
has returned but whose writes are not saved yet is lost by a kill, and LangGraph runs it again.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver


class Listener:
    """What a saver saved; nothing is done with it unless a subclass says so."""

    def saved(self, task: str | None) -> None:
        """A task's writes (its id), or a checkpoint of the graph (None)."""

    def inner(self, namespace: str, step: int) -> None:
        """A checkpoint of a subgraph, in the task namespace `namespace`."""


def _tell(listener: Listener, config: Any, metadata: Any) -> None:
    namespace = str(config["configurable"].get("checkpoint_ns", ""))
    if namespace:
        listener.inner(namespace, int((metadata or {}).get("step", -1)))
    else:
        listener.saved(None)


class _SavingSaver(SqliteSaver):
    """SqliteSaver, telling `listener` what it has saved."""

    listener: Listener

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        super().put_writes(config, writes, task_id, task_path)
        self.listener.saved(task_id)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        saved = super().put(config, checkpoint, metadata, new_versions)
        _tell(self.listener, config, metadata)
        return saved


class _Driver:
    """The graph `factory` builds on the saver the driver opens (`_open`), run at
    `durability`."""

    def __init__(
        self,
        factory: Callable[[Any], Any],
        db_path: Path,
        durability: str,
        listener: Listener | None = None,
    ) -> None:
        self.durability = durability
        self.graph = factory(self._open(db_path, listener or Listener()))

    def _open(self, db_path: Path, listener: Listener) -> Any:
        """The saver on `db_path` that tells `listener` what it saved."""
        raise NotImplementedError


class SyncDriver(_Driver):
    """A graph of plain nodes: `invoke` on the SQLite saver."""

    def _open(self, db_path: Path, listener: Listener) -> Any:
        self.db = sqlite3.connect(db_path, check_same_thread=False, timeout=30)
        saver = _SavingSaver(self.db)
        saver.listener = listener
        return saver

    def invoke(self, payload: Any, config: dict[str, Any]) -> Any:
        return self.graph.invoke(payload, config, durability=self.durability)

    def stream(self, payload: Any, config: dict[str, Any], modes: list[str]) -> Iterator[Any]:
        return iter(
            self.graph.stream(payload, config, stream_mode=modes, durability=self.durability)
        )

    def settle(self, result: Any) -> Any:
        return result

    def close(self) -> None:
        self.db.close()


class AsyncDriver(_Driver):
    """A graph with async-only nodes: `ainvoke` on AsyncSqliteSaver, on a loop thread."""

    def _open(self, db_path: Path, listener: Listener) -> Any:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        class SavingSaver(AsyncSqliteSaver):
            async def aput_writes(
                self, config: Any, writes: Any, task_id: str, task_path: str = ""
            ) -> None:
                await super().aput_writes(config, writes, task_id, task_path)
                listener.saved(task_id)

            async def aput(
                self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any
            ) -> Any:
                saved = await super().aput(config, checkpoint, metadata, new_versions)
                _tell(listener, config, metadata)
                return saved

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def open_saver() -> Any:
            import aiosqlite

            return SavingSaver(await aiosqlite.connect(db_path))

        self.saver = self._on_loop(open_saver())
        return self.saver

    def _on_loop(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def invoke(self, payload: Any, config: dict[str, Any]) -> Any:
        return self._on_loop(self.graph.ainvoke(payload, config, durability=self.durability))

    def stream(self, payload: Any, config: dict[str, Any], modes: list[str]) -> Iterator[Any]:
        """`astream`'s items, each handed over to the calling thread; leaving the loop early
        closes the stream on its loop (LangGraph stops the run)."""
        items = self.graph.astream(payload, config, stream_mode=modes, durability=self.durability)
        try:
            while True:
                try:
                    yield self._on_loop(items.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._on_loop(items.aclose())

    def settle(self, result: Any) -> Any:
        """An async undo's coroutine, run to its end."""
        return self._on_loop(result) if asyncio.iscoroutine(result) else result

    def close(self) -> None:
        self._on_loop(self.saver.conn.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def driver(
    factory: Callable[[Any], Any],
    db_path: Path,
    asynchronous: bool,
    durability: str,
    listener: Listener | None = None,
) -> Any:
    """The driver for a graph: async when it has async-only nodes. `durability` is LangGraph's
    (`async`, its default: a step's checkpoint is written while the next step runs; `sync`:
    before it starts)."""
    _quiet_abandoned_writes()
    return (AsyncDriver if asynchronous else SyncDriver)(factory, db_path, durability, listener)


def _quiet_abandoned_writes() -> None:
    """When a node fails, LangGraph's run ends and shuts its executor down while a sibling
    task may still be running; when that sibling finishes, LangGraph's callback cannot submit
    its writes ("cannot schedule new futures after shutdown") and `concurrent.futures` logs the
    error with its traceback on stderr. Nothing reached the saver, so the trace is whole and
    the recovery reads what was stored; the log line is LangGraph's noise in the suite's own
    output, not a failure of the run: it is not shown."""
    logger = logging.getLogger("concurrent.futures")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
