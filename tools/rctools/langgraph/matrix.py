"""The conformance matrix: scenario x fault x durability, on the saver under test and on the
reference saver, judged in one batch, each failing cell attributed to the saver or to
LangGraph.

Whose fault is it: a store property (CV) or a runner check (END, STATE...) the saver under
test breaks where the reference (LangGraph's SQLite saver) does not is a *saver finding*; what
the reference breaks too, or any other property broken with every load answered right, is a
*runtime finding* -- LangGraph itself, e.g. two processes resuming one parked interrupt
(attribution.py).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resumecheck.contract import default_spec_paths, find_contract
from resumecheck.errors import EnvironmentProblem
from resumecheck.verdict import Status, Verdict

from rctools.langgraph import killpoints
from rctools.langgraph.attribution import (
    NO_TOLERANCE,
    RUNNER_CHECKS,
    RUNS,
    UNMATCHED,
    VALID,
    Judgments,
    acknowledged,
    breaks,
    end_checks,
    first_saver_break,
    reference_breaks,
    saver_breaks,
    tolerable,
)
from rctools.langgraph.backends import (
    BackendError,
    Factory,
    sqlite,
    sqlite_async,
    sqlite_async_slowed,
    sqlite_slowed,
)
from rctools.langgraph.coverage import Coverage, coverage
from rctools.langgraph.driver import CellRun, run_cell
from rctools.langgraph.final import FinalState, read_final, saver_surface
from rctools.langgraph.killpoints import KillPoint
from rctools.langgraph.record import CONTRACT
from rctools.langgraph.scenarios import ALL as SCENARIOS
from rctools.langgraph.scenarios import Scenario
from rctools.suite.pool import PoolTaskFailed, run_pool

REFERENCE = "sqlite"
ASYNC_REFERENCE = "sqlite-async"  # the reference of a cell driven through the async API
APIS = ("sync", "async")
DURABILITIES = ("sync", "async", "exit")  # the default modes
MODES = DURABILITIES
# Scenarios killed at every point: the others add concurrency, time travel or a shape of
# graph, not new kills.
KILLED = (
    "chain",
    "fanout",
    "two-interrupts",
    "node-error",
    "approval-loop",
    "send",
    "subgraph-interrupt",
    "update-state",
)
# Scenarios that need several processes at once.
MULTI_PROCESS = ("concurrent-2", "concurrent-3")


class RecordingFailed(EnvironmentProblem):
    """A cell's recording process raised or died: no matrix, exit code 3."""


RACE = "race"  # the fault of a cell whose processes' saver calls are not serialized


@dataclass(frozen=True, order=True)
class CellKey:
    scenario: str
    # "none"; "kill:LABEL#N", SIGKILL at the N-th time the cell reaches kill point LABEL
    # (killpoints.py); "race", concurrent processes whose saver calls are not serialized;
    # "kill@N": the N-th point the cell reached, the name of a kill before kill points had
    # names -- read in older summaries and corpora (publish, report), never recorded now
    fault: str
    durability: str
    # "async": driven through the saver's async API although it has the sync one too (the
    # cell's name ends in .ainvoke); "": the saver's own API, sync where it has it
    api: str = ""

    @property
    def slug(self) -> str:
        # a file name without shell or URL specials: kill:put @0.250#3 -> kill-put-at0.250_3
        fault = self.fault.replace("@", "at").replace("#", "_")
        fault = "".join(c if c.isalnum() or c in "-_." else "-" for c in fault)
        through = ".ainvoke" if self.api == "async" else ""
        return f"{self.scenario}.{fault}.{self.durability}{through}"

    @property
    def kill_at(self) -> int | None:
        return int(self.fault.split("@", 1)[1]) if self.fault.startswith("kill@") else None

    @property
    def kill_point(self) -> KillPoint | None:
        return KillPoint.parse(self.fault)


@dataclass
class Side:
    """One saver's run of one cell: its trace's verdict, and what a fresh process read back
    at the end (None for a saver that lives in one process: nothing survives it)."""

    run: CellRun
    verdict: Verdict | None = None
    end: FinalState | None = None
    started: datetime | None = None
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if self.run.failure:
            return "failed"
        return self.verdict.status.value if self.verdict else "unjudged"


@dataclass
class Cell:
    key: CellKey
    tested: Side
    reference: Side | None = None
    is_reference: bool = False  # the saver under test is the reference saver itself
    # The reference run again where only the saver under test failed (races: see _confirm).
    again: list[Side] = field(default_factory=list)
    # What the saver under test breaks that no reference run of the cell does: the contract's
    # store properties, `unmatched`, runner checks (END, STATE, VALID, RUNS; attribution.py).
    checks: tuple[str, ...] = ()
    # The other properties the tested trace breaks first: the reference's too, or what the
    # runtime did with every load answered as the contract requires.
    runtime: tuple[str, ...] = ()
    # Another chosen cell of this scenario where the reference breaks a property the tested
    # run breaks (its runtime properties or its checks), if any: a hint, not an attribution.
    reference_elsewhere: str | None = None
    # What would be a saver check but compares runs killed at different logical instants
    # (`same_instant`): never a saver finding, the cell is `inconclusive`.
    inconclusive: tuple[str, ...] = ()
    # The saver under test's run of the cell again, where a break of a property that is not
    # a store property would be its finding (`_confirm`).
    retested: list[Side] = field(default_factory=list)
    # Saver checks the saver under test did not break again when its cell ran again: a race
    # of the runtime's that the reference's runs happened not to lose, as far as anything
    # shows -- never a saver finding, the cell is `inconclusive` (`_attribute`).
    unrepeated: tuple[str, ...] = ()

    @property
    def references(self) -> list[Side]:
        return [self.reference, *self.again] if self.reference else []

    @property
    def finding(self) -> str:
        """conforms | saver | saver-error | runtime | inconclusive | unattributed | failed:
        whose fault a failing cell is. `saver-error`: a process raised from the saver under
        test (e.g. a store left unreadable by a SIGKILL) where the reference ran the cell
        (check RUNS). `inconclusive`: the tested run breaks what the reference's does not,
        but the two were not killed at the same logical instant, so neither is a measure of
        the other (`same_instant`), or the saver under test did not break it again when the
        cell ran again (`unrepeated`)."""
        status = self.tested.status
        if status == "failed":
            if self.reference is not None and self.reference.status != "failed":
                return "saver-error"
            return "failed"
        if self.checks:
            return "saver"
        if self.inconclusive or self.unrepeated:
            return "inconclusive"
        if status in ("invalid", "error", "unjudged"):
            return "failed"
        if status == "conforms":
            return "conforms"
        if self.reference is None:
            return "runtime" if self.is_reference else "unattributed"
        return "runtime"


@dataclass
class Matrix:
    backend: str
    cells: list[Cell] = field(default_factory=list)
    # the scenarios whose processes run at once (`_several`): in exit durability their
    # store checks are not measured (`_attribute`)
    concurrent: frozenset[str] = frozenset()

    def findings(self, kind: str) -> list[Cell]:
        return [c for c in self.cells if c.finding == kind]


@dataclass(frozen=True)
class Plan:
    scenarios: tuple[str, ...]
    durabilities: tuple[str, ...] = DURABILITIES
    kill_stride: int = 1  # kill at every n-th point (1: every point)
    in_process: bool = False  # a saver that lives in one process's memory
    # kill points inside write calls too: before each SQL statement after the first, and
    # one seeded instant per call (killpoints.py)
    kill_inside: bool = True
    seed: int = 0  # of the seeded instants: the same seed, the same cells
    # the multi-process scenarios once more with saver calls not serialized (fault "race")
    races: bool = True
    # the APIs every cell runs through: "" the saver's own (sync where it has it), "async"
    # its async API as well (a saver with both: `ainvoke` users reach only that one)
    apis: tuple[str, ...] = ("",)
    # n > 0: of the points kill_stride leaves, at most n of each kind (killpoints.by_kind) per
    # fault-free run -- what a profile keeps of a run's points instead of thinning them
    per_kind: int = 0
    # the scenarios killed (None: KILLED, and every app scenario that asks to be)
    killed: tuple[str, ...] | None = None
    # the durabilities whose cells include faults, kills and races (None: every one); the
    # others record their fault-free runs only (a profile's choice: a saver bug that needs a
    # write landing before its checkpoint shows fault-free in async durability)
    faulted: tuple[str, ...] | None = None
    # the APIs of `apis` through which the saver deletes a thread (None: every one); a
    # scenario that deletes one is left out of the others (`Driven`)
    deleting: tuple[str, ...] | None = None


Progress = Callable[[int, int, str], None]
Catalogue = Mapping[str, Scenario]
# From a scenario's fault-free run, more scenarios to run in the same durability (an app's
# plan: one cell per interrupt it parked at, per checkpoint of its thread).
Expand = Callable[[Scenario, CellRun], list[Scenario]]


@dataclass
class Planned:
    """Every cell of a plan, known once each scenario's fault-free run has counted its kill
    points: `keys` in matrix order, `clean` those fault-free runs (already recorded), `points`
    where each kill cell is killed, `catalogue` the scenarios (with those `expand` derived)."""

    keys: list[CellKey]
    clean: dict[CellKey, Side]
    points: dict[CellKey, KillPoint]
    catalogue: dict[str, Scenario]


def plan_matrix(
    out: Path,
    backend: str,
    factory: Factory,
    plan: Plan,
    on_progress: Progress | None = None,
    *,
    scenarios: Catalogue | None = None,
    expand: Expand | None = None,
    jobs: int = 1,
) -> Planned:
    """Records every fault-free cell of the plan (`jobs` at once) and enumerates the cells they
    lead to: the scenarios `expand` derives from a fault-free run, the race cell of a
    multi-process scenario, then a SIGKILL at every `kill_stride`-th point the run counted.
    The one place cells are enumerated; nothing but the fault-free runs is recorded here."""
    catalogue = dict(SCENARIOS if scenarios is None else scenarios)
    folder = out / "cells" / folder_name(backend)
    expected = [_clean_cells(plan, catalogue)]  # grows as fault-free runs derive scenarios
    progress = _Counter(expected, on_progress)
    planned = Planned([], {}, {}, catalogue)
    wave = [
        CellKey(s, "none", d, api)
        for api in plan.apis
        for d in plan.durabilities
        for s in plan.scenarios
        if _runs_in(plan, catalogue[s], d, api)
    ]
    while wave:
        tasks = [_Task(folder, k, backend, factory, plan.in_process) for k in wave]
        sides = _record_all(tasks, catalogue, jobs, lambda t: progress(f"{backend} {t.key.slug}"))
        wave = []
        for key, clean in zip([t.key for t in tasks], sides, strict=True):
            planned.clean[key] = clean
            planned.keys.append(key)
            scenario = catalogue[key.scenario]
            if expand is not None and not clean.run.failure:
                more = [
                    s
                    for s in expand(scenario, clean.run)
                    if _runs_in(plan, s, key.durability, key.api)
                ]
                catalogue.update((s.name, s) for s in more)
                wave += [CellKey(s.name, "none", key.durability, key.api) for s in more]
                expected[0] += len(more)
            if plan.faulted is not None and key.durability not in plan.faulted:
                continue
            if plan.races and not plan.in_process and _several(scenario):
                planned.keys.append(CellKey(key.scenario, RACE, key.durability, key.api))
            if plan.in_process or not _killed(plan, key.scenario, scenario):
                continue
            points = killpoints.plan(
                clean.run.points,
                clean.run.lines,
                clean.run.durations,
                stride=plan.kill_stride,
                seed=plan.seed,
                inside=plan.kill_inside,
            )
            if plan.per_kind:
                points = killpoints.by_kind(points, plan.per_kind, list(clean.run.points))
            for point in points:
                kill = CellKey(key.scenario, point.fault, key.durability, key.api)
                planned.keys.append(kill)
                planned.points[kill] = point
    planned.keys.sort()
    return planned


def _killed(plan: Plan, name: str, scenario: Scenario) -> bool:
    """Whether a scenario's cells include kills: a built-in one in KILLED (or the plan's own
    list), an app's that asks to be (`Scenario.killed`)."""
    return name in (KILLED if plan.killed is None else plan.killed) or (
        plan.killed is None and scenario.killed
    )


def run_matrix(
    out: Path,
    backend: str,
    factory: Factory,
    plan: Plan,
    reference: Factory | None,
    on_progress: Progress | None = None,
    *,
    on_line: Callable[[str], None] | None = None,
    scenarios: Catalogue | None = None,
    expand: Expand | None = None,
    planned: Planned | None = None,
    chosen: Sequence[CellKey] | None = None,
    jobs: int = 1,
) -> Matrix:
    """Records every cell under out/, judges all traces in one TLC run, then attributes each
    break to the saver or to LangGraph, property by property (attribution.py). `on_line`
    gets TLC's printed lines while it judges (for progress); `scenarios`: the apps the plan
    names (default: the built-in ones); `expand`: more scenarios derived from each fault-free
    run (they are added to the catalogue and run after it).

    `planned`: the plan already made (`plan_matrix`, default: made here); `chosen`: only
    these of its cells are recorded, judged and reported (default: all). A fault-free run
    not chosen was recorded to plan, but is left out of the matrix. `jobs`: cells recorded at
    once, each in a process of its own (race cells always alone: their processes race on
    purpose, and other cells beside them would move the race)."""
    if planned is None:
        planned = plan_matrix(
            out, backend, factory, plan, on_progress, scenarios=scenarios, expand=expand, jobs=jobs
        )
    catalogue = planned.catalogue
    keys = list(planned.keys if chosen is None else chosen)
    expected = [len(keys) - sum(k in planned.clean for k in keys)]
    expected[0] += len(keys) if reference is not None else 0
    progress = _Counter(expected, on_progress)
    matrix = Matrix(backend, concurrent=frozenset(s for s in catalogue if _several(catalogue[s])))
    cells: dict[CellKey, Cell] = {}
    tested = folder_name(backend)
    folder = out / "cells" / tested
    tasks = [
        _Task(folder, k, backend, factory, False, planned.points.get(k))
        for k in keys
        if k not in planned.clean
    ]
    sides = _record_all(tasks, catalogue, jobs, lambda t: progress(f"{backend} {t.key.slug}"))
    recorded = dict(zip([t.key for t in tasks], sides, strict=True))
    for key in keys:
        side = planned.clean.get(key) or recorded[key]
        _keep(side.run, out / "traces" / tested, key)
        cells[key] = Cell(key, side, is_reference=is_reference_saver(backend))
    if reference is not None:
        folder = out / "cells" / f"reference-{REFERENCE}"
        # exactly the cells the saver under test ran, killed at the same moment (the n-th
        # time the same kind of point was reached)
        tasks = [
            _Task(folder, k, REFERENCE, _for_api(reference, k), False, _reference_point(cells[k]))
            for k in sorted(cells)
        ]
        sides = _record_all(tasks, catalogue, jobs, lambda t: progress(f"reference {t.key.slug}"))
        for task, side in zip(tasks, sides, strict=True):
            _keep(side.run, out / "traces" / f"reference-{REFERENCE}", task.key)
            cells[task.key].reference = side
    matrix.cells = [cells[k] for k in sorted(cells)]
    progress("judging every trace in one TLC run")
    judgments = Judgments(default_spec_paths(), on_line)
    _judge(matrix.cells, judgments)
    _attribute(matrix, judgments)
    if reference is not None:
        _confirm(out, matrix, (backend, factory), reference, progress, judgments, catalogue, jobs)
    return matrix


REFERENCE_RETRIES = 3


def _judge(cells: list[Cell], judgments: Judgments) -> None:
    """The plain verdict of every side (nothing tolerated), in one TLC run."""
    sides = [s for c in cells for s in (c.tested, *c.retested, *c.references) if not s.run.failure]
    judgments.ensure((s.run.trace, NO_TOLERANCE) for s in sides)
    for side in sides:
        side.verdict = judgments.get(side.run.trace)


def _attribute(matrix: Matrix, judgments: Judgments) -> None:
    """Sets each cell's saver checks and runtime properties from the reference's runs of the
    same cell: the same scenario, durability and fault, killed at the same logical instant
    (`same_instant`). Never from other cells: which cells `--stride`, `--kill-stride` or
    `--cells` chose must not decide whose fault a break is (a CO was once the saver's or
    LangGraph's depending on whether a cell where the reference broke it was chosen too).
    `reference_elsewhere` still names another chosen cell where the reference breaks a
    property the tested run breaks: a hint for a person, no part of the attribution."""
    traces: dict[tuple[str, ...], list[Path]] = {}
    where: dict[tuple[str, str, str, str], str] = {}
    for cell in matrix.cells:
        for side in cell.references:
            if side.verdict is not None:
                traces.setdefault(_group(cell), []).append(side.run.trace)
    if not traces and not any(c.reference for c in matrix.cells):
        return
    broken = reference_breaks(traces, judgments)
    store = find_contract(CONTRACT, judgments.spec_paths).store_properties
    for cell in matrix.cells:
        for side in cell.references:
            for prop in breaks(side.verdict):
                where.setdefault(
                    (cell.key.scenario, cell.key.durability, cell.key.api, prop), cell.key.fault
                )
    for cell in matrix.cells:
        if cell.reference is None:
            continue
        group = (cell.key.scenario, cell.key.durability, cell.key.api)
        known = broken.get(_group(cell), frozenset())
        checks: list[str] = []
        tested = cell.tested
        valid = [r for r in cell.references if r.status in ("conforms", "violates")]
        if tested.status == "invalid" and valid:
            checks.append(VALID)
        if tested.status == "failed" and cell.reference.status != "failed":
            checks.append(RUNS)
        elif _unreadable(tested) and not any(_unreadable(r) for r in cell.references):
            checks.append(RUNS)  # the fresh process could not read the tested thread back
        shown: Verdict | None = None  # the verdict that reports the saver's first break
        if tested.verdict is not None and tested.verdict.status is Status.VIOLATES:
            found, shown = first_saver_break(tested.run.trace, known, judgments, store=store)
            checks += sorted(found)
        undecided: list[str] = []
        if cell.key.durability == "exit" and cell.key.scenario in matrix.concurrent:
            # the recorder's blind spot (docs/langgraph.md, "Limits"): in exit durability
            # LangGraph reports a run's final checkpoint only once the saver holds it, so
            # another process can load it before the trace shows it made -- a break of a
            # store property there is not measured, whoever's it is
            undecided += [c for c in checks if c in store]
            checks = [c for c in checks if c not in store]
        # how a thread ends, and what it breaks, is measured only by reference runs killed
        # at the same logical instant (`_at_same_instant`)
        alike = [r for r in cell.references if _at_same_instant(cell, r)]
        if tested.status in ("conforms", "violates") and all(
            r.status == "conforms" for r in cell.references
        ):
            if alike:
                checks += end_checks(tested.end, [r.end for r in alike])
            else:
                undecided += end_checks(tested.end, [r.end for r in cell.references])
        if (same_instant(cell) and alike) or _before_the_kill(cell, shown):
            cell.checks, cell.inconclusive = tuple(checks), tuple(undecided)
        else:  # no reference run is this instant: only what a kill anywhere must not do
            # (VALID, RUNS) is still the saver's, and, where the kill tore a write call
            # (`_torn`), what the store answered from that state
            kept = (VALID, RUNS, *store) if _torn(cell) else (VALID, RUNS)
            cell.checks = tuple(c for c in checks if c in kept)
            cell.inconclusive = tuple(c for c in (*checks, *undecided) if c not in kept)
        if cell.retested:  # a break the saver under test does not repeat is no finding
            again = [
                saver_breaks(r.run.trace, known, judgments, store=store) for r in cell.retested
            ]
            cell.unrepeated = tuple(
                c for c in _doubtful(cell.checks, store) if any(c not in a for a in again)
            )
            cell.checks = tuple(c for c in cell.checks if c not in cell.unrepeated)
        # the rest of what the trace breaks first: the reference's too, or what the runtime
        # did with every load answered as the contract requires (attribution.py)
        cell.runtime = tuple(sorted(tolerable(breaks(tested.verdict)) - set(cell.checks)))
        cell.reference_elsewhere = next(
            (
                fault
                for prop in (*cell.runtime, *cell.checks)
                if (fault := where.get((*group, prop))) and fault != cell.key.fault
            ),
            None,
        )


def _at_same_instant(cell: Cell, reference: Side) -> bool:
    """Whether a reference run of a kill cell died at the logical instant the tested run
    died at: its kill landed where it was asked (a kill passed while the recorder held
    events lands at a later point), the two traces acknowledged the same saver writes
    before the kill (`attribution.acknowledged`), and the write calls another thread had
    inside the saver at the kill (LangGraph's background writer) took effect alike on both
    (`CellRun.inflight`, read back like a cut call: `effect.py`). Two runs that were not
    killed (no kill asked, or the point never reached on either) are one instant."""
    tested, run = cell.tested.run, reference.run
    if tested.killed_at is None and run.killed_at is None:
        return True  # neither was killed: both ran the script through
    asked, landed = run.asked, run.kill_point
    if tested.killed_at is None or asked is None or landed is None:
        return False
    if tuple(landed) != (asked.label, asked.occurrence):
        return False
    # the writes the store holds: acknowledged, or in flight in another thread and taken
    # effect (LangGraph's background writer runs beside the node the kill hit)
    mine = acknowledged(tested.trace, tested.inflight)
    return mine is not None and mine == acknowledged(run.trace, run.inflight)


def _before_the_kill(cell: Cell, shown: Verdict | None) -> bool:
    """Whether the saver's first break (`shown`: the verdict reporting it) came before the
    tested run's kill (or in a run its kill never reached): a break in a fault-free stretch
    is no question of the kill's instant, and the saver's own wrong answers are often what
    made the runs differ before the kill (a saver that returns the wrong checkpoint changes
    what LangGraph writes next). Such a break stays the saver's; only what follows the kill
    needs a reference run killed at the same instant."""
    if shown is None or shown.line is None:
        return False
    crash = _crash_line(cell.tested.run.trace)
    return crash is None or shown.line < crash


def _crash_line(trace: Path) -> int | None:
    """The line of the trace's first `crash` event (1 is the header), None without one."""
    try:
        lines = trace.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for number, line in enumerate(lines[1:], start=2):
        if '"crash"' not in line:
            continue
        try:
            if json.loads(line).get("ev") == "crash":
                return number
        except (ValueError, AttributeError):
            continue
    return None


def _group(cell: Cell) -> tuple[str, ...]:
    """The runs a tested run is compared with: the reference's runs of its own cell."""
    return (cell.key.scenario, cell.key.fault, cell.key.durability, cell.key.api)


def same_instant(cell: Cell) -> bool:
    """Whether the cell's tested run and its reference runs were killed at the same logical
    instant, so that how they break and how they end measure each other.

    A kill at a node's edge or at a saver call's entry or exit is the same instant on both
    savers by its name. A kill *inside* a write call is the tested saver's own instant; the
    reference was killed at the edge of that call that leaves the store as the tested
    saver's was found right after the kill (`effect.py`, `killpoints.for_reference`): at
    the entry when it held nothing of the call, at the exit when it held all of it. Where
    it held part of the call, or could not be read, no reference run is the same instant."""
    effect = cell.tested.run.effect
    return effect is None or effect in (killpoints.NOTHING, killpoints.ALL)


def _torn(cell: Cell) -> bool:
    """Whether the kill left the store holding part of the call it cut (`effect.py`). No
    reference run can be that instant -- an atomic saver holds all of a call or none of it
    -- and none is needed for what the store then answers: a load's content is judged
    against what was made (the digests of checkpoints and of task results), so a store
    property broken there is the saver's. How the thread then ends, and what the runtime
    does with those answers, stays inconclusive."""
    return cell.tested.run.effect == killpoints.PART


def _unreadable(side: Side) -> bool:
    return side.end is not None and side.end.problem is not None


def _doubtful(checks: Sequence[str], store: frozenset[str]) -> tuple[str, ...]:
    """The saver checks a race could make: breaks of the contract's properties other than
    its store properties (a store breaks those by how it answers, whatever the timing), and
    `unmatched`. Runner checks compare runs killed at the same instant (`_at_same_instant`)."""
    return tuple(c for c in checks if c not in RUNNER_CHECKS and c not in store)


def _confirm(
    out: Path,
    matrix: Matrix,
    tested: tuple[str, Factory],
    reference: Factory,
    progress: _Counter,
    judgments: Judgments,
    catalogue: Catalogue,
    jobs: int = 1,
) -> None:
    """Runs a suspect cell again: first on the saver under test, then on the reference.

    Some LangGraph behaviour is a race the saver only times: a `fanout` node's effect fires,
    its sibling raises, and whether the node's write reached any saver before the invocation
    ended decides whether it runs (and fires) again -- LangGraph's SqliteSaver lost it in 4
    of 2,311 cells at stride 1 while winning it in every reference run of those cells. A
    break of a property that is not a store property (`_doubtful`) stays the saver's only if
    the saver under test breaks it again when its cell runs again (`Cell.unrepeated`): a
    saver's own fault repeats, a race lost once in hundreds does not.

    Then the reference again, where the saver under test still fails: a background save can
    win a race against the SIGKILL (a faster or slower store moves the race), and one passing
    reference run does not prove the reference cannot fail the cell. Each retry's breaks
    count for the cell, so a check stays the saver's only if no reference run shows it."""
    store = find_contract(CONTRACT, judgments.spec_paths).store_properties
    backend, factory = tested
    doubted = [c for c in matrix.findings("saver") if _doubtful(c.checks, store)]
    if doubted:
        name = folder_name(backend)
        tasks = [
            _Task(
                out / "cells" / f"{name}-again", c.key, backend, factory, False, c.tested.run.asked
            )
            for c in doubted
        ]
        sides = _rerun(tasks, out / "traces" / f"{name}-again", catalogue, jobs, progress)
        for cell, side in zip(doubted, sides, strict=True):
            cell.retested.append(side)
        _judge(doubted, judgments)
        _attribute(matrix, judgments)
    suspects = [c for c in matrix.findings("saver") if set(c.checks) - {VALID, RUNS}]
    for attempt in range(1, REFERENCE_RETRIES + 1):
        if not suspects:
            return
        folder = out / "cells" / f"reference-{REFERENCE}-again-{attempt}"
        # the last retries on the same saver made slower, where LangGraph loses the races a
        # fast store wins (only for the bundled reference: a --saver reference stays as it is)
        again = sqlite_slowed if attempt > 1 and reference is sqlite else reference
        tasks = [
            _Task(folder, c.key, REFERENCE, _for_api(again, c.key), False, _reference_point(c))
            for c in suspects
        ]
        traces = out / "traces" / f"reference-{REFERENCE}-again-{attempt}"
        for cell, side in zip(
            suspects, _rerun(tasks, traces, catalogue, jobs, progress), strict=True
        ):
            cell.again.append(side)
        _judge(suspects, judgments)
        _attribute(matrix, judgments)
        suspects = [c for c in suspects if set(c.checks) - {VALID, RUNS}]


def _rerun(
    tasks: Sequence[_Task], traces: Path, catalogue: Catalogue, jobs: int, progress: _Counter
) -> list[Side]:
    """Records suspect cells again (`_confirm`), their traces kept under `traces`."""
    sides = _record_all(
        tasks, catalogue, jobs, lambda t: progress(f"{t.backend} again {t.key.slug}")
    )
    for task, side in zip(tasks, sides, strict=True):
        _keep(side.run, traces, task.key)
    return sides


@dataclass(frozen=True)
class Driven:
    """How a saver's cells are driven: `apis` (`Plan.apis`) and those of them through which it
    deletes a thread (`Plan.deleting`)."""

    apis: tuple[str, ...]
    deleting: tuple[str, ...]

    def left_out(self) -> str | None:
        """What the plan leaves out because the saver lacks a method, in words (None:
        nothing)."""
        if set(self.apis) <= set(self.deleting):
            return None
        without = [a or "sync" for a in self.apis if a not in self.deleting]
        return (
            "a thread deleted (delete scenarios) through the "
            + " and ".join(without)
            + " API: the saver implements no "
            + " or ".join("adelete_thread" if a == "async" else "delete_thread" for a in without)
            + " (LangGraph's base class raises NotImplementedError)"
        )


def driven(choice: str, factory: Factory, probe: Path, async_nodes: Sequence[str] = ()) -> Driven:
    """`apis_for` and the APIs of them through which the saver deletes a thread, from what
    it implements (asked of a fresh process with its store in `probe`, removed afterwards)."""
    probe.mkdir(parents=True, exist_ok=True)
    try:
        surface = saver_surface(probe, factory)
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    apis = apis_for(choice, surface.apis, async_nodes)
    deleting = tuple(a for a in apis if (a or "sync") in surface.deletes)
    return Driven(apis, deleting)


def apis_for(choice: str, has: frozenset[str], async_nodes: Sequence[str] = ()) -> tuple[str, ...]:
    """`Plan.apis` for a choice of "both", "sync" or "async", from the APIs the saver
    implements (`has`): "" its sync API, "async" its async API (the only one of a saver
    without the sync API). An app with `async_nodes` (async def only) runs through the async
    API alone, on both sides, since LangGraph's `invoke` cannot run them. BackendError when
    the saver lacks the API chosen."""
    if choice not in ("both", *APIS):
        raise BackendError(f"api takes both, sync or async, not {choice!r}")
    if async_nodes:
        return (async_api(choice, async_nodes, has),)
    if choice != "both" and choice not in has:
        raise BackendError(f"--api {choice}: the saver implements only the {', '.join(has)} API")
    if "sync" not in has:
        # driven through ainvoke whatever is chosen: named so, and judged beside the async
        # reference, as a saver with both APIs is in its async cells (like with like)
        return ("async",)
    if choice == "sync" or "async" not in has:
        return ("",)
    return ("async",) if choice == "async" else ("", "async")


def async_api(choice: str, async_nodes: Sequence[str], has: Iterable[str] = APIS) -> str:
    """The API an app whose `async_nodes` are async def only is driven through: the async
    one; BackendError naming the nodes when the choice or the saver rules it out."""
    nodes = ", ".join(async_nodes)
    if choice == "sync":
        raise BackendError(
            f"--api sync: the app's node(s) {nodes} are async def only, and LangGraph runs "
            "those only through its async API (ainvoke); use --api async or both"
        )
    if "async" not in has:
        raise BackendError(
            f"the app's node(s) {nodes} are async def only, which LangGraph runs only "
            "through ainvoke, and this saver implements only the sync API (for SQLite: "
            "--backend sqlite-async)"
        )
    return "async"


def _for_api(reference: Factory, key: CellKey) -> Factory:
    """The reference saver of a cell: the bundled one's async twin (LangGraph's own
    AsyncSqliteSaver) for a cell driven through the async API, so both sides run the same
    code path of LangGraph (a --saver reference runs as it is)."""
    if key.api == "async" and reference is sqlite:
        return sqlite_async
    if key.api == "async" and reference is sqlite_slowed:
        return sqlite_async_slowed
    return reference


def is_reference_saver(backend: str) -> bool:
    """Whether the backend is the very saver a reference run of its cells would use (the
    sync cells' SqliteSaver, or AsyncSqliteSaver, whose cells are all async): no reference
    is run beside it, and what it breaks is LangGraph's."""
    return backend in (REFERENCE, ASYNC_REFERENCE)


def _reference_point(cell: Cell) -> KillPoint | None:
    """Where the reference is killed: where the saver under test died (a point inside its
    call mapped to that call's end), or the point it was asked for when it never got there."""
    run = cell.tested.run
    return run.reference_point or run.asked


def _runs_in(plan: Plan, scenario: Scenario, durability: str, api: str) -> bool:
    """A scenario runs in every mode, but a shape recorded in one mode (exit) only in it, a
    multi-process scenario not on a saver that lives in one process, and one that deletes a
    thread only through an API the saver deletes through."""
    fixed = scenario.durability
    if fixed is not None and fixed != durability:
        return False
    if plan.deleting is not None and api not in plan.deleting and _deletes(scenario):
        return False
    return not (plan.in_process and _several(scenario))


def _deletes(scenario: Scenario) -> bool:
    """Whether the scenario's script deletes a thread (`delete_thread`)."""
    return any(step[0] == "delete" for step in scenario.script)


def _several(scenario: Scenario) -> bool:
    """Whether several processes of the scenario run at once (they can race)."""
    return scenario.name in MULTI_PROCESS or any(s[0] == "concurrent" for s in scenario.script)


def _clean_cells(plan: Plan, catalogue: Catalogue) -> int:
    return sum(
        _runs_in(plan, catalogue[s], d, api)
        for api in plan.apis
        for s in plan.scenarios
        for d in plan.durabilities
    )


def folder_name(backend: str) -> str:
    """A backend name or MODULE:FACTORY as a folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in backend)


def _keep(run: CellRun, folder: Path, key: CellKey) -> CellRun:
    """Copies the cell's trace next to the others of its saver (the cell folder also holds
    the store and the workers' log)."""
    trace = folder / f"{key.slug}.jsonl"
    trace.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(run.trace, trace)
    run.trace = trace
    return run


class _Counter:
    def __init__(self, expected: list[int], on_progress: Progress | None) -> None:
        self.expected, self.on_progress, self.done = expected, on_progress, 0

    def __call__(self, what: str) -> None:
        self.done += 1
        if self.on_progress:
            self.on_progress(min(self.done, self.expected[0]), self.expected[0], what)


@dataclass(frozen=True)
class _Task:
    """One cell to record on one saver: `_one`'s arguments."""

    folder: Path
    key: CellKey
    backend: str
    factory: Factory
    in_process: bool
    point: KillPoint | None = None


def _record_all(
    tasks: Sequence[_Task], catalogue: Catalogue, jobs: int, done: Callable[[_Task], None]
) -> list[Side]:
    """Records the tasks, `jobs` at once, and returns their sides in task order: each cell in
    a process of its own (the driver keeps a cell's store in $RESUME_CHECK_STORE and forks
    its workers, both process-wide), a race cell alone (`suite.pool`)."""
    try:
        return run_pool(
            tasks,
            lambda task: _one(
                task.folder,
                task.key,
                task.backend,
                task.factory,
                task.in_process,
                task.point,
                catalogue,
            ),
            jobs=jobs,
            result_path=lambda task: task.folder / f"{task.key.slug}.side.pickle",
            name=lambda task: f"cell {task.key.slug}",
            alone=lambda task: task.key.fault == RACE,
            done=lambda task, _: done(task),
        )
    except PoolTaskFailed as exc:
        raise RecordingFailed(str(exc)) from None


def _one(
    folder: Path,
    key: CellKey,
    backend: str,
    factory: Factory,
    in_process: bool,
    kill_point: tuple[str, int] | KillPoint | None = None,
    catalogue: Catalogue | None = None,
) -> Side:
    """Records one cell on one saver, then has a fresh process read back how it ended."""
    cell_dir = folder / key.slug
    shutil.rmtree(cell_dir, ignore_errors=True)
    scenario = (SCENARIOS if catalogue is None else catalogue)[key.scenario]
    started, clock = datetime.now(UTC), time.monotonic()
    run = run_cell(
        cell_dir,
        scenario,
        key.durability,
        factory,
        backend,
        fault=key.fault,
        in_process=in_process,
        kill_point=kill_point or key.kill_point,
        serialize=key.fault != RACE,
        api=key.api,
    )
    end = None
    if not in_process and not run.failure:
        end = read_final(cell_dir / "store", scenario.build, factory)
    return Side(run, end=end, started=started, seconds=round(time.monotonic() - clock, 3))


def describe(side: Side) -> str:
    """A verdict in a few words: 'conforms', 'conforms (at-least-once)', 'CV at event 12'."""
    if side.run.failure:
        return f"failed: {side.run.failure}"
    verdict = side.verdict
    if verdict is None:
        return "unjudged"
    if verdict.status is Status.CONFORMS:
        met = verdict.summary.get("effects")
        return "conforms" + (f" ({met})" if met and met != "exactly-once" else "")
    if verdict.status is Status.VIOLATES:
        what = ", ".join(verdict.properties) or "no action matches"
        return f"{what} at event {verdict.event_index}"
    return f"{verdict.status.value}: {verdict.reason}"


def describe_checks(checks: tuple[str, ...]) -> str:
    """A cell's saver checks for a person: `CV`, `STATE (...)`, `no action matches`."""
    words = []
    for check in checks:
        if check == UNMATCHED:
            words.append("no action matches")
        elif check in RUNNER_CHECKS:
            words.append(f"{check} ({RUNNER_CHECKS[check]})")
        else:
            words.append(check)
    return "; ".join(words)


KINDS = ("conforms", "saver", "saver-error", "runtime", "inconclusive", "unattributed", "failed")


def side_json(s: Side) -> dict[str, Any]:
    v = s.verdict
    return {
        "trace": str(s.run.trace),
        "status": s.status,
        "verdict": describe(s),
        "properties": list(v.properties) if v else [],
        "event_index": v.event_index if v else None,
        "killed_at": s.run.killed_at,
        "kill_point": list(s.run.kill_point) if s.run.kill_point else None,
        "kill_reached": s.run.kill_reached,
        "effect": s.run.effect,
        "inflight": [list(call) for call in s.run.inflight],
        "overlapping_calls": s.run.overlaps,
        "saver_calls": s.run.saver_calls,
        "invocations": s.run.invocations,
        "notes": s.run.notes,
        "end": s.end.to_json() if s.end else None,
        "started": s.started.isoformat(timespec="seconds") if s.started else None,
        "seconds": s.seconds,
    }


def saver_coverage(matrix: Matrix) -> tuple[Coverage, Coverage | None]:
    """Which saver calls the cells reached, on the saver under test and on the reference
    (its reruns included: each is a run of the reference saver); None without a reference."""
    tested = coverage(matrix.backend, [c.tested.run.saver_calls for c in matrix.cells])
    runs = [r.run.saver_calls for c in matrix.cells for r in c.references]
    return tested, coverage(REFERENCE, runs) if runs else None


def to_json(matrix: Matrix) -> dict[str, Any]:
    """The matrix as the summary's `details` (docs/report.schema.json, `$defs/langgraph`)."""
    counts = {kind: len(matrix.findings(kind)) for kind in KINDS}
    tested, reference = saver_coverage(matrix)
    return {
        "backend": matrix.backend,
        "reference": REFERENCE,
        "counts": {"cells": len(matrix.cells), **counts},
        "runner_checks": RUNNER_CHECKS,
        "coverage": {
            "tested": tested.to_json(),
            "reference": reference.to_json() if reference else None,
        },
        "cells": [
            {
                "scenario": c.key.scenario,
                "fault": c.key.fault,
                "durability": c.key.durability,
                "api": c.key.api or "default",
                "finding": c.finding,
                "checks": list(c.checks),
                "inconclusive": list(c.inconclusive),
                "runtime": list(c.runtime),
                "reference_elsewhere": c.reference_elsewhere,
                "tested": side_json(c.tested),
                "reference": side_json(c.reference) if c.reference else None,
                "again": [side_json(a) for a in c.again],
                "unrepeated": list(c.unrepeated),
                "retested": [side_json(r) for r in c.retested],
            }
            for c in matrix.cells
        ],
    }
