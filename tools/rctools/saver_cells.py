"""The LangGraph matrix as one outcome per cell, for a test runner (the pytest plugin).

A thin adapter over `rctools.langgraph.matrix.run_matrix`: it runs the matrix exactly as
`resume-check run langgraph --saver` does (every cell on the saver under test and on the
reference, judged in one TLC run), times each cell's recording, and turns each cell's finding
into what a test should do with it: pass, fail, or report a runtime finding LangGraph itself
has without failing. Nothing here judges a trace: the verdicts are TLC's, the attribution
(saver or runtime) is the matrix's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import inspect
import json
import os
import pickle
import shutil
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumecheck.errors import ResumeCheckError

STORE_VAR = "RESUME_CHECK_STORE"
DEFAULT_STRIDE = 1


class CellError(Exception):
    """The matrix could not be run at all (bad settings, missing reference saver, no Java)."""


@dataclass(frozen=True)
class Settings:
    """What to run: a saver factory and the part of the matrix to run it on."""

    factory: Callable[[], Any]
    name: str
    scenarios: tuple[str, ...]
    durabilities: tuple[str, ...]
    kill_stride: int = DEFAULT_STRIDE
    # of the kill points left, a few of each kind (a --profile's choice; 0: all of them), and
    # the scenarios killed (None: the matrix's own) -- rctools.langgraph.profiles
    per_kind: int = 0
    killed: tuple[str, ...] | None = None
    # the durabilities whose cells include kills and races (None: every one)
    faulted: tuple[str, ...] | None = None
    reference: bool = True
    in_process: bool = False
    lifespan: Callable[[], AsyncIterator[None]] | None = None
    # the saver API the cells drive: "both" (a saver with both gets every cell twice, the
    # second through ainvoke: cells named *.ainvoke), "sync" or "async"
    api: str = "both"


class Action(enum.Enum):
    """What a test does with a cell."""

    PASS = "pass"
    FAIL = "fail"
    REPORT = "report"  # a runtime finding: shown, not failed (unless strict)
    # inconclusive: the runs compared were not killed at the same logical instant, so the
    # cell decides nothing (skipped, with the reason): never failed, never passed
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class CellOutcome:
    """One cell of a finished matrix, with the seconds its recording took (both savers)."""

    cell: Any  # rctools.langgraph.matrix.Cell; typed loosely so importing this is cheap
    seconds: float

    @property
    def slug(self) -> str:
        return str(self.cell.key.slug)

    @property
    def finding(self) -> str:
        return str(self.cell.finding)


def resolve_factory(spec: str) -> Callable[[], Any]:
    """A `MODULE:FACTORY` string or a bundled backend name as a factory."""
    from rctools.langgraph.backends import BackendError, resolve

    try:
        return resolve(spec)
    except BackendError as exc:
        raise CellError(str(exc)) from None


@dataclass(frozen=True)
class Saver:
    """A saver as the matrix takes it: a factory, the name it carries, and a lifespan to run
    around the whole matrix (a `@checkpointer_test` registration's, e.g. creating a database)."""

    factory: Callable[[], Any]
    name: str | None = None
    lifespan: Callable[[], AsyncIterator[None]] | None = None


def as_factory(saver: Any) -> Saver:
    """A saver as a saver author already has it, as a factory of the factory contract: a
    factory; a generator or async generator function yielding a saver (the style of
    `langgraph-checkpoint-conformance`); or what its `@checkpointer_test` registers (whose
    `create()` opens a fresh saver, whose `name` names it and whose `lifespan` runs once)."""
    if callable(getattr(saver, "create", None)) and callable(getattr(saver, "factory", None)):
        name = str(getattr(saver, "name", "")) or None
        return Saver(saver.create, name, getattr(saver, "lifespan", None))
    if inspect.isasyncgenfunction(saver):
        return Saver(contextlib.asynccontextmanager(saver))
    if inspect.isgeneratorfunction(saver):
        return Saver(contextlib.contextmanager(saver))
    if not callable(saver):
        raise CellError(f"saver={saver!r} is neither a factory nor a registered checkpointer")
    return Saver(saver)


def check_settings(settings: Settings) -> None:
    """Names the first thing wrong with the settings, before anything runs."""
    from rctools.langgraph.matrix import MODES
    from rctools.langgraph.scenarios import ALL as SCENARIOS

    unknown = [s for s in settings.scenarios if s not in SCENARIOS]
    if unknown:
        raise CellError(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    if not settings.scenarios:
        raise CellError("no scenario chosen")
    modes = set(settings.durabilities)
    if not modes or modes - set(MODES):
        raise CellError(f"durability takes {', '.join(MODES)}, not {settings.durabilities}")
    if settings.kill_stride < 1:
        raise CellError(f"kill_stride must be 1 or more, not {settings.kill_stride}")
    if settings.api not in ("both", "sync", "async"):
        raise CellError(f"api takes both, sync or async, not {settings.api!r}")


Progress = Callable[[int, int, str], None]


class PlannedCells:
    """A matrix planned but not yet recorded: its fault-free runs are done, so every cell is
    named (`slugs`), and any of them can be recorded and judged later (`record`), once. The
    saver's lifespan stays open from planning to `close` (a database it creates must outlive
    both stages)."""

    def __init__(self, settings: Settings, out: Path, on_progress: Progress | None) -> None:
        self.settings = settings
        self.out = out
        self.clock = _CellClock(on_progress)
        self._stack = contextlib.ExitStack()
        self._outcomes: dict[str, CellOutcome] = {}
        self.slugs: list[str] = []

    def plan(self, share: str | None = None) -> PlannedCells:
        """Records the fault-free runs that name the cells (`out` is emptied first).

        `share`: a key the processes of one test run have in common (pytest-xdist's
        `testrunuid`): the first of them to get here plans and leaves the plan beside `out`,
        the others take it from there, so no fault-free run is recorded twice."""
        check_settings(self.settings)
        _check_toolchain()
        if share is None:
            return self._plan_here()
        from filelock import FileLock

        kept = self.out.parent / f"{self.out.name}.plan-{share}.pickle"
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.out.parent / f"{self.out.name}.lock"):
            if not kept.exists():
                for older in self.out.parent.glob(f"{self.out.name}.plan-*.pickle"):
                    older.unlink()  # an earlier test run's
                self._plan_here()
                planned = dataclasses.replace(self._planned, catalogue={})
                kept.write_bytes(pickle.dumps((self._plan, planned)))
                return self
            self._plan, planned = pickle.loads(kept.read_bytes())
        from rctools.langgraph.scenarios import ALL as SCENARIOS

        self._planned = dataclasses.replace(planned, catalogue=dict(SCENARIOS))
        self.slugs = [key.slug for key in self._planned.keys]
        self._stack.enter_context(_lifespan(self.settings.lifespan))
        return self

    @property
    def left_out(self) -> str | None:
        """What the plan leaves out because the saver lacks a method, in words (None:
        nothing)."""
        from rctools.langgraph.matrix import Driven

        plan = self._plan
        return Driven(plan.apis, plan.apis if plan.deleting is None else plan.deleting).left_out()

    def _plan_here(self) -> PlannedCells:
        from rctools.langgraph.matrix import Driven, Plan, driven, plan_matrix

        settings = self.settings
        shutil.rmtree(self.out, ignore_errors=True)
        with _errors(), _store_kept():
            self._stack.enter_context(_lifespan(settings.lifespan))
            surface = Driven(("",), ("",))  # in one process: InMemorySaver deletes
            if not settings.in_process:
                probe = self.out / "cells" / "api-probe"
                surface = driven(settings.api, settings.factory, probe)
            self._plan = Plan(
                settings.scenarios,
                settings.durabilities,
                settings.kill_stride,
                settings.in_process,
                apis=surface.apis,
                deleting=surface.deleting,
                per_kind=settings.per_kind,
                killed=settings.killed,
                faulted=settings.faulted,
            )
            self._planned = plan_matrix(
                self.out, settings.name, settings.factory, self._plan, self.clock
            )
        self.slugs = [key.slug for key in self._planned.keys]
        return self

    def record(self, slugs: Iterable[str]) -> None:
        """Records and judges (one TLC run) those of `slugs` not recorded yet, on the saver
        under test and on the reference."""
        from rctools.langgraph.matrix import REFERENCE, is_reference_saver, run_matrix

        wanted = [s for s in dict.fromkeys(slugs) if s not in self._outcomes]
        if not wanted:
            return
        keys = {key.slug: key for key in self._planned.keys}
        settings = self.settings
        reference = None
        if settings.reference and not is_reference_saver(settings.name):
            reference = resolve_factory(REFERENCE)
        with _errors(), _store_kept():
            matrix = run_matrix(
                self.out,
                settings.name,
                settings.factory,
                self._plan,
                reference,
                self.clock,
                planned=self._planned,
                chosen=[keys[s] for s in wanted],
            )
        for cell in matrix.cells:
            slug = cell.key.slug
            self._outcomes[slug] = CellOutcome(cell, self.clock.seconds.get(slug, 0.0))

    def recorded(self, slug: str) -> bool:
        return slug in self._outcomes

    def outcome(self, slug: str) -> CellOutcome:
        """The recorded cell (recorded now, alone, if it was not)."""
        self.record([slug])
        return self._outcomes[slug]

    def write_summary(self, strict: bool) -> Path | None:
        """`summary.json` in `out` for the cells recorded, as `resume-check run langgraph
        --format json` writes it (the same rows, attribution and exit code); None when no
        cell was recorded. Judges nothing: the verdicts are the cells' own."""
        import io

        from resumecheck.progress import Progress as Line
        from resumecheck.report import Invocation

        from rctools.langgraph.matrix import Matrix
        from rctools.langgraph.report import finish_matrix

        cells = [self._outcomes[s].cell for s in self.slugs if s in self._outcomes]
        if not cells:
            return None
        matrix = Matrix(self.settings.name, cells)
        with contextlib.redirect_stdout(io.StringIO()):  # the report is pytest's to print
            finish_matrix(
                matrix,
                Invocation("pytest --resume-check"),
                "json",
                self.out,
                Line(False),
                strict=strict,
                modes=self.settings.durabilities,
            )
        return self.out / "summary.json"

    def close(self) -> None:
        """Ends the saver's lifespan."""
        self._stack.close()


def run_cells(
    settings: Settings, out: Path, on_progress: Progress | None = None
) -> list[CellOutcome]:
    """Records and judges every cell of the settings under `out` (emptied first)."""
    planned = PlannedCells(settings, out, on_progress)
    try:
        planned.plan().record(planned.slugs)
        return [planned.outcome(slug) for slug in planned.slugs]
    finally:
        planned.close()


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """What the matrix raises, as the one error a test runner reports."""
    from rctools.langgraph.backends import BackendError

    try:
        yield
    except BackendError as exc:
        raise CellError(str(exc)) from None
    except ResumeCheckError as exc:
        raise CellError(f"{type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _store_kept() -> Iterator[None]:
    """The matrix sets $RESUME_CHECK_STORE for each cell's processes; it is put back after, so
    the rest of the test session does not inherit the last cell's folder."""
    before = os.environ.get(STORE_VAR)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STORE_VAR, None)
        else:
            os.environ[STORE_VAR] = before


@contextlib.contextmanager
def _lifespan(lifespan: Callable[[], AsyncIterator[None]] | None) -> Iterator[None]:
    """Runs an async-generator lifespan around the matrix, on a loop of its own (the matrix's
    workers are forked processes that open their own savers)."""
    if lifespan is None:
        yield
        return
    loop = asyncio.new_event_loop()
    try:
        steps = lifespan()
        try:
            loop.run_until_complete(anext(steps))
        except Exception as exc:
            raise CellError(f"the checkpointer's lifespan failed to start: {exc!r}") from None
        try:
            yield
        finally:
            with contextlib.suppress(StopAsyncIteration):
                loop.run_until_complete(anext(steps))
    finally:
        loop.close()


def _check_toolchain() -> None:
    """Java, the TLC jar and the contracts, looked for before minutes of recording rather than
    when the first trace is judged."""
    from resumecheck.contract import default_spec_paths
    from resumecheck.tlc.locate import find_jar, find_java

    try:
        find_java()
        find_jar()
        default_spec_paths()
    except ResumeCheckError as exc:
        raise CellError(f"{type(exc).__name__}: {exc}") from None


class _CellClock:
    """Times each cell from the matrix's progress calls: each call comes when a cell (of
    either saver) has been recorded, its message ending in the cell's slug."""

    def __init__(self, forward: Callable[[int, int, str], None] | None) -> None:
        self.forward = forward
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        slug = what.rsplit(" ", 1)[-1]
        if slug.count(".") >= 2:  # scenario.fault.durability, not "judging every trace ..."
            self.seconds[slug] = self.seconds.get(slug, 0.0) + now - self._last
        self._last = now
        if self.forward:
            self.forward(done, total, what)


def action(outcome: CellOutcome, strict: bool = False) -> Action:
    """A saver finding, a saver error, an unattributed failure and a cell that could not run
    fail; a runtime finding (the reference fails too: LangGraph's own) is reported, and fails
    only when `strict`."""
    finding = outcome.finding
    if finding == "conforms":
        return Action.PASS
    if finding == "runtime":
        return Action.FAIL if strict else Action.REPORT
    if finding == "inconclusive":
        return Action.UNDECIDED
    return Action.FAIL


HEADLINES = {
    "saver": "saver finding: fails with {name}, passes with the reference saver",
    "saver-error": "saver error: {name} raised where the reference saver ran the cell",
    "runtime": "runtime finding: LangGraph itself (fails on the reference saver too, or your "
    "saver answered every load as the contract requires)",
    "inconclusive": "inconclusive: no reference run of the cell died at the same logical "
    "instant (what the store held at the kill differs; a call cut inside: {effect}), or the "
    "saver under test did not break it again when the cell ran again (a race it lost once), "
    "or the trace cannot order what a concurrent process loaded (a store check in exit "
    "durability), so nothing measures it -- not a saver finding",
    "unattributed": "finding not attributed (the reference saver was not run)",
    "failed": "the cell could not run or be judged",
}


def explain(outcome: CellOutcome, name: str) -> str:
    """The failure message of a cell: what broke, where, which trace file to open."""
    cell = outcome.cell
    headline = HEADLINES[outcome.finding].format(name=name, effect=cell.tested.run.effect)
    # The first line is what pytest's short summary and JUnit's message show: property first.
    lines = [f"{_named(cell)} in cell {outcome.slug}: {headline}"]
    lines += _side_lines("saver under test", cell.tested)
    if cell.reference is not None:
        lines += _side_lines("reference saver", cell.reference)
    if cell.reference_elsewhere and outcome.finding == "runtime":
        lines.append(
            f"  the reference breaks the same property at {cell.reference_elsewhere} of this "
            "scenario too"
        )
    elif cell.reference_elsewhere:
        lines.append(
            f"  the reference breaks it elsewhere in this scenario ({cell.reference_elsewhere}), "
            "not in this cell: a cell is measured only by the reference's runs of the same "
            "cell, killed at the same instant"
        )
    lines.append(f"  judge it again: resume-check {cell.tested.run.trace}")
    return "\n".join(lines)


def _named(cell: Any) -> str:
    """What the first line of a failure starts with: the saver's checks by name (STATE, END,
    CV...), not the tested trace's first break, which may be the runtime's or none at all (a
    thread that ends otherwise conforms); the trace's verdict where the checks are its own."""
    from rctools.langgraph.attribution import UNMATCHED
    from rctools.langgraph.matrix import describe

    checks = tuple(cell.checks) or (*cell.inconclusive, *cell.unrepeated)
    verdict = cell.tested.verdict
    if not checks or (verdict is not None and set(checks) == set(verdict.properties)):
        return str(describe(cell.tested))
    shown = set(verdict.properties) if verdict is not None else set()
    index = verdict.event_index if verdict is not None else None
    words = [
        "no action matches" if c == UNMATCHED else f"{c} at event {index}" if c in shown else c
        for c in checks
    ]
    return ", ".join(words)


def _side_lines(title: str, side: Any) -> list[str]:
    from rctools.langgraph.matrix import describe

    lines = [f"  {title}: {describe(side)}"]
    verdict = side.verdict
    if verdict is not None and verdict.event:
        lines.append(f"    event {verdict.event_index} (line {verdict.line}): {verdict.event}")
        for prop in verdict.properties:
            text = verdict.descriptions.get(prop)
            if text:  # the spec's comment, which names the property itself
                lines.append(f"    {' '.join(text.split())}")
        if not verdict.properties and verdict.expected is None:
            from resumecheck.contract import default_spec_paths
            from resumecheck.explain import add_expected

            add_expected([verdict], default_spec_paths())  # asked for this message only
        if not verdict.properties and verdict.expected:
            moves = "; ".join(json.dumps(m) for m in verdict.expected[:3])
            lines.append(f"    a correct runtime would have done: {moves}")
    if side.run.killed_at:
        lines.append(f"    killed at: {side.run.killed_at}")
    lines.append(f"    trace: {side.run.trace}")
    return lines
