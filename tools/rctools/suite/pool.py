"""A pool of cells: each task run in a process forked from this one, `jobs` at once.

A cell that sets process-wide state (an environment variable naming its store, workers it
forks, a kill switch) cannot share a process with another cell, so threads will not do; a
process pool that pickles the work function would not reach closures. Forking this process
for each task runs any callable on any task, and the result comes back pickled through a
file beside the task's folder. The calling process stays single-threaded, so forking is safe.

A task `alone` runs with no other task beside it (processes that race on purpose, whose race
others would move). A task whose process raised or died stops the pool: `PoolTaskFailed`,
after the tasks still running have been waited for.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class PoolTaskFailed(Exception):
    """A task's process raised, or died without a result."""


class _Pool(Generic[T, R]):
    def __init__(
        self,
        tasks: Sequence[T],
        work: Callable[[T], R],
        result_path: Callable[[T], Path],
        name: Callable[[T], str],
    ) -> None:
        self.tasks, self.work, self.result_path, self.name = tasks, work, result_path, name
        self.results: list[R | None] = [None] * len(tasks)
        self.running: dict[int, tuple[int, Path]] = {}  # task index -> (pid, result file)

    def fork(self, index: int) -> None:
        task = self.tasks[index]
        result = self.result_path(task)
        result.parent.mkdir(parents=True, exist_ok=True)
        result.unlink(missing_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the task's process
            try:
                payload: tuple[str, object] = ("result", self.work(task))
            except BaseException as exc:  # re-raised by the parent, as if run there
                payload = ("error", f"{type(exc).__name__}: {exc}")
            try:
                result.write_bytes(pickle.dumps(payload))
            finally:
                os._exit(0)
        self.running[index] = (pid, result)

    def collect(self, index: int, result: Path) -> R:
        task = self.tasks[index]
        try:
            kind, value = pickle.loads(result.read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            raise PoolTaskFailed(f"{self.name(task)}: its process left no result ({exc})") from None
        finally:
            result.unlink(missing_ok=True)
        if kind == "error":
            raise PoolTaskFailed(f"{self.name(task)}: {value}")
        self.results[index] = value
        return value  # type: ignore[no-any-return]


def run_pool(
    tasks: Sequence[T],
    work: Callable[[T], R],
    *,
    jobs: int,
    result_path: Callable[[T], Path],
    name: Callable[[T], str] = str,
    alone: Callable[[T], bool] = lambda _: False,
    done: Callable[[T, R], None] = lambda _, __: None,
) -> list[R]:
    """`work` on every task, `jobs` at once, each in a forked process (with `jobs` 1 or a
    task `alone`, in this process, nothing beside it); the results in task order. `done` is
    called with each task and its result as it ends; `result_path` is where a task's process
    leaves its result."""
    pool: _Pool[T, R] = _Pool(tasks, work, result_path, name)
    pending = list(range(len(tasks)))
    try:
        while pending or pool.running:
            single = bool(pending) and (jobs <= 1 or alone(tasks[pending[0]]))
            if single and not pool.running:
                index = pending.pop(0)
                result = pool.results[index] = work(tasks[index])
                done(tasks[index], result)
                continue
            while pending and not single and len(pool.running) < jobs:
                pool.fork(pending.pop(0))
                single = bool(pending) and alone(tasks[pending[0]])
            for index, (pid, result) in list(pool.running.items()):
                if os.waitpid(pid, os.WNOHANG)[0]:
                    del pool.running[index]
                    done(tasks[index], pool.collect(index, result))
            if pool.running:
                time.sleep(0.01)
    finally:  # a task that failed stops the pool: those still running are waited for
        for pid, _ in pool.running.values():
            os.waitpid(pid, 0)
    return [r for r in pool.results if r is not None]
