"""Typed reports: what a cell is, what each of its processes reported, how the cell went."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any
from xml.etree import ElementTree as ET

from resumecheck.verdict import Verdict


@dataclass(frozen=True)
class Cell:
    """One deterministic cell of a crash matrix: a scenario and the faults injected into it."""

    name: str
    scenario: str
    what: str  # one line for people: the fault, the resume
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class WorkerReport:
    """One child process of a cell, as the harness saw it end."""

    proc: str
    role: str  # "run", "resume", "answer", "fork", ...
    exit: str  # "returned", "killed", "error"
    returncode: int | None = None
    point: str | None = None  # the kill point it was stopped at
    result: Any = None  # what the invocation returned (JSON), when it returned
    error: str | None = None
    seconds: float = 0.0
    # what the child told with its kill point beyond its name (`crash.kill_message`):
    # LangGraph's saver call cut, writes in flight, saver calls so far
    told: dict[str, Any] | None = None
    # CPU seconds the process and the children it waited for used (wait4; a suite's cost
    # figure: the sandbox agent's, criu and tool commands included); None where the harness
    # does not reap it (a fork server's child)
    cpu_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for unset in ("told", "cpu_seconds"):
            if data[unset] is None:
                del data[unset]
        return data


@dataclass
class CellReport:
    """A recorded cell: its trace and its workers."""

    cell: Cell
    trace: str  # path relative to the suite's traces folder
    workers: list[WorkerReport] = field(default_factory=list)
    problem: str | None = None  # the cell could not be recorded (environment)
    notes: dict[str, Any] = field(default_factory=dict)
    # what the suite keeps of the run for its figures beyond the notes (recovery's RunResult);
    # not in summary.json, and pickled back with the report from the cell's process
    kept: object = None

    def to_json(self) -> dict[str, Any]:
        return {
            "cell": self.cell.to_json(),
            "trace": self.trace,
            "workers": [w.to_json() for w in self.workers],
            "problem": self.problem,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class Figures:
    """What a suite measured over its judged cells beyond the verdicts (costs, per-policy
    rates): `data` is summary.json's `figures` field, `text` the lines under the table."""

    data: dict[str, Any] = field(default_factory=dict)
    text: str = ""


@dataclass(frozen=True)
class SuiteResult:
    """A suite's run, judged: what `suite.command.finish` renders, the same way for every
    suite. Most suites get theirs from `suite.command.judge_cells` (the cell table, the
    verdicts' JUnit); LangGraph's matrix makes its own from its attribution (which saver's
    fault a break is), in the same shape."""

    reports: list[CellReport]  # a row each in summary.json, in this order
    verdicts: dict[str, Verdict]  # a report's trace -> the verdict on it
    code: int  # the exit code
    text: str  # the text report
    junit: ET.Element  # the JUnit report, made with `resumecheck.junit`
    others: list[Verdict] = field(default_factory=list)  # more of the run's verdicts (a
    # reference run's), in the envelope after the cells'
    figures: Figures | None = None  # summary.json's `figures`, where the suite measures more
    details: dict[str, Any] | None = None  # summary.json's `details`: LangGraph's matrix
    # a verdict's trace path -> whose finding it is, for the HTML page ("saver finding: CV",
    # "reference run", ...): the attribution the text and JSON carry
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def all_verdicts(self) -> list[Verdict]:
        """Every verdict of the run: the cells' in row order, then the others."""
        return [self.verdicts[r.trace] for r in self.reports if r.trace in self.verdicts] + list(
            self.others
        )
