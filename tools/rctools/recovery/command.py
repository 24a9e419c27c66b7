"""`resume-check run recovery`: restore policies on LangGraph workloads, judged by the spec.

Every (policy, workload) pair runs once on real LangGraph with SqliteSaver: instance A fails
after its consumers committed, the policy recovers, the run's trace is written. All traces are
then judged in one batch; the table names the property each violating run broke.
"""

from __future__ import annotations

from pathlib import Path

import click
from resumecheck.errors import EnvironmentProblem, exit_codes_help
from resumecheck.output import emit_suite, format_option, reported
from resumecheck.progress import Progress, TLCProgress, progress_option
from resumecheck.report import Invocation, exit_code

from rctools.recovery.audit import audit_document, audit_table, record_audit
from rctools.recovery.engine import Stuck
from rctools.recovery.matrix import Judged, judge_runs, record
from rctools.recovery.policies import POLICIES
from rctools.recovery.workloads import WORKLOADS


class RunFailed(EnvironmentProblem):
    """The runtime under test could not finish a run (not a verdict): exit code 3."""


@click.command(epilog=exit_codes_help())
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
@format_option()
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
    "--audit",
    is_flag=True,
    help="Instead of the hand-written workloads, audit the policies on generated "
    "commitment-sensitive workflows (five domains); every run is judged by the spec.",
)
@click.option(
    "--workflows",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="With --audit: how many workflows to generate.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="With --audit: the generator's seed (the same seed, the same workflows).",
)
@progress_option
@reported("run recovery")
def command(
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    fmt: str,
    out: Path,
    ledger: bool,
    audit: bool,
    workflows: int,
    seed: int,
    progress: bool | None,
    invocation: Invocation,
) -> int:
    """Run restore policies on workloads where a failed instance's output was already acted on.

    \b
    Policies: retry (rerun the whole task), entry (restore the failed instance's entry),
    native (LangGraph's checkpoint-aligned restore: fork the latest checkpoint before the
    failure), resume (LangGraph's resume after an error: re-run the failed node), admissible
    (the latest admissible checkpoint, or block).

    \b
    With --audit, every policy runs on --workflows generated workflows (five domains, seeded by
    --seed) instead, and the report counts, from the spec's verdicts, the unsafe admitted
    restores, the necessary blocks and the mislocalized failures of each policy.
    """
    shown = Progress(progress)
    out.mkdir(parents=True, exist_ok=True)
    if audit:
        if workloads:
            raise click.UsageError("--workload selects hand-written workloads; --audit generates")
        return run_audit(list(policies or POLICIES), workflows, seed, fmt, out, ledger, shown,
                         invocation)  # fmt: skip
    try:
        runs = record(
            list(policies or POLICIES),
            list(workloads or WORKLOADS),
            out,
            ledger=ledger,
            on_run=lambda what: shown.update(f"recovery: recording {what}"),
        )
    except Stuck as exc:
        raise RunFailed(str(exc)) from exc
    shown.note(f"recovery: judging {len(runs)} trace(s) against SemanticRecovery")
    judged = judge_runs(runs, on_line=TLCProgress(shown))
    shown.clear()
    verdicts = [j.verdict for j in judged]
    code = exit_code(verdicts)
    document = {"suite": "recovery", "runs": [j.to_json() for j in judged]}
    emit_suite(fmt, invocation, verdicts, document, table(judged, out), out=out, code=code)
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


def run_audit(
    policies: list[str],
    workflows: int,
    seed: int,
    fmt: str,
    out: Path,
    ledger: bool,
    shown: Progress,
    invocation: Invocation,
) -> int:
    """`--audit`: every policy on `workflows` generated workflows, one TLC run to judge all."""
    try:
        runs = record_audit(
            workflows, seed, policies, out, ledger=ledger,
            on_run=lambda what: shown.update(f"recovery audit: recording {what}"),
        )  # fmt: skip
    except Stuck as exc:
        raise RunFailed(str(exc)) from exc
    shown.note(f"recovery audit: judging {len(runs)} trace(s) against SemanticRecovery")
    judged = judge_runs(runs, on_line=TLCProgress(shown))
    shown.clear()
    verdicts = [j.verdict for j in judged]
    code = exit_code(verdicts)
    document = audit_document(judged, policies, workflows, seed)
    text = audit_table(judged, policies, workflows, seed)
    emit_suite(fmt, invocation, verdicts, document, text, out=out, code=code)
    return code
