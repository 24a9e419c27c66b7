"""Recorder overhead: one 20-node LangGraph graph on SQLite, with and without recording.

Without: the graph compiled with LangGraph's SqliteSaver. With: the same app recorded through
`rctools.langgraph.record.Recording` (the saver wrapped, the recorder's callbacks, an effect
per node through `ledger.fire`, one trace file), as `resume-check run langgraph` runs it.
Runs alternate (without, with, without, ...) in one process so that machine noise hits both
alike; the table reports medians and their ratio. Three node bodies: an empty node (the
worst case: all time is LangGraph and the saver), and a node with a 5 ms or a 50 ms
stand-in model call (a hosted model answers in hundreds of ms).

    python bench/recorder_bench.py --out bench/recorder-results.md
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import click
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from rctools.langgraph import ledger
from rctools.langgraph.record import Recording

NODES = 20


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def graph(model_ms: float) -> StateGraph:
    """Four layers of five nodes: 20 nodes, fan-out and fan-in between layers."""
    g = StateGraph(State)
    layers = [[f"n{layer}{i}" for i in range(5)] for layer in range(4)]

    def node(name: str) -> Any:
        def run(state: State, config: RunnableConfig) -> dict[str, Any]:
            if model_ms:
                time.sleep(model_ms / 1000)  # the stand-in model call
            ledger.fire(config, f"notify:{name}")
            return {"log": [name]}

        return run

    for layer in layers:
        for name in layer:
            g.add_node(name, node(name))
    for name in layers[0]:
        g.add_edge(START, name)
    for upper, lower in itertools.pairwise(layers):
        for name in lower:
            g.add_edge(list(upper), name)
    for name in layers[-1]:
        g.add_edge(name, END)
    return g


def one_run(folder: Path, model_ms: float, record: bool, n: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for one invocation."""
    conn = sqlite3.connect(folder / "db.sqlite", check_same_thread=False, isolation_level=None)
    saver = SqliteSaver(conn)
    saver.setup()
    config: dict[str, Any] = {"configurable": {"thread_id": f"t{n}-{record}"}}
    g = graph(model_ms)
    if record:
        recording = Recording(folder / f"trace-{n}.jsonl", "w1", lock=folder / "saver.lock")
        app = recording.attach(g, saver)
        start, cpu = time.perf_counter(), time.process_time()
        recording.invoke(app, {"log": []}, config)
    else:
        app = g.compile(checkpointer=saver)
        start, cpu = time.perf_counter(), time.process_time()
        app.invoke({"log": []}, config, durability="sync")
    elapsed = (time.perf_counter() - start, time.process_time() - cpu)
    conn.close()
    return elapsed


def measure(model_ms: float, rounds: int) -> dict[tuple[bool, int], float]:
    """Medians keyed by (recorded?, 0 for wall time / 1 for CPU time)."""
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in range(rounds + 2):
            for record in (False, True):
                t = one_run(folder, model_ms, record, n)
                if n >= 2:  # warm-up rounds are not counted
                    times[record].append(t)
    return {
        (record, kind): statistics.median(t[kind] for t in times[record])
        for record in (False, True)
        for kind in (0, 1)
    }


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@click.option("--rounds", type=int, default=30)
@click.option("--out", type=click.Path(path_type=Path))
def main(rounds: int, out: Path | None) -> None:
    rows = []
    for label, model_ms in (
        ("empty nodes (worst case)", 0.0),
        ("5 ms stand-in model call", 5.0),
        ("50 ms stand-in model call", 50.0),
    ):
        m = measure(model_ms, rounds)
        rows.append((label, m))
        print(
            f"{label}: wall {m[False, 0] * 1000:.1f} -> {m[True, 0] * 1000:.1f} ms "
            f"({(m[True, 0] / m[False, 0] - 1) * 100:+.1f} %), CPU {m[False, 1] * 1000:.1f} -> "
            f"{m[True, 1] * 1000:.1f} ms ({(m[True, 1] / m[False, 1] - 1) * 100:+.1f} %)"
        )
    if out:
        lines = [
            "# Recorder overhead",
            "",
            f"One invocation of a {NODES}-node LangGraph graph (4 layers of 5, fan-out/fan-in) "
            "on SqliteSaver, durability sync; medians of "
            f"{rounds} alternating runs each (without, with, without, ...), measured in "
            "one process by `python bench/recorder_bench.py`. Wall time is what a user waits; "
            "CPU time of the process is what recording costs and is less disturbed by other "
            "load on the machine. Target: under 5 %.",
            "",
            "| node body | wall without | wall with | wall overhead "
            "| CPU without | CPU with | CPU overhead |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for label, m in rows:
            lines.append(
                f"| {label} | {m[False, 0] * 1000:.1f} ms | {m[True, 0] * 1000:.1f} ms | "
                f"{(m[True, 0] / m[False, 0] - 1) * 100:+.1f} % | {m[False, 1] * 1000:.1f} ms | "
                f"{m[True, 1] * 1000:.1f} ms | {(m[True, 1] / m[False, 1] - 1) * 100:+.1f} % |"
            )
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
