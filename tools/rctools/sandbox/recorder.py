"""Records one trace per (workload, policy, crash point): the agent process, SIGKILL, recovery.

The recorder is the supervisor a real deployment would have: it starts the agent process, and
when that process dies of SIGKILL it writes the `crash` event, makes sure no process of the old
sandbox survives, and starts the agent again with `--resume`. It never judges: the trace goes
to resume-check.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rctools.sandbox.agent import CRASH_POINTS
from rctools.sandbox.workloads import WORKLOADS

RUNTIME_VERSION = {
    "criu": "overlayfs layers + criu 4.1 process images",
    "respawn": "overlayfs layers + process re-spawn",
}


class RecordError(RuntimeError):
    """A run could not be recorded (the agent failed for another reason than the crash)."""


@dataclass(frozen=True)
class RunSpec:
    workload: str
    policy: str
    crash: tuple[int, str] | None  # (turn, point) or None for a fault-free run
    processes: str = "criu"  # how process images are taken: "criu" or "respawn"

    @property
    def crash_label(self) -> str:
        return f"turn {self.crash[0]} {self.crash[1]}" if self.crash else "none"

    @property
    def name(self) -> str:
        crash = f"crash-t{self.crash[0]}-{self.crash[1]}" if self.crash else "no-crash"
        mode = "" if self.processes == "criu" else f"--{self.processes}"
        return f"{self.workload}--{self.policy}{mode}--{crash}"


@dataclass(frozen=True)
class RunResult:
    spec: RunSpec
    trace: Path
    seconds: float


def matrix(
    workloads: list[str],
    policies: list[str],
    points: list[str],
    *,
    fault_free: int = 1,
    turns: set[int] | None = None,
) -> list[RunSpec]:
    """Fault-free runs, then a SIGKILL at every crash point of every turn (or of `turns`)."""
    specs = []
    for workload in workloads:
        count = len(WORKLOADS[workload].turns)
        chosen = [t for t in range(1, count + 1) if turns is None or t in turns]
        for policy in policies:
            specs += [RunSpec(workload, policy, None)] * fault_free
            specs += [
                RunSpec(workload, policy, (turn, point))
                for turn in chosen
                for point in points
                if point in CRASH_POINTS
            ]
    return specs


def header(spec: RunSpec) -> dict[str, object]:
    workload = WORKLOADS[spec.workload]
    return {
        "format": "resume-check/v1",
        "contract": "SandboxCR",
        "runtime": {"name": "rctools.sandbox", "version": RUNTIME_VERSION[spec.processes]},
        "scenario": f"{spec.workload} under {spec.policy}, SIGKILL: {spec.crash_label}",
        "policy": spec.policy,
        "crash": {"turn": spec.crash[0], "point": spec.crash[1]} if spec.crash else None,
        "workload": {"name": workload.name, "commands": [len(t) for t in workload.turns]},
    }


def record(spec: RunSpec, out: Path, scratch: Path, latency: float, copy: int = 0) -> RunResult:
    """Runs `spec` in a fresh folder below `scratch`; the trace is written to `out`."""
    name = spec.name + (f"--{copy}" if copy else "")
    run_dir = scratch / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    WORKLOADS[spec.workload].build_base(run_dir / "base")
    trace = run_dir / "trace.jsonl"
    trace.write_text(json.dumps(header(spec)) + "\n", encoding="utf-8")
    argv = [
        sys.executable,
        "-m",
        "rctools.sandbox.agent",
        str(run_dir),
        "--workload",
        spec.workload,
        "--policy",
        spec.policy,
        "--latency",
        str(latency),
        "--processes",
        spec.processes,
    ]
    started = time.perf_counter()
    try:
        first = _agent(
            [*argv, *(["--crash", f"{spec.crash[0]}:{spec.crash[1]}"] if spec.crash else [])]
        )
        if first.returncode == -signal.SIGKILL and spec.crash:
            _kill_leftover(run_dir)
            with trace.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"ev": "crash"}) + "\n")
            second = _agent([*argv, "--resume"])
            _expect_success(spec, second, "recovery")
        else:
            _expect_success(spec, first, "run")
        seconds = time.perf_counter() - started
        target = out / f"{name}.jsonl"
        shutil.copy(trace, target)
    finally:
        _kill_leftover(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    return RunResult(spec, target, seconds)


def record_all(
    specs: list[RunSpec],
    out: Path,
    scratch: Path,
    latency: float,
    *,
    jobs: int = 2,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Records every run, `jobs` at a time (each sandbox has its own namespaces)."""
    out.mkdir(parents=True, exist_ok=True)
    copies: dict[RunSpec, int] = {}
    work = []
    for spec in specs:
        work.append((spec, copies.get(spec, 0)))
        copies[spec] = copies.get(spec, 0) + 1

    def one(item: tuple[RunSpec, int]) -> RunResult:
        result = record(item[0], out, scratch, latency, item[1])
        if on_done:
            on_done(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, work))


def _agent(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def _expect_success(spec: RunSpec, proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RecordError(
            f"{spec.name}: the agent's {what} exited with {proc.returncode}: " + " | ".join(tail)
        )


def _kill_leftover(run_dir: Path) -> None:
    """The crash took the sandbox's PID 1 with it; this only guards against a stray one."""
    pid_file = run_dir / "sandbox.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
