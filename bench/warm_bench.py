"""What a judge call on one short trace costs cold, and warm (issue 25: at most 0.3 CPU-s).

    .venv/bin/python bench/warm_bench.py                  (7 rounds; prints a Markdown table)
    .venv/bin/python bench/warm_bench.py --rounds 5 --calls 30   (a longer-held driver)

Every row is one `resumecheck.judge.judge([trace])` call in this process, timed as CPU-seconds
of the whole process tree: this process's own (resource.RUSAGE_SELF), the JVMs it started and
waited for (RUSAGE_CHILDREN) and, for a warm call, the warm driver's, which outlives the call
and is read from /proc/PID/stat (its exited threads included). Rows:

- `plain`: a JVM per TLC run, as every call was before (`RESUME_CHECK_TLC_JVM=per-run`);
- `first warm`: the first call inside a fresh `resumecheck.judge.warm()` block, the driver's
  start included, and the block's end (the driver waited for): what the plugin's or a suite's
  first call pays, against `plain`, the cold call it replaces;
- `warm`: a call in a process that holds a warm block, after one warm-up call per trace:
  `--calls` calls a round (default 10) in one block, a new driver's, the two traces
  alternating. The mean shows what the driver's full collections (and retirements: a new
  driver when its heap passes 1 GiB, `WarmTLC.java`) add, spread over the calls.

Traces: the smallest conforming and violating ResumeCore traces of traces/core with >= 10 events.
Rows run side by side in each round (order rotated), medians over rounds; each call's verdict
is compared with the first plain one's (every field but wall time), and a difference stops the
benchmark with exit code 2: timing wrong answers is worthless.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from clock import cpu_seconds
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge, warm
from resumecheck.tlc import warm as warm_tlc
from resumecheck.tlc.warm import MODE_ENV
from resumecheck.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "traces" / "core"
TICK = os.sysconf("SC_CLK_TCK")


def _process(pid: int | None) -> float:
    """CPU-s of a live process so far (all its threads, the exited ones too)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _drivers(pool: warm_tlc.Pool | None) -> float:
    return sum(_process(d.pid) for d in pool.drivers) if pool is not None else 0.0


def _smallest(status: str) -> Path:
    """The smallest trace of traces/core with this status and at least 10 events (the
    corpus's median is 15): a short trace, not a header alone."""
    manifest = json.loads((CORE / "manifest.json").read_text(encoding="utf-8"))
    names = [n for n, e in manifest.items() if e["status"] == status and _events(CORE / n) >= 10]
    return CORE / min(names, key=lambda n: ((CORE / n).stat().st_size, n))


def _fields(verdict: Verdict) -> dict[str, Any]:
    fields = dataclasses.asdict(verdict)
    del fields["seconds"]
    return fields


@click.command(help=(__doc__ or "").split("\n", 1)[0])
@click.option("--rounds", type=int, default=7, show_default=True, help="rounds (medians of them)")
@click.option("--calls", type=int, default=10, show_default=True, help="warm calls a round")
def main(rounds: int, calls: int) -> None:
    os.environ.pop(MODE_ENV, None)
    spec = default_spec_paths()
    traces = {"conforming": _smallest("conforms"), "violating": _smallest("violates")}
    expected: dict[str, dict[str, Any]] = {}

    def check(kind: str, verdicts: list[Verdict]) -> None:
        got = _fields(verdicts[0])
        if expected.setdefault(kind, got) != got:
            print(f"[bench] verdict of {traces[kind].name} differs: {got}", file=sys.stderr)
            raise SystemExit(2)

    def plain(kind: str) -> float:
        os.environ[MODE_ENV] = "per-run"
        try:
            before = cpu_seconds()
            check(kind, judge([traces[kind]], spec_paths=spec))
            return cpu_seconds() - before
        finally:
            del os.environ[MODE_ENV]

    def first(kind: str) -> float:
        before = cpu_seconds()
        with warm():  # a block of its own: the held one below is not entered yet
            check(kind, judge([traces[kind]], spec_paths=spec))
        return cpu_seconds() - before

    rows: dict[str, Callable[[], float]] = {
        "plain, conforming": lambda: plain("conforming"),
        "plain, violating": lambda: plain("violating"),
        "first warm, conforming": lambda: first("conforming"),
    }
    samples: dict[str, list[float]] = {key: [] for key in [*rows, "warm, conforming"]}
    samples["warm, violating"] = []
    retired = 0
    for round_ in range(rounds):
        keys = list(rows)
        shift = round_ % len(keys)
        for key in keys[shift:] + keys[:shift]:
            samples[key].append(rows[key]())
        with warm() as pool:
            for kind in traces:  # the warm-up call
                check(kind, judge([traces[kind]], spec_paths=spec))
            kinds = list(traces) if round_ % 2 == 0 else list(reversed(traces))
            for call in range(calls):
                kind = kinds[call % 2]
                # A driver that retires under the call is waited for: then its whole CPU is
                # in RUSAGE_CHILDREN and its /proc figure before the call comes off it.
                before = cpu_seconds() + _drivers(pool)
                check(kind, judge([traces[kind]], spec_paths=spec))
                samples[f"warm, {kind}"].append(cpu_seconds() + _drivers(pool) - before)
            retired += sum(d.retired for d in pool.drivers)
        print(f"[bench] round {round_ + 1}/{rounds} done", file=sys.stderr, flush=True)
    print(f"Traces: `{traces['conforming'].name}` ({_events(traces['conforming'])} events), ")
    print(f"`{traces['violating'].name}` ({_events(traces['violating'])} events).\n")
    print("| call | calls | CPU-s, median (min-max) | mean |")
    print("|---|---:|---:|---:|")
    for key, values in samples.items():
        spread = f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"
        print(f"| {key} | {len(values)} | {spread} | {statistics.mean(values):.2f} |")
    print(f"\nWarm drivers retired under the warm calls: {retired}.")


def _events(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()) - 1


if __name__ == "__main__":
    main()
