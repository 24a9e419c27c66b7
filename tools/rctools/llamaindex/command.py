"""`resume-check run llamaindex`: LlamaIndex Workflows snapshots under SIGKILL, answers, forks."""

from __future__ import annotations

from pathlib import Path

import click
from resumecheck.errors import exit_codes_help
from resumecheck.output import reported
from resumecheck.report import Invocation

from rctools.llamaindex import matrix
from rctools.suite.command import run_suite, suite_options


@click.command(epilog=exit_codes_help())
@suite_options
@reported("run llamaindex")
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
    """LlamaIndex Workflows with ctx.to_dict() stored at every step boundary: SIGKILL at
    every step boundary and inside steps, resume by run(ctx=Context.from_dict(...)),
    wait_for_event answered and re-answered, forks from older snapshots (ResumeCore)."""
    return run_suite(
        "llamaindex", matrix, invocation, fmt, out, progress, cells, list_cells, jobs, stride
    )
