"""`resume-check run burr`: Burr's SQLitePersister under SIGKILL."""

from __future__ import annotations

from pathlib import Path

import click
from resumecheck.errors import exit_codes_help
from resumecheck.output import reported
from resumecheck.report import Invocation

from rctools.burr import matrix
from rctools.suite.command import run_suite, suite_options


@click.command(epilog=exit_codes_help())
@suite_options
@reported("run burr")
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
    """Burr applications on SQLitePersister: SIGKILL at every action boundary and inside
    actions, recovery by initialize_from(resume_at_next_action=True), concurrent resumers
    (ResumeCore)."""
    return run_suite(
        "burr", matrix, invocation, fmt, out, progress, cells, list_cells, jobs, stride
    )
