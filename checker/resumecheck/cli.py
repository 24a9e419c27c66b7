"""The `resume-check` command line.

`resume-check TRACE_OR_DIR...` judges traces (the `check` command is the default);
`resume-check spec` model-checks the contract itself. Every failure a user can cause ends in a
one-line message and an exit code, never a traceback.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click

from resumecheck import __version__, escape, executor, explain, speccheck, tempdirs
from resumecheck.agreement import agree as agree_on
from resumecheck.agreement import render_text as render_agreement
from resumecheck.batch import DEFAULT_MAX_HEAP, parse_heap
from resumecheck.contract import SPEC_PATH_ENV, bundled_spec_dir, default_spec_paths
from resumecheck.errors import (
    ENVIRONMENT,
    INVALID_INPUT,
    ResumeCheckError,
    UsageError,
    exit_codes_help,
)
from resumecheck.inputs import expand, no_traces
from resumecheck.judge import judge, warm
from resumecheck.output import TRACE_RENDERERS, format_option, reported
from resumecheck.progress import Progress, TLCProgress, progress_option
from resumecheck.report import FORMATS, Invocation, exit_code, render_spec
from resumecheck.slowstore import render_text as render_slower
from resumecheck.slowstore import slower as slower_store
from resumecheck.speccheck import Row, check_all, render_table
from resumecheck.specmanifest import MANIFEST
from resumecheck.suites import SuiteGroup
from resumecheck.trace.reader import MAX_BYTES, MAX_LINE_BYTES, Limits

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class _Size(click.ParamType):
    """A byte count: 1048576, 64K, 10M, 2G (powers of 1024)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().removesuffix("B").removesuffix("I")
        unit = text[-1:] if text[-1:] in _UNITS else ""
        number = text[: len(text) - len(unit)]
        if not number.isdigit() or int(number) == 0:
            self.fail(f"{value!r} is not a size (e.g. 1048576, 64K, 10M, 2G)", param, ctx)
        return int(number) * _UNITS[unit]


_spec_path_option = click.option(
    "--spec-path",
    "spec_paths",
    multiple=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help=f"Folder with contract files, searched first, file by file (also ${SPEC_PATH_ENV}).",
)

# `agree` and `slower`: the traces they make, kept or not, and their TLC runs at once.
_tlc_jobs_option = click.option(
    "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="TLC runs at once."
)


def _keep_option(made: str) -> Any:
    return click.option(
        "--keep",
        type=click.Path(file_okay=False, path_type=Path),
        help=f"Write the {made} here and keep them (default: a temporary folder, removed).",
    )


class _CheckByDefault(click.Group):
    """Lets `resume-check traces/` mean `resume-check check traces/`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(
    cls=_CheckByDefault,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=exit_codes_help(),
)
@click.version_option(__version__, prog_name="resume-check")
def cli() -> None:
    """Judge checkpoint/interrupt/resume traces against a TLA+ contract.

    \b
    resume-check traces/                    judge every *.jsonl below traces/
    resume-check --format json run.jsonl    the same, as JSON
    resume-check spec                       model-check the contract and its mutants
    resume-check run langgraph --out DIR    record real runs with faults, then judge them

    A trace is JSON Lines: a header naming the contract (e.g. ResumeCore), the workflow and
    the runtime's declared guarantees, then one event per line (docs/trace-format.md). The
    contract's TLA+ spec is the only judge: TLC runs once for all traces of a contract.
    Every command takes --format text|json|junit (docs/cli.md).
    """


@cli.command(epilog=exit_codes_help())
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@format_option()
@click.option(
    "--witness",
    is_flag=True,
    help="Also print one behaviour of the contract that matches each trace (the "
    "matched prefix of a violating one), hidden variables included.",
)
@click.option(
    "--spec",
    "default_contract",
    metavar="NAME",
    help="Contract for traces whose header names none (e.g. ResumeCore).",
)
@_spec_path_option
@click.option(
    "--max-bytes",
    type=_Size(),
    default=MAX_BYTES,
    show_default=True,
    help="Largest trace file read; a larger one is invalid (e.g. 1G).",
)
@click.option(
    "--max-line-bytes",
    type=_Size(),
    default=MAX_LINE_BYTES,
    show_default=True,
    help="Longest line of a trace; a longer one makes the trace invalid (e.g. 16M).",
)
@click.option(
    "--require-complete",
    is_flag=True,
    help="A conforming trace that stops before an end (returned done, parked or failed) "
    "or whose last line was cut off fails with exit code 1.",
)
@click.option(
    "--tolerate",
    "tolerate",
    multiple=True,
    metavar="PROP",
    help="Set aside a property (e.g. CO): its breaks are listed, not failed, and judging goes "
    "on to show what else the trace breaks. Repeatable.",
)
@click.option(
    "--max-heap",
    "max_heap",
    default=DEFAULT_MAX_HEAP,
    show_default=True,
    metavar="SIZE",
    help="TLC's heap per run (java -Xmx, e.g. 3g); a larger batch is split into shards "
    "that each fit (docs/scale.md).",
)
@click.option(
    "--jobs",
    "jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="TLC runs at once: the batch is sharded across that many local processes.",
)
@click.option(
    "--executor",
    "executor_address",
    metavar="ADDRESS",
    help="Judge the shards on a Dask cluster: tcp://HOST:PORT of a scheduler, or local:N "
    "for N local worker processes (needs resume-check[cluster]; docs/scale.md).",
)
@progress_option
@reported("check")
def check(
    paths: tuple[Path, ...],
    fmt: str,
    witness: bool,
    default_contract: str | None,
    spec_paths: tuple[Path, ...],
    progress: bool | None,
    max_bytes: int,
    max_line_bytes: int,
    require_complete: bool,
    tolerate: tuple[str, ...],
    max_heap: str,
    jobs: int,
    executor_address: str | None,
    invocation: Invocation,
) -> int:
    """Judge traces: conforms, violates (first bad event and the property it breaks), invalid.

    Each contract file comes from the first folder holding it: --spec-path folders, then
    $RESUME_CHECK_SPEC_PATH, then the contracts installed with resume-check; the report names
    the files used. With --require-complete a conforming trace that stops early exits 1.

    Only regular files are read (docs/input-rules.md). Below a directory, every *.jsonl and
    *.ndjson file (in any case) is a trace, each file is judged once however often it is
    reached, and every entry left out is named on stderr with the reason. A last line cut short
    (no newline, not yet a whole JSON object) is not judged: the verdict says "truncated", and
    --require-complete fails it too.
    """
    inputs = expand(paths)
    for entry in inputs.skipped:
        click.echo(
            f"resume-check: skipped {escape.path(entry.path)}: {escape.text(entry.reason)}",
            err=True,
        )
    if not inputs.files:
        raise no_traces(paths)
    try:
        heap = parse_heap(max_heap)
    except ValueError as exc:
        raise UsageError(f"--max-heap: {exc}") from None
    try:
        address = None if executor_address is None else executor.parse_address(executor_address)
    except ValueError as exc:
        raise UsageError(f"--executor {escape.text(str(exc))}") from None
    invocation.require_complete = require_complete
    invocation.skipped = inputs.skipped
    shown = Progress(progress)
    with contextlib.ExitStack() as stack:
        cluster = (
            None if address is None else stack.enter_context(executor.connect(address, shown.note))
        )
        # One JVM for judging and for what follows it (a store's re-run, the explanation, the
        # witnesses): a run after the first costs a quarter of a JVM of its own.
        stack.enter_context(warm(few_runs=True))
        limits = Limits(max_bytes=max_bytes, max_line_bytes=max_line_bytes)
        verdicts = judge(
            inputs.files,
            spec_paths=default_spec_paths(spec_paths),
            default_contract=default_contract,
            on_line=TLCProgress(shown),
            limits=limits,
            tolerate=frozenset(tolerate),
            max_heap=heap,
            jobs=jobs,
            executor=cluster,
        )
        # Explaining, stages after judging: what a correct runtime would have done where no
        # action matched; with --witness, a behaviour of the contract that shows each verdict.
        explain.add_expected(verdicts, default_spec_paths(spec_paths), frozenset(tolerate), limits)
        if witness:
            explain.add_witnesses(
                verdicts, default_spec_paths(spec_paths), frozenset(tolerate), limits
            )
    shown.clear()
    click.echo(TRACE_RENDERERS[fmt](verdicts, invocation), nl=False)
    return exit_code(verdicts, require_complete=require_complete)


@cli.command(epilog=exit_codes_help())
@click.option("--large", is_flag=True, help="Run only the large configurations (MC*Large.cfg).")
@click.option("--only", metavar="TEXT", help="Run only configurations and mutants named so.")
@click.option(
    "--skip",
    metavar="GLOB",
    multiple=True,
    help="Leave out configurations and mutants whose name matches (a shell glob, e.g. "
    "'MCResumeCoreSound?*.cfg': the soundness models but MCResumeCoreSound.cfg). Repeatable.",
)
@click.option("--jobs", default=2, show_default=True, help="TLC processes at once.")
@click.option(
    "--update-manifest",
    is_flag=True,
    help="Write the distinct-state counts of the configurations run into manifest.json "
    "(and add a new configuration that passes); results and mutants' properties stay as written.",
)
@click.option(
    "--spec-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The spec folder (default: the contracts installed with resume-check).",
)
@format_option(FORMATS)
@progress_option
@reported("spec")
def spec(
    large: bool,
    only: str | None,
    skip: tuple[str, ...],
    jobs: int,
    update_manifest: bool,
    spec_dir: Path | None,
    fmt: str,
    progress: bool | None,
    invocation: Invocation,
) -> int:
    """Model-check the contract against manifest.json: every MC*.cfg gets its result (ok) and
    its distinct-state count, TLC's random walks of every Sim*.cfg break nothing, every mutant
    is rejected for its property.

    A mutant (mutants/*.mutant in the spec folder) is a broken variant of the protocol; TLC
    must report a violation of exactly the property the manifest names for it, which shows
    that property can fail. A file the manifest does not list, or an entry without its file,
    fails its row with the entry to write. Exit code 1 when any row fails.
    """
    folder = spec_dir or bundled_spec_dir()
    if not folder.is_dir():
        raise UsageError(f"--spec-dir {folder} is not a folder")
    shown = Progress(progress)
    done: list[Row] = []

    def on_row(row: Row) -> None:
        done.append(row)
        shown.update(f"spec: {len(done)} row(s) checked, last {row.name}")

    rows = check_all(
        folder,
        large=large,
        only=only,
        skip=skip,
        jobs=jobs,
        on_row=on_row,
        update=update_manifest,
    )
    shown.clear()
    if update_manifest:
        written = speccheck.update_manifest(folder, rows)
        click.echo(
            f"{written or folder / MANIFEST}: {'written' if written else 'unchanged'}", err=True
        )
    failed = [row for row in rows if not row.passed]
    code = 1 if failed or not rows else 0
    if fmt != "text":
        click.echo(render_spec(fmt, rows, folder, invocation, code), nl=False)
        return code
    # The table once every row is in, so its columns fit all of them; progress until then.
    click.echo(render_table(rows))
    for row in failed:
        if row.detail:
            click.echo(f"\n{row.name}: {row.detail}", err=True)
    click.echo(f"{len(rows)} checked, {len(failed)} failed")
    return code


@cli.command(epilog=exit_codes_help())
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--mutants",
    "count",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="How many mutants to draw.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The draw's random seed.")
@click.option(
    "--max-seed-events",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="Mutate only traces with at most this many events (the oracle's cost grows with "
    "a trace's length).",
)
@_keep_option("mutants")
@_spec_path_option
@_tlc_jobs_option
@progress_option
def agree(
    paths: tuple[Path, ...],
    count: int,
    seed: int,
    max_seed_events: int,
    keep: Path | None,
    spec_paths: tuple[Path, ...],
    jobs: int,
    progress: bool | None,
) -> int:
    """Mutate recorded traces; the checker and the history oracle must agree on each mutant.

    \b
    resume-check agree traces/ --mutants 2000
    resume-check agree traces/core --seed 7 --keep out/mutants

    A contract that declares HistoryProperties states every property twice: as the moves'
    named checks (what resume-check judges by) and over the observed history alone (its
    history oracle, Trace<Name>History.tla). Each mutant -- a recorded trace with events
    dropped, duplicated, moved, swapped or fabricated, or a field changed -- is judged both
    ways by TLC. A mutant the history calls broken and the checker calls conforming is a hole
    in the checks ("missed"); one the checker flags and the history accepts is a false alarm
    or a history form that says too little ("false alarm"). Exit code 1 when any mutant gets
    two different verdicts (docs/contract.md, "Every property stated twice").
    """
    shown = Progress(progress)
    result = agree_on(
        list(paths),
        count=count,
        seed=seed,
        spec_paths=default_spec_paths(spec_paths),
        max_seed_events=max_seed_events,
        keep=keep,
        jobs=jobs,
        on_line=TLCProgress(shown),
    )
    shown.clear()
    click.echo(render_agreement(result, keep), nl=False)
    return 1 if result.disagreements else 0


@cli.command(epilog=exit_codes_help())
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_keep_option("variants")
@_spec_path_option
@_tlc_jobs_option
@progress_option
def slower(
    paths: tuple[Path, ...],
    keep: Path | None,
    spec_paths: tuple[Path, ...],
    jobs: int,
    progress: bool | None,
) -> int:
    """Judge recorded traces again as a slower store would have given them.

    \b
    resume-check slower corpora/langgraph
    resume-check slower out/lg/traces --keep out/slower

    A `put` or `put_writes` records a call's return; what it stored may have reached the
    store, and been seen by other processes, before. A store that answers later gives the same
    run with the acknowledgement later, past other processes' events up to its own process's
    next one. Each such variant of a trace the contract accepts -- as it is, or with every
    property but the store's (StoreProperties) tolerated -- must be accepted too; one it flags
    is a false alarm against a correct, slower store. Exit code 1 when any is flagged
    (docs/contract.md, "A slower store").
    """
    shown = Progress(progress)
    result = slower_store(
        list(paths),
        spec_paths=default_spec_paths(spec_paths),
        keep=keep,
        jobs=jobs,
        on_line=TLCProgress(shown),
    )
    shown.clear()
    click.echo(render_slower(result, keep), nl=False)
    return 1 if result.flagged else 0


@cli.group(cls=SuiteGroup, epilog=exit_codes_help())
def run() -> None:
    """Record a matrix of real runs with injected faults, then judge every trace.

    \b
    resume-check run langgraph --backend sqlite --out out/lg
    resume-check run revision  --policy validity --out out/rev
    resume-check run recovery  --policy admissible --out out/rec
    resume-check run sandbox   --policy effect-aware --out out/sb

    Each suite writes one trace per run into --out, judges them all in one batch and prints a
    table (or, with --format json|junit, a document like `check`'s). Exit codes as for
    checking traces. `resume-check run SUITE --help` lists a suite's options.
    """


def _say(message: str) -> None:
    """A message on stderr, each of its lines escaped (it may quote a trace or a file name)."""
    click.echo("\n".join(escape.text(line) for line in message.splitlines()), err=True)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so TLC is stopped and temporary folders are removed."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps every outcome to an exit code."""
    if threading.current_thread() is threading.main_thread():  # only it may set handlers
        signal.signal(signal.SIGTERM, _terminate)
    tempdirs.clean_up()
    try:
        code: Any = cli.main(args=argv, prog_name="resume-check", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = INVALID_INPUT
    except click.exceptions.Abort:
        click.echo("resume-check: aborted", err=True)
        code = 130
    except ResumeCheckError as exc:
        _say(f"resume-check: error: {exc}")
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # a bug in resume-check, never a verdict: say so
        _say(
            f"resume-check: internal error ({type(exc).__name__}: {exc}); "
            "please report it with the input that caused it"
        )
        code = ENVIRONMENT
    sys.exit(code if isinstance(code, int) else 0)
