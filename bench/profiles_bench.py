"""What each `--profile` of `run langgraph` costs and catches: cells, wall time and CPU-seconds
on a correct saver, and which savers of the project's broken-saver zoo it reports as saver
findings (`tests/fixtures/broken_savers.py`, the savers `tests/test_langgraph_savers.py`
catches one scenario at a time).

Every run is the command a saver author types, through the saver's sync API, two cells at a
time (`--jobs 2`), each cell on the saver and on the reference:

    resume-check run langgraph --saver broken_savers:NAME --profile P --api sync --jobs 2

CPU-seconds are the children's (the recording processes and TLC). The machine is shared:
read wall time beside CPU.

    python bench/profiles_bench.py --profiles quick --out bench/profiles-results.md
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CORRECT = ("correct_sqlite", "slow_ack_sqlite")
ZOO = (
    "drops_pending_writes",
    "parent_as_latest",
    "writes_kept_in_memory",
    "write_behind_objectstorage",
    "ignores_checkpoint_id",
    "namespaces_mixed",
    "latest_by_step",
    "history_only_latest",
    "stops_early",
    "two_step_put",
    "thread_prefix",
    "put_hides_earlier_writes",
)


def _children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def run(saver: str, profile: str) -> dict[str, object]:
    """One `run langgraph` on broken_savers:SAVER: its wall, CPU, cells and saver findings."""
    with tempfile.TemporaryDirectory() as out:
        command = [
            *(str(Path(sys.executable).with_name("resume-check")), "run", "langgraph"),
            *("--saver", f"broken_savers:{saver}", "--profile", profile, "--api", "sync"),
            *("--jobs", "2", "--no-progress", "--format", "json", "--out", out),
        ]
        # The fixtures first; a PYTHONPATH given (a worktree's checker and tools) is kept.
        path = [str(FIXTURES), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
        wall, cpu = time.monotonic(), _children_cpu()
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        wall, cpu = time.monotonic() - wall, _children_cpu() - cpu
    try:
        details = json.loads(done.stdout)["details"]
    except (ValueError, KeyError):
        return {"saver": saver, "error": done.stderr[-500:], "wall": wall, "cpu": cpu}
    found = [c for c in details["cells"] if c["finding"] in ("saver", "saver-error")]
    return {
        "saver": saver,
        "wall": wall,
        "cpu": cpu,
        "cells": details["counts"]["cells"],
        "saver_findings": len(found),
        "checks": sorted({check for c in found for check in c["checks"]}),
        "exit": done.returncode,
    }


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profiles", default="quick")
@click.option("--savers", default=",".join(CORRECT + ZOO))
@click.option("--out", type=click.Path(path_type=Path))
def main(profiles: str, savers: str, out: Path | None) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    lines = [
        "# `run langgraph --profile` (`bench/profiles_bench.py`)",
        "",
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, commit {commit}, `--jobs 2 --api sync`; "
        "wall and CPU-seconds of one run each (the machine is shared: read them together).",
        "",
    ]
    for profile in profiles.split(","):
        rows: list[dict[str, object]] = []
        for saver in savers.split(","):
            rows.append(run(saver, profile))
            print(_row(rows[-1]), flush=True)  # each as it comes: a run takes minutes
            if out:  # kept so far, in case the bench is stopped
                out.write_text("\n".join([*lines, *_table(profile, rows)]), encoding="utf-8")
        lines += _table(profile, rows)
    print("\n".join(lines), flush=True)
    if out:
        out.write_text("\n".join(lines), encoding="utf-8")


def _table(profile: str, rows: list[dict[str, object]]) -> list[str]:
    caught = [r for r in rows if r["saver"] in ZOO and r.get("saver_findings")]
    zoo = [r for r in rows if r["saver"] in ZOO]
    return [
        f"## {profile}: {len(caught)} of {len(zoo)} broken savers caught",
        "",
        "| saver | cells | wall | CPU (children) | saver findings | checks | exit |",
        "|---|---:|---:|---:|---:|---|---:|",
        *(_row(r) for r in rows),
        "",
    ]


def _row(r: dict[str, object]) -> str:
    if "error" in r:
        return f"| {r['saver']} | could not run: {r['error']!r} | | | | | |"
    checks = ", ".join(r["checks"]) or "-"  # type: ignore[call-overload]
    return (
        f"| {r['saver']} | {r['cells']} | {r['wall']:.0f} s | {r['cpu']:.0f} s | "
        f"{r['saver_findings']} | {checks} | {r['exit']} |"
    )


if __name__ == "__main__":
    main()
