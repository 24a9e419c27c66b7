"""The building blocks of a crash matrix that every runtime suite writes the same way: a worker
of a phase, a table of cells, and the kill-at-every-boundary family (SIGKILL at a step's start,
after its effect, before and after its result was saved, then one process resumes)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rctools.suite.reports import Cell

# where a step can be killed: the worker calls `kill.hit(f"{step}.{point}")` at each
BOUNDARY_POINTS: tuple[tuple[str, str], ...] = (
    ("start", "as it starts"),
    ("effect", "after its effect"),
    ("saving", "after it returned, before its state was saved"),
    ("saved", "after its state was saved"),
)


def worker(role: str, proc: str, **extra: Any) -> dict[str, Any]:
    """One process of a phase: its role (`run`, `recover`, `answer`, `fork`, ...), its name in
    the trace, and what the suite's worker reads from its job (`kill_at`, `barrier`, ...)."""
    return {"role": role, "proc": proc, **extra}


class CellTable:
    """The cells of a matrix in order; each cell's params are its graph and its phases."""

    def __init__(self) -> None:
        self.cells: list[Cell] = []

    def add(self, name: str, graph: str, what: str, phases: list[list[dict[str, Any]]]) -> None:
        if any(c.name == name for c in self.cells):
            raise ValueError(f"cell {name!r} twice in the matrix")
        self.cells.append(Cell(name, graph, what, {"graph": graph, "phases": phases}))

    def kill_every_boundary(
        self,
        graph: str,
        steps: Iterable[str],
        resume: str,
        points: tuple[tuple[str, str], ...] = BOUNDARY_POINTS,
    ) -> None:
        """`<graph>-kill-<step>-<point>`: the first process is killed there, a second one
        resumes the way the runtime's docs say (`resume`, for people)."""
        for step in steps:
            for point, words in points:
                self.add(
                    f"{graph}-kill-{step}-{point}",
                    graph,
                    f"SIGKILL in {step} {words}; {resume}",
                    [[worker("run", "w1", kill_at=f"{step}.{point}")], [worker("recover", "w2")]],
                )
