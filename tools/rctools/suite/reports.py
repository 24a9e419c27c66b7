"""Typed reports: what a cell is, what each of its processes reported, how the cell went."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CellReport:
    """A recorded cell: its trace and its workers."""

    cell: Cell
    trace: str  # path relative to the suite's traces folder
    workers: list[WorkerReport] = field(default_factory=list)
    problem: str | None = None  # the cell could not be recorded (environment)
    notes: dict[str, Any] = field(default_factory=dict)

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


@dataclass
class SuiteVerdicts:
    """What a suite that judges its own traces hands to `finish` in place of the traces to
    judge. LangGraph's does: it judges with tolerances and reruns each cell on a reference
    saver to tell whose fault a break is, so the verdicts, the exit code and the reports come
    from that attribution, and `details` is the summary's field for what only it measures."""

    verdicts: dict[str, Verdict]  # a CellReport's trace -> the verdict of that trace
    others: list[Verdict]  # the run's other verdicts (the envelope's traces), e.g. a reference's
    code: int  # the suite's exit code
    details: dict[str, Any]  # summary.json's `details`
    text: str  # the text report
    junit: str  # the JUnit report
    # a verdict's trace path -> whose finding it is, for the HTML page ("saver finding: CV",
    # "runtime finding", "reference run", ...): the attribution the text and JSON carry
    labels: dict[str, str] = field(default_factory=dict)
