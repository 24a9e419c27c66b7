"""`resume-check run pydantic-graph`: pydantic-graph's FileStatePersistence under SIGKILL."""

from __future__ import annotations

from pathlib import Path

import click
from resumecheck.errors import exit_codes_help
from resumecheck.output import reported
from resumecheck.report import Invocation

from rctools.pydantic_graph import matrix
from rctools.suite.command import run_suite, suite_options


@click.command(epilog=exit_codes_help())
@suite_options
@reported("run pydantic-graph")
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
    """pydantic-graph runs on FileStatePersistence: SIGKILL at every node boundary and inside
    nodes, recovery by iter_from_persistence, concurrent resumers (ResumeCore)."""
    return run_suite(
        "pydantic-graph", matrix, invocation, fmt, out, progress, cells, list_cells, jobs, stride
    )
