"""`resume-check run revision`: record revision recovery on LangGraph; the suite framework
judges it against DagRevision and reports it.

A cell is one run of a workload with the revision at one point, recovered by the chosen
policy (with --crash also the runs killed by SIGKILL after the revision and in the recovery,
then restarted). With --racing, a cell is one racing execution instead (the workloads in turn,
the nested-path `digest` among them) on worker threads, revised several times by a separate
sender process at instants drawn from the seed. Each cell's notes carry what it cost (model
calls, tokens, nodes recomputed); the figures sum them up.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import click
from resumecheck.errors import UsageError

from rctools.revision.appmatrix import AppMatrix, configure_app
from rctools.revision.crash import crash_points
from rctools.revision.injection import Injection, injection_points
from rctools.revision.loops import DEFAULT_LOOP_BOUND
from rctools.revision.matrix import Racing, Run, record_crashed, record_one, record_race
from rctools.revision.policies import POLICIES
from rctools.revision.racing import RUNTIME, RaceOutcome
from rctools.revision.routing import DEFAULT_SEND_BOUND
from rctools.revision.sender import RevisionSender
from rctools.revision.workloads import RACING_WORKLOADS, WORKLOADS, Workload
from rctools.suite.command import answer_option, option_with, suite_command
from rctools.suite.matrix import CellByCell, Done, Judged
from rctools.suite.pool import run_pool
from rctools.suite.reports import Cell, CellReport, Figures


def words(injection: Injection) -> str:
    if injection.point == "before":
        return f"revision before {injection.node} starts"
    if injection.point == "during":
        return f"revision while {injection.node} runs"
    return "revision after the run"


def notes(run: Run) -> dict[str, Any]:
    """A cell's notes in summary.json: where the revision came and what the run cost."""
    found: dict[str, Any] = {"workload": run.workload, "point": run.point, "policy": run.policy}
    if run.outcome is not None:
        found |= {
            "model_calls": run.outcome.calls,
            "tokens": run.outcome.tokens,
            "recomputed": run.outcome.recomputed,
        }
    if isinstance(run.outcome, RaceOutcome):
        found |= {
            "revisions": run.outcome.revisions,
            "refused": run.outcome.refused,
            "kinds": run.outcome.kinds,
            "max_parallel": run.outcome.max_parallel,
            "rejected_at_commit": run.outcome.rejected,
            "seconds": round(run.outcome.seconds, 4),
        }
    return found


class RevisionMatrix(CellByCell):
    """Every revision point of each workload under one policy, recorded in this process (a
    crash cell in two child processes, the first killed by SIGKILL)."""

    DOCS = "docs/revision.md"
    DECLARED: ClassVar[dict[str, Any]] = {}  # a policy declares nothing; the contract judges

    def __init__(self, policy: str, workloads: Sequence[Workload], *, crash: bool) -> None:
        self.policy = policy
        self.workloads = {w.name: w for w in workloads}
        self.crash = crash

    def cells(self) -> list[Cell]:
        """`<workload>-<policy>-<point>` and `<workload>-<policy>-crash-<point>`."""
        found = []
        for w in self.workloads.values():
            for injection in injection_points(w):
                name = f"{w.name}-{self.policy}-{injection.label}"
                what = f"{words(injection)}; {self.policy} recovers"
                found.append(Cell(name, w.name, what, {"point": injection.label}))
            for point in crash_points(self.policy) if self.crash and w.crash else ():
                name = f"{w.name}-{self.policy}-crash-{point}"
                what = f"revision after the run, SIGKILL {point}; a new process recovers"
                found.append(Cell(name, w.name, what, {"crash": point}))
        return found

    def runtime(self) -> dict[str, str]:
        return {"name": "langgraph", "version": importlib.metadata.version("langgraph")}

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        """Records the cell; a run the runtime could not finish is a cell not recorded."""
        workload = self.workloads[cell.scenario]
        report = CellReport(cell, f"{cell.name}.jsonl")
        try:
            if "crash" in cell.params:
                run = record_crashed(workload, self.policy, cell.params["crash"], traces, scratch)
            else:
                (injection,) = [
                    i for i in injection_points(workload) if i.label == cell.params["point"]
                ]
                run = record_one(workload, self.policy, injection, traces, scratch)
        except Exception as exc:  # the runtime under test failed: not a verdict
            report.problem = f"recording failed: {exc!r}"
            return report
        report.notes = notes(run)
        return report

    def figures(self, judged: Judged) -> Figures:
        """The policy and what its runs cost in all (runs split by a crash are not measured)."""
        costed = [r.notes for r, _ in judged if "model_calls" in r.notes]
        calls = sum(n["model_calls"] for n in costed)
        tokens = sum(n["tokens"] for n in costed)
        data: dict[str, Any] = {"policy": self.policy, "model_calls": calls, "tokens": tokens}
        text = f"policy {self.policy}: {calls} model call(s), {tokens} token(s) in {len(costed)}"
        return Figures(data, text + " measured run(s)")


class RacingMatrix(RevisionMatrix):
    """`executions` racing executions under one policy, the workloads in turn; one sender
    process sends the revisions of all of them, so they are recorded one after another: on
    the framework's pool (`suite.pool.run_pool`) with one job, in this process, which holds
    the sender. Not a SuiteMatrix of cells recorded on their own (`CellByCell`) because of
    that sender; not several at once, because the races would move each other."""

    def __init__(self, policy: str, workloads: Sequence[Workload], racing: Racing) -> None:
        super().__init__(policy, workloads, crash=False)
        self.racing = racing

    def cells(self) -> list[Cell]:
        """`<workload>-<policy>-race-<index>`."""
        chosen = list(self.workloads.values())
        found = []
        for index in range(self.racing.executions):
            w = chosen[index % len(chosen)]
            what = (
                f"racing execution {index}: {self.racing.revisions} revisions at seeded "
                f"instants, {self.racing.width} worker threads; {self.policy} recovers"
            )
            found.append(
                Cell(f"{w.name}-{self.policy}-race-{index}", w.name, what, {"index": index})
            )
        return found

    def runtime(self) -> dict[str, str]:
        return dict(RUNTIME)

    def record_cells(
        self, cells: Sequence[Cell], traces: Path, scratch: Path, *, jobs: int, done: Done
    ) -> list[CellReport]:
        if jobs != 1:
            raise UsageError("--racing records its executions one after another; --width sets "
                             "how many attempts run at once")  # fmt: skip
        with RevisionSender() as sender:

            def one(cell: Cell) -> CellReport:
                report = CellReport(cell, f"{cell.name}.jsonl")
                try:
                    workload = self.workloads[cell.scenario]
                    index = cell.params["index"]
                    run = record_race(workload, self.policy, sender, traces, self.racing, index)
                    report.notes = notes(run)
                except Exception as exc:  # the runtime under test failed: not a verdict
                    report.problem = f"recording failed: {exc!r}"
                return report

            # the framework's pool, one cell at a time in this process: the sender is one
            return run_pool(
                cells,
                one,
                jobs=1,
                result_path=lambda c: scratch / f"{c.name}.result",
                name=lambda c: c.name,
                done=lambda _, report: done(report),
            )

    def figures(self, judged: Judged) -> Figures:
        """The batch's arguments and its revisions in all, beside the costs."""
        base = super().figures(judged)
        raced = [r.notes for r, _ in judged if "revisions" in r.notes]
        data = base.data | {
            "racing": {
                "executions": self.racing.executions,
                "seed": self.racing.seed,
                "width": self.racing.width,
            }
        }
        if not raced:
            return Figures(data, base.text)
        kinds = sorted({k for n in raced for k in n["kinds"]})
        line = (
            f"racing: {sum(n['revisions'] for n in raced)} accepted revision(s) "
            f"(at least {min(n['revisions'] for n in raced)} per execution; kinds "
            f"{', '.join(kinds)}), {sum(n['refused'] for n in raced)} refused, "
            f"{sum(n['rejected_at_commit'] for n in raced)} attempt(s) rejected at commit, "
            f"up to {max(n['max_parallel'] for n in raced)} model calls at once"
        )
        return Figures(data, f"{base.text}\n{line}")


def configure(
    policy: str,
    workloads: tuple[str, ...],
    crash: bool,
    racing: bool,
    executions: int,
    seed: int,
    revisions: int,
    width: int,
    app: str | None,
    input_json: str | None,
    revise: str | None,
    effects: tuple[str, ...],
    irreversible: tuple[str, ...],
    send_bound: int | None,
    loop_bound: int | None,
    answer_json: str | None,
) -> RevisionMatrix | AppMatrix:
    if app is not None:
        if workloads or crash or racing:
            raise UsageError("--app runs your graph: --workload, --crash and --racing do not apply")
        bound = DEFAULT_SEND_BOUND if send_bound is None else send_bound
        laps = DEFAULT_LOOP_BOUND if loop_bound is None else loop_bound
        return configure_app(
            app, input_json, revise, policy, effects, irreversible, bound, laps, answer_json
        )
    if input_json is not None or revise is not None or effects or irreversible or answer_json:
        raise UsageError("--input, --revise, --effect, --irreversible and --answer go with --app")
    if send_bound is not None or loop_bound is not None:
        raise UsageError("--send-bound and --loop-bound go with --app")
    names = workloads or sorted(RACING_WORKLOADS if racing else WORKLOADS)
    if not racing and "digest" in names:
        raise UsageError("workload digest runs only with --racing")
    if racing and crash:
        raise UsageError("--crash and --racing do not combine")
    chosen = [{**WORKLOADS, **RACING_WORKLOADS}[name] for name in names]
    if racing:
        return RacingMatrix(policy, chosen, Racing(executions, seed, revisions, width))
    return RevisionMatrix(policy, chosen, crash=crash)


OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--policy", type=click.Choice(POLICIES), required=True, help="Recovery policy."),
    click.option(
        "--workload",
        "workloads",
        multiple=True,
        type=click.Choice(sorted({**WORKLOADS, **RACING_WORKLOADS})),
        help="Workload to run (repeatable; default: all; `digest` only with --racing; with "
        "--racing the default leaves out `email` and `email-late`, which are named to run).",
    ),
    click.option(
        "--crash/--no-crash",
        default=False,
        help="Also kill each run with SIGKILL after the revision and in the recovery, and restart.",
    ),
    click.option(
        "--racing/--no-racing",
        default=False,
        help="Run in parallel on worker threads while another process sends revisions at random "
        "(seeded) instants, several per execution, racing the commits.",
    ),
    option_with(
        "--racing",
        "--executions",
        click.IntRange(1, 100_000),
        300,
        "how many executions (the workloads in turn).",
    ),
    option_with("--racing", "--seed", int, 1, "the seed of the revision instants and choices."),
    option_with(
        "--racing",
        "--revisions",
        click.IntRange(1, 50),
        3,
        "accepted revisions per execution (refused ones come on top).",
    ),
    option_with(
        "--racing",
        "--width",
        click.IntRange(1, 32),
        3,
        "worker threads, i.e. attempts running at once.",
    ),
    click.option(
        "--app",
        metavar="MODULE:FACTORY",
        default=None,
        help="Your LangGraph graph: FACTORY(checkpointer) returns the StateGraph compiled with "
        "it; the revision (--revise) arrives at every point of its run.",
    ),
    click.option(
        "--input",
        "input_json",
        metavar="JSON",
        default=None,
        help="With --app: the first input, a JSON object of input channels.",
    ),
    click.option(
        "--revise",
        metavar="PATH=JSON",
        default=None,
        help="With --app: the later user message, a new value of one input channel.",
    ),
    click.option(
        "--effect",
        "effects",
        metavar="NODE",
        multiple=True,
        help="With --app: NODE's writes are an effect on the outside world, performed after its "
        "step commits and revoked when a plan invalidates it (repeatable).",
    ),
    click.option(
        "--irreversible",
        metavar="NODE",
        multiple=True,
        help="With --app: as --effect, but the effect cannot be revoked (an e-mail sent): held "
        "until revalidated, sent once; a revision too late for it is refused (repeatable).",
    ),
    click.option(
        "--send-bound",
        type=click.IntRange(1, 64),
        default=None,
        help=f"With --app: the most Send tasks a fan-out may send to one node (its slots; "
        f"default {DEFAULT_SEND_BOUND}); a run that sends more is refused, saying so.",
    ),
    click.option(
        "--loop-bound",
        type=click.IntRange(1, 16),
        default=None,
        help=f"With --app: the most times a run may go round the graph's loop (a ReAct agent's "
        f"model-tools turns; its laps, default {DEFAULT_LOOP_BOUND}); a run that goes round more "
        "is refused, saying so.",
    ),
    answer_option(
        "A revision may also arrive while the run waits for it; a static interrupt "
        "(interrupt_before/after) needs none: the run goes on with invoke(None)."
    ),
]

command = suite_command(
    "revision",
    None,
    """Inject a revision at every point of each workload, recover by POLICY, judge the traces
(DagRevision).

With --racing: N racing executions with several revisions each, every one judged.""",
    options=OPTIONS,
    configure=configure,
)
