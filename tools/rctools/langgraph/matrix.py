"""The conformance matrix: scenario x fault x durability, on the saver under test and on the
reference saver, judged in one batch, each failing cell attributed to the saver or to
LangGraph.

Whose fault is it: a cell that fails with the saver under test but passes with the reference
(LangGraph's SQLite saver) is a *saver finding*; a cell that fails with the reference too is a
*runtime finding* -- LangGraph itself, e.g. two processes resuming one parked interrupt.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

from rctools.langgraph import killpoints
from rctools.langgraph.driver import CellRun, run_cell
from rctools.langgraph.killpoints import KillPoint
from rctools.langgraph.scenarios import ALL as SCENARIOS
from rctools.langgraph.scenarios import Scenario
from rctools.langgraph_backends import Factory

REFERENCE = "sqlite"
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


RACE = "race"  # the fault of a cell whose processes' saver calls are not serialized


@dataclass(frozen=True, order=True)
class CellKey:
    scenario: str
    # "none"; "kill:LABEL#N", SIGKILL at the N-th time the cell reaches kill point LABEL
    # (killpoints.py); "race", concurrent processes whose saver calls are not serialized;
    # "kill@N" (older callers): at the N-th point the cell reaches
    fault: str
    durability: str

    @property
    def slug(self) -> str:
        # a file name without shell or URL specials: kill:put @0.250#3 -> kill-put-at0.250_3
        fault = self.fault.replace("@", "at").replace("#", "_")
        fault = "".join(c if c.isalnum() or c in "-_." else "-" for c in fault)
        return f"{self.scenario}.{fault}.{self.durability}"

    @property
    def kill_at(self) -> int | None:
        return int(self.fault.split("@", 1)[1]) if self.fault.startswith("kill@") else None

    @property
    def kill_point(self) -> KillPoint | None:
        return KillPoint.parse(self.fault)


@dataclass
class Side:
    """One saver's run of one cell."""

    run: CellRun
    verdict: Verdict | None = None

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
    # Another cell of this scenario where the reference breaks the same property, if any.
    reference_elsewhere: str | None = None

    @property
    def finding(self) -> str:
        """conforms | saver | saver-error | runtime | unattributed | failed: whose fault a
        failing cell is. `saver-error`: a process raised from the saver under test (e.g. a
        store left unreadable by a SIGKILL) where the reference ran the cell."""
        if self.tested.status == "failed" and self.reference is not None:
            return "saver-error" if self.reference.status != "failed" else "failed"
        if self.tested.status in ("failed", "invalid", "error", "unjudged"):
            return "failed"
        if self.tested.status == "conforms":
            return "conforms"
        if self.reference is None:
            return "runtime" if self.is_reference else "unattributed"
        # Failing on the reference too (killed at the same moment) is LangGraph's fault;
        # a race may show it as another property there, so only the status is compared.
        reference = self.reference.verdict
        if reference is not None and reference.status is Status.VIOLATES:
            return "runtime"
        return "runtime" if self.reference_elsewhere else "saver"


@dataclass
class Matrix:
    backend: str
    cells: list[Cell] = field(default_factory=list)

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


Progress = Callable[[int, int, str], None]
Catalogue = Mapping[str, Scenario]
# From a scenario's fault-free run, more scenarios to run in the same durability (an app's
# plan: one cell per interrupt it parked at, per checkpoint of its thread).
Expand = Callable[[Scenario, CellRun], list[Scenario]]


def run_matrix(
    out: Path,
    backend: str,
    factory: Factory,
    plan: Plan,
    reference: Factory | None,
    on_progress: Progress | None = None,
    *,
    scenarios: Catalogue | None = None,
    expand: Expand | None = None,
) -> Matrix:
    """Records every cell under out/, then judges all traces in one TLC run. `scenarios`:
    the apps the plan names (default: the built-in ones); `expand`: more scenarios derived
    from each fault-free run (they are added to the catalogue and run after it)."""
    matrix = Matrix(backend)
    cells: dict[CellKey, Cell] = {}
    catalogue = dict(SCENARIOS if scenarios is None else scenarios)
    expected = [_clean_cells(plan, catalogue)]  # grows as clean runs count kill points
    progress = _Counter(expected, on_progress)
    tested = folder_name(backend)
    recorded = _record(out / "cells" / tested, plan, backend, factory, expected, catalogue, expand)
    for key, run in recorded:
        side = Side(_keep(run, out / "traces" / tested, key))
        cells[key] = Cell(key, side, is_reference=backend == REFERENCE)
        progress(f"{backend} {key.slug}")
    if reference is not None:
        expected[0] += len(cells)
        folder = out / "cells" / f"reference-{REFERENCE}"
        for key in sorted(cells):  # exactly the cells the saver under test ran, killed at
            # the same moment (the n-th time the same kind of point was reached)
            run = _one(
                folder, key, REFERENCE, reference, False, _reference_point(cells[key]), catalogue
            )
            cells[key].reference = Side(_keep(run, out / "traces" / f"reference-{REFERENCE}", key))
            progress(f"reference {key.slug}")
    matrix.cells = [cells[k] for k in sorted(cells)]
    progress("judging every trace in one TLC run")
    _judge(matrix.cells)
    if reference is not None:
        _confirm(out, matrix, reference, progress, catalogue)
    return matrix


REFERENCE_RETRIES = 3


def _confirm(
    out: Path, matrix: Matrix, reference: Factory, progress: _Counter, catalogue: Catalogue
) -> None:
    """Runs the reference again where only the saver under test failed.

    Some LangGraph behaviour shows only when a background save wins a race against the
    SIGKILL; one passing reference run does not prove the reference cannot fail the cell.
    A cell stays a saver finding only if the reference passes it every time."""
    suspects = matrix.findings("saver")
    for attempt in range(1, REFERENCE_RETRIES + 1):
        if not suspects:
            return
        retries: list[Cell] = []
        folder = out / "cells" / f"reference-{REFERENCE}-again-{attempt}"
        for cell in suspects:
            run = _one(
                folder, cell.key, REFERENCE, reference, False, _reference_point(cell), catalogue
            )
            kept = _keep(run, out / "traces" / f"reference-{REFERENCE}-again-{attempt}", cell.key)
            retries.append(Cell(cell.key, Side(kept)))
            progress(f"reference again {cell.key.slug}")
        _judge(retries)
        for cell, again in zip(suspects, retries, strict=True):
            if again.tested.status == "violates":
                cell.reference = again.tested
        suspects = [cell for cell in suspects if cell.finding == "saver"]
    _same_property_elsewhere(matrix, suspects)


def _reference_point(cell: Cell) -> KillPoint | None:
    """Where the reference is killed: where the saver under test died (a point inside its
    call mapped to that call's end), or the point it was asked for when it never got there."""
    run = cell.tested.run
    return run.reference_point or run.asked


def _same_property_elsewhere(matrix: Matrix, suspects: list[Cell]) -> None:
    """A property the reference breaks in the same scenario and durability at another kill
    point is LangGraph's too: which point shows it depends on how fast the saver writes (a
    slower or faster store moves a background save across the kill). A saver finding is a
    property the reference never breaks in that scenario."""
    broken: dict[tuple[str, str, str], str] = {}
    for cell in matrix.cells:
        verdict = cell.reference.verdict if cell.reference else None
        if verdict is not None and verdict.status is Status.VIOLATES:
            for prop in verdict.properties:
                key = (cell.key.scenario, cell.key.durability, prop)
                broken.setdefault(key, cell.key.fault)
    for cell in suspects:
        verdict = cell.tested.verdict
        for prop in verdict.properties if verdict else []:
            where = broken.get((cell.key.scenario, cell.key.durability, prop))
            if where:
                cell.reference_elsewhere = where
                break


def _runs_in(plan: Plan, scenario: Scenario, durability: str) -> bool:
    """A scenario runs in every mode, but a shape recorded in one mode (exit) only in it,
    and a multi-process scenario not on a saver that lives in one process."""
    fixed = scenario.durability
    if fixed is not None and fixed != durability:
        return False
    return not (plan.in_process and _several(scenario))


def _several(scenario: Scenario) -> bool:
    """Whether several processes of the scenario run at once (they can race)."""
    return scenario.name in MULTI_PROCESS or any(s[0] == "concurrent" for s in scenario.script)


def _clean_cells(plan: Plan, catalogue: Catalogue) -> int:
    return sum(_runs_in(plan, catalogue[s], d) for s in plan.scenarios for d in plan.durabilities)


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


def _record(
    folder: Path,
    plan: Plan,
    backend: str,
    factory: Factory,
    expected: list[int],
    catalogue: dict[str, Scenario],
    expand: Expand | None,
) -> Iterator[tuple[CellKey, CellRun]]:
    in_process = plan.in_process
    for durability in plan.durabilities:
        queue = list(plan.scenarios)
        while queue:
            name = queue.pop(0)
            scenario = catalogue[name]
            if not _runs_in(plan, scenario, durability):
                continue
            key = CellKey(name, "none", durability)
            clean = _one(folder, key, backend, factory, in_process, None, catalogue)
            yield key, clean
            if expand is not None and not clean.failure:
                more = [s for s in expand(scenario, clean) if _runs_in(plan, s, durability)]
                catalogue.update((s.name, s) for s in more)
                queue[:0] = [s.name for s in more]
                expected[0] += len(more)
            if plan.races and not in_process and _several(scenario):
                expected[0] += 1
                key = CellKey(name, RACE, durability)
                yield key, _one(folder, key, backend, factory, False, None, catalogue)
            if in_process or not (name in KILLED or scenario.killed):
                continue
            points = killpoints.plan(
                clean.points,
                clean.lines,
                clean.durations,
                stride=plan.kill_stride,
                seed=plan.seed,
                inside=plan.kill_inside,
            )
            expected[0] += len(points)
            for point in points:
                key = CellKey(name, point.fault, durability)
                yield key, _one(folder, key, backend, factory, False, point, catalogue)


def _one(
    folder: Path,
    key: CellKey,
    backend: str,
    factory: Factory,
    in_process: bool,
    kill_point: tuple[str, int] | KillPoint | None = None,
    catalogue: Catalogue | None = None,
) -> CellRun:
    cell_dir = folder / key.slug
    shutil.rmtree(cell_dir, ignore_errors=True)
    return run_cell(
        cell_dir,
        (SCENARIOS if catalogue is None else catalogue)[key.scenario],
        key.durability,
        factory,
        backend,
        fault=key.fault,
        kill_at=None if kill_point else key.kill_at,
        in_process=in_process,
        kill_point=kill_point or key.kill_point,
        serialize=key.fault != RACE,
    )


def _judge(cells: list[Cell]) -> None:
    sides = [c.tested for c in cells] + [c.reference for c in cells if c.reference]
    recorded = [s for s in sides if not s.run.failure]
    verdicts = judge([s.run.trace for s in recorded], spec_paths=default_spec_paths())
    by_path = {v.path: v for v in verdicts}
    for side in recorded:
        side.verdict = by_path.get(side.run.trace)


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


def to_json(matrix: Matrix) -> dict[str, Any]:
    def side(s: Side | None) -> dict[str, Any] | None:
        if s is None:
            return None
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
            "overlapping_calls": s.run.overlaps,
            "invocations": s.run.invocations,
            "notes": s.run.notes,
        }

    kinds = ("conforms", "saver", "saver-error", "runtime", "unattributed", "failed")
    counts = {kind: len(matrix.findings(kind)) for kind in kinds}
    return {
        "backend": matrix.backend,
        "reference": REFERENCE,
        "counts": {"cells": len(matrix.cells), **counts},
        "cells": [
            {
                "scenario": c.key.scenario,
                "fault": c.key.fault,
                "durability": c.key.durability,
                "finding": c.finding,
                "reference_elsewhere": c.reference_elsewhere,
                "tested": side(c.tested),
                "reference": side(c.reference),
            }
            for c in matrix.cells
        ],
    }
