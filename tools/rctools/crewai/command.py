"""`resume-check run crewai`: CrewAI Flows with @persist on SQLite under SIGKILL, reviews, forks."""

from __future__ import annotations

from pathlib import Path

import click
from resumecheck.errors import exit_codes_help
from resumecheck.output import reported
from resumecheck.report import Invocation

from rctools.crewai import matrix
from rctools.suite.command import run_suite, suite_options


@click.command(epilog=exit_codes_help())
@suite_options
@reported("run crewai")
def command(
    out: Path,
    fmt: str,
    progress: bool | None,
    cells: tuple[str, ...],
    list_cells: bool,
    stride: int,
    jobs: int,
    invocation: Invocation,
) -> int:
    """CrewAI Flows with class-level @persist on SQLite: SIGKILL at every method boundary
    and inside methods, resume by kickoff(inputs={"id": ...}), forks by
    restore_from_state_id, asynchronous human feedback answered and re-answered (ResumeCore)."""
    return run_suite(
        "crewai", matrix, invocation, fmt, out, progress, cells, list_cells, jobs, stride
    )
