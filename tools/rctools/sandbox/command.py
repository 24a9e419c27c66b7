"""`resume-check run sandbox`: record sandbox runs with a SIGKILL at every turn, then judge them.

One trace per (workload, policy, crash point) plus a fault-free run each, a rollback run and a
fork run into two rollouts; `--jobs` sandboxes run side by side on the host, their checkpoint
jobs sharing `--checkpoint-slots`. All traces are judged in one batch against SandboxCR, and the
table says per run whether it conforms or which property it broke, then per policy the recovery
correctness, the rewinds judged correct, checkpoint bytes, share of turns skipped and time.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import click
from resumecheck import tempdirs
from resumecheck.contract import default_spec_paths
from resumecheck.errors import EnvironmentProblem, UsageError, exit_codes_help
from resumecheck.judge import judge
from resumecheck.output import emit_suite, format_option, reported
from resumecheck.progress import Progress, TLCProgress, progress_option
from resumecheck.report import Invocation, exit_code

from rctools.sandbox import measure
from rctools.sandbox.agent import CRASH_POINTS
from rctools.sandbox.inspector import MODES as INSPECTORS
from rctools.sandbox.policies import POLICIES
from rctools.sandbox.processes import MODES, available
from rctools.sandbox.recorder import RecordError, RunResult, matrix, record_all
from rctools.sandbox.workloads import WORKLOADS

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


class RecordingFailed(EnvironmentProblem):
    """A sandbox run could not be recorded: no verdict, exit code 3."""


@click.command(epilog=exit_codes_help())
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice([*sorted(POLICIES), "all"]),
    default=("all",),
    show_default=True,
    help="Checkpoint policy; repeat for several.",
)
@click.option(
    "--workload",
    "workloads",
    multiple=True,
    type=click.Choice(sorted(WORKLOADS)),
    default=("dev-task",),
    show_default=True,
    help="Scripted agent workload; repeat for several.",
)
@click.option(
    "--crash-points",
    default=",".join(CRASH_POINTS),
    show_default=True,
    help="Where in each turn to SIGKILL ('none': fault-free runs only).",
)
@click.option(
    "--crash-turns",
    default="all",
    show_default=True,
    help="Turns to SIGKILL in, e.g. '1,4,8'.",
)
@click.option(
    "--latency", default=0.02, show_default=True, help="Model call stand-in, seconds per turn."
)
@click.option(
    "--jobs", default=4, show_default=True, help="Sandboxes run side by side on the host."
)
@click.option(
    "--checkpoint-slots",
    default=1,
    show_default=True,
    help="Checkpoint jobs the host runs at once, for all sandboxes (0: no limit).",
)
@click.option(
    "--processes",
    type=click.Choice(MODES),
    default="criu",
    show_default=True,
    help="Process images: criu dumps, or the re-spawn baseline (command lines only).",
)
@click.option(
    "--inspector",
    type=click.Choice(INSPECTORS),
    default="fanotify",
    show_default=True,
    help="The inspector's file evidence: kernel events (fanotify) or a diff of the whole tree.",
)
@click.option(
    "--rewinds/--no-rewinds",
    default=True,
    show_default=True,
    help="Add each workload's rollback run and fork run (two rollouts).",
)
@format_option()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@progress_option
@reported("run sandbox")
def command(
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    crash_points: str,
    crash_turns: str,
    latency: float,
    jobs: int,
    checkpoint_slots: int,
    processes: str,
    inspector: str,
    rewinds: bool,
    fmt: str,
    out: Path,
    progress: bool | None,
    invocation: Invocation,
) -> int:
    """Checkpoint policies of a real sandbox under SIGKILL at every turn (SandboxCR)."""
    problem = missing_privileges() or (missing_criu() if processes == "criu" else None)
    if problem:
        raise EnvironmentProblem(f"cannot run sandboxes here: {problem}")
    if checkpoint_slots < 0 or jobs < 1:
        raise UsageError("--jobs must be at least 1 and --checkpoint-slots at least 0")
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
    )
    traces = out / "traces"
    if traces.exists():
        shutil.rmtree(traces)
    shown = Progress(progress)
    done = 0

    def on_done(result: RunResult) -> None:
        nonlocal done
        done += 1
        shown.update(f"recorded {done}: {result.trace.stem}")

    scratch = tempdirs.mkdtemp("sandbox-")
    try:
        results = record_all(
            specs, traces, scratch, latency, jobs=jobs, slots=checkpoint_slots, on_done=on_done
        )
    except RecordError as exc:
        raise RecordingFailed(str(exc)) from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    shown.note(f"judging {len(results)} traces against SandboxCR")
    verdicts = judge([traces], spec_paths=default_spec_paths(), on_line=TLCProgress(shown))
    shown.clear()
    code = exit_code(verdicts)
    text = "\n".join(
        [
            measure.render_rows(measure.rows(results, verdicts)),
            "",
            measure.render_stats(measure.stats(results, verdicts)),
            f"\ntraces in {traces}; summary in {out / 'summary.json'}",
        ]
    )
    document = measure.summary(results, verdicts)
    emit_suite(fmt, invocation, verdicts, document, text, out=out, code=code)
    return code
