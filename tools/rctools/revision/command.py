"""`resume-check run revision`: record revision recovery on LangGraph, judge it, report it.

One trace per (workload, revision point) under the chosen policy, all judged in one batch by
the DagRevision contract. The table names the property a violating run broke; the JSON summary
in --out also carries what each run cost (model calls, tokens, nodes recomputed).

With --racing, instead: N executions (the workloads in turn, the nested-path `digest` among
them) on worker threads, each revised several times by a separate sender process at instants
drawn from the seed, racing the attempts and their commits; every trace is judged the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from resumecheck.contract import default_spec_paths
from resumecheck.errors import EnvironmentProblem, exit_codes_help
from resumecheck.judge import judge
from resumecheck.output import emit_suite, format_option, reported
from resumecheck.progress import Progress, TLCProgress, progress_option
from resumecheck.report import Invocation, exit_code
from resumecheck.verdict import Status, Verdict

from rctools.revision.matrix import Run, record, record_racing
from rctools.revision.policies import POLICIES
from rctools.revision.racing import RaceOutcome
from rctools.revision.workloads import RACING_WORKLOADS, WORKLOADS


class RecordingFailed(EnvironmentProblem):
    """The runtime under test could not finish a run: no verdict, exit code 3."""


@click.command(epilog=exit_codes_help())
@click.option("--policy", type=click.Choice(POLICIES), required=True, help="Recovery policy.")
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Choice(sorted(RACING_WORKLOADS)),
    help="Workload to run (repeatable; default: all; `digest` only with --racing).",
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
@click.option(
    "--racing/--no-racing",
    default=False,
    help="Run in parallel on worker threads while another process sends revisions at random "
    "(seeded) instants, several per execution, racing the commits.",
)
@click.option(
    "--executions",
    type=click.IntRange(1, 100_000),
    default=300,
    show_default=True,
    help="With --racing: how many executions (the workloads in turn).",
)
@click.option(
    "--seed",
    type=int,
    default=1,
    show_default=True,
    help="With --racing: the seed of the revision instants and choices.",
)
@click.option(
    "--revisions",
    type=click.IntRange(1, 50),
    default=3,
    show_default=True,
    help="With --racing: accepted revisions per execution (refused ones come on top).",
)
@click.option(
    "--width",
    type=click.IntRange(1, 32),
    default=3,
    show_default=True,
    help="With --racing: worker threads, i.e. attempts running at once.",
)
@progress_option
@reported("run revision")
def command(
    policy: str,
    workloads: tuple[str, ...],
    fmt: str,
    out: Path,
    crash: bool,
    racing: bool,
    executions: int,
    seed: int,
    revisions: int,
    width: int,
    progress: bool | None,
    invocation: Invocation,
) -> int:
    """Inject a revision at every point of each workload, recover by POLICY, judge the traces.

    With --racing: N racing executions with several revisions each, every one judged."""
    names = workloads or sorted(RACING_WORKLOADS if racing else WORKLOADS)
    if not racing and "digest" in names:
        raise click.UsageError("workload digest runs only with --racing")
    if racing and crash:
        raise click.UsageError("--crash and --racing do not combine")
    chosen = [RACING_WORKLOADS[name] for name in names]
    shown = Progress(progress)

    def on_run(run: Run) -> None:
        shown.update(f"recorded {run.workload} {run.policy} {run.point}")

    try:
        if racing:
            runs = record_racing(
                chosen,
                policy,
                out,
                executions=executions,
                seed=seed,
                revisions=revisions,
                width=width,
                on_run=on_run,
            )
        else:
            runs = record(chosen, policy, out, crash=crash, on_run=on_run)
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
    summary: dict[str, Any] = {"suite": "revision", "policy": policy, "runs": rows}
    if racing:
        summary["racing"] = {"executions": executions, "seed": seed, "width": width}
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
        **(_racing(run.outcome) if isinstance(run.outcome, RaceOutcome) else {}),
    }


def _racing(outcome: RaceOutcome) -> dict[str, Any]:
    return {
        "revisions": outcome.revisions,
        "refused": outcome.refused,
        "kinds": outcome.kinds,
        "max_parallel": outcome.max_parallel,
        "rejected_at_commit": outcome.rejected,
        "seconds": round(outcome.seconds, 4),
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
    raced = [r for r in rows if "revisions" in r]
    if raced:
        kinds = sorted({k for r in raced for k in r["kinds"]})
        lines.append(
            f"racing: {sum(r['revisions'] for r in raced)} accepted revision(s) "
            f"(at least {min(r['revisions'] for r in raced)} per execution; kinds "
            f"{', '.join(kinds)}), {sum(r['refused'] for r in raced)} refused, "
            f"{sum(r['rejected_at_commit'] for r in raced)} attempt(s) rejected at commit, "
            f"up to {max(r['max_parallel'] for r in raced)} model calls at once"
        )
    lines.append(f"{len(rows)} run(s): {len(rows) - bad} conform, {bad} do not")
    return "\n".join(lines) + "\n"
