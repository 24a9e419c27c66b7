"""`resume-check run sandbox`: record sandbox runs with a SIGKILL at every turn, then judge them.

One trace per (workload, policy, crash point) plus a fault-free run each; all of them are judged
in one batch against SandboxCR, and the table says per run whether it conforms or which
property it broke, then per policy the recovery correctness, checkpoint bytes, share of turns
skipped and wall time.
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
from rctools.sandbox.policies import POLICIES
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
@click.option("--jobs", default=2, show_default=True, help="Runs recorded at once.")
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
    fmt: str,
    out: Path,
    progress: bool | None,
    invocation: Invocation,
) -> int:
    """Checkpoint policies of a real sandbox under SIGKILL at every turn (SandboxCR)."""
    problem = missing_privileges()
    if problem:
        raise EnvironmentProblem(f"cannot run sandboxes here: {problem}")
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
    specs = matrix(list(workloads), chosen, points, turns=turns)
    traces = out / "traces"
    if traces.exists():
        shutil.rmtree(traces)
    shown = Progress(progress)
    done = 0

    def on_done(result: RunResult) -> None:
        nonlocal done
        done += 1
        shown.update(f"recorded {done}/{len(specs)}: {result.spec.name}")

    scratch = tempdirs.mkdtemp("sandbox-")
    try:
        results = record_all(specs, traces, scratch, latency, jobs=jobs, on_done=on_done)
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
