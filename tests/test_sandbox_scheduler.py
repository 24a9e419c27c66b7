"""The host's checkpoint scheduler: a budget of slots shared by processes, freed by SIGKILL.

Co-located sandboxes are separate agent processes, so the budget must hold across processes,
and a holder killed in the middle of its job must not keep its slot (a crash is the normal
case here). Real processes, real flock; no root needed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from rctools.sandbox.scheduler import Scheduler

HOLD = """
import sys, time
from pathlib import Path
from rctools.sandbox.scheduler import Scheduler
with Scheduler.at(Path(sys.argv[1])).slot(1, True):
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(folder: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
    return proc


def test_a_job_waits_while_another_process_holds_the_only_slot(tmp_path: Path) -> None:
    folder = Scheduler.prepare(tmp_path / "slots", 1)
    holder = _holder(folder, 0.5)
    with Scheduler.at(folder).slot(1, True) as held:
        pass
    holder.wait(timeout=10)
    assert held.queued > 0.2  # it waited for the other process's slot


def test_two_slots_admit_two_jobs_at_once_and_a_skip_takes_none(tmp_path: Path) -> None:
    folder = Scheduler.prepare(tmp_path / "slots", 2)
    holder = _holder(folder, 2.0)
    try:
        with Scheduler.at(folder).slot(1, True) as held:
            pass
        assert held.queued < 0.5
        solo = Scheduler.prepare(tmp_path / "solo", 1)
        other = _holder(solo, 2.0)
        try:
            with Scheduler.at(solo).slot(2, False) as skipped:  # nothing to capture
                pass
            assert skipped.queued == 0
        finally:
            other.kill()
            other.wait()
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_frees_its_slot(tmp_path: Path) -> None:
    folder = Scheduler.prepare(tmp_path / "slots", 1)
    holder = _holder(folder, 60)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    started = time.perf_counter()
    with Scheduler.at(folder).slot(1, True):
        pass
    assert time.perf_counter() - started < 1
