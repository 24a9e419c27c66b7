"""`resume-check run langgraph`: does a checkpointer keep the resume contract on real runs?"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
from resumecheck.errors import UsageError

from rctools import services
from rctools.langgraph.app import (
    DEFAULT_ANSWER,
    DEFAULT_INPUT,
    App,
    AppError,
    load_factory,
    parse_json,
)
from rctools.langgraph.app import KINDS as APP_KINDS
from rctools.langgraph.matrix import (
    DURABILITIES,
    MODES,
    RACE,
    REFERENCE,
    Catalogue,
    Expand,
    Matrix,
    Plan,
    describe,
    run_matrix,
    to_json,
)
from rctools.langgraph.scenarios import ALL as SCENARIOS
from rctools.langgraph_backends import BACKENDS, BackendError, resolve

NEEDS_SERVER = {"postgres": services.PG_URL_VAR, "redis": services.REDIS_URL_VAR}


@click.command(name="langgraph")
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
    help="With --app: the value every interrupt() is answered with (default true).",
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
    "--durability",
    default=",".join(DURABILITIES),
    show_default=True,
    help="Comma-separated LangGraph durability modes.",
)
@click.option(
    "--kill-stride",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    help="SIGKILL at every N-th kill point (node start/end, saver call entry/exit, inside "
    "write calls), of the sorted list the fault-free run gives.",
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
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for traces (traces/<side>/<cell>.jsonl), cell work and summary.json.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr.")
def command(
    app_spec: str | None,
    input_json: str | None,
    answer_json: str | None,
    backend: str | None,
    saver: str | None,
    scenarios: str | None,
    durability: str,
    kill_stride: int,
    kill_inside: bool,
    seed: int,
    reference: bool,
    strict: bool,
    fmt: str,
    out: Path,
    progress: bool | None,
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
    A cell that fails only with your saver is a saver finding; one that fails on the
    reference saver too is a runtime finding (LangGraph itself).
    Exit codes: 0 no saver finding, 1 a saver finding (--strict: or a runtime finding),
    2 a cell could not run or a trace could not be judged.
    """
    if (backend and saver) or not (backend or saver or app_spec):
        raise UsageError("give exactly one of --backend NAME or --saver MODULE:FACTORY")
    if not app_spec and (input_json is not None or answer_json is not None):
        raise UsageError("--input and --answer go with --app MODULE:FACTORY")
    name = backend or saver or REFERENCE
    catalogue, expand, picked = _plan_for(app_spec, input_json, answer_json, scenarios)
    modes = tuple(d for d in durability.split(",") if d)
    if not modes or set(modes) - set(MODES):
        raise UsageError(f"--durability takes {', '.join(MODES)}")
    try:
        factory = resolve(name)
        reference_factory = resolve(REFERENCE) if reference and name != REFERENCE else None
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    started = _servers_for(name)
    show = sys.stderr.isatty() if progress is None else progress
    plan = Plan(
        picked,
        modes,
        kill_stride,
        in_process=name == "memory",
        kill_inside=kill_inside,
        seed=seed,
    )
    try:
        matrix = run_matrix(
            out,
            name,
            factory,
            plan,
            reference_factory,
            _ProgressBar() if show else None,
            scenarios=catalogue,
            expand=expand,
        )
    finally:
        if started:
            services.down(started)
    if show:
        click.echo("\r\033[K", err=True, nl=False)
    document = to_json(matrix)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    click.echo(json.dumps(document, indent=1) if fmt == "json" else render(matrix, out))
    if matrix.findings("failed"):
        return 2
    suspect = any(matrix.findings(k) for k in ("saver", "saver-error", "unattributed"))
    return 1 if suspect or (strict and matrix.findings("runtime")) else 0


def _plan_for(
    app_spec: str | None, input_json: str | None, answer_json: str | None, scenarios: str | None
) -> tuple[Catalogue | None, Expand | None, tuple[str, ...]]:
    """The built-in scenarios, or the app's: its catalogue, how its plan grows from its
    fault-free run, and the scenarios to start with."""
    if app_spec is None:
        picked = tuple(s for s in (scenarios or ",".join(SCENARIOS)).split(",") if s)
        unknown = [s for s in picked if s not in SCENARIOS]
        if unknown:
            raise UsageError(
                f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}"
            )
        return None, None, picked
    kinds = tuple(s for s in (scenarios or ",".join(APP_KINDS)).split(",") if s)
    unknown = [k for k in kinds if k not in APP_KINDS]
    if unknown:
        raise UsageError(
            f"with --app, --scenarios takes {', '.join(APP_KINDS)}; not {', '.join(unknown)}"
        )
    try:
        if answer_json is not None and parse_json("--answer", answer_json, None) is None:
            raise AppError(
                "--answer null is no answer: LangGraph reads Command(resume=None) as none"
            )
        app = App(
            app_spec,
            load_factory(app_spec),
            input=parse_json("--input", input_json, DEFAULT_INPUT),
            answer=parse_json("--answer", answer_json, DEFAULT_ANSWER),
            kinds=kinds,
        )
    except AppError as exc:
        raise UsageError(str(exc)) from None
    return app.catalogue(), app.expand, ("app",)


def _servers_for(name: str) -> list[str]:
    """Starts a private PostgreSQL or redis when the backend needs one and none is given."""
    var = next((v for k, v in NEEDS_SERVER.items() if name.startswith(k)), None)
    if var is None or os.environ.get(var):
        return []
    try:
        result = services.up()
    except services.ServiceError as exc:
        raise UsageError(f"backend {name} needs a server and it could not start: {exc}") from None
    os.environ.update(result.env)
    return result.started


def render(matrix: Matrix, out: Path) -> str:
    """The matrix as text: a row per scenario and durability, then the findings."""
    lines = [f"LangGraph conformance matrix: {matrix.backend} (reference: {REFERENCE})", ""]
    lines.append(f"{'scenario':<16} {'durability':<10} {'no fault':<28} SIGKILL at each point")
    rows: dict[tuple[str, str], list] = {}
    for cell in matrix.cells:
        rows.setdefault((cell.key.scenario, cell.key.durability), []).append(cell)
    for (scenario, mode), cells in rows.items():
        clean = next((c for c in cells if c.key.fault == "none"), None)
        kills = [c for c in cells if c.key.fault.startswith("kill")]
        first = describe(clean.tested) if clean else "-"
        race = next((c for c in cells if c.key.fault == RACE), None)
        if race is not None:  # the same scenario with saver calls not serialized
            first = f"{first}; race: {describe(race.tested)}"
        if kills:
            ok = sum(c.finding == "conforms" for c in kills)
            after = f"{ok}/{len(kills)} conform"
        else:
            after = "-"
        lines.append(f"{scenario:<16} {mode:<10} {first:<28} {after}")
    for kind, title in (
        ("saver", f"Saver findings: fail with {matrix.backend}, pass with the reference"),
        ("saver-error", f"Saver errors: {matrix.backend} raised where the reference did not"),
        ("runtime", "Runtime findings: fail on the reference saver too (LangGraph itself)"),
        ("unattributed", "Findings not attributed (run without --no-reference to tell)"),
        ("failed", "Cells that could not run or be judged"),
    ):
        found = matrix.findings(kind)
        if not found:
            continue
        lines += ["", f"{title} ({len(found)}):"]
        for cell in found:
            also = f" (reference: {describe(cell.reference)})" if cell.reference else ""
            if cell.reference_elsewhere:
                also = f" (the reference breaks it at {cell.reference_elsewhere})"
            lines.append(
                f"  {cell.key.scenario} {cell.key.fault} {cell.key.durability}: "
                f"{describe(cell.tested)}{also}  {cell.tested.run.trace}"
            )
    counts = to_json(matrix)["counts"]
    lines += [
        "",
        f"{counts['cells']} cells: {counts['conforms']} conform, {counts['saver']} saver "
        f"finding(s), "
        + (f"{counts['saver-error']} saver error(s), " if counts["saver-error"] else "")
        + f"{counts['runtime']} runtime finding(s), "
        + (f"{counts['unattributed']} unattributed, " if counts["unattributed"] else "")
        + f"{counts['failed']} failed; summary in {out / 'summary.json'}",
    ]
    return "\n".join(lines)


class _ProgressBar:
    def __init__(self) -> None:
        self.shown = 0.0

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if now - self.shown < 0.1 and done < total:
            return
        self.shown = now
        width = 24
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        click.echo(f"\r\033[K[{bar}] {done}/{total} {what}"[:160], err=True, nl=False)
