"""The cell pool every matrix records through: results in task order whatever order the
processes end in, a task `alone` with nothing beside it, a failing task stops the pool."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rctools.suite.pool import PoolTaskFailed, run_pool


def _run(tasks: list[Any], work: Callable[[Any], Any], where: Path, **options: Any) -> list[Any]:
    return run_pool(tasks, work, result_path=lambda task: where / f"{task}.pickle", **options)


def test_results_come_back_in_task_order_from_processes_of_their_own(tmp_path: Path) -> None:
    def work(task: int) -> tuple[int, int]:
        time.sleep(0.05 * (3 - task))  # the first task ends last
        return task, os.getpid()

    ended: list[int] = []
    results = _run([0, 1, 2], work, tmp_path, jobs=3, done=lambda task, _: ended.append(task))
    assert [task for task, _ in results] == [0, 1, 2]
    assert os.getpid() not in {pid for _, pid in results}
    assert sorted(ended) == [0, 1, 2]
    assert not list(tmp_path.iterdir())  # no result file left behind


def test_a_task_alone_runs_with_nothing_beside_it(tmp_path: Path) -> None:
    log = tmp_path / "log"

    def work(task: str) -> str:
        with log.open("a") as out:
            out.write(f"+{task}\n")
        time.sleep(0.1)
        with log.open("a") as out:
            out.write(f"-{task}\n")
        return task

    tasks = ["a", "b", "race", "c"]
    assert _run(tasks, work, tmp_path, jobs=2, alone=lambda t: t == "race") == tasks
    lines = log.read_text().split()
    start = lines.index("+race")
    assert lines[start + 1] == "-race", lines  # nothing started or ended while it ran


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_task_that_raises_stops_the_pool_with_its_name(tmp_path: Path, jobs: int) -> None:
    def work(task: int) -> int:
        if task == 1:
            raise ValueError("no store")
        return task

    with pytest.raises((PoolTaskFailed, ValueError), match="no store"):
        _run([0, 1, 2], work, tmp_path, jobs=jobs)
