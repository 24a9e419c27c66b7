"""`resume-check run sandbox`: record sandbox runs with a SIGKILL at every turn, then judge them.

One trace per (workload, policy, crash point) plus a fault-free run each; all of them are judged
in one batch against SandboxCR, and the table says per run whether it conforms or which
property it broke, then per policy the recovery correctness, checkpoint bytes, share of turns
skipped and wall time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
from resumecheck import tempdirs
from resumecheck.contract import default_spec_paths
from resumecheck.errors import UsageError
from resumecheck.refine import judge
from resumecheck.report import exit_code

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


@click.command()
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
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
def command(
    policies: tuple[str, ...],
    workloads: tuple[str, ...],
    crash_points: str,
    crash_turns: str,
    latency: float,
    jobs: int,
    fmt: str,
    out: Path,
) -> int:
    """Checkpoint policies of a real sandbox under SIGKILL at every turn (SandboxCR).

    \b
    Exit codes: 0 every run conforms, 1 some run violates SandboxCR, 2 the runs could not be
    recorded or judged.
    """
    problem = missing_privileges()
    if problem:
        raise UsageError(f"cannot run sandboxes here: {problem}")
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
    done = 0

    def progress(result: RunResult) -> None:
        nonlocal done
        done += 1
        click.echo(f"\r\033[Krecorded {done}/{len(specs)}: {result.spec.name}", err=True, nl=False)

    scratch = tempdirs.mkdtemp("sandbox-")
    try:
        results = record_all(specs, traces, scratch, latency, jobs=jobs, on_done=progress)
    except RecordError as exc:
        click.echo("", err=True)
        click.echo(f"resume-check: error: {exc}", err=True)
        return 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    click.echo(f"\r\033[Kjudging {len(results)} traces against SandboxCR", err=True)
    verdicts = judge([traces], spec_paths=default_spec_paths())
    code = exit_code(verdicts)
    document = measure.summary(results, verdicts, code)
    (out / "summary.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if fmt == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        click.echo(measure.render_rows(measure.rows(results, verdicts)))
        click.echo("")
        click.echo(measure.render_stats(measure.stats(results, verdicts)))
        click.echo(f"\ntraces in {traces}; summary in {out / 'summary.json'}")
    return code
