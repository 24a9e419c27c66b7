"""One crash-safe JSON Lines trace shared by every process of a cell, and the ResumeCore v2
header.

Each line is one `os.write` on an O_APPEND descriptor, so lines of concurrent processes never
interleave and a SIGKILL loses at most the line being written (the checker reports a truncated
last line and judges the rest). Within a process one sequence counter, taken under a lock,
orders the events of all its threads. `shared()` is a cross-process lock (flock) for a
recorder that must read the store and log what it read as one move, so that no other process's
acknowledgement slips between the two.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT = "resume-check/v2"
V1 = "resume-check/v1"
"""The format of the DagRevision, SemanticRecovery and SandboxCR traces."""
LEVELS = ("exactly-once", "at-least-once", "at-most-once")


def head(contract: str, runtime: str, version: str, fmt: str, **fields: Any) -> dict[str, Any]:
    """The start every trace header shares -- its format, the contract that judges it, the
    runtime that wrote it -- then the contract's own `fields`, in the order given: every
    recorder writes these three keys first and alike, whatever it declares after them."""
    return {
        "format": fmt,
        "contract": contract,
        "runtime": {"name": runtime, "version": version},
        **fields,
    }


def header(
    *,
    runtime: str,
    version: str,
    backend: str,
    scenario: str,
    durability: str = "sync",
    effects_default: str = "exactly-once",
    effect_kinds: dict[str, str] | None = None,
    fencing: str = "lease",
    nodes: list[str] | None = None,
    thread: str | None = None,
) -> dict[str, Any]:
    """A ResumeCore v2 header declaring what the runtime documents (nothing implied)."""
    assert durability in ("sync", "async", "exit") and fencing in ("lease", "none")
    assert effects_default in LEVELS
    kinds = [{"kind": k, "level": lv} for k, lv in sorted((effect_kinds or {}).items())]
    assert all(k["level"] in LEVELS for k in kinds)
    declared = head(
        "ResumeCore",
        runtime,
        version,
        FORMAT,
        backend=backend,
        scenario=scenario,
        guarantees={
            "durability": durability,
            "effects": {"default": effects_default, "kinds": kinds},
            "fencing": fencing,
        },
    )
    if thread is not None:
        declared["thread"] = thread
    if nodes is not None:
        declared["graph"] = {"nodes": sorted(set(nodes))}
    return declared


def load(
    thread: str,
    *,
    checkpoint: str | None = None,
    parent: str | None = None,
    digest: str | None = None,
    writes: list[dict[str, Any]] | None = None,
    answers: list[dict[str, Any]] | None = None,
    asked: str | None = None,
) -> dict[str, Any]:
    """The fields of a `load` event, in the order every recorder writes them: what a process
    read from the store for `thread` (by default nothing: a thread never saved, a run's start),
    with `asked` the checkpoint it asked for (None: the latest)."""
    return {
        "thread": thread,
        "asked": asked,
        "checkpoint": checkpoint,
        "parent": parent,
        "digest": digest,
        "writes": writes or [],
        "answers": answers or [],
    }


class TraceWriter:
    """Appends events of one process (`proc`) to a cell's trace.

    A contract whose events name no process (DagRevision, SemanticRecovery, SandboxCR) passes
    `proc=None`: the events carry no `proc`. `timestamps` adds `ts` (wall-clock seconds, which
    contracts ignore; a benchmark reads them), `first_seq` continues the numbering of a trace
    an earlier process of the run wrote."""

    def __init__(
        self,
        path: Path,
        proc: str | int | None = None,
        *,
        timestamps: bool = False,
        first_seq: int = 0,
    ) -> None:
        self.path = Path(path)
        self.proc = proc
        self.timestamps = timestamps
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.RLock()
        self._seq = first_seq

    @classmethod
    def continuing(
        cls, path: Path, proc: str | int | None = None, *, timestamps: bool = False
    ) -> TraceWriter:
        """A writer for the next process of a run whose trace exists (a restart after a
        SIGKILL): its events are numbered on from the trace's line count."""
        with open(path, "rb") as fh:
            count = sum(1 for _ in fh)
        return cls(path, proc, timestamps=timestamps, first_seq=count)

    def header(self, head: dict[str, Any]) -> None:
        """The first line; written once by the cell's driver before any process starts."""
        self._write(head)

    def event(self, ev: str, **fields: Any) -> dict[str, Any]:
        """Appends one event; returns it as written."""
        with self._lock:
            line: dict[str, Any] = {"seq": self._seq}
            if self.timestamps:
                line["ts"] = round(time.time(), 6)
            line["ev"] = ev
            if self.proc is not None:
                line["proc"] = self.proc
            line |= fields
            self._seq += 1
            self._write(line)
            return line

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Holds an exclusive lock on the trace across processes (and this process's threads)."""
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _write(self, obj: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(obj, separators=(", ", ": ")) + "\n").encode())

    def close(self) -> None:
        """Closes the descriptor; a second close is a no-op."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A writer dropped unclosed (one line written by a driver, a header) must not keep its
        # descriptor: a matrix makes thousands, and a process has 1,024 that select() takes.
        with contextlib.suppress(Exception):
            self.close()
