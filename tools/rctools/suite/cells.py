"""The crash matrix every runtime suite writes the same way, as a table the suite fills in.

A suite's `matrix.py` keeps only what is its runtime's: a `RuntimeSuite` (the distribution whose
version is recorded, the store, what the runtime documents; the worker module and the docs page
follow from the suite's package) and a function
that fills a `CellTable`, with the families every suite has (a fault-free run, SIGKILL at every
step boundary, kills one after another, resumers at once) and its own cells (answers, forks).
`RuntimeSuite` records a cell the one way (`phases.record_phased_cell`), so every suite's header
and job are built alike; a runtime that keeps its state in a server of its own (Temporal's dev
server) gets one per cell (`CellServer`), SIGKILLed after the phases that say so.

A suite whose cells are not phases of processes run to their end (Restate's: a script its own
driver plays against a long-lived service) fills a `Table` of its own steps: the same names, the
same fault-free and kill families, its own `chain` of steps for "killed here, then a new process".
"""

from __future__ import annotations

import importlib.metadata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rctools.suite.matrix import CellByCell
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


class Table(ABC):
    """The cells of a matrix in order, each name once; each cell's params are its graph and its
    steps (under `key`). The families here are every suite's: a subclass says how its steps
    write a chain of processes (`chain`), the one shape they are built of."""

    key = "steps"  # the params entry holding a cell's steps

    def __init__(self) -> None:
        self.cells: list[Cell] = []

    def add(self, name: str, graph: str, what: str, steps: list[Any]) -> None:
        if any(c.name == name for c in self.cells):
            raise ValueError(f"cell {name!r} twice in the matrix")
        self.cells.append(Cell(name, graph, what, {"graph": graph, self.key: steps}))

    @abstractmethod
    def chain(self, roles: Sequence[str], points: Sequence[str | None]) -> list[Any]:
        """The steps of processes `w1`, `w2`, ... one after the other, process n in role
        `roles[n-1]` SIGKILLed at `points[n-1]` (None: it runs to the end)."""

    def clean(self, graph: str, what: str = "no fault") -> None:
        """`<graph>-clean`: one process runs the graph to its end."""
        self.add(f"{graph}-clean", graph, what, self.chain(["run"], [None]))

    def kills(
        self,
        name: str,
        graph: str,
        what: str,
        *kill_at: str | None,
        role: str = "recover",
        then: Sequence[Any] = (),
    ) -> None:
        """The run is SIGKILLed at `kill_at[0]`, each next process (`role`) at the next point,
        and one more process resumes to the end: `kills(n, g, w, "a.effect")` is a kill and a
        recovery, two points a double kill; `then`: steps after that (an answer)."""
        roles = ["run"] + [role] * len(kill_at)
        self.add(name, graph, what, [*self.chain(roles, [*kill_at, None]), *then])

    def kill_every_boundary(
        self,
        graph: str,
        steps: Iterable[str],
        resume: str,
        points: Points | Mapping[str, Points] = BOUNDARY_POINTS,
        *,
        visits: Mapping[str, int] | None = None,
        suffix: str = "",
        victim: str = "",
    ) -> None:
        """`<graph>-kill-<step>[-<visit>]-<point><suffix>`: the first process is killed there,
        a second one resumes the way the runtime's docs say (`resume`, for people). `points`
        may differ per step; a step of a loop is killed at each of its `visits`; `victim`
        names the killed process for people where it is not the one running the graph (Restate
        kills the service the server invokes)."""
        of = f" of {victim}" if victim else ""
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
                        f"SIGKILL{of} in {step}{visit} {words}; {resume}",
                        f"{step}.{point}" + (f"#{nth}" if times > 1 else ""),
                    )

    def kill_loop(
        self,
        graph: str,
        steps: Iterable[str],
        resume: str,
        points: Points,
        *,
        loop: str,
        visits: int,
    ) -> None:
        """`kill_every_boundary` of a graph with a loop: its step `loop` at each of `points`, at
        each of its `visits`; every other step only after its effect and after its save
        (`points[1]`, `points[3]`): the loop is where a kill lands somewhere new."""
        steps = list(steps)
        others = (points[1], points[3])
        here = {s: points if s == loop else others for s in steps}
        self.kill_every_boundary(graph, steps, resume, here, visits={loop: visits})


class CellTable(Table):
    """The cells of a matrix whose steps are phases of processes (`worker(...)`), the processes
    of a phase started together and each run to its end (`phases.record_phased_cell`): the
    families of `Table`, and those only such phases can write (resumers at once, answerers)."""

    key = "phases"

    def chain(self, roles: Sequence[str], points: Sequence[str | None]) -> Phases:
        """A phase a process."""
        return [
            [worker(r, f"w{n}", **({"kill_at": at} if at else {}))]
            for n, (r, at) in enumerate(zip(roles, points, strict=True), start=1)
        ]

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
            self.kills(
                f"{graph}-kill-{step}-{point}",
                graph,
                f"SIGKILL {words}; {then}",
                f"{step}.{point}",
                then=[[answer("w3")]],
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

    # A runtime whose wait-for-input takes messages sent to the run while it waits (DBOS's
    # recv, Temporal's signals): an answer is a dict of the suite's own (`answers=[...]` of a
    # process, sent in turn while the run waits).

    def sent(self, name: str, graph: str, what: str, *answers: dict[str, Any]) -> None:
        """One process runs the graph and, while it waits, sends `answers` in turn."""
        self.add(name, graph, what, [[worker("run", "w1", answers=list(answers))]])

    def kill_waiting(
        self,
        graph: str,
        kills: Iterable[tuple[str, str]],
        then: str,
        answer: dict[str, Any],
        *,
        resend: bool,
    ) -> None:
        """`<graph>-kill-<point>`: the run, sending `answer` while it waits, is SIGKILLed at each
        (point, words); a new process resumes (`then`, for people), sending it again where
        `resend` (the kill came before the run took it)."""
        for point, words in kills:
            self.add(
                f"{graph}-kill-{point.replace('.', '-')}",
                graph,
                f"SIGKILL {words}; {then}",
                [
                    [worker("run", "w1", answers=[answer], kill_at=point)],
                    [worker("recover", "w2", **({"answers": [answer]} if resend else {}))],
                ],
            )

    def kill_handler(
        self,
        name: str,
        graph: str,
        what: str,
        waiting: str,
        answer: dict[str, Any],
        kill_at: str,
        *resent: dict[str, Any],
    ) -> None:
        """The run is SIGKILLed at `waiting`, while it waits; a request handler in another
        process sends `answer` and is SIGKILLed at `kill_at`; a new process resumes, sending
        `resent`."""
        self.add(
            name,
            graph,
            what,
            [
                [worker("run", "w1", kill_at=waiting)],
                [worker("answer", "w2", answers=[answer], kill_at=kill_at)],
                [worker("recover", "w3", **({"answers": list(resent)} if resent else {}))],
            ],
        )

    def reanswered(
        self, name: str, graph: str, what: str, answer: dict[str, Any], again: dict[str, Any]
    ) -> None:
        """A run answered with `answer` and finished; another process sends `again`."""
        self.add(
            name,
            graph,
            what,
            [[worker("run", "w1", answers=[answer])], [worker("answer", "w2", answers=[again])]],
        )

    # A runtime that forks a finished or crashed run from the checkpoint after its j-th
    # operation (`fork_at`: DBOS's fork_workflow, Temporal's reset).

    def forks_at(self, name: str, graph: str, what: str, points: Iterable[int]) -> None:
        """`<name>-<j>`: after a clean run, a fork from the checkpoint after operation j, for
        each j of `points` (`what` says `{j}` for it)."""
        for j in points:
            self.add(
                f"{name}-{j}",
                graph,
                what.format(j=j),
                [[worker("run", "w1")], [worker("fork", "w2", fork_at=j)]],
            )

    def fork_after_crash(self, name: str, graph: str, what: str, kill_at: str, at: int) -> None:
        """The run is SIGKILLed at `kill_at`, a process recovers it, then a fork from after
        operation `at`."""
        self.add(
            name,
            graph,
            what,
            [
                [worker("run", "w1", kill_at=kill_at)],
                [worker("recover", "w2")],
                [worker("fork", "w3", fork_at=at)],
            ],
        )

    def fork_twice(self, name: str, graph: str, what: str, at: int) -> None:
        """After a clean run, two forks from after operation `at`, one after the other."""
        self.add(
            name,
            graph,
            what,
            [
                [worker("run", "w1")],
                [worker("fork", "w2", fork_at=at)],
                [worker("fork", "w3", fork_at=at)],
            ],
        )

    def fork_killed(
        self, name: str, graph: str, what: str, at: int, kill_at: str, resume: str
    ) -> None:
        """After a clean run, the fork from after operation `at` is SIGKILLed at `kill_at`; a
        process in role `resume` finishes it."""
        self.add(
            name,
            graph,
            what,
            [
                [worker("run", "w1")],
                [worker("fork", "w2", fork_at=at, kill_at=kill_at)],
                [worker(resume, "w3")],
            ],
        )


class CellServer(Protocol):
    """A server of a cell's own that holds the runtime's state (Temporal's dev server):
    started before the cell's first phase and closed (stopped, its data removed) after its
    last. A phase with a process marked `server="kill"` is followed by `kill()` and `start()`
    on the same data: the runtime's claim that what it stored survives its server's crash."""

    @property
    def job(self) -> dict[str, Any]:
        """What a worker needs to reach it (its address), for every process's job."""
        ...

    def start(self) -> None: ...

    def kill(self) -> None: ...

    def close(self) -> None: ...


# The declaration of a runtime that saves a run's state after each step before the next one
# starts (sync) and documents nothing more: the strictest level for a step's side effects,
# and no lease keeping a second process off a run.
SYNC_ONLY = {"durability": "sync", "effects_default": "exactly-once", "fencing": "none"}
# ... and of one that documents a step interrupted before its output was saved runs again.
SYNC_AT_LEAST_ONCE = {**SYNC_ONLY, "effects_default": "at-least-once"}


@dataclass(frozen=True)
class RuntimeSuite(CellByCell):
    """What a suite says about its runtime, and the one way its cells are recorded: the header
    (runtime, version, backend, the graph's nodes, the declared guarantees) and the job every
    process of a cell reads (the graph, the id the runtime keys the run by, the store, the
    effects ledger). It is the `suite.matrix.CellByCell` of every runtime suite."""

    name: str  # the runtime's name in the header and the summary
    backend: str  # for the header; "{key}" stands for runtime()[key] (a server's version)
    declared: dict[str, str]  # durability, effects_default, fencing (trace.header)
    nodes: Callable[[str], list[str]]  # a graph's nodes, for the header
    table: Callable[[], CellTable]  # defined in the suite's matrix module (see `package`)
    thread: str  # the job key holding the run's id, which is "<thread>-<cell>"
    distribution: str = ""  # the installed package whose version is recorded; "": `name`
    store: tuple[str, str] | None = None  # (job key, file name in the cell's scratch folder)
    graph_key: str = "graph"  # the job key naming the cell's graph
    job: dict[str, Any] = field(default_factory=dict)  # more of the job, the same in every cell
    timeout: float = 60.0  # seconds a process may take
    preload: tuple[str, ...] = ()  # modules a fork server imports once (suite.preload)
    # more versions for runtime(): key -> installed package (a server shipped as a wheel)
    versions: dict[str, str] = field(default_factory=dict)
    server: Callable[[str], CellServer] | None = None  # a cell's own server, by cell name

    @property
    def package(self) -> str:
        """The suite's package (`rctools.burr`): the one its matrix, which defines `table`, is
        in. Every suite lays out its package alike, so the worker and the docs page follow."""
        return self.table.__module__.rpartition(".")[0]

    @property
    def worker(self) -> str:
        """The module each process of a cell runs: the package's `worker`."""
        return f"{self.package}.worker"

    @property
    def DECLARED(self) -> dict[str, str]:
        return self.declared

    @property
    def DOCS(self) -> str:
        """The page citing what the runtime documents: `docs/runtimes/<package>.md`, with
        the package's `_` written `-` (`pydantic_graph`: `pydantic-graph.md`)."""
        return f"docs/runtimes/{self.package.rpartition('.')[2].replace('_', '-')}.md"

    def cells(self) -> list[Cell]:
        return self.table().cells

    def runtime(self) -> dict[str, str]:
        versions = {key: importlib.metadata.version(d) for key, d in self.versions.items()}
        return {
            "name": self.name,
            "version": importlib.metadata.version(self.distribution or self.name),
            **versions,
        }

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        """Records one cell into traces/<cell>.jsonl; the store lives in scratch, or in the
        cell's own server."""
        graph = cell.params["graph"]
        phases = cell.params["phases"]
        thread = f"{self.thread}-{cell.name}"
        runtime = self.runtime()
        meta = {
            "runtime": self.name,
            "version": runtime["version"],
            "backend": self.backend.format(**runtime),
            "nodes": self.nodes(graph),
            **self.declared,
        }
        server = self.server(cell.name) if self.server else None

        def job(work: Path) -> dict[str, Any]:
            store = {self.store[0]: str(work / self.store[1])} if self.store else {}
            return {
                self.graph_key: graph,
                self.thread: thread,
                **store,
                **(server.job if server else {}),
                "effects": str(work / "effects.jsonl"),
                **self.job,
            }

        def after(n: int) -> None:
            if server and any(spec.get("server") == "kill" for spec in phases[n]):
                server.kill()
                server.start()

        try:
            if server:
                server.start()
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
                on_phase=after,
            )
        finally:
            if server:
                server.close()
