"""Workers forked from a process that has already imported the runtime under test.

Importing some runtimes costs seconds of CPU per process (crewai loads its agents, LLM clients
and memory stack: ~3 CPU-s, minutes on a loaded machine), and a crash matrix starts a hundred
processes. `start` forks the worker from a multiprocessing fork server whose preload list
imports the runtime once: each worker is still a real process of its own, supervised by the one
child harness (`child.run_worker`: SIGKILLed from the parent at its kill point, the same
`WorkerReport`) like a worker started fresh. Only the import is shared: the fork server never
runs a workflow.
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import threading
from pathlib import Path
from typing import Any

from rctools.suite.crash import FD_ENV

_SERVERS: dict[tuple[str, ...], multiprocessing.context.ForkServerContext] = {}
_LOCK = threading.Lock()


def server(preload: tuple[str, ...]) -> multiprocessing.context.ForkServerContext:
    """The fork server that has imported `preload` (one per list, started on first use)."""
    with _LOCK:
        if preload not in _SERVERS:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(list(preload))
            _SERVERS[preload] = ctx
        return _SERVERS[preload]


def _child(module: str, job: str, env: dict[str, str], kill_fd: int, stderr: str) -> None:
    """In the forked worker: the cell's environment, stderr to a file, then the worker's main."""
    os.environ.clear()
    os.environ.update(env)
    os.environ[FD_ENV] = str(kill_fd)
    err = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(err, 2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    code = importlib.import_module(module).main(job)
    raise SystemExit(code or 0)


class _Forked:
    """A worker forked from the fork server (a `child.Child`)."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self.process = process

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def cpu_seconds(self) -> float | None:
        """None: the fork server reaps its children, so their resource usage is not ours."""
        return None

    def wait(self, timeout: float) -> int | None:
        self.process.join(timeout)
        return None if self.process.is_alive() else self.process.exitcode

    def kill(self) -> None:
        self.process.kill()
        self.process.join()


def start(
    module: str, job: Path, env: dict[str, str], stderr: Path, preload: tuple[str, ...]
) -> tuple[_Forked, int]:
    """Starts `module.main(job)` in a process forked from the server that imported `preload`,
    with `env`, its stderr to `stderr`; returns it and the read end of its kill pipe (the
    caller's to close)."""
    ctx = server(preload)
    reader, writer = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_forked_main, args=(module, str(job), env, writer, str(stderr)))
    process.start()
    writer.close()
    fd = os.dup(reader.fileno())  # the caller's own: a Connection closes its fd when collected
    reader.close()
    return _Forked(process), fd


def _forked_main(module: str, job: str, env: dict[str, str], writer: Any, stderr: str) -> None:
    _child(module, job, env, writer.fileno(), stderr)
