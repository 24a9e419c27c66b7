"""Record a matrix of runs, policy by workload, and join each run with its verdict.

Shared by the `resume-check run recovery` command and the benchmark, so both measure and judge
the same runs the same way: one judge() call, one TLC run, for the whole batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

from rctools.recovery.engine import Engine, RunResult, Stuck
from rctools.recovery.policies import ALIGNED_LAYOUT, POLICIES
from rctools.recovery.workloads import WORKLOADS, Workload, aligned
from rctools.suite.matrix import Judged as JudgedCells
from rctools.suite.reports import Cell, CellReport


@dataclass
class Judged:
    """One run and the contract's verdict on its trace."""

    run: RunResult
    verdict: Verdict

    @property
    def conforms(self) -> bool:
        return self.verdict.status is Status.CONFORMS

    @property
    def success(self) -> bool:
        """The task got done and the contract accepts how."""
        return self.conforms and self.run.outcome == "completed"

    @property
    def verdict_text(self) -> str:
        if self.verdict.status is Status.VIOLATES:
            return "violates " + (", ".join(self.verdict.properties) or "(no action matches)")
        return self.verdict.status.value


def record_cell(
    cell: Cell, traces: Path, scratch: Path, play: Callable[[Path, Path], RunResult]
) -> CellReport:
    """One cell of a recovery suite: `play(trace, db)` runs it on a store of its own (removed
    after); a handoff that never came (Stuck) is a cell not recorded (exit 3). The run is kept
    in the report for the suite's figures (`judged_runs`)."""
    report = CellReport(cell, f"{cell.name}.jsonl")
    db = scratch / f"{cell.name.replace('/', '-')}.sqlite"
    try:
        run = play(traces / report.trace, db)
    except Stuck as exc:
        report.problem = str(exc)
        return report
    finally:
        db.unlink(missing_ok=True)
    report.kept = run
    report.notes = measured(run)
    return report


def judged_runs(judged: JudgedCells) -> list[Judged]:
    """The recorded cells' runs (kept in their reports by `record_cell`), each with its
    verdict: what the suite's figures count."""
    return [Judged(r.kept, v) for r, v in judged if v is not None and isinstance(r.kept, RunResult)]


def measured(run: RunResult) -> dict[str, Any]:
    """What a run did, as the runtime measured it (not a verdict): a cell's notes in
    summary.json."""
    return {
        "policy": run.policy,
        "workload": run.workload,
        "outcome": run.outcome,
        "actions": run.actions,
        "replayed": run.replayed,
        "preserved": run.preserved,
        "recovery_seconds": run.recovery_seconds,
        "model_calls": run.model_calls,
        "effects": run.effects,
        "restores_through_langgraph": run.through_langgraph,
        "restores_to_point": run.to_point,
        "failed": run.failed,
        "localized": run.localized,
        "candidates": list(run.candidates),
    }


def record(
    policies: Sequence[str],
    workloads: Sequence[str],
    out: Path,
    *,
    repeat: int = 1,
    latency: float = 0.0,
    ledger: bool = True,
    on_run: Callable[[str], None] | None = None,
) -> list[RunResult]:
    """Runs every (policy, workload) pair `repeat` times; traces go to out/<policy>/. Each model
    and tool call takes `latency` seconds; without `ledger`, irreversible intents are not
    remembered."""
    results = []
    for policy in policies:
        for name in workloads:
            for attempt in range(1, repeat + 1):
                suffix = f"-{attempt}" if repeat > 1 else ""
                if on_run:
                    on_run(f"{policy} / {name}{suffix}")
                trace = out / policy / f"{name}{suffix}.jsonl"
                db = out / "state" / f"{policy}-{name}{suffix}.sqlite"
                results.append(run_one(WORKLOADS[name], policy, trace, db, latency, ledger))
    return results


def run_one(
    workload: Workload, policy: str, trace: Path, db: Path, latency: float, ledger: bool
) -> RunResult:
    """One run of `workload` under `policy` (on its commit-aligned layout, with a restore point
    at every action boundary, for a policy whose controller places the runtime's checkpoints),
    its trace written to `trace`, LangGraph's state in `db`."""
    engine = Engine(
        aligned(workload) if policy in ALIGNED_LAYOUT else workload,
        policy,
        POLICIES[policy],
        trace,
        db,
        latency=latency,
        ledger=ledger,
        points=policy in ALIGNED_LAYOUT,
    )
    return engine.run()


def judge_runs(
    runs: list[RunResult], *, on_line: Callable[[str], None] | None = None
) -> list[Judged]:
    """Judges every run's trace in one batch against the SemanticRecovery spec."""
    verdicts = judge([r.trace for r in runs], spec_paths=default_spec_paths(), on_line=on_line)
    return [Judged(run, verdict) for run, verdict in zip(runs, verdicts, strict=True)]
