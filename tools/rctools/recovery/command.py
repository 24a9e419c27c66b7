"""`resume-check run recovery`: restore policies on LangGraph workloads, judged by the spec.

Every (policy, workload) pair is a cell run once on real LangGraph with SqliteSaver: instance A
fails after its consumers committed, the policy recovers, the run's trace is written. The suite
framework (rctools.suite) judges all traces in one batch and reports them; this module only
says which cells there are, records one, and adds the per-policy figures (with --audit: the
audit's counts, from the verdicts).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import click
from resumecheck import texttable
from resumecheck.errors import UsageError

from rctools.langgraph.app import AppError, parse_answer, parse_json
from rctools.recovery.app import load_app
from rctools.recovery.appengine import APP_POLICIES
from rctools.recovery.appmatrix import AppMatrix
from rctools.recovery.audit import audit_figures, audit_table
from rctools.recovery.generate import generate
from rctools.recovery.matrix import judged_runs, record_cell, run_one
from rctools.recovery.policies import POLICIES
from rctools.recovery.workloads import WORKLOADS, Workload
from rctools.suite.command import answer_option, option_with, suite_command
from rctools.suite.matrix import CellByCell
from rctools.suite.matrix import Judged as JudgedCells
from rctools.suite.reports import Cell, CellReport, Figures


class RecoveryMatrix(CellByCell):
    """The cells of one `run recovery`: every chosen policy on every workload (hand-written, or
    with `audit` generated), each recorded in this process."""

    DOCS = "docs/recovery.md"
    DECLARED: ClassVar[dict[str, Any]] = {}  # a policy declares nothing; the contract judges

    def __init__(
        self, policies: Sequence[str], workloads: Sequence[Workload], *, ledger: bool, audit: Any
    ) -> None:
        self.policies = list(policies)
        self.workloads = {w.name: w for w in workloads}
        self.ledger = ledger
        self.audit = audit  # (workflows, seed) with --audit, else None

    def cells(self) -> list[Cell]:
        """`<policy>/<workload>`; the audit's cells are policy by policy within a workflow."""
        if self.audit:
            pairs = [(p, w) for w in self.workloads.values() for p in self.policies]
        else:
            pairs = [(p, w) for p in self.policies for w in self.workloads.values()]
        return [
            Cell(f"{p}/{w.name}", w.name, f"{p}: {w.description}", {"policy": p}) for p, w in pairs
        ]

    def runtime(self) -> dict[str, str]:
        return {"name": "langgraph", "version": importlib.metadata.version("langgraph")}

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        """Runs the cell; a handoff that never came (Stuck) is a cell not recorded (exit 3)."""
        workload, policy = self.workloads[cell.scenario], cell.params["policy"]
        return record_cell(
            cell,
            traces,
            scratch,
            lambda trace, db: run_one(workload, policy, trace, db, 0.0, self.ledger),
        )

    def figures(self, judged: JudgedCells) -> Figures:
        """Per policy: runs, conforming runs and successes (completed and conforming); with
        --audit the audit's counts instead."""
        pairs = judged_runs(judged)
        if self.audit:
            workflows, seed = self.audit
            return Figures(
                {"audit": audit_figures(pairs, self.policies, workflows, seed)},
                audit_table(pairs, self.policies, workflows, seed),
            )
        per: dict[str, dict[str, int]] = {}
        for j in pairs:
            row = per.setdefault(j.run.policy, {"runs": 0, "conform": 0, "success": 0})
            row["runs"] += 1
            row["conform"] += j.conforms
            row["success"] += j.success
        right = texttable.right
        text = texttable.render(
            ["policy", right("runs"), right("conform"), right("success")],
            [(p, r["runs"], r["conform"], r["success"]) for p, r in per.items()],
        )
        return Figures({"ledger": self.ledger, "policies": per}, text)


def configure(
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    ledger: bool,
    audit: bool,
    workflows: int,
    seed: int,
    app: str | None,
    tools: Path | None,
    app_input: str | None,
    kill: bool,
    answer_json: str | None,
) -> RecoveryMatrix | AppMatrix:
    if app is not None:
        if workloads or audit or not ledger:
            raise UsageError("--app runs the user's graph: no --workload, --audit or --no-ledger")
        return configure_app(app, tools, app_input, policies, kill, answer_json)
    if tools is not None or app_input is not None or kill or answer_json is not None:
        raise UsageError("--tools, --input, --kill and --answer go with --app")
    chosen = list(policies or POLICIES)
    if audit:
        if workloads:
            raise UsageError("--workload selects hand-written workloads; --audit generates")
        return RecoveryMatrix(
            chosen, generate(workflows, seed), ledger=ledger, audit=(workflows, seed)
        )
    names = workloads or tuple(WORKLOADS)
    return RecoveryMatrix(chosen, [WORKLOADS[n] for n in names], ledger=ledger, audit=None)


def configure_app(
    app: str,
    tools: Path | None,
    app_input: str | None,
    policies: tuple[str, ...],
    kill: bool,
    answer_json: str | None,
) -> AppMatrix:
    """`--app`: the user's graph at each of its failure points (appmatrix); `configure` has
    turned away the options that do not go with it."""
    if "entry" in policies:
        raise UsageError(
            "--app: on a graph, restoring a node's entry is LangGraph's resume (--policy resume)"
        )
    try:
        answer = parse_answer(answer_json)
        loaded = load_app(app, tools, parse_json("--input", app_input, {}), answer)
        return AppMatrix(loaded, list(policies or APP_POLICIES), kill=kill)
    except AppError as exc:
        raise UsageError(str(exc)) from None


def _some_of(name: str, dest: str, choices: Iterable[str], what: str) -> Callable[[Any], Any]:
    """An option naming some of `choices`, repeatable; named none, `configure` takes them all."""
    return click.option(
        name,
        dest,
        multiple=True,
        type=click.Choice(list(choices)),
        help=f"{what} (repeatable; default: all).",
    )


OPTIONS: list[Callable[[Any], Any]] = [
    _some_of("--policy", "policies", POLICIES, "Restore policy"),
    _some_of("--workload", "workloads", WORKLOADS, "Workload"),
    click.option(
        "--ledger/--no-ledger",
        default=True,
        show_default=True,
        help="Whether the tool layer remembers irreversible intents; without it a rerun issues "
        "them again (NoResurrectedEffect).",
    ),
    click.option(
        "--audit",
        is_flag=True,
        help="Instead of the hand-written workloads, audit the policies on generated "
        "commitment-sensitive workflows (five domains); every run is judged by the spec.",
    ),
    option_with(
        "--audit", "--workflows", click.IntRange(min=1), 200, "how many workflows to generate."
    ),
    option_with(
        "--audit",
        "--seed",
        int,
        0,
        "the generator's seed (the same seed, the same workflows).",
    ),
    click.option(
        "--app",
        metavar="MODULE:FACTORY",
        help="Your own LangGraph graph instead: FACTORY(checkpointer) returns it compiled, "
        "unchanged; every policy runs it with a failure before each declared tool call "
        "(docs/recovery.md, 'Your own graph').",
    ),
    click.option(
        "--tools",
        type=click.Path(dir_okay=False, path_type=Path),
        help="With --app: a JSON file declaring the functions the graph's nodes call that act "
        "on the world, each with its policy (none, reversible, compensable, irreversible) and, "
        "when it can be taken back, its undo.",
    ),
    click.option(
        "--input",
        "app_input",
        metavar="JSON",
        help="With --app: the graph's input (default {}).",
    ),
    click.option(
        "--kill",
        is_flag=True,
        help="With --app: the failure is a SIGKILL of the process running the graph (its "
        "siblings die with it) instead of the tool raising; this process recovers from "
        "LangGraph's checkpoints on the same thread.",
    ),
    answer_option("The answered node runs again from its start, as LangGraph runs it."),
]

command = suite_command(
    "recovery",
    None,
    """Run restore policies on workloads where a failed instance's output was already acted on
(SemanticRecovery).

\b
Policies: retry (rerun the whole task), entry (restore the failed instance's entry),
native (LangGraph's checkpoint-aligned restore: fork the latest checkpoint before the
failure), resume (LangGraph's resume after an error: re-run the failed node), admissible
(the latest admissible checkpoint, or block).

\b
With --audit, every policy runs on --workflows generated workflows (five domains, seeded by
--seed) instead, and the figures count, from the spec's verdicts, the unsafe admitted
restores, the necessary blocks and the mislocalized failures of each policy.

\b
With --app MODULE:FACTORY --tools FILE, your own graph: every policy (retry, native,
resume, admissible) fails it before each declared tool call, on LangGraph's checkpoints, and
the figures are the same counts per policy; with --kill the failure is a SIGKILL of the
process running the graph.""",
    options=OPTIONS,
    configure=configure,
)
