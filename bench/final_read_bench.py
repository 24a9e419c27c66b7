"""What the matrix's end-of-cell read costs: `rctools.langgraph.final.read_final`, a fresh
process that opens the saver on a cell's store and reads the thread back (the runner checks
END and STATE compare it with the reference's), against recording the cell itself.

One `chain` cell is recorded on SqliteSaver (sync durability, no fault), then its store is
read back N times. Wall time and CPU-seconds (this process and its children) per read, beside
the wall and CPU of recording the cell.

    python bench/final_read_bench.py --out bench/final-read-results.md
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import click
from clock import timed
from rctools.langgraph.backends import resolve
from rctools.langgraph.driver import run_cell
from rctools.langgraph.final import FinalState, read_final
from rctools.langgraph.scenarios import ALL


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--reads", type=int, default=20)
@click.option("--out", type=click.Path(path_type=Path))
def main(reads: int, out: Path | None) -> None:
    factory, scenario = resolve("sqlite"), ALL["chain"]
    with tempfile.TemporaryDirectory() as scratch:
        cell = Path(scratch) / "cell"
        record = timed(lambda: run_cell(cell, scenario, "sync", factory, "sqlite"))
        ends: list[FinalState] = []
        walls, cpus = [], []
        for _ in range(reads):
            wall, cpu = timed(
                lambda: ends.append(read_final(cell / "store", scenario.build, factory))
            )
            walls.append(wall)
            cpus.append(cpu)
        end = ends[-1]
        assert end.done and not end.problem, end
    lines = [
        "# The end-of-cell read (`bench/final_read_bench.py`)",
        "",
        f"`chain` on SqliteSaver, sync, no fault; {reads} reads, medians.",
        "",
        "| what | wall | CPU |",
        "|---|---:|---:|",
        f"| recording the cell | {record[0] * 1000:.0f} ms | {record[1] * 1000:.0f} ms |",
        f"| one read back | {statistics.median(walls) * 1000:.0f} ms | "
        f"{statistics.median(cpus) * 1000:.0f} ms |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if out:
        out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
