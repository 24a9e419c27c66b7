"""Record revision runs: one per (workload, revision point) under one policy, a run killed by
SIGKILL at a crash point and restarted, or a racing execution. The command records them one
cell at a time (`record_one`, `record_crashed`, `record_race`); the tests and the benchmark
record whole batches (`record`, `record_racing`)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from resumecheck import tempdirs

from rctools.revision.crash import crash_points, record_crash
from rctools.revision.injection import Injection, injection_points
from rctools.revision.racing import RaceOutcome, RacingRuntime
from rctools.revision.runtime import Outcome, RevisionRuntime
from rctools.revision.sender import RevisionSender
from rctools.revision.workloads import Workload


@dataclass(frozen=True)
class Run:
    workload: str
    point: str
    policy: str
    trace: Path
    outcome: Outcome | RaceOutcome | None
    """None for a run split across a crash (its cost is not measured)."""


def record(
    workloads: list[Workload],
    policy: str,
    out: Path,
    *,
    crash: bool = False,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Runs every workload under `policy` with the revision at each point, and with `crash`
    also killed by SIGKILL at each crash point and restarted; writes the traces."""
    out.mkdir(parents=True, exist_ok=True)
    scratch = tempdirs.mkdtemp("revision-")
    runs: list[Run] = []
    try:
        for workload in workloads:
            for injection in injection_points(workload):
                runs.append(record_one(workload, policy, injection, out, scratch))
                if on_run:
                    on_run(runs[-1])
            for point in crash_points(policy) if crash and workload.crash else ():
                runs.append(record_crashed(workload, policy, point, out, scratch))
                if on_run:
                    on_run(runs[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return runs


def record_one(
    workload: Workload, policy: str, injection: Injection, out: Path, scratch: Path
) -> Run:
    """One run with the revision at `injection`; out/<workload>-<policy>-<point>.jsonl."""
    name = f"{workload.name}-{policy}-{injection.label}"
    runtime = RevisionRuntime(workload, policy, injection, scratch / f"{name}.sqlite")
    outcome = runtime.run()
    trace = out / f"{name}.jsonl"
    runtime.write(trace)
    return Run(workload.name, injection.label, policy, trace, outcome)


def record_crashed(workload: Workload, policy: str, point: str, out: Path, scratch: Path) -> Run:
    """A run killed by SIGKILL at `point` and restarted; out/<workload>-<policy>-crash-<point>."""
    trace = record_crash(workload, policy, point, scratch)
    moved = out / trace.name
    shutil.move(trace, moved)
    return Run(workload.name, f"crash-{point}", policy, moved, None)


@dataclass(frozen=True)
class Racing:
    """A batch of racing executions: how many, the seed of their revision instants and
    choices (each execution's own from `execution_seed`), the revisions each must accept and
    the worker threads each runs on (attempts at once)."""

    executions: int
    seed: int
    revisions: int = 3
    width: int = 3


def execution_seed(seed: int, index: int) -> int:
    """The seed of racing execution `index` of a batch seeded `seed`: the same for every
    policy, so policies are compared on the same revision schedules."""
    return seed * 1_000_003 + index


def record_race(
    workload: Workload,
    policy: str,
    sender: RevisionSender,
    out: Path,
    racing: Racing,
    index: int,
) -> Run:
    """Racing execution `index` of the batch `racing`, its revisions sent by `sender`;
    out/<workload>-<policy>-race-<index>.jsonl."""
    runtime = RacingRuntime(
        workload,
        policy,
        sender,
        seed=execution_seed(racing.seed, index),
        revisions=racing.revisions,
        width=racing.width,
    )
    outcome = runtime.run()
    point = f"race-{index}"
    trace = out / f"{workload.name}-{policy}-{point}.jsonl"
    runtime.write(trace)
    return Run(workload.name, point, policy, trace, outcome)


def record_racing(
    workloads: list[Workload],
    policy: str,
    out: Path,
    racing: Racing,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """The executions of `racing` under `policy`, the workloads taken in turn, their
    revisions sent by one sender process; writes the traces."""
    out.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    with RevisionSender() as sender:
        for index in range(racing.executions):
            workload = workloads[index % len(workloads)]
            runs.append(record_race(workload, policy, sender, out, racing, index))
            if on_run:
                on_run(runs[-1])
    return runs
