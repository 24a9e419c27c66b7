"""Write a SemanticRecovery trace as the run goes: one JSON object per line, flushed each time,
so a run that dies still leaves every event before its death on disk."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, TextIO


class TraceWriter:
    """The header, then events numbered by one sequence counter, from any thread."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.handle: TextIO = path.open("w", encoding="utf-8")
        self.lock = threading.Lock()
        self.seq = 0
        self.events: list[dict[str, Any]] = []
        self._write(header)

    def event(self, ev: str, **fields: Any) -> None:
        with self.lock:
            record = {"seq": self.seq, "ts": round(time.time(), 6), "ev": ev, **fields}
            self.seq += 1
            self.events.append(record)
            self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        self.handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()
