"""Record one trace per (workload, revision point) under one policy."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from resumecheck import tempdirs

from rctools.revision.crash import crash_points, record_crash
from rctools.revision.injection import Injection, injection_points
from rctools.revision.runtime import Outcome, RevisionRuntime
from rctools.revision.workloads import Workload


@dataclass(frozen=True)
class Run:
    workload: str
    point: str
    policy: str
    trace: Path
    outcome: Outcome | None
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
                runs.append(_one(workload, policy, injection, out, scratch))
                if on_run:
                    on_run(runs[-1])
            for point in crash_points(policy) if crash else ():
                trace = record_crash(workload, policy, point, scratch)
                moved = out / trace.name
                shutil.move(trace, moved)
                runs.append(Run(workload.name, f"crash-{point}", policy, moved, None))
                if on_run:
                    on_run(runs[-1])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return runs


def _one(workload: Workload, policy: str, injection: Injection, out: Path, scratch: Path) -> Run:
    name = f"{workload.name}-{policy}-{injection.label}"
    runtime = RevisionRuntime(workload, policy, injection, scratch / f"{name}.sqlite")
    outcome = runtime.run()
    trace = out / f"{name}.jsonl"
    runtime.write(trace)
    return Run(workload.name, injection.label, policy, trace, outcome)
