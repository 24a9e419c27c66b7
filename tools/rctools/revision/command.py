"""`resume-check run revision`: record revision recovery on LangGraph, judge it, report it.

One trace per (workload, revision point) under the chosen policy, all judged in one batch by
the DagRevision contract. The table names the property a violating run broke; the JSON summary
in --out also carries what each run cost (model calls, tokens, nodes recomputed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from resumecheck.contract import default_spec_paths
from resumecheck.refine import judge
from resumecheck.report import exit_code
from resumecheck.verdict import Status, Verdict

from rctools.revision.matrix import Run, record
from rctools.revision.policies import POLICIES
from rctools.revision.workloads import WORKLOADS


@click.command()
@click.option("--policy", type=click.Choice(POLICIES), required=True, help="Recovery policy.")
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Choice(sorted(WORKLOADS)),
    help="Workload to run (repeatable; default: all).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
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
def command(policy: str, workloads: tuple[str, ...], fmt: str, out: Path, crash: bool) -> int:
    """Inject a revision at every point of each workload, recover by POLICY, judge the traces.

    \b
    Exit codes: 0 every run conforms, 1 a run violates DagRevision, 2 a tool failure.
    """
    chosen = [WORKLOADS[name] for name in (workloads or sorted(WORKLOADS))]
    try:
        runs = record(chosen, policy, out, crash=crash, on_run=_progress)
    except Exception as exc:  # the runtime under test failed: not a verdict
        click.echo(f"\nresume-check run revision: recording failed: {exc!r}", err=True)
        return 2
    click.echo(f"\rjudging {len(runs)} traces with DagRevision ...".ljust(60), err=True)
    verdicts = judge([r.trace for r in runs], spec_paths=default_spec_paths())
    by_path = {v.path.resolve(): v for v in verdicts}
    rows = [_row(run, by_path[run.trace.resolve()]) for run in runs]
    code = exit_code(verdicts)
    summary = {"suite": "revision", "policy": policy, "exit_code": code, "runs": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    click.echo(json.dumps(summary, indent=1) if fmt == "json" else _table(rows), nl=fmt == "json")
    return code


def _progress(run: Run) -> None:
    if sys.stderr.isatty():
        click.echo(f"\r\033[Krecorded {run.workload} {run.policy} {run.point}", err=True, nl=False)


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
