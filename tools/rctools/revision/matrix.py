"""Record one trace per (workload, revision point) under one policy."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rctools.revision.injection import Injection, injection_points
from rctools.revision.runtime import Outcome, RevisionRuntime
from rctools.revision.workloads import Workload


@dataclass(frozen=True)
class Run:
    workload: str
    point: str
    policy: str
    trace: Path
    outcome: Outcome


def record(
    workloads: list[Workload],
    policy: str,
    out: Path,
    *,
    on_run: Callable[[Run], None] | None = None,
) -> list[Run]:
    """Runs every workload under `policy` with the revision at each point; writes the traces."""
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="rc-revision-"))
    runs: list[Run] = []
    try:
        for workload in workloads:
            for injection in injection_points(workload):
                runs.append(_one(workload, policy, injection, out, scratch))
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
