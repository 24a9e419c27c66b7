"""The cells of `run recovery --app`: every chosen policy at every failure point of the app.

A fault-free run of the user's graph first (appengine.pilot) says which node executions it
makes -- the trace's instances -- and where a failure can be injected: before each call of a
declared tool. Each (policy, failure point) is then a cell, recorded on its own thread and
SQLite database, and all are judged in one TLC run; the figures are the audit's counts per
policy (rctools.recovery.audit), over the app's failure points instead of generated
workflows.
"""

from __future__ import annotations

import importlib.metadata
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from rctools.langgraph.app import AppError
from rctools.recovery.app import RecoveryApp
from rctools.recovery.appengine import AppRun, FailurePoint, pilot
from rctools.recovery.appkill import run_killed
from rctools.recovery.audit import audit_figures, audit_table
from rctools.recovery.engine import RunResult, Stuck
from rctools.recovery.matrix import judged_runs, record_cell
from rctools.suite.matrix import CellByCell
from rctools.suite.matrix import Judged as JudgedCells
from rctools.suite.reports import Cell, CellReport, Figures


class AppMatrix(CellByCell):
    """Every policy at every failure point of one app. The fault-free run is made here, before
    any cell: a graph it shows unsupported (parked at an interrupt, calling no declared tool,
    raising) is refused with an AppError."""

    DOCS = "docs/recovery.md"
    DECLARED: ClassVar[dict[str, Any]] = {}

    def __init__(self, app: RecoveryApp, policies: Sequence[str], *, kill: bool = False) -> None:
        self.app = app
        self.policies = list(policies)
        self.kill = kill  # the failure: the tool raising, or SIGKILL of the graph's process
        with tempfile.TemporaryDirectory(prefix="recovery-app-") as scratch:
            try:
                self.instances, points = pilot(app, Path(scratch))
            except Stuck as exc:
                raise AppError(f"--app: the fault-free run cannot be audited: {exc}") from None
            except Exception as exc:  # the user's graph: anything can go wrong in it
                raise AppError(
                    f"--app: the fault-free run raised {type(exc).__name__}: {exc}"
                ) from None
        if not points:
            raise AppError(
                "--app: the fault-free run called no declared tool, so there is no boundary to "
                "fail at (name in --tools the functions the nodes call)"
            )
        self.points = {p.name: p for p in points}

    def cells(self) -> list[Cell]:
        how = "is killed" if self.kill else "fails"
        return [
            Cell(f"{p}/{point}", point, f"{p}: {self.app.spec} {how} before {point}", {"policy": p})
            for point in self.points
            for p in self.policies
        ]

    def runtime(self) -> dict[str, str]:
        return {"name": "langgraph", "version": importlib.metadata.version("langgraph")}

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        point: FailurePoint = self.points[cell.scenario]
        policy = cell.params["policy"]
        return record_cell(
            cell,
            traces,
            scratch,
            lambda trace, db: self._play(policy, point, trace, db),
        )

    def _play(self, policy: str, point: FailurePoint, trace: Path, db: Path) -> RunResult:
        if self.kill:
            return run_killed(self.app, policy, point, trace, db, self.instances)
        return AppRun(self.app, policy, point, trace, db, self.instances).run()

    def figures(self, judged: JudgedCells) -> Figures:
        """The audit's counts per policy over the app's failure points."""
        pairs = judged_runs(judged)
        points = len(self.points)
        table = audit_table(pairs, self.policies, points, 0).splitlines()
        table[0] = (
            f"app {self.app.spec}: {len(self.instances)} instance(s), a failure before each of "
            f"{points} declared-tool call(s) (by tool: {table[0].partition('domains ')[2]})"
        )
        figures = audit_figures(pairs, self.policies, points, 0)
        figures["app"] = self.app.spec
        figures["instances"] = self.instances
        figures["failure"] = "kill" if self.kill else "raise"
        return Figures({"audit": figures}, "\n".join(table))
