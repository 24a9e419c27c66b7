"""An append-only JSON Lines trace shared by every process of a matrix cell."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The events that say the saver acknowledged a write.
ACKNOWLEDGEMENTS = ("put", "put_writes")


class TraceFile:
    """One `os.write` per line on an O_APPEND descriptor.

    Processes of a cell (a worker, the worker that resumes after it was killed, concurrent
    resumers) append to the same file: a single write of a whole line is never interleaved
    with another process's, and a SIGKILL loses at most the line being written, which the
    checker drops as a truncated last line. Python's buffered IO is bypassed on purpose.
    """

    def __init__(self, path: Path, proc: str) -> None:
        self.path = path
        self.proc = proc
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._seq = 0
        # When saver calls are not serialized (`SaverLock(serialize=False)`), the lock an
        # acknowledgement is written under, so that no read of another process is in
        # progress between its call and its line (docs/langgraph.md, racing calls).
        self.order: Callable[[], contextlib.AbstractContextManager[None]] | None = None

    def header(self, header: dict[str, Any]) -> None:
        self._write(header)

    def event(self, ev: str, **fields: Any) -> None:
        """Writes one event of this process; the sequence number orders its own events."""
        with self._lock:
            line = {"seq": self._seq, "ev": ev, "proc": self.proc, **fields}
            self._seq += 1
            if self.order is not None and ev in ACKNOWLEDGEMENTS:
                with self.order():
                    self._write(line)
            else:
                self._write(line)

    def _write(self, obj: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(obj, separators=(", ", ": ")) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)
