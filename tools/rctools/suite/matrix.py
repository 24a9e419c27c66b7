"""What `resume-check run SUITE` asks of a suite: the one typed protocol every suite's matrix
implements, so that a reader who knows one suite knows what the next one must say.

A matrix names its cells (`cells`), the runtime it records (`runtime`), the guarantees the
runtime declares (`DECLARED`) and the page citing them (`DOCS`), and records a selection of
cells (`record_cells`). Where a suite needs more, it overrides a default instead of the
framework probing it: `prepare` (an environment check before any cell, after --list: the
sandbox's root and criu, Restate's server and namespace) and `figures` (what a suite measured
over its judged cells beyond the verdicts).

Most suites record each cell on its own: they subclass `CellByCell` and write `record_cell`.
A suite whose cells are recorded together (the sandbox's shared checkpoint scheduler, the
racing revisions' one sender process) subclasses `SuiteMatrix` and writes `record_cells`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from resumecheck.verdict import Verdict

from rctools.suite.pool import run_pool
from rctools.suite.reports import Cell, CellReport, Figures

# each recorded cell with the checker's verdict on its trace (None: it was not recorded)
Judged = Sequence[tuple[CellReport, Verdict | None]]
# called as each cell's report is ready (the progress line)
Done = Callable[[CellReport], None]


class SuiteMatrix(ABC):
    """The cells of one `run SUITE` and how they are recorded."""

    @property
    @abstractmethod
    def DOCS(self) -> str:
        """The page (relative to the repository) citing what the runtime documents."""

    @property
    @abstractmethod
    def DECLARED(self) -> dict[str, Any]:
        """The guarantees the runtime declares (durability, effects_default, fencing), as the
        traces' headers carry them; empty where a policy, not a runtime, is under test."""

    @abstractmethod
    def cells(self) -> list[Cell]:
        """Every cell, in the order they are recorded and reported; each name once."""

    @abstractmethod
    def runtime(self) -> dict[str, str]:
        """The runtime recorded (`name`, `version`, more versions where there are more)."""

    @abstractmethod
    def record_cells(
        self, cells: Sequence[Cell], traces: Path, scratch: Path, *, jobs: int, done: Done
    ) -> list[CellReport]:
        """Records `cells` into `traces` (`jobs` at once where the suite can), a report per
        recorded trace in cell order; `scratch` is removed after; `done` as each is ready."""

    def prepare(self) -> None:  # noqa: B027 -- a hook: most suites need no check
        """Raises EnvironmentProblem when this machine cannot record the suite (before any
        cell, after --list); by default it can."""

    def figures(self, judged: Judged) -> Figures | None:
        """The suite's own figures over its judged cells; None: it has none (no `figures`
        field in summary.json)."""
        return None


class CellByCell(SuiteMatrix):
    """A matrix whose cells are recorded each on its own (`record_cell`), `jobs` at once on the
    cell pool (`suite.pool`, LangGraph's too): with `jobs` above 1 each cell in a process
    forked for it, so what a cell sets process-wide (its runtime's globals, a server it
    starts) is its own, and its report comes back pickled. A cell's report carries all the
    suite keeps of it (`CellReport.kept`), since the matrix in a cell's process is a copy."""

    @abstractmethod
    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        """Records one cell into traces/; a run the runtime under test could not finish is a
        report with its `problem` (exit 3), not an exception."""

    def record_cells(
        self, cells: Sequence[Cell], traces: Path, scratch: Path, *, jobs: int, done: Done
    ) -> list[CellReport]:
        return run_pool(
            cells,
            lambda cell: self.record_cell(cell, traces, scratch),
            jobs=jobs,
            result_path=lambda cell: scratch / "pool" / f"{cell.name}.pickle",
            name=lambda cell: f"cell {cell.name}",
            done=lambda _, report: done(report),
        )
