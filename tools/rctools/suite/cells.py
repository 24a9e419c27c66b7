"""The crash matrix every runtime suite writes the same way, as a table the suite fills in.

A suite's `matrix.py` keeps only what is its runtime's: a `RuntimeSuite` (the distribution whose
version is recorded, the store, the worker module, what the runtime documents) and a function
that fills a `CellTable`, with the families every suite has (a fault-free run, SIGKILL at every
step boundary, kills one after another, resumers at once) and its own cells (answers, forks).
`RuntimeSuite` records a cell the one way (`phases.record_phased_cell`), so every suite's header
and job are built alike.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rctools.suite.phases import record_phased_cell
from rctools.suite.reports import Cell, CellReport

Points = tuple[tuple[str, str], ...]
Phases = list[list[dict[str, Any]]]

# where a step can be killed: the worker calls `kill.hit(f"{step}.{point}")` at each
BOUNDARY_POINTS: Points = (
    ("start", "as it starts"),
    ("effect", "after its effect"),
    ("saving", "after it returned, before its state was saved"),
    ("saved", "after its state was saved"),
)


def worker(role: str, proc: str, **extra: Any) -> dict[str, Any]:
    """One process of a phase: its role (`run`, `recover`, `answer`, `fork`, ...), its name in
    the trace, and what the suite's worker reads from its job (`kill_at`, `barrier`, ...)."""
    return {"role": role, "proc": proc, **extra}


def answer(proc: str, value: str = "approved", **extra: Any) -> dict[str, Any]:
    """A process that answers the run's pending wait-for-input with `value`."""
    return worker("answer", proc, value=value, **extra)


class CellTable:
    """The cells of a matrix in order; each cell's params are its graph and its phases."""

    def __init__(self) -> None:
        self.cells: list[Cell] = []

    def add(self, name: str, graph: str, what: str, phases: Phases) -> None:
        if any(c.name == name for c in self.cells):
            raise ValueError(f"cell {name!r} twice in the matrix")
        self.cells.append(Cell(name, graph, what, {"graph": graph, "phases": phases}))

    def clean(self, graph: str, what: str = "no fault") -> None:
        """`<graph>-clean`: one process runs the graph to its end."""
        self.add(f"{graph}-clean", graph, what, [[worker("run", "w1")]])

    def kills(
        self, name: str, graph: str, what: str, *kill_at: str | None, role: str = "recover"
    ) -> None:
        """The run is SIGKILLed at `kill_at[0]`, each next process (`role`) at the next point,
        and one more process resumes to the end: `kills(n, g, w, "a.effect")` is a kill and a
        recovery, two points a double kill."""
        roles = ["run"] + [role] * len(kill_at)
        points = [*kill_at, None]
        self.add(
            name,
            graph,
            what,
            [
                [worker(r, f"w{n}", **({"kill_at": at} if at else {}))]
                for n, (r, at) in enumerate(zip(roles, points, strict=True), start=1)
            ],
        )

    def resumers(self, name: str, graph: str, what: str, kill_at: str, *, barrier: bool) -> None:
        """The run is SIGKILLed at `kill_at`; two processes resume at once (`barrier`: the
        worker makes them meet after their load and their first effect, so they overlap)."""
        meet = {"barrier": 2} if barrier else {}
        self.add(
            name,
            graph,
            what,
            [
                [worker("run", "w1", kill_at=kill_at)],
                [worker("recover", "w2", **meet), worker("recover", "w3", **meet)],
            ],
        )

    def answered(self, name: str, graph: str, what: str, *values: str) -> None:
        """The run parks at its wait-for-input; one process after the other answers it, with
        each of `values` in turn."""
        answers = [[answer(f"w{n}", value)] for n, value in enumerate(values, start=2)]
        self.add(name, graph, what, [[worker("run", "w1")], *answers])

    def answerers(self, name: str, graph: str, what: str) -> None:
        """The run parks; two processes answer at once, differently (they meet at a barrier
        after their load, so both loaded the pending input before either answered)."""
        self.add(
            name,
            graph,
            what,
            [
                [worker("run", "w1")],
                [answer("w2", barrier=2), answer("w3", "rejected", barrier=2)],
            ],
        )

    def kill_before_answer(
        self, graph: str, kills: Iterable[tuple[str, str, str]], then: str
    ) -> None:
        """`<graph>-kill-<step>-<point>`: the run is SIGKILLed at each (step, point, words)
        before it parked or while parked; a process resumes (`then`, for people), another
        answers."""
        for step, point, words in kills:
            self.add(
                f"{graph}-kill-{step}-{point}",
                graph,
                f"SIGKILL {words}; {then}",
                [
                    [worker("run", "w1", kill_at=f"{step}.{point}")],
                    [worker("recover", "w2")],
                    [answer("w3")],
                ],
            )

    def kill_answerer(self, graph: str, kills: Iterable[tuple[str, str]]) -> None:
        """`<graph>-kill-answer-<point>`: the run parks, the answering process is SIGKILLed at
        each (point, words), and the answer is sent again."""
        for point, words in kills:
            self.add(
                f"{graph}-kill-answer-{point.replace('.', '-')}",
                graph,
                f"the answering process is SIGKILLed {words}; the answer is sent again",
                [[worker("run", "w1")], [answer("w2", kill_at=point)], [answer("w3")]],
            )

    def kill_every_boundary(
        self,
        graph: str,
        steps: Iterable[str],
        resume: str,
        points: Points | Mapping[str, Points] = BOUNDARY_POINTS,
        *,
        visits: Mapping[str, int] | None = None,
        suffix: str = "",
    ) -> None:
        """`<graph>-kill-<step>[-<visit>]-<point><suffix>`: the first process is killed there,
        a second one resumes the way the runtime's docs say (`resume`, for people). `points`
        may differ per step; a step of a loop is killed at each of its `visits`."""
        for step in steps:
            here = points[step] if isinstance(points, Mapping) else points
            times = (visits or {}).get(step, 1)
            for nth in range(1, times + 1):
                for point, words in here:
                    visit = f" (visit {nth})" if times > 1 else ""
                    self.kills(
                        f"{graph}-kill-{step.lower()}{f'-{nth}' if times > 1 else ''}-"
                        f"{point}{suffix}",
                        graph,
                        f"SIGKILL in {step}{visit} {words}; {resume}",
                        f"{step}.{point}" + (f"#{nth}" if times > 1 else ""),
                    )


@dataclass(frozen=True)
class RuntimeSuite:
    """What a suite says about its runtime, and the one way its cells are recorded: the header
    (runtime, version, backend, the graph's nodes, the declared guarantees) and the job every
    process of a cell reads (the graph, the id the runtime keys the run by, the store, the
    effects ledger). `DECLARED`, `DOCS`, `cells`, `runtime` and `record_cell` are what
    `suite.command.run_suite` reads of a matrix."""

    name: str  # the runtime's name in the header and the summary
    distribution: str  # the installed package whose version is recorded
    backend: str
    docs: str  # the page citing what the runtime documents
    declared: dict[str, str]  # durability, effects_default, fencing (trace.header)
    worker: str  # the module each process of a cell runs
    nodes: Callable[[str], list[str]]  # a graph's nodes, for the header
    table: Callable[[], CellTable]
    thread: tuple[str, str]  # (job key, prefix): the run's id is "<prefix>-<cell>"
    store: tuple[str, str]  # (job key, file name in the cell's scratch folder)
    graph_key: str = "graph"  # the job key naming the cell's graph
    job: dict[str, Any] = field(default_factory=dict)  # more of the job, the same in every cell
    timeout: float = 60.0  # seconds a process may take
    preload: tuple[str, ...] = ()  # modules a fork server imports once (suite.preload)

    @property
    def DECLARED(self) -> dict[str, str]:
        return self.declared

    @property
    def DOCS(self) -> str:
        return self.docs

    def cells(self) -> list[Cell]:
        return self.table().cells

    def runtime(self) -> dict[str, str]:
        return {"name": self.name, "version": importlib.metadata.version(self.distribution)}

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        """Records one cell into traces/<cell>.jsonl; the store lives in scratch."""
        graph = cell.params["graph"]
        key, prefix = self.thread
        thread = f"{prefix}-{cell.name}"
        meta = {
            "runtime": self.name,
            "version": self.runtime()["version"],
            "backend": self.backend,
            "nodes": self.nodes(graph),
            **self.declared,
        }

        def job(work: Path) -> dict[str, Any]:
            return {
                self.graph_key: graph,
                key: thread,
                self.store[0]: str(work / self.store[1]),
                "effects": str(work / "effects.jsonl"),
                **self.job,
            }

        return record_phased_cell(
            cell,
            traces,
            scratch,
            worker=self.worker,
            thread=thread,
            meta=meta,
            job=job,
            timeout=self.timeout,
            preload=self.preload,
        )
