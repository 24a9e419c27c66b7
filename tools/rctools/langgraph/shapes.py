"""The shapes corpus: each way LangGraph apps are built, recorded from a real run on SQLite.

    python -m rctools.langgraph.shapes corpora/langgraph/shapes

records every shape of `scenarios.SHAPES` fault-free (in its durability: sync, or exit for
the `exit` shape) and a few crash variants (a real worker process SIGKILLed at a named point,
then resumed by a fresh one), judges all of them in one TLC run and writes the folder's
traces and their entries of corpora/manifest.json with the verdicts the checker gave. The apps
call no project helper: tools are LangChain tools, questions plain `interrupt()`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

from rctools.langgraph.backends import resolve
from rctools.langgraph.driver import run_cell
from rctools.langgraph.scenarios import SHAPES
from rctools.suite.publish import entry, keep

BACKEND = "sqlite"


@dataclass(frozen=True)
class ShapeCell:
    """One recording: a shape, its durability and, for a crash variant, where the first
    worker that reaches it is killed (the n-th time it reaches that point)."""

    shape: str
    durability: str
    kill: tuple[str, int] | None = None

    @property
    def name(self) -> str:
        if self.kill is None:
            return f"{self.shape}.{self.durability}"
        label = self.kill[0].replace(" ", "-").replace(",", "")
        return f"{self.shape}.{self.durability}.kill-{label}-{self.kill[1]}"


CELLS: tuple[ShapeCell, ...] = (
    *(ShapeCell(name, shape.durability or "sync") for name, shape in SHAPES.items()),
    # killed while tools asks for the second approval, before its interrupt was saved: the
    # next process finds tools unfinished and it asks again (a kill after an approved charge
    # races with the answer's write: see the matrix's approval-loop cells)
    ShapeCell("approval-loop", "sync", ("end tools", 3)),
    # two of the three Send tasks done, one write unsaved: only the unsaved ones run again
    ShapeCell("send", "sync", ("end work", 2)),
    # killed inside the subgraph: the parent task and the subgraph's chain resume
    ShapeCell("subgraph-interrupt", "sync", ("end check", 1)),
    # the agent's tool call ran, its write not saved
    ShapeCell("react", "sync", ("end tools", 1)),
    # the approved tool call ran inside the hand-built loop, its write not saved: the tool
    # node runs again, the approval is not asked again (its answer is stored)
    ShapeCell("react-approval", "sync", ("end tools", 1)),
    # exit durability saves nothing before the invocation returns: the input is sent again
    ShapeCell("exit", "exit", ("end tools", 2)),
)


def record(cell: ShapeCell, folder: Path) -> Path:
    """Records one cell into `folder` (which it owns) and returns its trace."""
    shutil.rmtree(folder, ignore_errors=True)
    fault = "none" if cell.kill is None else f"kill at {cell.kill[0]} #{cell.kill[1]}"
    run = run_cell(
        folder,
        SHAPES[cell.shape],
        cell.durability,
        resolve(BACKEND),
        BACKEND,
        fault=fault,
        kill_point=cell.kill,
    )
    if run.failure:
        raise RuntimeError(f"{cell.name}: {run.failure}")
    if cell.kill is not None and run.killed_at is None:
        raise RuntimeError(f"{cell.name}: the kill point was never reached")
    return run.trace


def record_all(work: Path, cells: tuple[ShapeCell, ...] = CELLS) -> dict[str, tuple[Path, Verdict]]:
    """Records and judges `cells` under `work`: cell name -> (trace, verdict)."""
    traces = {cell.name: record(cell, work / cell.name) for cell in cells}
    verdicts = judge(list(traces.values()), spec_paths=default_spec_paths())
    by_path = {v.path: v for v in verdicts}
    return {name: (path, by_path[path]) for name, path in traces.items()}


def publish(folder: Path) -> int:
    """Every shape recorded and judged, kept in `folder` by the one curator."""
    kept = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (path, verdict) in record_all(Path(tmp)).items():
            if verdict.status not in (Status.CONFORMS, Status.VIOLATES):
                raise RuntimeError(f"{name}: {verdict.status.value}: {verdict.reason}")
            status = verdict.status.value
            kept[f"{name}.jsonl"] = (path, entry(status, verdict.event_index, verdict.properties))
        return keep(folder, kept)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    count = publish(Path(sys.argv[1]))
    print(f"{count} traces with the checker's verdicts in {sys.argv[1]}")
