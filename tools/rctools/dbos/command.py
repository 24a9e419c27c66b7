"""`resume-check run dbos`: DBOS Transact on SQLite under SIGKILL, answers and forks."""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import click
from resumecheck.errors import exit_codes_help
from resumecheck.output import reported
from resumecheck.progress import Progress
from resumecheck.report import Invocation

from rctools.dbos import matrix
from rctools.suite.command import finish, fresh_traces, list_text, select, suite_options


@click.command(epilog=exit_codes_help())
@suite_options
@reported("run dbos")
def command(
    out: Path,
    fmt: str,
    progress: bool | None,
    cells: tuple[str, ...],
    list_cells: bool,
    jobs: int,
    invocation: Invocation,
) -> int:
    """DBOS workflows on SQLite: SIGKILL at every step boundary and inside steps, recovery by
    DBOS.launch() or a rerun of the workflow id, recv/send answered and re-answered, concurrent
    resumers, fork_workflow (ResumeCore)."""
    chosen = select(matrix.cells(), cells)
    if list_cells:
        click.echo(list_text(chosen))
        return 0
    traces = fresh_traces(out)
    shown = Progress(progress)
    done = 0
    with tempfile.TemporaryDirectory(prefix="rc-dbos-") as scratch:

        def one(cell):  # type: ignore[no-untyped-def]
            nonlocal done
            report = matrix.record_cell(cell, traces, Path(scratch))
            done += 1
            shown.update(f"recorded {done}/{len(chosen)}: {cell.name}")
            return report

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            reports = list(pool.map(one, chosen))
    return finish(
        "dbos", invocation, fmt, out, reports, progress=shown, runtime=matrix.runtime(),
        declared=matrix.DECLARED | {"docs": matrix.DOCS},
    )
