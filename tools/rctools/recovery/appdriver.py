"""How `run recovery --app` drives a user's graph: synchronously, or on an event loop of its own.

A graph with async-only nodes runs through LangGraph's async API alone (`ainvoke`), and its
checkpointer must be async too (AsyncSqliteSaver on aiosqlite). The engine (appengine) is the
same for both: it calls `invoke` here and LangGraph's synchronous `get_state`/`update_state`,
which AsyncSqliteSaver answers from any thread but its loop's -- so the async driver keeps the
loop on a thread of its own and the engine never runs on it. An async tool's undo is a
coroutine: `settle` runs it on that loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver


class SyncDriver:
    """A graph of plain nodes: `invoke` on the SQLite saver."""

    def __init__(self, factory: Callable[[Any], Any], db_path: Path) -> None:
        self.db = sqlite3.connect(db_path, check_same_thread=False, timeout=30)
        self.graph = factory(SqliteSaver(self.db))

    def invoke(self, payload: Any, config: dict[str, Any]) -> Any:
        return self.graph.invoke(payload, config)

    def settle(self, result: Any) -> Any:
        return result

    def close(self) -> None:
        self.db.close()


class AsyncDriver:
    """A graph with async-only nodes: `ainvoke` on AsyncSqliteSaver, on a loop thread."""

    def __init__(self, factory: Callable[[Any], Any], db_path: Path) -> None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def open_saver() -> Any:
            import aiosqlite

            return AsyncSqliteSaver(await aiosqlite.connect(db_path))

        self.saver = self._on_loop(open_saver())
        self.graph = factory(self.saver)

    def _on_loop(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def invoke(self, payload: Any, config: dict[str, Any]) -> Any:
        return self._on_loop(self.graph.ainvoke(payload, config))

    def settle(self, result: Any) -> Any:
        """An async undo's coroutine, run to its end."""
        return self._on_loop(result) if asyncio.iscoroutine(result) else result

    def close(self) -> None:
        self._on_loop(self.saver.conn.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


def driver(factory: Callable[[Any], Any], db_path: Path, asynchronous: bool) -> Any:
    """The driver for a graph: async when it has async-only nodes."""
    return (AsyncDriver if asynchronous else SyncDriver)(factory, db_path)
