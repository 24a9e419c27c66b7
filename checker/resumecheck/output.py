"""What every command shares about its output: `--format`, and a report even when it fails.

`check`, `spec` and every `run <suite>` take the same `--format text|json|junit` (the commands
that judge traces also html). A command decorated with `reported` gets an `Invocation` (its name
and start time, for the report) and, when it fails with a `ResumeCheckError` or a bug, prints a
document in its format carrying the error before the CLI prints its one-line message: a CI step
that parses stdout learns that Java is missing instead of choking on an empty file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from xml.etree import ElementTree as ET

import click

from resumecheck import junit
from resumecheck.errors import InternalError, ResumeCheckError
from resumecheck.htmlreport import render_html, render_html_failure
from resumecheck.report import (
    RENDERERS,
    Invocation,
    Renderer,
    dump_json,
    render_failure,
    verdicts_json,
)
from resumecheck.verdict import Verdict

F = TypeVar("F", bound=Callable[..., Any])

# Reports about traces; `spec` has no traces to draw, so no html.
TRACE_RENDERERS: dict[str, Renderer] = {**RENDERERS, "html": render_html}


def format_option(formats: Sequence[str] = tuple(TRACE_RENDERERS)) -> Callable[[F], F]:
    """`--format`, the same option on every command."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(formats),
        default="text",
        show_default=True,
        help="Report on stdout: text for people, json (docs/report.schema.json) or junit for CI"
        + (", html: one page with a timeline per violation." if "html" in formats else "."),
    )


def reported(command: str) -> Callable[[F], F]:
    """Decorates a click callback that takes `fmt`; passes it `invocation=Invocation(command)`."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            invocation = Invocation(command)
            fmt = kwargs.get("fmt", "text")
            try:
                return func(*args, invocation=invocation, **kwargs)
            except ResumeCheckError as exc:
                _print_failure(fmt, invocation, exc)
                raise
            except (click.exceptions.Exit, click.ClickException):
                raise
            except Exception as exc:  # a bug: still a document, then the CLI's message
                error = InternalError(
                    f"internal error ({type(exc).__name__}: {exc}); "
                    "please report it with the input that caused it"
                )
                _print_failure(fmt, invocation, error)
                raise error from exc

        return run  # type: ignore[return-value]

    return decorate


def _print_failure(fmt: str, invocation: Invocation, error: ResumeCheckError) -> None:
    if fmt == "html":
        click.echo(render_html_failure(invocation, error), nl=False)
    elif fmt != "text":
        click.echo(render_failure(fmt, invocation, error), nl=False)


def emit_suite(
    fmt: str,
    invocation: Invocation,
    verdicts: Sequence[Verdict],
    document: dict[str, Any],
    text: str,
    junit_report: ET.Element,
    *,
    out: Path,
    code: int,
    labels: Mapping[str, str] | None = None,
) -> None:
    """How every `run <suite>` ends: `out/summary.json` (the envelope, the verdicts as `check`
    reports them, then the suite's own `document`) and the report in `fmt` on stdout: the
    suite's `text`, its JUnit document (made with `resumecheck.junit`), or the verdicts as
    `check` renders them (html: whose finding each trace is, where the suite says)."""
    full = invocation.envelope(code) | verdicts_json(verdicts) | document
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(dump_json(full), encoding="utf-8")
    if fmt == "json":
        click.echo(dump_json(full), nl=False)
    elif fmt == "text":
        click.echo(text, nl=not text.endswith("\n"))
    elif fmt == "html":
        click.echo(render_html(verdicts, invocation, labels), nl=False)
    elif fmt == "junit":
        click.echo(junit.to_xml(junit_report), nl=False)
    else:
        raise ValueError(f"no suite report in format {fmt!r}")
