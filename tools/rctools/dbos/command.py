"""`resume-check run dbos`: DBOS Transact on SQLite under SIGKILL, answers and forks."""

from __future__ import annotations

from pathlib import Path

import click
from resumecheck.errors import exit_codes_help
from resumecheck.output import reported
from resumecheck.report import Invocation

from rctools.dbos import matrix
from rctools.suite.command import run_suite, suite_options


@click.command(epilog=exit_codes_help())
@suite_options
@reported("run dbos")
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
    """DBOS workflows on SQLite: SIGKILL at every step boundary and inside steps, recovery by
    DBOS.launch() or a rerun of the workflow id, recv/send answered and re-answered, concurrent
    resumers, fork_workflow (ResumeCore)."""
    return run_suite(
        "dbos", matrix, invocation, fmt, out, progress, cells, list_cells, jobs, stride
    )
