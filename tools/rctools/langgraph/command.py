"""`resume-check run langgraph`: does a checkpointer keep the resume contract on real runs?"""

from __future__ import annotations

import os
from pathlib import Path

import click
from packaging.version import Version
from resumecheck.errors import EnvironmentProblem, UsageError, exit_codes_help
from resumecheck.output import reported
from resumecheck.progress import Progress, TLCProgress
from resumecheck.report import Invocation
from resumecheck.tlc.locate import find_jar, find_java

from rctools import services
from rctools.langgraph.app import (
    DEFAULT_ANSWER,
    DEFAULT_INPUT,
    App,
    AppError,
    load_factory,
    parse_answer,
    parse_json,
)
from rctools.langgraph.app import KINDS as APP_KINDS
from rctools.langgraph.backends import BACKENDS, BackendError, Factory, resolve
from rctools.langgraph.matrix import (
    ASYNC_REFERENCE,
    DURABILITIES,
    MODES,
    REFERENCE,
    Catalogue,
    Driven,
    Expand,
    Plan,
    async_api,
    driven,
    is_reference_saver,
    plan_matrix,
    run_matrix,
)
from rctools.langgraph.profiles import DEFAULT as DEFAULT_PROFILE
from rctools.langgraph.profiles import PROFILES
from rctools.langgraph.report import fault_words, finish_matrix
from rctools.langgraph.scenarios import ALL as SCENARIOS
from rctools.langgraph.versions import SUPPORTED, args_again, combined, run_each
from rctools.langgraph.versions import parse as parse_versions
from rctools.suite import reports
from rctools.suite.command import (
    Selection,
    fresh_traces,
    list_text,
    output_options,
    selection_options,
)

# Backends whose cells do not each get data of their own: valkey's numbered databases wrap
# around, so a cell can be handed the database of one still running. --jobs 1 only.
SHARED_STORE = ("valkey",)

# The server each backend family needs, by name prefix (valkey speaks to redis-server).
NEEDS_SERVER = {
    "postgres": "postgres",
    "redis": "redis",
    "valkey": "redis",
    "mysql": "mysql",
    "dynamodb": "dynamodb",
}


@click.command(name="langgraph", epilog=exit_codes_help())
@click.option(
    "--app",
    "app_spec",
    metavar="MODULE:FACTORY",
    help="Your graph: FACTORY(checkpointer) returns it compiled (MODULE dotted, on sys.path or "
    "in the current folder, or a .py path). The matrix is then planned from its fault-free "
    f"run; --scenarios picks among {', '.join(APP_KINDS)}.",
)
@click.option(
    "--input",
    "input_json",
    metavar="JSON",
    help="With --app: the graph's first input (default {}).",
)
@click.option(
    "--answer",
    "answer_json",
    metavar="JSON",
    help="With --app: the value every interrupt() is answered with (default: a distinct "
    'value per interrupt and process, {"answer": "ok NODE", "nonce": UUID}, so a '
    "misdelivered answer shows).",
)
@click.option("--backend", metavar="NAME", help=f"A bundled backend: {', '.join(BACKENDS)}.")
@click.option(
    "--saver",
    metavar="MODULE:FACTORY",
    help="Your checkpointer: a zero-argument callable returning a BaseCheckpointSaver or a "
    "(async) context manager yielding one. Keep durable state under $RESUME_CHECK_STORE.",
)
@click.option(
    "--scenarios",
    default=None,
    help="Comma-separated scenario apps (default: all of the matrix's and the shapes; with "
    "--app: all of its kinds).",
)
@click.option(
    "--profile",
    "profile_name",
    type=click.Choice(list(PROFILES)),
    default=DEFAULT_PROFILE,
    show_default=True,
    help="How much of the matrix to record. quick: every scenario fault-free in every "
    "durability, and in sync durability the latest kill point of each kind (node start/end, "
    "each saver call's entry and exit, inside a write) in four killed scenarios -- about two "
    "minutes; pr: every durability and killed scenario, the latest and the first point of "
    "each kind; full: every kill point. --scenarios, --durability (each mode named with its "
    "faults) and --kill-stride override it.",
)
@click.option(
    "--durability",
    default=None,
    help="Comma-separated LangGraph durability modes (default: the profile's; full: "
    f"{','.join(DURABILITIES)}).",
)
@click.option(
    "--api",
    "api_choice",
    type=click.Choice(["both", "sync", "async"]),
    default="both",
    show_default=True,
    help="The saver API the graphs are driven through: both runs every cell through the "
    "sync API and again through the async one (ainvoke on aget_tuple, aput...; cells named "
    "*.ainvoke) when the saver has both, else through the one it has.",
)
@click.option(
    "--kill-stride",
    default=None,
    type=click.IntRange(1),
    help="SIGKILL at every N-th kill point (node start/end, saver call entry/exit, inside "
    "write calls), of the sorted list the fault-free run gives, instead of the profile's "
    "choice (full: every point).",
)
@click.option(
    "--kill-inside/--no-kill-inside",
    default=True,
    show_default=True,
    help="Kill points inside write calls too: before each SQL statement of a sqlite3 "
    "connection the saver holds, and one seeded instant per call.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=int,
    help="Seed of the instants inside write calls: the same seed, the same cells.",
)
@click.option(
    "--reference/--no-reference",
    default=True,
    show_default=True,
    help=f"Also run every cell on LangGraph's {REFERENCE} saver, to tell saver findings from "
    "runtime findings.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on runtime findings too.")
@click.option(
    "--langgraph",
    "langgraph_versions",
    metavar="VERSION[,VERSION...]",
    help=f"Record the matrix at each of these LangGraph releases (LangGraph{SUPPORTED}), each "
    "in an environment of its own built once from the package registry and cached; each "
    "version's report is in OUT/langgraph-VERSION, and the reports are shown side by side. "
    "Exit 1 when the run at any version exits 1 (a saver finding; with --strict, a runtime "
    "finding too).",
)
@output_options
@selection_options
@reported("run langgraph")
def command(
    app_spec: str | None,
    input_json: str | None,
    answer_json: str | None,
    backend: str | None,
    saver: str | None,
    scenarios: str | None,
    profile_name: str,
    durability: str | None,
    api_choice: str,
    kill_stride: int | None,
    kill_inside: bool,
    seed: int,
    reference: bool,
    strict: bool,
    langgraph_versions: str | None,
    fmt: str,
    out: Path,
    progress: bool | None,
    selection: Selection,
    invocation: Invocation,
) -> int:
    """Record real LangGraph runs on a checkpointer, with faults, and judge every trace.

    Every trace is judged against the ResumeCore contract in one TLC run; the table shows
    each cell's verdict and the findings name the property broken and the trace file.

    \b
    resume-check run langgraph --backend sqlite --out out/lg
    resume-check run langgraph --saver my_pkg.savers:make_saver --out out/mine
    resume-check run langgraph --app my_app.graph:make_graph --out out/app

    Each cell is scenario x fault x durability. Faults: none; a SIGKILL of the worker
    process at each kill point (node start/end, saver call entry/exit, between the SQL
    statements of a write call, a seeded instant inside it; then a fresh process resumes);
    and race, concurrent processes whose saver calls are not serialized. The scenarios add
    node errors, interrupts, retries, time travel, a checkpoint resumed twice and 2 or 3
    processes resuming one interrupt at once.

    \b
    A load your saver answers against the contract (CV, the store's property) where no
    reference run of the cell does is a saver finding, and so is a thread that ends short of
    the reference's (END) or with other values (STATE), a malformed trace where the
    reference's is valid (VALID), or a process that raised from your saver (RUNS). Any other
    property broken with every load answered right (EO, CO, PC, RD, FD) is what LangGraph did
    at your saver's timing: a runtime finding, like whatever the reference breaks too. Exit 1
    on a saver finding (--strict: or a runtime finding), even when some cells could not run;
    3 when cells could not run and nothing was found.

    \b
    A cell's name is SCENARIO.FAULT.DURABILITY, e.g. chain.kill-put-entry_2.sync (the trace
    file's name and the summary's cells[].cell), with .ainvoke after it when the cell drives
    the graph through the saver's async API (--api; every cell of a saver that has only that
    API, or of an app with async def nodes; the reference of such a cell is LangGraph's
    AsyncSqliteSaver). The kill cells are known only once each
    fault-free run has counted its kill points, so the fault-free runs of every --scenarios
    and --durability are always recorded first (narrow those to plan less); --list prints
    the cells then; --cells and --stride choose among them what is recorded and judged (a
    fault-free run not chosen was recorded to plan only: it is not reported). --kill-stride
    thins the kill points of each fault-free run before the cells are named; --stride keeps
    every N-th of the chosen cells, whatever their fault. --jobs N records N cells at once,
    each in a process of its own (a race cell alone, its processes race on purpose); every
    bundled backend but valkey keeps each cell's data apart, a --saver must too.
    """
    if (backend and saver) or not (backend or saver or app_spec):
        raise UsageError("give exactly one of --backend NAME or --saver MODULE:FACTORY")
    if langgraph_versions is not None:
        return _at_versions(parse_versions(langgraph_versions), fmt, out)
    if not app_spec and (input_json is not None or answer_json is not None):
        raise UsageError("--input and --answer go with --app MODULE:FACTORY")
    name = backend or saver or REFERENCE
    jobs = max(1, selection.jobs)
    if jobs > 1 and name.startswith(SHARED_STORE):
        raise UsageError(
            f"--jobs above 1 is not safe on {name}: its cells can share a database; use --jobs 1"
        )
    profile = PROFILES[profile_name]
    app, catalogue, expand, picked = _plan_for(
        app_spec,
        input_json,
        answer_json,
        scenarios if app_spec else (scenarios or ",".join(profile.scenarios)),
    )
    modes = tuple(d for d in (durability or ",".join(profile.durabilities)).split(",") if d)
    if not modes or set(modes) - set(MODES):
        raise UsageError(f"--durability takes {', '.join(MODES)}")
    async_app = bool(app and app.async_nodes)
    if async_app and not (backend or saver):
        # LangGraph's own saver through the API that can run the app: the reference itself
        name = ASYNC_REFERENCE
    try:
        factory = resolve(name)
        reference_factory = None
        if reference and not is_reference_saver(name):
            reference_factory = resolve(REFERENCE)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    if not selection.list_only:
        find_java(), find_jar()  # no Java, no verdict: say so before recording anything (exit 3)
    started = _servers_for(name)
    fresh_traces(out)
    shown = Progress(progress)
    try:
        surface = _driven(api_choice, name, factory, out, app.async_nodes if app else ())
        plan = Plan(
            picked,
            modes,
            kill_stride or 1,
            per_kind=0 if kill_stride else profile.per_kind,
            # an app's scenarios are killed as the app plans them; --scenarios names what to kill
            killed=None if app_spec or scenarios else profile.killed,
            faulted=None if durability else profile.faulted,
            in_process=name == "memory",
            kill_inside=kill_inside,
            seed=seed,
            apis=surface.apis,
            deleting=surface.deleting,
        )
        shown.note(f"planning: the fault-free runs on {name} into {out}")
        planned = plan_matrix(
            out,
            name,
            factory,
            plan,
            shown.count,
            scenarios=catalogue,
            expand=expand,
            jobs=jobs,
        )
        shown.clear()
        if not planned.keys:  # nothing recorded, nothing judged: no verdict to give
            raise UsageError(
                "no cell to record"
                + (f"; left out: {lacks}" if (lacks := surface.left_out()) else "")
            )
        named = {key.slug: key for key in planned.keys}
        listed = [reports.Cell(k.slug, k.scenario, fault_words(k)) for k in planned.keys]
        chosen = selection.chosen(listed)
        if selection.list_only:
            click.echo(list_text(chosen))
            return 0
        shown.note(
            f"recording the matrix on {name}"
            + (f" and on the reference ({REFERENCE})" if reference_factory else "")
            + f" into {out}: {len(chosen)} cells"
        )
        matrix = run_matrix(
            out,
            name,
            factory,
            plan,
            reference_factory,
            shown.count,
            on_line=TLCProgress(shown),
            planned=planned,
            chosen=[named[c.name] for c in chosen],
            jobs=jobs,
        )
    finally:
        if started:
            services.down(started)
    shown.note(
        f"{len(matrix.cells)} cells judged: {len(matrix.findings('saver'))} saver finding(s)"
    )
    given = [
        option
        for option, value in (
            ("--scenarios", scenarios),
            ("--durability", durability),
            ("--kill-stride", kill_stride),
        )
        if value
    ]
    left_out = profile.left_out
    if lacks := surface.left_out():  # a method the saver lacks, said beside the profile's
        left_out = lacks if left_out == "nothing" else f"{left_out}; {lacks}"
    left_out += f"; {', '.join(given)} as given" if given else ""
    return finish_matrix(
        matrix,
        invocation,
        fmt,
        out,
        shown,
        strict=strict,
        modes=modes,
        profile=(profile.name, left_out),
    )


def _at_versions(versions: list[Version], fmt: str, out: Path) -> int:
    """`--langgraph`: the same command at each version, in that version's environment."""
    if fmt == "html" and len(versions) > 1:
        raise UsageError("--format html shows one LangGraph version: give one --langgraph")
    args = args_again(click.get_current_context(), ("langgraph_versions", "out", "fmt"))
    runs = run_each(versions, args, out, fmt)
    if len(runs) == 1:
        click.echo(runs[0].output, nl=False)
        return runs[0].code
    text, code = combined(runs, fmt)
    click.echo(text, nl=False)
    return code


def _driven(
    choice: str, name: str, factory: Factory, out: Path, async_nodes: tuple[str, ...]
) -> Driven:
    """The APIs the cells are driven through (the in-memory saver: in one process, through
    its sync API unless the app's nodes are async def only), and those the saver deletes a
    thread through."""
    try:
        if name == "memory":  # InMemorySaver deletes through both
            apis = (async_api(choice, async_nodes),) if async_nodes else ("",)
            return Driven(apis, apis)
        return driven(choice, factory, out / "cells" / "api-probe", async_nodes)
    except BackendError as exc:
        raise UsageError(f"{name}: {exc}") from None


def _plan_for(
    app_spec: str | None, input_json: str | None, answer_json: str | None, scenarios: str | None
) -> tuple[App | None, Catalogue | None, Expand | None, tuple[str, ...]]:
    """The built-in scenarios, or the app's: the app, its catalogue, how its plan grows from
    its fault-free run, and the scenarios to start with."""
    if app_spec is None:
        picked = tuple(s for s in (scenarios or ",".join(SCENARIOS)).split(",") if s)
        unknown = [s for s in picked if s not in SCENARIOS]
        if unknown:
            raise UsageError(
                f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}"
            )
        return None, None, None, picked
    kinds = tuple(s for s in (scenarios or ",".join(APP_KINDS)).split(",") if s)
    unknown = [k for k in kinds if k not in APP_KINDS]
    if unknown:
        raise UsageError(
            f"with --app, --scenarios takes {', '.join(APP_KINDS)}; not {', '.join(unknown)}"
        )
    try:
        given = parse_answer(answer_json)  # refuses null
        app = App(
            app_spec,
            load_factory(app_spec),
            input=parse_json("--input", input_json, DEFAULT_INPUT),
            answer=given[0] if given else parse_json("--answer", None, DEFAULT_ANSWER),
            kinds=kinds,
        )
    except AppError as exc:
        raise UsageError(str(exc)) from None
    return app, app.catalogue(), app.expand, ("app",)


def _servers_for(name: str) -> list[str]:
    """Starts the private server a backend needs (PostgreSQL, redis, MariaDB or moto) when none
    is given in its URL variable; a missing Debian package is installed only when allowed
    ($RESUME_CHECK_INSTALL_SERVICES=1), else the error names the apt-get command."""
    server = next((v for k, v in NEEDS_SERVER.items() if name.startswith(k)), None)
    if server is None or os.environ.get(services.URL_VARS[server]):
        return []
    try:
        result = services.up(names=[server])
    except services.ServiceError as exc:
        raise EnvironmentProblem(
            f"backend {name} needs a server and it could not start: {exc}"
        ) from None
    os.environ.update(result.env)
    return result.started
