"""Records one trace per (workload, policy, crash point): the agent process, SIGKILL, recovery.

The recorder is the supervisor a real deployment would have: it starts the agent process under
the suite framework's harness (`suite.child.run_command`), which SIGKILLs the sandbox's PID 1
and then the agent when the agent reaches the run's crash point (a `suite.crash.KillPoints`
point, `agent.crash_label`); it then writes the `crash` event, makes sure no process of the old
sandbox survives, and starts the agent again with `--resume`. It never judges: the trace goes
to resume-check.

Two kinds of runs go back to an earlier turn without a crash. A rollback run (`--rollback M:K`
of the agent) rolls back inside one run. A fork run stops a parent run after turn K, copies its
folder (store, images, trace) once per rollout, and starts the rollouts side by side, each from
the parent's restore point of turn K (`--fork K`); each rollout's trace is the parent's up to
the fork, then its own, under a header naming the rollout's workload.

Runs recorded at once share the host's checkpoint scheduler (`scheduler.py`) when it has a
budget of slots: a folder of lock files every agent of the batch is pointed at.

A run with an `agent` command is the transparent runtime: the recorder starts the host-side
coordinator (`host.py`), which runs that agent unmodified in the sandbox and checkpoints it
between the agent and its model endpoint -- the stand-in (`standin.py`), one process shared by
every run of a batch, as a remote model would be. Such a run has no rollback or fork (those are
moves of the scripted agent).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rctools.sandbox.agent import CRASH_POINTS, crash_label
from rctools.sandbox.scheduler import Scheduler
from rctools.sandbox.standin import serving
from rctools.sandbox.workloads import WORKLOADS
from rctools.suite.child import run_command
from rctools.suite.pool import run_pool
from rctools.suite.reports import WorkerReport
from rctools.suite.trace import V1, TraceWriter, head

AGENT_TIMEOUT = 300.0
RUNTIME_VERSION = {
    "criu": "overlayfs layers + criu 4.1 process images",
    "respawn": "overlayfs layers + process re-spawn",
}
HOST_VERSION = "host-side chat proxy + "


class RecordError(RuntimeError):
    """A run could not be recorded (the agent failed for another reason than the crash)."""


@dataclass(frozen=True)
class RunSpec:
    workload: str
    policy: str
    crash: tuple[int, str] | None  # (turn, point) or None for a fault-free run
    processes: str = "criu"  # how process images are taken: "criu" or "respawn"
    rollback: tuple[int, int] | None = None  # (M, K): once turn M is done, back to turn K
    fork: int | None = None  # fork after turn K into the workload's rollouts
    inspector: str = "fanotify"  # the inspector's file evidence: "fanotify" or "tree"
    agent: str | None = None  # an unmodified agent's command line, under the host runtime

    @property
    def crash_label(self) -> str:
        return f"turn {self.crash[0]} {self.crash[1]}" if self.crash else "none"

    @property
    def rewind_label(self) -> str:
        if self.rollback:
            return f"rollback {self.rollback[0]}->{self.rollback[1]}"
        return f"fork at {self.fork}" if self.fork is not None else "none"

    @property
    def name(self) -> str:
        crash = f"crash-t{self.crash[0]}-{self.crash[1]}" if self.crash else "no-crash"
        mode = "" if self.processes == "criu" else f"--{self.processes}"
        mode += "--agent" if self.agent else ""
        rewind = ""
        if self.rollback:
            rewind = f"--rollback-t{self.rollback[0]}-to-t{self.rollback[1]}"
        elif self.fork is not None:
            rewind = f"--fork-t{self.fork}"
        return f"{self.workload}--{self.policy}{mode}{rewind}--{crash}"


@dataclass(frozen=True)
class RunResult:
    spec: RunSpec
    trace: Path
    seconds: float
    cpu_seconds: float = 0.0  # the agent processes and what they waited for (criu, commands)
    rollout: str | None = None  # the rollout's workload, for a fork run
    # Under the host runtime: each answer's latency, request to release, and whether it was a
    # fast-forward over a cached response (`turns.jsonl` of the host).
    turns: tuple[tuple[float, bool], ...] = ()


def matrix(
    workloads: list[str],
    policies: list[str],
    points: list[str],
    *,
    fault_free: int = 1,
    turns: set[int] | None = None,
    processes: str = "criu",
    rewinds: bool = True,
    inspector: str = "fanotify",
    agent: str | None = None,
) -> list[RunSpec]:
    """Fault-free runs, then a SIGKILL at every crash point of every turn (or of `turns`), then
    (with `rewinds`, and no `agent`) the workload's rollback run and fork run."""
    rewinds = rewinds and agent is None
    specs = []
    for workload in workloads:
        spec = WORKLOADS[workload]
        count = len(spec.turns)
        chosen = [t for t in range(1, count + 1) if turns is None or t in turns]
        for policy in policies:
            plain = RunSpec(workload, policy, None, processes, inspector=inspector, agent=agent)
            specs += [plain] * fault_free
            specs += [
                RunSpec(
                    workload, policy, (turn, point), processes, inspector=inspector, agent=agent
                )
                for turn in chosen
                for point in points
                if point in CRASH_POINTS
            ]
            if rewinds and spec.rollback:
                specs.append(
                    RunSpec(workload, policy, None, processes, spec.rollback, None, inspector)
                )
            if rewinds and spec.fork_at is not None:
                specs.append(
                    RunSpec(workload, policy, None, processes, None, spec.fork_at, inspector)
                )
    return specs


def header(spec: RunSpec, rollout: str | None = None) -> dict[str, object]:
    workload = WORKLOADS[rollout or spec.workload]
    scenario = f"{spec.workload} under {spec.policy}, SIGKILL: {spec.crash_label}"
    if spec.rollback or spec.fork is not None:
        scenario += f", {spec.rewind_label}"
    if rollout:
        scenario += f", rollout {rollout}"
    version = RUNTIME_VERSION[spec.processes]
    if spec.agent:
        scenario += f", agent: {spec.agent}"
        version = HOST_VERSION + version
    return head(
        "SandboxCR",
        "rctools.sandbox",
        version,
        V1,
        scenario=scenario,
        policy=spec.policy,
        crash={"turn": spec.crash[0], "point": spec.crash[1]} if spec.crash else None,
        workload={"name": workload.name, "commands": [len(t) for t in workload.turns]},
    )


def _argv(
    spec: RunSpec,
    run_dir: Path,
    latency: float,
    slots: Path | None,
    workload: str | None = None,
    model: str | None = None,
) -> list[str]:
    module = "host" if spec.agent else "agent"
    argv = [sys.executable, "-m", f"rctools.sandbox.{module}", str(run_dir)]
    argv += ["--workload", workload or spec.workload, "--policy", spec.policy]
    if spec.agent:
        argv += ["--agent", spec.agent, "--model", str(model)]
    else:
        argv += ["--latency", str(latency)]
    argv += ["--processes", spec.processes]
    argv += ["--inspector", spec.inspector]
    return argv + (["--slots", str(slots)] if slots else [])


def record(
    spec: RunSpec,
    out: Path,
    scratch: Path,
    latency: float,
    copy: int = 0,
    slots: Path | None = None,
    model: str | None = None,
) -> list[RunResult]:
    """Runs `spec` in a fresh folder below `scratch`; the traces are written to `out` (one, or
    one per rollout for a fork run). An agent run calls the model endpoint `model` (None: a
    stand-in of its own, answering after `latency` seconds)."""
    if spec.agent and model is None:
        with serving(latency) as url:
            return record(spec, out, scratch, latency, copy, slots, url)
    name = spec.name + (f"--{copy}" if copy else "")
    run_dir = scratch / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    WORKLOADS[spec.workload].build_base(run_dir / "base")
    trace = run_dir / "trace.jsonl"
    trace.write_text(json.dumps(header(spec)) + "\n", encoding="utf-8")
    argv = _argv(spec, run_dir, latency, slots, model=model)
    kill_at = f"{crash_label(*spec.crash)}#1" if spec.crash else None
    extra = []
    if spec.rollback:
        extra += ["--rollback", f"{spec.rollback[0]}:{spec.rollback[1]}"]
    if spec.fork is not None:
        extra += ["--stop-after", str(spec.fork)]
    started = time.perf_counter()
    try:
        first = _agent([*argv, *extra], run_dir, "run", kill_at)
        cpu = _cpu(first)
        if first.exit == "killed":
            _kill_leftover(run_dir)
            harness = TraceWriter.continuing(trace)
            harness.event("crash")
            harness.close()
            second = _agent([*argv, "--resume"], run_dir, "resume")
            cpu += _cpu(second)
            _expect_success(spec, second, "recovery")
        else:
            _expect_success(spec, first, "run")
        if spec.fork is not None:
            return _rollouts(spec, run_dir, out, name, latency, slots, started, cpu)
        seconds = time.perf_counter() - started
        target = out / f"{name}.jsonl"
        shutil.copy(trace, target)
        turns = _turns(run_dir / "turns.jsonl")
    finally:
        _kill_leftover(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    return [RunResult(spec, target, seconds, cpu, turns=turns)]


def _turns(path: Path) -> tuple[tuple[float, bool], ...]:
    if not path.exists():
        return ()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return tuple((line["seconds"], line["cached"]) for line in lines)


def _rollouts(
    spec: RunSpec,
    parent: Path,
    out: Path,
    name: str,
    latency: float,
    slots: Path | None,
    started: float,
    cpu: float,
) -> list[RunResult]:
    """Forks the stopped parent run into its workload's rollouts, run side by side."""
    assert spec.fork is not None
    rollouts = WORKLOADS[spec.workload].rollouts
    folders = []
    for rollout in rollouts:
        folder = parent.with_name(f"{parent.name}--{rollout}")
        shutil.rmtree(folder, ignore_errors=True)
        # The store and the trace; the layers are rebuilt from the images by the restore.
        keep = shutil.ignore_patterns("upper", "work", "mnt", "sandbox.pid", "*.stderr")
        shutil.copytree(parent, folder, symlinks=True, ignore=keep)
        lines = (folder / "trace.jsonl").read_text(encoding="utf-8").splitlines()
        lines[0] = json.dumps(header(spec, rollout))
        (folder / "trace.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        folders.append(folder)
    try:
        with ThreadPoolExecutor(max_workers=len(folders)) as pool:
            runs = list(
                pool.map(
                    lambda item: _agent(
                        [*_argv(spec, item[0], latency, slots, item[1]), "--fork", str(spec.fork)],
                        item[0],
                        "fork",
                    ),
                    zip(folders, rollouts, strict=True),
                )
            )
        seconds = time.perf_counter() - started
        results = []
        for folder, rollout, run in zip(folders, rollouts, runs, strict=True):
            _expect_success(spec, run, f"rollout {rollout}")
            target = out / f"{name}--{rollout}.jsonl"
            shutil.copy(folder / "trace.jsonl", target)
            results.append(RunResult(spec, target, seconds, cpu + _cpu(run), rollout))
        return results
    finally:
        for folder in folders:
            _kill_leftover(folder)
            shutil.rmtree(folder, ignore_errors=True)


def record_all(
    specs: list[RunSpec],
    out: Path,
    scratch: Path,
    latency: float,
    *,
    jobs: int = 2,
    slots: int = 0,
    model: str | None = None,
) -> list[RunResult]:
    """Records every run (for the benches, which record runs rather than cells), `jobs`
    sandboxes at a time, each in a process of its own from the suites' one pool, as `run
    sandbox` records its cells; `slots` (0: no budget) is the host's budget of checkpoint jobs
    at once, shared by all of them. Agent runs share one model endpoint: `model`, or a
    stand-in started for the batch. A run that could not be recorded stops the batch
    (`PoolTaskFailed`, or its RecordError with `jobs` 1)."""
    if model is None and any(spec.agent for spec in specs):
        with serving(latency) as url:
            return record_all(specs, out, scratch, latency, jobs=jobs, slots=slots, model=url)
    out.mkdir(parents=True, exist_ok=True)
    folder = Scheduler.prepare(scratch / "scheduler", slots) if slots else None
    copies: dict[RunSpec, int] = {}
    work = []
    for spec in specs:
        work.append((len(work), spec, copies.get(spec, 0)))
        copies[spec] = copies.get(spec, 0) + 1
    per_run = run_pool(
        work,
        lambda item: record(item[1], out, scratch, latency, item[2], folder, model),
        jobs=jobs,
        result_path=lambda item: scratch / "pool" / f"run-{item[0]}.result",
        name=lambda item: f"{item[1].name} #{item[2] + 1}",
    )
    return [result for results in per_run for result in results]


def _agent(argv: list[str], run_dir: Path, role: str, kill_at: str | None = None) -> WorkerReport:
    """Runs an agent process under the framework's harness, SIGKILLed with its sandbox at
    `kill_at`; its stderr goes to `run_dir`/agent-`role`.stderr. The report has the CPU seconds
    it and its waited-for children (criu, tool commands) used -- from wait4, so runs recorded
    side by side are measured apart."""
    stderr = run_dir / f"agent-{role}.stderr"
    return run_command(
        argv, proc="agent", role=role, stderr=stderr, kill_at=kill_at, timeout=AGENT_TIMEOUT
    )


def _cpu(report: WorkerReport) -> float:
    """An agent's CPU seconds (the harness reaps it, so they are always measured)."""
    assert report.cpu_seconds is not None, report
    return report.cpu_seconds


def _expect_success(spec: RunSpec, report: WorkerReport, what: str) -> None:
    if report.exit != "returned":
        raise RecordError(
            f"{spec.name}: the agent's {what} exited with {report.returncode}: {report.error}"
        )


def _kill_leftover(run_dir: Path) -> None:
    """The crash took the sandbox's PID 1 with it; this only guards against a stray one."""
    pid_file = run_dir / "sandbox.pid"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
