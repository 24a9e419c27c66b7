"""`run recovery --app` on user-style graphs: the audit's counts per policy, a tool raising beside
a SIGKILL of the process running the graph, and what each costs.

    .venv/bin/python bench/recovery_app_bench.py --out bench/recovery-app-results.md

For each fixture app of tests/fixtures/apps/ that `--app` runs (plain LangGraph code: a trip-
booking graph with parallel branches, a `Send` fan-out, a ReAct loop through a conditional
edge, async-only nodes, a subgraph node), `resume-check run recovery --app` runs every policy
at every failure point, once with the failure as the tool raising and once as SIGKILL of the
graph's process (`--kill`), --repeats times. Every trace is judged by SemanticRecovery in the
command's one TLC run. Per (app, failure): the counts of the last repeat per policy, and over
the repeats the range of unsafe restores (under a kill, whether a sibling's writes were saved
before the kill depends on thread timing, so native's counts may vary; a range says so), and
the median wall and CPU seconds of the whole command (CPU of the command and its children: TLC,
the killed processes). The machine may be shared: the load average at the start and the end is
printed beside the timings."""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "tests" / "fixtures" / "apps"
CLI = Path(sys.executable).with_name("resume-check")
GRAPHS = [
    ("trip_booking", '{"traveller": "ada", "city": "Oslo"}'),
    ("fanout_digest", '{"topic": "tla"}'),
    ("react_refunds", '{"customer": "ada", "order": "o1"}'),
    ("async_shop", '{"customer": "ada"}'),
    ("research_subgraph", '{"topic": "tla"}'),
]


def once(app: str, given: str, kill: bool, out: Path) -> tuple[dict, float, float]:
    """One command: its summary, wall seconds, CPU seconds (its process and children)."""
    args = [str(CLI), "run", "recovery", "--app", f"{APPS / app}.py:build"]
    args += ["--tools", str(APPS / f"{app}_tools.json"), "--input", given]
    args += ["--kill"] if kill else []
    args += ["--out", str(out), "--format", "json", "--no-progress"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{app}: exit {done.returncode}: {done.stderr[-400:]}")
    summary = json.loads(done.stdout)
    bad = [c["cell"] for c in summary["cells"] if c["status"] not in ("conforms", "violates")]
    if bad:
        raise SystemExit(f"{app}: cells not judged: {bad}")
    return summary, wall, cpu


@click.command()
@click.option("--repeats", default=3, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the report.")
def main(repeats: int, out: Path | None) -> None:
    rows, costs = [], []
    needless: list[str] = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="recovery-app-bench-") as folder:
        for app, given in GRAPHS:
            for kill in (False, True):
                runs = [once(app, given, kill, Path(folder) / f"r{i}") for i in range(repeats)]
                failure = "kill" if kill else "raise"
                unsafe: dict[str, list[int]] = {}
                for summary, _, _ in runs:
                    for r in summary["figures"]["audit"]["policies"]:
                        unsafe.setdefault(r["policy"], []).append(r["unsafe_restores"])
                last = runs[-1][0]
                cells = len(last["cells"])
                for r in last["figures"]["audit"]["policies"]:
                    spread = unsafe[r["policy"]]
                    seen = (
                        f"{min(spread)}"
                        if min(spread) == max(spread)
                        else f"{min(spread)}-{max(spread)}"
                    )
                    broken = ", ".join(f"{k} {v}" for k, v in sorted(r["properties"].items()))
                    if r["blocks"] != r["necessary_blocks"]:
                        needless.append(f"{app} {failure} {r['policy']}")
                    rows.append(
                        f"| {app} | {failure} | {r['policy']} | {r['runs']} | {r['restores']} | "
                        f"{seen} | {r['blocks']} ({r['necessary_blocks']}) | {broken or '-'} |"
                    )
                walls = [w for _, w, _ in runs]
                cpus = [c for _, _, c in runs]
                costs.append(
                    f"| {app} | {failure} | {cells} | {statistics.median(walls):.1f} | "
                    f"{statistics.median(cpus):.1f} |"
                )
    load_after = os.getloadavg()
    stamp = datetime.date.today().isoformat()
    blocks = (
        f"Blocks the contract does not count necessary: {', '.join(needless)}."
        if needless
        else "Every block is necessary (SemanticRecovery's summary counts none needless; a "
        "restore must roll back with the failed instance the siblings LangGraph cancelled and "
        "will run again: the forced rollback, `localize`'s `with`)."
    )
    text = "\n".join(
        [
            "# `run recovery --app`: a tool raising beside a SIGKILL, on user-style graphs",
            "",
            f"{stamp}, {platform.python_implementation()} {platform.python_version()}, "
            f"{os.cpu_count()} CPUs (shared); `.venv/bin/python bench/recovery_app_bench.py "
            f"--repeats {repeats}`.",
            "",
            "Counts per policy over every failure point of the app (the last repeat); unsafe: "
            f"the range over the {repeats} repeats. {blocks}",
            "",
            "| app | failure | policy | runs | restores | unsafe | blocks (necessary) | "
            "properties broken (runs) |",
            "|---|---|---|---:|---:|---:|---:|---|",
            *rows,
            "",
            f"The whole command (recording every cell and one TLC run), medians of {repeats}. "
            f"Load average {load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end "
            f"(1 min, {os.cpu_count()} CPUs shared with other jobs): wall seconds are noisy, CPU "
            "seconds (the command and its children) less so:",
            "",
            "| app | failure | cells | wall s | CPU s |",
            "|---|---|---:|---:|---:|",
            *costs,
            "",
        ]
    )
    if out:
        out.write_text(text, encoding="utf-8")
    click.echo(text)


if __name__ == "__main__":
    main()
