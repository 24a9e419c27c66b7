"""`resume-check run recovery`: restore policies on LangGraph workloads, judged by the spec.

Every (policy, workload) pair runs once on real LangGraph with SqliteSaver: instance A fails
after its consumers committed, the policy recovers, the run's trace is written. All traces are
then judged in one batch; the table names the property each violating run broke.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from resumecheck.errors import ResumeCheckError
from resumecheck.report import exit_code

from rctools.recovery.engine import Stuck
from rctools.recovery.matrix import Judged, judge_runs, record
from rctools.recovery.policies import POLICIES
from rctools.recovery.workloads import WORKLOADS


class RunFailed(ResumeCheckError):
    """The runtime under test could not finish a run (not a verdict): exit code 2."""


@click.command()
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(list(POLICIES)),
    help="Restore policy (repeatable; default: all).",
)
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Choice(list(WORKLOADS)),
    help="Workload (repeatable; default: all).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for traces, run databases and summary.json.",
)
@click.option(
    "--ledger/--no-ledger",
    default=True,
    show_default=True,
    help="Whether the tool layer remembers irreversible intents; without it a rerun issues "
    "them again (NoResurrectedEffect).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show progress on stderr (default: when stderr is a terminal).",
)
def command(
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    fmt: str,
    out: Path,
    ledger: bool,
    progress: bool | None,
) -> int:
    """Run restore policies on workloads where a failed instance's output was already acted on.

    \b
    Policies: retry (rerun the whole task), entry (restore the failed instance's entry),
    native (LangGraph's checkpoint-aligned restore: fork the latest checkpoint before the
    failure), resume (LangGraph's resume after an error: re-run the failed node), admissible
    (the latest admissible checkpoint, or block).
    Exit codes: 0 all conform, 1 a violation, 2 a tool failure.
    """
    show = sys.stderr.isatty() if progress is None else progress

    def note(text: str) -> None:
        if show:
            click.echo(f"recovery: {text}", err=True)

    out.mkdir(parents=True, exist_ok=True)
    try:
        runs = record(
            list(policies or POLICIES),
            list(workloads or WORKLOADS),
            out,
            ledger=ledger,
            on_run=lambda what: note(f"recording {what}"),
        )
    except Stuck as exc:
        raise RunFailed(str(exc)) from exc
    note(f"judging {len(runs)} trace(s) against SemanticRecovery")
    judged = judge_runs(runs)
    code = exit_code([j.verdict for j in judged])
    document = {"exit_code": code, "runs": [j.to_json() for j in judged]}
    (out / "summary.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    click.echo(json.dumps(document, indent=1) if fmt == "json" else table(judged, out))
    return code


def table(judged: list[Judged], out: Path) -> str:
    """One line per run: policy, workload, how it ended, the verdict, the trace file."""
    lines = [f"{'policy':<11} {'workload':<22} {'outcome':<10} {'verdict':<40} trace"]
    for j in judged:
        trace = j.run.trace.relative_to(out) if j.run.trace.is_relative_to(out) else j.run.trace
        lines.append(
            f"{j.run.policy:<11} {j.run.workload:<22} {j.run.outcome:<10} "
            f"{j.verdict_text:<40} {trace}"
        )
    bad = sum(not j.conforms for j in judged)
    lines.append(f"{len(judged)} run(s): {len(judged) - bad} conform, {bad} do not")
    return "\n".join(lines)
