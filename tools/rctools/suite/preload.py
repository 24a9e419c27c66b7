"""Workers forked from a process that has already imported the runtime under test.

Importing some runtimes costs seconds of CPU per process (crewai loads its agents, LLM clients
and memory stack: ~3 CPU-s, minutes on a loaded machine), and a crash matrix starts a hundred
processes. `run_forked` starts the worker from a multiprocessing fork server whose preload list
imports the runtime once: each worker is still a real process of its own, killed by SIGKILL from
the parent at its kill point exactly as `crash.run_child` does, and reports the same
`WorkerReport`. Only the import is shared: the fork server never runs a workflow.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import multiprocessing.context
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from rctools.suite.crash import FD_ENV, KILL_ENV
from rctools.suite.reports import WorkerReport

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


def run_forked(
    module: str,
    job: Path,
    *,
    preload: tuple[str, ...],
    proc: str,
    role: str,
    kill_at: str | None = None,
    result_file: Path | None = None,
    timeout: float = 60.0,
) -> WorkerReport:
    """Runs `module.main(job)` in a process forked from the preloaded server; SIGKILLs it when
    it reaches `kill_at` (the child's `KillPoints` writes to the pipe, as in `run_child`)."""
    started = time.monotonic()
    ctx = server(preload)
    reader, writer = ctx.Pipe(duplex=False)
    env = {k: v for k, v in os.environ.items() if k not in (KILL_ENV, FD_ENV)}
    if kill_at:
        env[KILL_ENV] = kill_at
    stderr = job.with_suffix(".stderr")
    child = ctx.Process(target=_forked_main, args=(module, str(job), env, writer, str(stderr)))
    child.start()
    writer.close()
    said: list[str] = []

    def listen() -> None:
        try:
            line = os.read(reader.fileno(), 4096)
        except OSError:
            return
        if line and child.pid:
            said.append(line.decode().strip())
            os.kill(child.pid, signal.SIGKILL)

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    child.join(timeout)
    seconds = round(time.monotonic() - started, 3)
    if child.is_alive():
        child.kill()
        child.join()
        reader.close()
        return WorkerReport(
            proc,
            role,
            "error",
            child.exitcode,
            error=f"timed out after {timeout:g} s",
            seconds=seconds,
        )
    listener.join(timeout=5)
    reader.close()
    if said:
        return WorkerReport(proc, role, "killed", child.exitcode, point=said[0], seconds=seconds)
    result: Any = None
    if result_file is not None and result_file.exists():
        result = json.loads(result_file.read_text(encoding="utf-8") or "null")
    if child.exitcode != 0:
        tail = (
            stderr.read_text(errors="replace").strip().splitlines()[-3:] if stderr.exists() else []
        )
        return WorkerReport(
            proc,
            role,
            "error",
            child.exitcode,
            result=result,
            error=" | ".join(tail),
            seconds=seconds,
        )
    return WorkerReport(proc, role, "returned", 0, result=result, seconds=seconds)


def _forked_main(module: str, job: str, env: dict[str, str], writer: Any, stderr: str) -> None:
    _child(module, job, env, writer.fileno(), stderr)
