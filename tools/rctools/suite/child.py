"""The one child harness: a worker process of a cell, SIGKILLed when it reaches its kill point.

A worker runs in a process of its own, started one of three ways -- a fresh interpreter
(`run_worker`: `python -m module job`), a process forked from a server that imported the
runtime once (`run_worker(preload=...)`, `suite.preload`: a runtime whose import costs
seconds), or a fork of this very process running a callable (`start_forked`: LangGraph's
driver, which holds the cell's graph, saver factory and scenario as Python objects that no
job file can carry) -- and is supervised the same way every time: the kill point the child's
`crash.KillPoints` (or LangGraph's extension of it) reaches comes through a pipe, one line
`label#n`, optionally followed by a tab and a JSON object of what the child knew at that
instant (`crash.kill_message`); the child is stopped there (`crash.tell_and_stop`), the parent
sends SIGKILL, and the child's end is one `WorkerReport`: killed at its point (with what it
told), returned (with its result), an error (the last lines of its stderr), or timed out.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from rctools.suite import preload as forkserver
from rctools.suite.crash import FD_ENV, KILL_ENV, parse_kill_message
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


class _Forked:
    """A fork of this process running `work(kill_fd)`; its JSON result goes to `result`.

    Forked with `os.fork` and left with `os._exit`, nothing else: no interpreter shutdown in
    the child (a runtime's background threads are not joined, the parent's buffers are not
    flushed twice). Its end is awaited on a pidfd, so a timeout needs no polling."""

    def __init__(self, work: Callable[[int], Any], result: Path, log: Path | None) -> None:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                os.close(read_fd)
                out = os.open(log or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                os.dup2(out, 1)
                os.dup2(out, 2)
                data = json.dumps(work(write_fd), default=str)
                result.write_text(data, encoding="utf-8")
                code = 0
            except BaseException:  # an error of the harness's caller: its stderr says it
                os.write(2, traceback.format_exc().encode())
            finally:
                os._exit(code)
        os.close(write_fd)
        self.reader = read_fd
        self._pid = pid
        self._pidfd = os.pidfd_open(pid)
        self._code: int | None = None

    @property
    def pid(self) -> int | None:
        return self._pid

    def wait(self, timeout: float | None) -> int | None:
        if self._code is None:
            if not select.select([self._pidfd], [], [], timeout)[0]:
                return None
            _, status = os.waitpid(self._pid, 0)
            self._code = os.waitstatus_to_exitcode(status)
            os.close(self._pidfd)
        return self._code

    def kill(self) -> None:
        if self._code is None:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            self.wait(None)


class Running:
    """A started worker under supervision: `wait()` gives its `WorkerReport`.

    A thread reads the kill pipe from the start, so a worker that stops at its point is
    killed at once, whichever worker of a phase the caller waits for first."""

    def __init__(
        self,
        child: Child,
        reader: int,
        *,
        proc: str,
        role: str,
        stderr: Path | None,
        result_file: Path | None,
        timeout: float,
    ) -> None:
        self.child, self.proc, self.role = child, proc, role
        self.stderr, self.result_file, self.timeout = stderr, result_file, timeout
        self.started = time.monotonic()
        self.said: list[str] = []
        self.listener = threading.Thread(target=self._listen, args=(reader,), daemon=True)
        self.listener.start()

    def _listen(self, reader: int) -> None:
        """The child's one message, once it stands at its kill point; then SIGKILL. Nothing
        but EOF comes when the child ends on its own. The pipe is this thread's to close:
        closed by another, its number could be reused while this one reads."""
        with os.fdopen(reader, "rb") as pipe:
            line = pipe.readline()
        if line and self.child.pid:
            self.said.append(line.decode().rstrip("\n"))
            os.kill(self.child.pid, signal.SIGKILL)

    def wait(self) -> WorkerReport:
        child, proc, role = self.child, self.proc, self.role
        code = child.wait(self.timeout)
        seconds = round(time.monotonic() - self.started, 3)
        if code is None:
            child.kill()
            error = f"timed out after {self.timeout:g} s"
            return WorkerReport(proc, role, "error", child.wait(0), error=error, seconds=seconds)
        self.listener.join(timeout=5)
        if self.said:
            point, told = parse_kill_message(self.said[0])
            return WorkerReport(proc, role, "killed", code, point=point, told=told, seconds=seconds)
        result: Any = None
        if self.result_file is not None and self.result_file.exists():
            result = json.loads(self.result_file.read_text(encoding="utf-8") or "null")
        if code != 0:
            tail = self._stderr_tail()
            return WorkerReport(
                proc, role, "error", code, result=result, error=" | ".join(tail), seconds=seconds
            )
        return WorkerReport(proc, role, "returned", 0, result=result, seconds=seconds)

    def _stderr_tail(self) -> list[str]:
        if self.stderr is None or not self.stderr.exists():
            return []
        return self.stderr.read_text(errors="replace").strip().splitlines()[-3:]


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
    running = Running(
        child,
        reader,
        proc=proc,
        role=role,
        stderr=stderr,
        result_file=result_file,
        timeout=timeout,
    )
    return running.wait()


class ForkedRunning(Running):
    """A `start_forked` worker: its result file is the harness's own, removed once read."""

    def wait(self) -> WorkerReport:
        try:
            return super().wait()
        finally:
            if self.result_file is not None:
                self.result_file.unlink(missing_ok=True)


def start_forked(
    work: Callable[[int], Any],
    *,
    proc: str,
    role: str,
    log: Path | None = None,
    timeout: float = 60.0,
) -> Running:
    """Starts `work(kill_fd)` in a fork of this process, supervised like every worker (the
    caller gives `kill_fd` to the child's kill points); `wait()` on the answer gives the
    `WorkerReport`, whose `result` is what `work` returned (as JSON). Its stdout and stderr
    are appended to `log` (or dropped). For processes of one phase: start them all, then
    wait for each."""
    fd, name = tempfile.mkstemp(prefix="rc-worker-", suffix=".json")
    os.close(fd)
    result = Path(name)
    child = _Forked(work, result, log)
    return ForkedRunning(
        child,
        child.reader,
        proc=proc,
        role=role,
        stderr=log,
        result_file=result,
        timeout=timeout,
    )
