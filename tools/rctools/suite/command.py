"""The click command of every runtime suite, its shared options and its one finish step.

    command = suite_command("dbos", matrix.SUITE, "DBOS workflows on SQLite: ...")

is a suite's whole command module: `matrix` is a `suite.matrix.SuiteMatrix` (its cells, how
they are recorded, the runtime, the declared guarantees, the docs page; optionally an
environment check and figures) and `run_suite` selects, records and finishes.

A suite with options of its own (a policy, a workload, a mode) passes them as `options` and a
`configure(**values)` that returns the matrix for those values. See docs/cli.md.

`judge_cells` judges every recorded trace with resume-check's `judge` (one TLC run for the
batch) into the suite's one typed result (`reports.SuiteResult`; LangGraph's matrix makes its
own); `finish` writes OUT/summary.json from it in one shape for every suite, prints its text,
the envelope (json), its JUnit or the HTML page, and returns the exit code: 0 all conform, 1 a
finding, 2 bad input, 3 the environment (a cell that could not be recorded, TLC that could not
judge).
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
from resumecheck import explain, tempdirs, texttable
from resumecheck.contract import default_spec_paths
from resumecheck.errors import EnvironmentProblem, UsageError, exit_codes_help
from resumecheck.judge import judge
from resumecheck.output import emit_suite, format_option, reported
from resumecheck.progress import Progress, TLCProgress, progress_option
from resumecheck.report import Invocation, exit_code, junit_report
from resumecheck.verdict import Status, Verdict

from rctools.suite.matrix import Judged, SuiteMatrix
from rctools.suite.reports import Cell, CellReport, Figures, SuiteResult

F = TypeVar("F", bound=Callable[..., Any])
FORMATS = ("text", "json", "junit", "html")


def require(*modules: str) -> None:
    """A suite's runtime must be installed: if not, the `run` registry names the missing module
    and the extra to install (exit 3) before any cell starts, instead of every worker failing."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


class RecordingFailed(EnvironmentProblem):
    """The runtime under test could not finish a cell: no verdict, exit code 3."""


def output_options(func: F) -> F:
    """--out, --format, --progress: the same on every suite."""
    for option in reversed(
        [
            click.option(
                "--out",
                type=click.Path(file_okay=False, path_type=Path),
                required=True,
                help="Folder for traces/ and summary.json (traces/ is replaced).",
            ),
            format_option(FORMATS),
            progress_option,
        ]
    ):
        func = option(func)
    return func


@dataclass(frozen=True)
class Selection:
    """--cells, --list, --stride, --jobs as a suite's command gets them: which of its cells
    are recorded (or only listed), and how many at once."""

    patterns: tuple[str, ...]
    list_only: bool
    stride: int
    jobs: int

    def chosen(self, cells: Sequence[Cell]) -> list[Cell]:
        """The cells the --cells globs keep, in matrix order, then every --stride-th of them."""
        return select(cells, self.patterns)[:: self.stride]


def selection_options(func: F) -> F:
    """--cells, --list, --stride, --jobs: on every suite whose cells are known before it runs;
    the command gets them as one `selection` (a `Selection`)."""

    # wraps() keeps the options already declared on `func` (click reads every option off the
    # outermost function), so these come after them as before
    @functools.wraps(func)
    def selected(
        *args: Any, cells: tuple[str, ...], list_cells: bool, stride: int, jobs: int, **kwargs: Any
    ) -> Any:
        return func(*args, selection=Selection(cells, list_cells, stride, jobs), **kwargs)

    for option in reversed(
        [
            click.option(
                "--cells",
                "cells",
                multiple=True,
                help="Only the cells whose name matches this glob (repeatable; default: all).",
            ),
            click.option("--list", "list_cells", is_flag=True, help="Print the cells and exit."),
            click.option(
                "--stride",
                default=1,
                show_default=True,
                type=click.IntRange(min=1),
                help="Record every N-th selected cell only (a quick, still deterministic sample).",
            ),
            click.option("--jobs", default=1, show_default=True, help="Cells recorded at once."),
        ]
    ):
        selected = option(selected)
    return selected  # type: ignore[return-value]


def suite_options(func: F) -> F:
    """--out, --format, --progress, --cells, --list, --stride, --jobs: the same on every
    runtime suite."""
    return output_options(selection_options(func))


def option_with(flag: str, name: str, kind: Any, default: Any, help: str) -> Callable[[F], F]:
    """A suite's own option that is read only together with `flag` (`--racing`, `--audit`): a
    value with its default shown, its help starting "With FLAG:" alike on every suite."""
    return click.option(
        name, type=kind, default=default, show_default=True, help=f"With {flag}: {help}"
    )


def answer_option(after: str) -> Callable[[F], F]:
    """`--answer JSON` of a suite that runs the user's graph (`--app`): the human's answer to
    every `interrupt()`, read by `rctools.langgraph.app.parse_answer`; `after` says what the
    suite does with it."""
    return click.option(
        "--answer",
        "answer_json",
        metavar="JSON",
        default=None,
        help="With --app: what a human answers every interrupt() of your graph with (the value "
        f"of Command(resume=...)); without it, a graph that parks is refused. {after}",
    )


def select(cells: Sequence[Cell], patterns: Sequence[str]) -> list[Cell]:
    """The cells a --cells filter keeps, in matrix order; an unmatched pattern is an error."""
    if not patterns:
        return list(cells)
    chosen = [c for c in cells if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(c.name, p) for c in cells)]
    if unmatched:
        raise UsageError(f"--cells {', '.join(unmatched)} matches no cell; see --list")
    return chosen


def fresh_traces(out: Path) -> Path:
    traces = out / "traces"
    if traces.exists():
        shutil.rmtree(traces)
    traces.mkdir(parents=True)
    return traces


def list_text(cells: Sequence[Cell]) -> str:
    return texttable.render(["cell", "what"], [(c.name, c.what) for c in cells], header=False)


def verdict_words(v: Verdict) -> str:
    if v.status is Status.VIOLATES:
        props = ",".join(v.properties) or "unmatched"
        return f"violates {props} at event {v.event_index}"
    if v.status is Status.CONFORMS:
        return "conforms" if v.complete is not False else "conforms (incomplete)"
    return f"{v.status.value}: {v.reason[:80]}"


def finish(
    suite: str,
    invocation: Invocation,
    fmt: str,
    out: Path,
    result: SuiteResult,
    *,
    progress: Progress,
    runtime: dict[str, str],
    declared: dict[str, Any],
) -> int:
    """Writes summary.json (a row per cell), prints the report in `fmt` and returns the exit
    code, the same way for every suite's `result`."""
    document = {
        "suite": suite,
        "runtime": runtime,
        "declared": declared,
        "cells": [_row(r, result.verdicts.get(r.trace), out / "traces") for r in result.reports],
        "findings": findings(result.reports, result.verdicts),
    }
    if result.figures is not None:
        document["figures"] = result.figures.data
    if result.details is not None:
        document["details"] = result.details
    emit_suite(
        fmt,
        invocation,
        result.all_verdicts,
        document,
        result.text,
        result.junit,
        out=out,
        code=result.code,
        labels=result.labels,
    )
    broken = [r for r in result.reports if r.problem]
    if broken:
        progress.note(f"{len(broken)} cell(s) could not be recorded: {broken[0].problem}")
    return result.code


def _row(report: CellReport, v: Verdict | None, traces: Path) -> dict[str, Any]:
    """A cell's row in summary.json."""
    row: dict[str, Any] = {
        "cell": report.cell.name,
        "scenario": report.cell.scenario,
        "what": report.cell.what,
        "trace": str(traces / report.trace),
        "status": v.status.value if v else "error",
        "verdict": verdict_words(v) if v else f"not recorded: {report.problem}",
        "properties": v.properties if v else [],
        "workers": [w.to_json() for w in report.workers],
    }
    if v is not None and v.complete is not None:
        row["complete"] = v.complete
    if report.notes:
        row["notes"] = report.notes
    return row


def findings(reports: Sequence[CellReport], verdicts: dict[str, Verdict]) -> dict[str, int]:
    """Property -> how many cells' traces break it."""
    found: dict[str, int] = {}
    for r in reports:
        v = verdicts.get(r.trace)
        for p in v.properties if v else []:
            found[p] = found.get(p, 0) + 1
    return found


def judge_cells(
    suite: str,
    invocation: Invocation,
    out: Path,
    reports: Sequence[CellReport],
    *,
    progress: Progress,
    runtime: dict[str, str],
    figures: Callable[[Judged], Figures | None],
) -> SuiteResult:
    """The result of a suite whose cells' traces are its verdicts: every recorded trace judged
    against the contract its header names (ResumeCore, SandboxCR, DagRevision,
    SemanticRecovery), one TLC run per contract; a cell not recorded is exit code 3; the text a
    row per cell, the suite's `figures` under it; the JUnit a testcase per trace."""
    traces = out / "traces"
    recorded = [r for r in reports if not r.problem]
    verdicts: list[Verdict] = []
    if recorded:
        note = f"judging {len(recorded)} traces, each against the contract its header names"
        progress.note(note)
        verdicts = judge(
            [traces / r.trace for r in recorded],
            spec_paths=default_spec_paths(),
            on_line=TLCProgress(progress),
        )
        explain.add_expected(verdicts, default_spec_paths())  # the report says what was expected
        progress.clear()
    by_trace = dict(zip([r.trace for r in recorded], verdicts, strict=True))
    code = exit_code(verdicts)
    if len(recorded) < len(reports):
        code = max(code, RecordingFailed.exit_code)
    measured = figures([(r, by_trace.get(r.trace)) for r in reports])
    return SuiteResult(
        list(reports),
        by_trace,
        code,
        _table_text(suite, runtime, out, reports, by_trace, measured),
        junit_report(verdicts, invocation),
        figures=measured,
    )


def _table_text(
    suite: str,
    runtime: dict[str, str],
    out: Path,
    reports: Sequence[CellReport],
    verdicts: dict[str, Verdict],
    measured: Figures | None,
) -> str:
    """A row per cell with its verdict, the counts, the suite's figures, where the files are."""
    rows, conform = [], 0
    for r in reports:
        v = verdicts.get(r.trace)
        rows.append((r.cell.name, verdict_words(v) if v else f"not recorded: {r.problem}"))
        conform += v is not None and v.status is Status.CONFORMS
    found = findings(reports, verdicts)
    broken = sum(1 for r in reports if r.problem)
    lines = [texttable.render(["cell", "verdict"], rows)]
    lines += [
        "",
        f"{suite} {runtime.get('version', '')}: {len(rows)} cells, {conform} conform, "
        + (
            "findings: " + ", ".join(f"{p} in {n}" for p, n in sorted(found.items()))
            if found
            else "no findings"
        )
        + (f", {broken} not recorded" if broken else ""),
    ]
    if measured is not None and measured.text:
        lines += ["", measured.text]
    lines.append(f"traces in {out / 'traces'}; summary in {out / 'summary.json'}")
    return "\n".join(lines)


def run_suite(
    suite: str,
    matrix: SuiteMatrix,
    invocation: Invocation,
    fmt: str,
    out: Path,
    progress: bool | None,
    selection: Selection,
) -> int:
    """The body of every suite: select cells, check the environment, record them, finish."""
    chosen = selection.chosen(matrix.cells())
    if selection.list_only:
        click.echo(list_text(chosen))
        return 0
    matrix.prepare()
    traces = fresh_traces(out)
    shown = Progress(progress)
    done = 0

    def recorded(report: CellReport) -> None:
        nonlocal done
        done += 1
        shown.count(done, len(chosen), f"recorded {report.cell.name}")

    # in resume-check's run folder: a run killed by SIGKILL leaves no sandbox layers behind
    scratch = tempdirs.mkdtemp(f"{suite}-")
    try:
        jobs = max(1, selection.jobs)
        reports = matrix.record_cells(chosen, traces, scratch, jobs=jobs, done=recorded)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    runtime = matrix.runtime()
    result = judge_cells(
        suite, invocation, out, reports, progress=shown, runtime=runtime, figures=matrix.figures
    )
    return finish(
        suite,
        invocation,
        fmt,
        out,
        result,
        progress=shown,
        runtime=runtime,
        declared=matrix.DECLARED | {"docs": matrix.DOCS},
    )


def suite_command(
    suite: str,
    matrix: SuiteMatrix | None,
    help_text: str,
    *,
    options: Sequence[Callable[[F], F]] = (),
    configure: Callable[..., SuiteMatrix] | None = None,
    defaults: dict[str, Any] | None = None,
    show_defaults: bool = False,
) -> click.Command:
    """The `resume-check run SUITE` command: the shared options, the report of `run SUITE`,
    and `run_suite` on `matrix`, so that every suite has the same options and output.

    `options` are the suite's own click options, after the shared ones; their values go to
    `configure(**values)`, which returns the matrix to run (or raises UsageError).
    `defaults` overrides a shared option's default (e.g. `{"jobs": 4}`); `show_defaults` has
    the help show every option's default (one with none shows nothing)."""

    if configure is not None:
        make = configure
    elif matrix is not None:
        fixed = matrix
        make = lambda: fixed  # noqa: E731 -- the suite's one matrix, no options of its own
    else:
        raise TypeError(f"suite {suite}: give a matrix, or a configure that makes one")

    def own_options(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    @click.command(
        name=suite,
        help=help_text,
        epilog=exit_codes_help(),
        context_settings={"default_map": defaults or {}, "show_default": show_defaults},
    )
    @suite_options
    @own_options
    @reported(f"run {suite}")
    def command(
        out: Path,
        fmt: str,
        progress: bool | None,
        selection: Selection,
        invocation: Invocation,
        **values: Any,
    ) -> int:
        return run_suite(suite, make(**values), invocation, fmt, out, progress, selection)

    return command
