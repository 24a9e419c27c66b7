"""A SemanticRecovery trace written as the run goes, through the suites' one crash-safe writer
(rctools.suite.trace: one `os.write` per line), so a run that dies still leaves every event
before its death on disk. The events written are also kept: the controller localizes a
failure from them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rctools.suite.trace import TraceWriter as Lines


class TraceWriter:
    """The header, then events numbered by one sequence counter, from any thread."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        self.path = path
        self.lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self._lines = Lines(path, timestamps=True)
        self._lines.header(header)

    def event(self, ev: str, **fields: Any) -> None:
        with self.lock:  # the kept events in the order of their lines
            self.events.append(self._lines.event(ev, **fields))

    def close(self) -> None:
        self._lines.close()
