"""A cell as phases of real processes: each phase starts its workers together (concurrent
resumers) and waits for all; a worker may be SIGKILLed at a named point, after which the
harness logs its `crash`. Workers report through a JSON job file and a result file."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rctools.suite.child import run_worker
from rctools.suite.reports import Cell, CellReport, WorkerReport
from rctools.suite.trace import TraceWriter, header


def run_phases(
    report: CellReport,
    trace: Path,
    work: Path,
    module: str,
    phases: list[list[dict[str, Any]]],
    job_base: dict[str, Any],
    *,
    timeout: float = 90,
    on_phase: Callable[[int], None] | None = None,
    preload: tuple[str, ...] = (),
) -> None:
    for n, phase in enumerate(phases):
        jobs = []
        for spec in phase:
            job = {
                **job_base,
                **spec,
                "trace": str(trace),
                "result": str(work / f"result-{spec['proc']}.json"),
            }
            path = work / f"job-{n}-{spec['proc']}.json"
            path.write_text(json.dumps(job), encoding="utf-8")
            jobs.append((job, path))

        def launch(jp: tuple[dict[str, Any], Path]) -> WorkerReport:
            job, path = jp
            return run_worker(
                module,
                path,
                proc=job["proc"],
                role=job["role"],
                kill_at=job.get("kill_at"),
                result_file=Path(job["result"]),
                timeout=timeout,
                preload=preload,
            )

        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            done = list(pool.map(launch, jobs))
        report.workers.extend(done)
        log_crashes(trace, done)
        if on_phase:
            on_phase(n)
    unexpected = [x for x in report.workers if x.exit == "error"]
    if unexpected:
        report.problem = "; ".join(f"{x.proc} ({x.role}): {x.error}" for x in unexpected)


def log_crashes(trace: Path, workers: list[WorkerReport]) -> None:
    """The harness logs each SIGKILL it sent, once the process is gone."""
    for x in workers:
        if x.exit == "killed":
            writer = TraceWriter(trace, x.proc)
            with writer.shared():
                writer.event("crash")
            writer.close()


def effects_fired(path: Path) -> dict[str, int]:
    """intent -> times fired, from the effects ledger the workers append to."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    counts: dict[str, int] = {}
    for line in lines:
        intent = json.loads(line)["intent"]
        counts[intent] = counts.get(intent, 0) + 1
    return counts


def note_effects(report: CellReport, work: Path) -> None:
    """How often each effect really fired (the ledger `work/effects.jsonl`), in the notes:
    what the trace's `effect` events are checked against."""
    fired = effects_fired(work / "effects.jsonl")
    report.notes["effects_fired"] = sum(fired.values())
    report.notes["fired_per_intent"] = fired


@contextmanager
def recording(
    cell: Cell, traces: Path, scratch: Path, *, thread: str, meta: dict[str, Any]
) -> Iterator[tuple[CellReport, Path, Path]]:
    """The frame of every cell's recording, whatever plays it: writes traces/<cell>.jsonl's v2
    header (`meta`: runtime, version, backend, nodes and the declared guarantees) and yields
    the cell's report, its trace and a scratch folder of its own (`work`, removed after)."""
    trace = traces / f"{cell.name}.jsonl"
    work = Path(tempfile.mkdtemp(prefix=f"{cell.name}-", dir=scratch))
    writer = TraceWriter(trace, "driver")
    writer.header(header(scenario=f"{cell.scenario}: {cell.what}", thread=thread, **meta))
    writer.close()
    try:
        yield CellReport(cell, trace.name), trace, work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def record_phased_cell(
    cell: Cell,
    traces: Path,
    scratch: Path,
    *,
    worker: str,
    thread: str,
    meta: dict[str, Any],
    job: Callable[[Path], dict[str, Any]],
    timeout: float = 60,
    preload: tuple[str, ...] = (),
    on_phase: Callable[[int], None] | None = None,
) -> CellReport:
    """Records one cell whose processes run `worker`'s phases in turn: writes the v2 header
    (`meta`: runtime, version, backend, nodes and the declared guarantees), runs the phases
    with `job(work)` as their shared job (`work` a scratch folder of the cell's own), and notes
    how often each effect really fired and what each process returned. `timeout`: seconds a
    phase's process may take (a runtime whose import alone takes seconds needs more on a loaded
    machine); `preload`: modules a fork server imports once, the workers forked from it
    (`rctools.suite.preload`); `on_phase(n)`: called after phase n (a suite that owns a
    server restarts it there)."""
    with recording(cell, traces, scratch, thread=thread, meta=meta) as (report, trace, work):
        run_phases(
            report,
            trace,
            work,
            worker,
            cell.params["phases"],
            job(work),
            timeout=timeout,
            preload=preload,
            on_phase=on_phase,
        )
        note_effects(report, work)
        report.notes["results"] = {x.proc: x.result for x in report.workers if x.result}
    return report
