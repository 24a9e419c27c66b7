"""A SemanticRecovery trace written as the run goes, through the suites' one crash-safe writer
(rctools.suite.trace: one `os.write` per line), so a run that dies still leaves every event
before its death on disk. The events written are also kept: the controller localizes a
failure from them."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from rctools.suite.trace import V1, head
from rctools.suite.trace import TraceWriter as Lines


def header(
    workload: str,
    policy: str,
    scenario: str,
    instances: list[str],
    tools: Mapping[str, str],
    thread: str | None = None,
) -> dict[str, Any]:
    """A SemanticRecovery trace's header, from the built-in engine and from a user's app alike:
    LangGraph on SQLite, the workflow's instances and each tool's declared policy."""
    return head(
        "SemanticRecovery",
        "langgraph",
        metadata.version("langgraph"),
        V1,
        backend="sqlite",
        **({} if thread is None else {"thread": thread}),
        workload=workload,
        policy=policy,
        scenario=scenario,
        workflow={
            "instances": instances,
            "tools": [{"name": n, "policy": p} for n, p in tools.items()],
        },
    )


class TraceWriter:
    """The header, then events numbered by one sequence counter, from any thread."""

    def __init__(self, path: Path, header: dict[str, Any] | None) -> None:
        """A new trace with `header`; with None, the trace at `path` a killed process of the
        run wrote, its events read back and numbered on."""
        self.path = path
        self.lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        if header is None:
            lines = path.read_text(encoding="utf-8").splitlines()[1:]
            self.events = [json.loads(line) for line in lines if line.strip()]
            first = self.events[-1]["seq"] + 1 if self.events else 0
            self._lines = Lines(path, timestamps=True, first_seq=first)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        self._lines = Lines(path, timestamps=True)
        self._lines.header(header)

    def event(self, ev: str, **fields: Any) -> None:
        with self.lock:  # the kept events in the order of their lines
            self.events.append(self._lines.event(ev, **fields))

    def close(self) -> None:
        self._lines.close()
