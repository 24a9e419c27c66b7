"""The safety audit before and after restore points: every policy, the same seeded workflows.

    git -C /work/main archive main | tar -x -C /tmp/main-tree
    .venv/bin/python bench/recovery_audit_bench.py --before-tree /tmp/main-tree

`resume-check run recovery --audit` runs twice per repeat, in a child process each: once with
the code and contract of another checkout (`--before-tree`, e.g. main before restore points:
its checker, suite and spec put first on the paths), once with this checkout's. The counts
(restores, unsafe admitted restores, blocks, necessary and needless blocks, restores through
LangGraph's own checkpoint and to a restore point) come from the contract's verdicts, as
`figures.audit` of each run's summary.json says them; they are deterministic, and a repeat that
counts differently stops the benchmark with exit code 2. Wall and CPU seconds (the child and its
TLC process) are medians over the repeats. The section it writes replaces the one of the same
heading in --out and keeps the rest of the file (recovery_bench.py's table).
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

HEADING = "## The safety audit before and after restore points"
ROOT = Path(__file__).resolve().parent.parent
COUNTS = (
    ("restores", "restores"),
    ("unsafe_restores", "unsafe"),
    ("blocks", "blocks"),
    ("necessary_blocks", "necessary"),
    ("needless_blocks", "needless"),
    ("restores_through_langgraph", "via LangGraph"),
    ("restores_to_point", "to a point"),
)


class BenchError(RuntimeError):
    """Two repeats of one side counted differently: the figures would not mean anything."""


@dataclass
class Side:
    """One side's audit: its figures (from the first repeat) and each repeat's cost."""

    name: str
    figures: dict[str, Any]
    events: int
    wall: list[float]
    cpu: list[float]


def _audit(tree: Path | None, workflows: int, seed: int, out: Path) -> tuple[dict, float, float]:
    """One audit in a child process; with `tree`, that checkout's code and contract."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = f"{tree / 'checker'}{os.pathsep}{tree / 'tools'}"
        env["RESUME_CHECK_SPEC_PATH"] = str(tree / "spec")
    argv = [
        "run", "recovery", "--audit", "--workflows", str(workflows), "--seed", str(seed),
        "--out", str(out), "--format", "json", "--no-progress",
    ]  # fmt: skip
    code = f"import sys; from resumecheck.cli import main; main({argv!r})"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=out.parent, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise BenchError(f"the audit exited {done.returncode}: {done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return summary, wall, cpu


def measure(name: str, tree: Path | None, workflows: int, seed: int, repeats: int) -> Side:
    side: Side | None = None
    for attempt in range(repeats):
        with tempfile.TemporaryDirectory(prefix=f"audit-{name}-") as folder:
            summary, wall, cpu = _audit(tree, workflows, seed, Path(folder) / "out")
        figures = summary["figures"]["audit"]
        events = sum(t.get("events", 0) for t in summary["traces"])
        if side is None:
            side = Side(name, figures, events, [], [])
        elif figures != side.figures:
            raise BenchError(f"{name}: repeat {attempt + 1} counts differently from the first")
        side.wall.append(wall)
        side.cpu.append(cpu)
    assert side is not None
    return side


def _row(side: Side, policy: str) -> dict[str, Any]:
    return next(r for r in side.figures["policies"] if r["policy"] == policy)


def table(before: Side, after: Side) -> str:
    """Per policy, each count before -> after."""
    heads = " | ".join(label for _, label in COUNTS)
    lines = [
        f"| policy | {heads} | properties broken (runs), before -> after |",
        "|---|" + "---:|" * len(COUNTS) + "---|",
    ]
    for row in before.figures["policies"]:
        policy = row["policy"]
        new = _row(after, policy)
        cells = []
        for key, _ in COUNTS:
            old = row.get(key, 0)  # before restore points, no run restored to one
            cells.append(f"{old}" if old == new[key] else f"{old} -> **{new[key]}**")

        def broken(r: dict[str, Any]) -> str:
            return ", ".join(f"{p} {n}" for p, n in r["properties"].items()) or "-"

        was, now = broken(row), broken(new)
        lines.append(
            f"| {policy} | "
            + " | ".join(cells)
            + f" | {was if was == now else f'{was} -> {now}'} |"
        )
    return "\n".join(lines) + "\n"


def cost(before: Side, after: Side, repeats: int) -> str:
    lines = [
        f"| side | events judged | wall, median of {repeats} | CPU-s, median of {repeats} |",
        "|---|---:|---:|---:|",
    ]
    for side in (before, after):
        lines.append(
            f"| {side.name} | {side.events:,} | {statistics.median(side.wall):.1f} s "
            f"| {statistics.median(side.cpu):.1f} s |"
        )
    return "\n".join(lines) + "\n"


def section(before: Side, after: Side, repeats: int, before_name: str) -> str:
    figures = after.figures
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    code = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        f"{HEADING}\n\n"
        f"`resume-check run recovery --audit`: {figures['workflows']} generated workflows, seed "
        f"{figures['seed']}, every policy on each, judged by the contract of the same checkout. "
        f"Before: {before_name} (checkpoints at entry, commit and exit only). After: this "
        "checkout, whose `admissible` runtime saves a restore point after every action that is "
        "not a commit and whose controller certifies the latest admissible one; the baselines' "
        "runtimes are unchanged. A cell reads before -> **after** where the two differ. "
        "`unsafe`: admitted restores the contract rejects (RestoreSound, BlockWhenNone, "
        "PreserveCommitted); `necessary`/`needless`: blocks the spec counts as taken with no / "
        "with an admissible checkpoint; `via LangGraph`: restores resumed from LangGraph's own "
        "checkpoint; `to a point`: restores to a restore point.\n\n"
        + table(before, after)
        + "\nWhat the audit costs, recording and judging (the child process and its TLC):\n\n"
        + cost(before, after, repeats)
        + f"\n- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; code: "
        f"{code or 'unknown'}; nproc {os.cpu_count()}; load average after the runs: {load} "
        "(a shared machine)\n"
        "- reproduce: `git -C /work/main archive main | tar -x -C /tmp/main-tree && "
        ".venv/bin/python bench/recovery_audit_bench.py --before-tree /tmp/main-tree`\n"
    )


def replace_section(text: str, new: str) -> str:
    """`text` with its section under HEADING (up to the next `## ` heading) replaced by `new`,
    or `new` appended."""
    start = text.find(HEADING)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + new
    end = text.find("\n## ", start + len(HEADING))
    rest = text[end + 1 :] if end >= 0 else ""
    return text[:start] + new + ("\n" + rest if rest else "")


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@click.option(
    "--before-tree",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="A checkout (or `git archive` tree) of the code to compare against.",
)
@click.option("--before-name", default="main", show_default=True)
@click.option("--workflows", type=int, default=200, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--repeats", type=click.IntRange(1), default=3, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=ROOT / "bench/recovery-results.md")
def main(
    before_tree: Path, before_name: str, workflows: int, seed: int, repeats: int, out: Path
) -> None:
    """Exit code 2 (and nothing written) when a repeat counts differently."""
    try:
        before = measure(before_name, before_tree.resolve(), workflows, seed, repeats)
        after = measure("this checkout", None, workflows, seed, repeats)
    except BenchError as exc:
        print(f"recovery_audit_bench: {exc}", file=sys.stderr)
        sys.exit(2)
    new = section(before, after, repeats, before_name)
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    out.write_text(replace_section(old, new), encoding="utf-8")
    print(new, end="")


if __name__ == "__main__":
    main()
