"""What the matrix's end-of-cell read costs: `rctools.langgraph.final.read_final`, a fresh
process that opens the saver on a cell's store and reads the thread back (the runner checks
END and STATE compare it with the reference's), against recording the cell itself.

One `chain` cell is recorded on SqliteSaver (sync durability, no fault), then its store is
read back N times. Wall time and CPU-seconds (this process and its children) per read, beside
the wall and CPU of recording the cell.

    python bench/final_read_bench.py --out bench/final-read-results.md
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from pathlib import Path

import click
from rctools.langgraph.backends import resolve
from rctools.langgraph.driver import run_cell
from rctools.langgraph.final import read_final
from rctools.langgraph.scenarios import ALL


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--reads", type=int, default=20)
@click.option("--out", type=click.Path(path_type=Path))
def main(reads: int, out: Path | None) -> None:
    factory, scenario = resolve("sqlite"), ALL["chain"]
    with tempfile.TemporaryDirectory() as scratch:
        cell = Path(scratch) / "cell"
        wall, cpu = time.monotonic(), _cpu()
        run_cell(cell, scenario, "sync", factory, "sqlite")
        record = (time.monotonic() - wall, _cpu() - cpu)
        walls, cpus = [], []
        for _ in range(reads):
            wall, cpu = time.monotonic(), _cpu()
            end = read_final(cell / "store", scenario.build, factory)
            walls.append(time.monotonic() - wall)
            cpus.append(_cpu() - cpu)
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
