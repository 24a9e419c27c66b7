"""The one child harness: a worker process of a cell, SIGKILLed when it reaches its kill point.

A worker runs in a process of its own, started one of four ways -- a fresh interpreter
(`run_worker`: `python -m module job`), a process forked from a server that imported the
runtime once (`run_worker(preload=...)`, `suite.preload`: a runtime whose import costs
seconds), a command line of its own (`run_command`: the sandbox agent, a CLI that people run
too), or a fork of this very process running a callable (`start_forked`: LangGraph's driver,
which holds the cell's graph, saver factory and scenario as Python objects that no job file can
carry) -- and is supervised the same way every time: the kill point the child's
`crash.KillPoints` (or LangGraph's extension of it) reaches comes through a pipe, one line
`label#n`, optionally followed by what the child knew at that instant and the processes that
must die before it (`crash.kill_message`); the child is stopped there (`crash.tell_and_stop`),
the parent SIGKILLs those processes and then the child, and the child's end is one
`WorkerReport`: killed at its point (with what it told), returned (with its result), an error
(the last lines of its stderr), or timed out -- with the CPU seconds it used, where this
process reaps it.
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
from rctools.suite.crash import FD_ENV, KILL_ENV, KillMessage, kill_first, parse_kill_message
from rctools.suite.reports import WorkerReport


class Child(Protocol):
    """A started worker process, however it was started."""

    @property
    def pid(self) -> int | None: ...

    @property
    def cpu_seconds(self) -> float | None:
        """Once it has ended: the CPU seconds it and the children it waited for used; None
        where this process does not reap it."""

    def wait(self, timeout: float) -> int | None:
        """Its exit code once it has ended, or None when it still runs after `timeout` s."""

    def kill(self) -> None:
        """SIGKILL, and wait for it to be gone."""


class _Reaped:
    """A child of this very process: its end awaited on a pidfd (a timeout needs no polling)
    and reaped with wait4, whose resource usage is the child's own CPU -- and its waited-for
    children's (the sandbox agent's criu and tool commands) -- apart from whatever else this
    process runs side by side."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._pidfd = os.pidfd_open(pid)
        self._code: int | None = None
        self._cpu: float | None = None

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def cpu_seconds(self) -> float | None:
        return self._cpu

    def wait(self, timeout: float | None) -> int | None:
        if self._code is None:
            # poll, not select: a pidfd numbered past 1,023 is out of select()'s range
            ready = select.poll()
            ready.register(self._pidfd, select.POLLIN)
            if not ready.poll(None if timeout is None else max(0, timeout) * 1000):
                return None
            _, status, usage = os.wait4(self._pid, 0)
            self._code = os.waitstatus_to_exitcode(status)
            self._cpu = usage.ru_utime + usage.ru_stime
            os.close(self._pidfd)
        return self._code

    def kill(self) -> None:
        if self._code is None:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            self.wait(None)


class _Spawned(_Reaped):
    """A command line (`python -m module job`, or a CLI's); the kill pipe is inherited."""

    def __init__(self, argv: list[str], env: dict[str, str], stderr: Path) -> None:
        read_fd, write_fd = os.pipe()
        with stderr.open("wb") as err:
            self.process = subprocess.Popen(
                argv,
                env={**env, FD_ENV: str(write_fd)},
                pass_fds=(write_fd,),
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        os.close(write_fd)
        self.reader = read_fd
        super().__init__(self.process.pid)

    def wait(self, timeout: float | None) -> int | None:
        code = super().wait(timeout)
        if code is not None:
            self.process.returncode = code  # reaped here: Popen must not wait for it again
        return code


class _Forked(_Reaped):
    """A fork of this process running `work(kill_fd)`; its JSON result goes to `result`.

    Forked with `os.fork` and left with `os._exit`, nothing else: no interpreter shutdown in
    the child (a runtime's background threads are not joined, the parent's buffers are not
    flushed twice)."""

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
        super().__init__(pid)


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
        self.said: list[KillMessage] = []
        self.listener = threading.Thread(target=self._listen, args=(reader,), daemon=True)
        self.listener.start()

    def _listen(self, reader: int) -> None:
        """The child's one message, once it stands at its kill point; then SIGKILL of the
        processes it named to die first, and of the child. Nothing but EOF comes when the
        child ends on its own. The pipe is this thread's to close: closed by another, its
        number could be reused while this one reads."""
        with os.fdopen(reader, "rb") as pipe:
            line = pipe.readline()
        if line and self.child.pid:
            message = parse_kill_message(line.decode().rstrip("\n"))
            self.said.append(message)
            kill_first(message.first)
            os.kill(self.child.pid, signal.SIGKILL)

    def wait(self) -> WorkerReport:
        child = self.child
        code = child.wait(self.timeout)
        seconds = round(time.monotonic() - self.started, 3)

        def report(exit: str, returncode: int | None, **fields: Any) -> WorkerReport:
            return WorkerReport(
                self.proc,
                self.role,
                exit,
                returncode,
                seconds=seconds,
                cpu_seconds=child.cpu_seconds,
                **fields,
            )

        if code is None:
            child.kill()
            return report("error", child.wait(0), error=f"timed out after {self.timeout:g} s")
        self.listener.join(timeout=5)
        if self.said:
            said = self.said[0]
            return report("killed", code, point=said.point, told=said.told)
        result: Any = None
        if self.result_file is not None and self.result_file.exists():
            result = json.loads(self.result_file.read_text(encoding="utf-8") or "null")
        if code != 0:
            return report("error", code, result=result, error=" | ".join(self._stderr_tail()))
        return report("returned", 0, result=result)

    def _stderr_tail(self) -> list[str]:
        if self.stderr is None or not self.stderr.exists():
            return []
        return self.stderr.read_text(errors="replace").strip().splitlines()[-3:]


def _env(kill_at: str | None) -> dict[str, str]:
    """This process's environment for a worker: its own kill point, or none."""
    env = {k: v for k, v in os.environ.items() if k not in (KILL_ENV, FD_ENV)}
    if kill_at:
        env[KILL_ENV] = kill_at
    return env


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
    stderr = job.with_suffix(".stderr")
    if not preload:
        argv = [sys.executable, "-m", module, str(job)]
        return run_command(
            argv,
            proc=proc,
            role=role,
            stderr=stderr,
            kill_at=kill_at,
            result_file=result_file,
            timeout=timeout,
        )
    child, reader = forkserver.start(module, job, _env(kill_at), stderr, preload)
    return _supervised(child, reader, proc, role, stderr, result_file, timeout)


def run_command(
    argv: list[str],
    *,
    proc: str,
    role: str,
    stderr: Path,
    kill_at: str | None = None,
    result_file: Path | None = None,
    timeout: float = 60.0,
) -> WorkerReport:
    """Runs the command line `argv` as a worker: SIGKILLed (with the processes it names to die
    first) when it reaches `kill_at`, its stderr to `stderr`, its result read from
    `result_file` (JSON) if it wrote one. The way in of a runtime that is a command of its own
    rather than a `main(job)` (the sandbox agent, which people run by hand too)."""
    spawned = _Spawned(argv, _env(kill_at), stderr)
    return _supervised(spawned, spawned.reader, proc, role, stderr, result_file, timeout)


def _supervised(
    child: Child,
    reader: int,
    proc: str,
    role: str,
    stderr: Path,
    result_file: Path | None,
    timeout: float,
) -> WorkerReport:
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
