"""A worker's side effects on the outside world, as every runtime suite records them: each
firing is one line of the cell's ledger file (one `os.write` on O_APPEND, read back by
`phases.effects_fired`: how often each effect really fired, beside the verdict) and one `effect`
event in the trace."""

from __future__ import annotations

import json
import os
from typing import Any

from rctools.suite.trace import TraceWriter


class Effects:
    """The effects one process of a cell fires (`job["effects"]` is the cell's ledger)."""

    def __init__(self, job: dict[str, Any], trace: TraceWriter) -> None:
        self._fd = os.open(job["effects"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.trace, self.proc = trace, job["proc"]

    def fire(self, thread: str, task: str, intent: str, kind: str | None = None) -> None:
        self.trace.event("effect", thread=thread, task=task, intent=intent, kind=kind or intent)
        line = json.dumps({"proc": self.proc, "intent": intent}) + "\n"
        os.write(self._fd, line.encode())
