"""The trace every process of a LangGraph matrix cell appends to: the suites' one crash-safe
writer (`rctools.suite.trace.TraceWriter`: one `os.write` per line on an O_APPEND descriptor,
one sequence counter per process), plus the order racing acknowledgements are written in."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rctools.suite.trace import TraceWriter

# The events that say the saver acknowledged a write.
ACKNOWLEDGEMENTS = ("put", "put_writes")


class TraceFile(TraceWriter):
    """A cell's trace as one process writes it; `order`, when saver calls are not serialized
    (`SaverLock(serialize=False)`), is the lock an acknowledgement is written under, so that no
    read of another process is in progress between its call and its line (docs/langgraph.md,
    racing calls)."""

    def __init__(self, path: Path, proc: str) -> None:
        super().__init__(path, proc)
        self.order: Callable[[], contextlib.AbstractContextManager[None]] | None = None

    def _write(self, obj: dict[str, Any]) -> None:
        if self.order is not None and obj.get("ev") in ACKNOWLEDGEMENTS:
            with self.order():
                super()._write(obj)
        else:
            super()._write(obj)
