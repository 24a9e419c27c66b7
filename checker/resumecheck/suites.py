"""The `resume-check run <suite>` registry: record a matrix of real runs, then judge it.

A suite lives in the `rctools` package (tools/), which records traces and never judges them.
Suites are imported only when asked for, so `resume-check` on traces needs none of the runtimes
a suite drives (LangGraph, a sandbox, ...).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import click

from resumecheck.errors import EnvironmentProblem

# suite name -> ("module:attribute" of its click command, one line for --help)
SUITES: dict[str, tuple[str, str]] = {
    "langgraph": (
        "rctools.langgraph.command:command",
        "a checkpointer on real LangGraph runs: crashes, interrupts, forks (ResumeCore)",
    ),
    "revision": (
        "rctools.revision.command:command",
        "revision recovery policies on LangGraph workloads (DagRevision)",
    ),
    "recovery": (
        "rctools.recovery.command:command",
        "restore policies after a failure downstream work acted on (SemanticRecovery)",
    ),
    "burr": (
        "rctools.burr.command:command",
        "Burr on SQLitePersister: SIGKILL at action boundaries, resumers (ResumeCore)",
    ),
    "crewai": (
        "rctools.crewai.command:command",
        "CrewAI Flows with @persist on SQLite: SIGKILL, human feedback, forks (ResumeCore)",
    ),
    "dbos": (
        "rctools.dbos.command:command",
        "DBOS workflows on SQLite: SIGKILL, recv/send, concurrent recovery, forks (ResumeCore)",
    ),
    "llamaindex": (
        "rctools.llamaindex.command:command",
        "LlamaIndex Workflows, Context snapshots on SQLite: SIGKILL, wait_for_event (ResumeCore)",
    ),
    "pydantic-graph": (
        "rctools.pydantic_graph.command:command",
        "pydantic-graph FileStatePersistence: SIGKILL at node boundaries, resumers (ResumeCore)",
    ),
    "temporal": (
        "rctools.temporal.command:command",
        "Temporal on its dev server: SIGKILL of worker and server, signals, resets (ResumeCore)",
    ),
    "restate": (
        "rctools.restate.command:command",
        "Restate workflows on restate-server: SIGKILL of service and server, promises (ResumeCore)",
    ),
    "sandbox": (
        "rctools.sandbox.command:command",
        "sandbox checkpoint policies, SIGKILL at every turn (SandboxCR)",
    ),
}


BEGIN, END = "<!-- suites:begin -->", "<!-- suites:end -->"


def markdown_table(docs: Path) -> str:
    """The table of suites that docs/architecture.md shows, made from this registry so that the
    page lists every suite there is: its name, what it records, the contract that judges it
    (the registry's line ends with it in brackets), and its page in `docs` if there is one."""
    rows = ["| suite | what it records | contract | page |", "|---|---|---|---|"]
    for name, (_, line) in sorted(SUITES.items()):
        what, _, contract = line.rpartition(" (")
        pages = (docs / f"{name}.md", docs / "runtimes" / f"{name}.md")
        page = next((p.relative_to(docs).as_posix() for p in pages if p.is_file()), None)
        link = f"[{page}]({page})" if page else "-"
        rows.append(f"| `{name}` | {what} | {contract.rstrip(')')} | {link} |")
    return "\n".join(rows)


def write_table(page: Path) -> bool:
    """Puts `markdown_table` between the page's suites markers; True when the page changed."""
    text = page.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{markdown_table(page.parent)}\n{END}"
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


class SuiteGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUITES)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Lists the suites without importing them (a suite's runtime may be absent)."""
        with formatter.section("Suites"):
            formatter.write_dl([(name, line) for name, (_, line) in sorted(SUITES.items())])

    def invoke(self, ctx: click.Context) -> Any:
        """Runs the suite with a warm judge held for the whole run (`resumecheck.judge.warm`):
        a suite judges more than once (its traces, the moves expected where one violates,
        cells judged again), and each call would otherwise start a JVM of its own."""
        from resumecheck.judge import warm

        with warm():
            return super().invoke(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUITES:
            return None
        module_name, _, attribute = SUITES[cmd_name][0].partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            missing = exc.name or ""
            if isinstance(exc, ModuleNotFoundError) and missing and module_name.startswith(missing):
                raise EnvironmentProblem(f"suite {cmd_name!r} is not part of this build") from exc
            unsupported = _unsupported(missing)
            if unsupported:
                raise EnvironmentProblem(
                    f"suite {cmd_name!r} cannot record here: {unsupported} (it failed on: {exc})"
                ) from exc
            raise EnvironmentProblem(
                f"suite {cmd_name!r} needs {missing!r}, which is not installed; "
                "install the runtimes with: pip install 'resume-check[runtimes]'"
            ) from exc
        command = getattr(module, attribute)
        assert isinstance(command, click.Command)
        return command


def _unsupported(module: str) -> str | None:
    """Why an import failed when the distribution that should provide `module` is installed
    at a version outside what resume-check records (its extras' requirement, e.g.
    `langgraph>=1.2,<1.3`): the recorders read runtimes' private modules, which move between
    releases. None when the distribution is absent or its version is one resume-check takes."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    top = module.partition(".")[0].replace("_", "-")
    if not top:
        return None
    try:
        installed = metadata.version(top)
        wanted = metadata.requires("resume-check") or []
    except metadata.PackageNotFoundError:
        return None
    for line in wanted:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.name == top and requirement.specifier:
            if requirement.specifier.contains(installed, prereleases=True):
                return None
            return (
                f"{top} {installed} is installed, and resume-check records {top}"
                f"{requirement.specifier} (its recorder reads {top}'s private modules, which "
                f"change between releases); install a {top} in that range"
            )
    return None
