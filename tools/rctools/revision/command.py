"""`resume-check run revision`: record revision recovery on LangGraph, judge it, report it.

One trace per (workload, revision point) under the chosen policy, all judged in one batch by
the DagRevision contract. The table names the property a violating run broke; the JSON summary
in --out also carries what each run cost (model calls, tokens, nodes recomputed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from resumecheck.contract import default_spec_paths
from resumecheck.errors import EnvironmentProblem, exit_codes_help
from resumecheck.output import emit_suite, format_option, reported
from resumecheck.progress import Progress, TLCProgress, progress_option
from resumecheck.refine import judge
from resumecheck.report import Invocation, exit_code
from resumecheck.verdict import Status, Verdict

from rctools.revision.matrix import Run, record
from rctools.revision.policies import POLICIES
from rctools.revision.workloads import WORKLOADS


class RecordingFailed(EnvironmentProblem):
    """The runtime under test could not finish a run: no verdict, exit code 3."""


@click.command(epilog=exit_codes_help())
@click.option("--policy", type=click.Choice(POLICIES), required=True, help="Recovery policy.")
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Choice(sorted(WORKLOADS)),
    help="Workload to run (repeatable; default: all).",
)
@format_option()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for the traces and summary.json.",
)
@click.option(
    "--crash/--no-crash",
    default=False,
    help="Also kill each run with SIGKILL after the revision and in the recovery, and restart.",
)
@progress_option
@reported("run revision")
def command(
    policy: str,
    workloads: tuple[str, ...],
    fmt: str,
    out: Path,
    crash: bool,
    progress: bool | None,
    invocation: Invocation,
) -> int:
    """Inject a revision at every point of each workload, recover by POLICY, judge the traces."""
    chosen = [WORKLOADS[name] for name in (workloads or sorted(WORKLOADS))]
    shown = Progress(progress)
    try:
        runs = record(
            chosen,
            policy,
            out,
            crash=crash,
            on_run=lambda run: shown.update(f"recorded {run.workload} {run.policy} {run.point}"),
        )
    except Exception as exc:  # the runtime under test failed: not a verdict
        raise RecordingFailed(f"run revision: recording failed: {exc!r}") from exc
    shown.note(f"judging {len(runs)} traces with DagRevision")
    verdicts = judge(
        [r.trace for r in runs], spec_paths=default_spec_paths(), on_line=TLCProgress(shown)
    )
    shown.clear()
    by_path = {v.path.resolve(): v for v in verdicts}
    rows = [_row(run, by_path[run.trace.resolve()]) for run in runs]
    code = exit_code(verdicts)
    summary = {"suite": "revision", "policy": policy, "runs": rows}
    emit_suite(fmt, invocation, verdicts, summary, _table(rows), out=out, code=code)
    return code


def _row(run: Run, verdict: Verdict) -> dict[str, Any]:
    if verdict.status is Status.VIOLATES:
        what = ", ".join(verdict.properties) or "no action matches"
        result = f"violates {what} at event {verdict.event_index}"
    else:
        result = verdict.status.value
    return {
        "workload": run.workload,
        "point": run.point,
        "policy": run.policy,
        "verdict": verdict.status.value,
        "properties": verdict.properties,
        "result": result,
        "model_calls": run.outcome.calls if run.outcome else None,
        "tokens": run.outcome.tokens if run.outcome else None,
        "recomputed": run.outcome.recomputed if run.outcome else None,
        "trace": str(run.trace),
    }


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'workload':<10} {'revision':<20} {'policy':<9} {'calls':>5}  {'result':<44} trace"]
    for r in rows:
        lines.append(
            f"{r['workload']:<10} {r['point']:<20} {r['policy']:<9} "
            f"{'-' if r['model_calls'] is None else r['model_calls']:>5}  "
            f"{r['result']:<44} {r['trace']}"
        )
    bad = sum(r["verdict"] != "conforms" for r in rows)
    lines.append(f"{len(rows)} run(s): {len(rows) - bad} conform, {bad} do not")
    return "\n".join(lines) + "\n"
