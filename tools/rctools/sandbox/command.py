"""`resume-check run sandbox`: record sandbox runs with a SIGKILL at every turn; the suite
framework judges them against SandboxCR and reports them.

A cell is one run of a (workload, policy): fault-free, SIGKILLed at a crash point of a turn, a
rollback run, or a fork run into the workload's rollouts (one trace and one row per rollout).
`--jobs` sandboxes run side by side on the host, their checkpoint jobs sharing
`--checkpoint-slots`. The figures are per policy: the recovery correctness and the rewinds
judged correct (from the verdicts), task success, checkpoint bytes, share of turns skipped and
time (measure.py).

`--agent CMD` runs an agent program the suite never saw, unmodified, under the host-side
runtime (`host.py`): the same cells (without rollbacks and forks), the same contract, the
model a stand-in that every cell of the batch shares (`standin.py`); each cell's notes add the
latencies of its turns, request to released answer.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import statistics
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import click
from resumecheck.errors import EnvironmentProblem, UsageError

from rctools.sandbox import measure
from rctools.sandbox.agent import CRASH_POINTS
from rctools.sandbox.inspector import MODES as INSPECTORS
from rctools.sandbox.policies import POLICIES
from rctools.sandbox.processes import MODES, available
from rctools.sandbox.recorder import (
    HOST_VERSION,
    RUNTIME_VERSION,
    RecordError,
    RunResult,
    RunSpec,
    matrix,
    record,
)
from rctools.sandbox.scheduler import Scheduler
from rctools.sandbox.standin import serving
from rctools.sandbox.workloads import WORKLOADS
from rctools.suite.command import suite_command
from rctools.suite.matrix import Done, Judged, SuiteMatrix
from rctools.suite.pool import run_pool
from rctools.suite.reports import Cell, CellReport, Figures

REQUIRED_TOOLS = ("unshare", "nsenter", "mount")


@functools.cache
def missing_privileges() -> str | None:
    """Why this machine cannot run sandboxes, or None when it can (asked once, by trying)."""
    if os.geteuid() != 0:
        return "sandboxes need root (mount, PID and network namespaces, overlayfs)"
    absent = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    if absent:
        return "missing tools (util-linux): " + ", ".join(absent)
    probe = subprocess.run(
        ["unshare", "--mount", "--pid", "--net", "--fork", "--mount-proc", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        return "cannot create namespaces here: " + probe.stderr.strip()
    if "overlay" not in Path("/proc/filesystems").read_text(encoding="utf-8"):
        return "the kernel offers no overlayfs"
    return None


def missing_criu() -> str | None:
    """Why criu cannot dump and restore processes here (installing it first), or None."""
    return missing_privileges() or available()


def what(spec: RunSpec) -> str:
    crash = "no fault" if spec.crash is None else f"SIGKILL at {spec.crash_label}"
    rewind = "" if spec.rewind_label == "none" else f", {spec.rewind_label}"
    return f"{spec.workload} under {spec.policy}: {crash}{rewind}"


class SandboxMatrix(SuiteMatrix):
    """The runs of one `run sandbox`, recorded `jobs` sandboxes at a time; their checkpoint
    jobs share one scheduler, so the cells are recorded together (`record_cells`)."""

    DOCS = "docs/sandbox.md"
    DECLARED: ClassVar[dict[str, Any]] = {}  # a policy declares nothing; the contract judges

    def __init__(
        self,
        specs: list[RunSpec],
        latency: float,
        slots: int,
        processes: str,
        agent: str | None = None,
    ) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.latency, self.slots, self.processes = latency, slots, processes
        self.agent = agent
        self.results: dict[str, RunResult] = {}  # trace file name -> its run

    def cells(self) -> list[Cell]:
        """A spec's name (`<workload>--<policy>[--<rewind>]--<crash>`) is its cell's name."""
        return [Cell(name, spec.workload, what(spec)) for name, spec in self.specs.items()]

    def runtime(self) -> dict[str, str]:
        version = RUNTIME_VERSION[self.processes]
        return {
            "name": "rctools.sandbox",
            "version": (HOST_VERSION if self.agent else "") + version,
        }

    def prepare(self) -> None:
        """Root, namespaces, overlayfs (and criu, unless process images are re-spawned)."""
        problem = missing_privileges() or (missing_criu() if self.processes == "criu" else None)
        if problem:
            raise EnvironmentProblem(f"cannot run sandboxes here: {problem}")

    def record_cells(
        self, cells: Sequence[Cell], traces: Path, scratch: Path, *, jobs: int, done: Done
    ) -> list[CellReport]:
        """Each cell in a sandbox of its own; a fork cell reports one row per rollout
        (`<cell>--<rollout>`); a run the agent could not finish is a cell not recorded."""
        folder = Scheduler.prepare(scratch / "scheduler", self.slots) if self.slots else None
        with contextlib.ExitStack() as stack:
            model = stack.enter_context(serving(self.latency)) if self.agent else None

            def one(cell: Cell) -> list[CellReport]:
                spec = self.specs[cell.name]
                try:
                    results = record(spec, traces, scratch, self.latency, 0, folder, model)
                except RecordError as exc:
                    return [CellReport(cell, f"{cell.name}.jsonl", problem=str(exc))]
                return [self._report(cell, result) for result in results]

            def ended(_: Cell, reports: list[CellReport]) -> None:
                for report in reports:
                    if isinstance(report.kept, RunResult):  # back from the cell's process
                        self.results[report.trace] = report.kept
                    done(report)

            # the framework's pool: each cell in a process of its own, `jobs` side by side; the
            # host's checkpoint budget (Scheduler) and the model stand-in are shared across them
            per_cell = run_pool(
                cells,
                one,
                jobs=jobs,
                result_path=lambda c: scratch / "pool" / f"{c.name}.result",
                name=lambda c: c.name,
                done=ended,
            )
        return [report for reports in per_cell for report in reports]

    def _report(self, cell: Cell, result: RunResult) -> CellReport:
        if result.rollout:
            cell = Cell(f"{cell.name}--{result.rollout}", cell.scenario, f"{cell.what}, "
                        f"rollout {result.rollout}")  # fmt: skip
        notes = {
            "workload": result.spec.workload,
            "policy": result.spec.policy,
            "crash": result.spec.crash_label,
            "rewind": result.spec.rewind_label,
            "rollout": result.rollout,
            "seconds": round(result.seconds, 3),
            "cpu_seconds": round(result.cpu_seconds, 3),
        }
        if result.spec.agent:
            seconds = [s for s, _ in result.turns]
            notes["turn_p50"] = round(statistics.median(seconds), 6) if seconds else None
            notes["turn_p95"] = round(measure.percentile(seconds, 0.95), 6) if seconds else None
            notes["fast_forwards"] = sum(cached for _, cached in result.turns)
        return CellReport(cell, result.trace.name, notes=notes, kept=result)

    def figures(self, judged: Judged) -> Figures:
        """Per (workload, policy), from the verdicts and the fault-free runs: measure.py."""
        pairs = [(self.results[r.trace], v) for r, v in judged if v is not None]
        table = measure.stats([r for r, _ in pairs], [v for _, v in pairs])
        return Figures({"policies": [asdict(s) for s in table]}, measure.render_stats(table))


def configure(
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    crash_points: str,
    crash_turns: str,
    latency: float,
    checkpoint_slots: int,
    processes: str,
    inspector: str,
    rewinds: bool,
    agent: str | None,
) -> SandboxMatrix:
    if agent is not None and not agent.strip():
        raise UsageError("--agent needs a command line")
    if checkpoint_slots < 0:
        raise UsageError("--checkpoint-slots must be at least 0")
    points = [] if crash_points == "none" else [p.strip() for p in crash_points.split(",")]
    unknown = [p for p in points if p not in CRASH_POINTS]
    if unknown:
        raise UsageError(f"unknown crash point(s) {unknown}; known: {', '.join(CRASH_POINTS)}")
    turns = None
    if crash_turns != "all":
        try:
            turns = {int(t) for t in crash_turns.split(",")}
        except ValueError:
            raise UsageError(f"--crash-turns: {crash_turns!r} is not 'all' or 1,2,...") from None
    chosen = sorted(POLICIES) if "all" in policies else list(dict.fromkeys(policies))
    specs = matrix(
        list(workloads),
        chosen,
        points,
        turns=turns,
        processes=processes,
        rewinds=rewinds,
        inspector=inspector,
        agent=agent,
    )
    return SandboxMatrix(specs, latency, checkpoint_slots, processes, agent)


OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--policy",
        "policies",
        multiple=True,
        type=click.Choice([*sorted(POLICIES), "all"]),
        default=("all",),
        help="Checkpoint policy; repeat for several.",
    ),
    click.option(
        "--workload",
        "workloads",
        multiple=True,
        type=click.Choice(sorted(WORKLOADS)),
        default=("dev-task",),
        help="Scripted agent workload; repeat for several.",
    ),
    click.option(
        "--crash-points",
        default=",".join(CRASH_POINTS),
        help="Where in each turn to SIGKILL ('none': fault-free runs only).",
    ),
    click.option(
        "--crash-turns",
        default="all",
        help="Turns to SIGKILL in, e.g. '1,4,8'.",
    ),
    click.option("--latency", default=0.02, help="Model call stand-in, seconds per turn."),
    click.option(
        "--checkpoint-slots",
        default=1,
        help="Checkpoint jobs the host runs at once, for all sandboxes (0: no limit).",
    ),
    click.option(
        "--processes",
        type=click.Choice(MODES),
        default="criu",
        help="Process images: criu dumps, or the re-spawn baseline (command lines only).",
    ),
    click.option(
        "--inspector",
        type=click.Choice(INSPECTORS),
        default="fanotify",
        help="The inspector's file evidence: kernel events (fanotify) or a diff of the whole tree.",
    ),
    click.option(
        "--rewinds/--no-rewinds",
        default=True,
        help="Add each workload's rollback run and fork run (two rollouts); scripted agent only.",
    ),
    click.option(
        "--agent",
        default=None,
        help="An agent's command line, run unmodified in the sandbox's workspace and "
        "checkpointed by the host between it and the chat stand-in (OPENAI_BASE_URL).",
    ),
]

command = suite_command(
    "sandbox",
    None,
    "Checkpoint policies of a real sandbox under SIGKILL at every turn (SandboxCR).",
    options=OPTIONS,
    configure=configure,
    defaults={"jobs": 4},
    show_defaults=True,
)
