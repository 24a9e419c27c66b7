"""The one child harness: a worker process of a cell, SIGKILLed when it reaches its kill point.

`run_worker(module, job, ...)` runs `module.main(job)` in a process of its own -- a fresh
interpreter (`python -m module job`), or, for a runtime whose import costs seconds, a process
forked from a server that imported it once (`preload`, `suite.preload`) -- and supervises it
the same way either way: the kill point the child's `crash.KillPoints` reaches comes through a
pipe (the child is stopped there, `crash.tell_and_stop`), the parent sends SIGKILL, and the
child's end is one `WorkerReport`: killed at its point, returned (with what it wrote to its
result file), an error (the last lines of its stderr), or timed out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from rctools.suite import preload as forkserver
from rctools.suite.crash import FD_ENV, KILL_ENV
from rctools.suite.reports import WorkerReport


class Child(Protocol):
    """A started worker process, however it was started."""

    @property
    def pid(self) -> int | None: ...

    def wait(self, timeout: float) -> int | None:
        """Its exit code once it has ended, or None when it still runs after `timeout` s."""

    def kill(self) -> None:
        """SIGKILL, and wait for it to be gone."""


class _Spawned:
    """A fresh interpreter running `python -m module job`; the kill pipe is inherited."""

    def __init__(self, module: str, job: Path, env: dict[str, str], stderr: Path) -> None:
        read_fd, write_fd = os.pipe()
        with stderr.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, str(job)],
                env={**env, FD_ENV: str(write_fd)},
                pass_fds=(write_fd,),
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        os.close(write_fd)
        self.reader = read_fd

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def wait(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def run_worker(
    module: str,
    job: Path,
    *,
    proc: str,
    role: str,
    kill_at: str | None = None,
    result_file: Path | None = None,
    timeout: float = 60.0,
    preload: tuple[str, ...] = (),
) -> WorkerReport:
    """Runs `module.main(job)` in a child process (forked from the server that imported
    `preload`, when given); SIGKILLs it when it reaches `kill_at`. Its stderr goes to
    `job.stderr` beside the job file."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in (KILL_ENV, FD_ENV)}
    if kill_at:
        env[KILL_ENV] = kill_at
    stderr = job.with_suffix(".stderr")
    child: Child
    if preload:
        child, reader = forkserver.start(module, job, env, stderr, preload)
    else:
        spawned = _Spawned(module, job, env, stderr)
        child, reader = spawned, spawned.reader
    said: list[str] = []

    def listen() -> None:
        """The child's one message, `label#n`, once it stands at its kill point; then SIGKILL.
        Nothing but EOF comes when the child ends on its own. The pipe is this thread's to
        close: closed by another, its number could be reused while this one reads."""
        with os.fdopen(reader, "rb") as pipe:
            line = pipe.readline()
        if line and child.pid:
            said.append(line.decode().strip())
            os.kill(child.pid, signal.SIGKILL)

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    code = child.wait(timeout)
    seconds = round(time.monotonic() - started, 3)
    if code is None:
        child.kill()
        error = f"timed out after {timeout:g} s"
        return WorkerReport(proc, role, "error", child.wait(0), error=error, seconds=seconds)
    listener.join(timeout=5)
    if said:
        return WorkerReport(proc, role, "killed", code, point=said[0], seconds=seconds)
    result: Any = None
    if result_file is not None and result_file.exists():
        result = json.loads(result_file.read_text(encoding="utf-8") or "null")
    if code != 0:
        tail = stderr.read_text(errors="replace").strip().splitlines()[-3:]
        return WorkerReport(
            proc, role, "error", code, result=result, error=" | ".join(tail), seconds=seconds
        )
    return WorkerReport(proc, role, "returned", 0, result=result, seconds=seconds)
