"""The `resume-check` command line.

`resume-check TRACE_OR_DIR...` judges traces (the `check` command is the default);
`resume-check spec` model-checks the contract itself. Every failure a user can cause ends in a
one-line message and an exit code, never a traceback.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from resumecheck import __version__
from resumecheck.contract import SPEC_PATH_ENV, default_spec_paths
from resumecheck.errors import ResumeCheckError, UsageError
from resumecheck.refine import judge
from resumecheck.report import RENDERERS, exit_code
from resumecheck.speccheck import check_all, format_row, header_line
from resumecheck.suites import SuiteGroup


class _CheckByDefault(click.Group):
    """Lets `resume-check traces/` mean `resume-check check traces/`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_CheckByDefault, context_settings={"help_option_names": ["-h", "--help"]})
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
    """


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(RENDERERS)),
    default="text",
    show_default=True,
    help="Report format.",
)
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
@click.option(
    "--spec-path",
    "spec_paths",
    multiple=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help=f"Folder with contract modules, searched first (also ${SPEC_PATH_ENV}).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show TLC's progress on stderr (default: when stderr is a terminal).",
)
@click.option(
    "--require-complete",
    is_flag=True,
    help="A conforming trace that stops before an end (returned done, parked or failed) "
    "fails with exit code 1.",
)
def check(
    paths: tuple[Path, ...],
    fmt: str,
    witness: bool,
    default_contract: str | None,
    spec_paths: tuple[Path, ...],
    progress: bool | None,
    require_complete: bool,
) -> int:
    """Judge traces: conforms, violates (first bad event and the property it breaks), invalid.

    \b
    Exit codes:
      0  every trace conforms
      1  some trace violates its contract (or, with --require-complete, stops early)
      2  some input is invalid, or TLC/Java could not run
    """
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    show = sys.stderr.isatty() if progress is None else progress
    verdicts = judge(
        list(paths),
        spec_paths=[*spec_paths, *default_spec_paths()],
        default_contract=default_contract,
        witness=witness,
        on_line=_ProgressLine() if show else None,
    )
    if show:
        click.echo("\r\033[K", err=True, nl=False)
    click.echo(RENDERERS[fmt](verdicts), nl=False)
    return exit_code(verdicts, require_complete=require_complete)


@cli.command()
@click.option("--large", is_flag=True, help="Run only the large configurations (MC*Large.cfg).")
@click.option("--only", metavar="TEXT", help="Run only configurations and mutants named so.")
@click.option("--jobs", default=2, show_default=True, help="TLC processes at once.")
@click.option(
    "--spec-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The spec folder (default: the project's spec/).",
)
def spec(large: bool, only: str | None, jobs: int, spec_dir: Path | None) -> int:
    """Model-check the contract: every MC*.cfg must pass, every mutant must be rejected.

    A mutant (spec/mutants/*.mutant) is a broken variant of the protocol; TLC must report a
    violation of exactly the property it names, which shows that property can fail.
    Exit code 1 when any row fails.
    """
    folder = spec_dir or next(iter(default_spec_paths()), None)
    if folder is None or not folder.is_dir():
        raise UsageError("no spec folder; pass --spec-dir")
    click.echo(header_line())
    rows = check_all(
        folder, large=large, only=only, jobs=jobs, on_row=lambda row: click.echo(format_row(row))
    )
    failed = [row for row in rows if not row.passed]
    for row in failed:
        if row.detail:
            click.echo(f"\n{row.name}: {row.detail}", err=True)
    click.echo(f"{len(rows)} checked, {len(failed)} failed")
    return 1 if failed or not rows else 0


@cli.group(cls=SuiteGroup)
def run() -> None:
    """Record a matrix of real runs with injected faults, then judge every trace.

    \b
    resume-check run langgraph --backend sqlite --out out/lg
    resume-check run revision  --policy validity --out out/rev
    resume-check run recovery  --policy admissible --out out/rec
    resume-check run sandbox   --policy effect-aware --out out/sb

    Each suite writes one trace per run into --out, judges them all in one batch and prints a
    table. Exit codes as for checking traces: 0 all conform, 1 a violation, 2 a tool failure.
    `resume-check run SUITE --help` lists a suite's options.
    """


class _ProgressLine:
    """Turns TLC's output into one status line on stderr, at most ten updates a second.

    TLC validates all traces of a batch breadth-first, so the deepest matched event grows
    steadily through the run, and fully matched traces arrive near its end.
    """

    def __init__(self) -> None:
        self.deepest = 0
        self.accepted = 0
        self.shown = 0.0

    def __call__(self, line: str) -> None:
        if line.startswith('<<"rc-accepted"'):
            self.accepted += 1
        elif line.startswith('<<"rc-progress"'):
            depth = line.rstrip(">").rsplit(",", 1)[-1].strip()
            if depth.isdigit():
                self.deepest = max(self.deepest, int(depth))
        else:
            return
        now = time.monotonic()
        if now - self.shown >= 0.1:
            self.shown = now
            click.echo(
                f"\r\033[Kchecking: matched up to event {self.deepest}; "
                f"{self.accepted} trace(s) fully matched",
                err=True,
                nl=False,
            )


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps every outcome to an exit code."""
    try:
        code: Any = cli.main(args=argv, prog_name="resume-check", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = 2
    except click.exceptions.Abort:
        click.echo("resume-check: aborted", err=True)
        code = 130
    except ResumeCheckError as exc:
        click.echo(f"resume-check: error: {exc}", err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # a bug in resume-check, never a verdict: say so, exit 2
        click.echo(
            f"resume-check: internal error ({type(exc).__name__}: {exc}); "
            "please report it with the input that caused it",
            err=True,
        )
        code = 2
    sys.exit(code if isinstance(code, int) else 0)
