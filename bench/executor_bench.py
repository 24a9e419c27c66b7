"""What `--executor` costs against a local run: the same batches judged both ways, side by side.

    .venv/bin/python bench/executor_bench.py --out bench/executor-results.md
    .venv/bin/python bench/executor_bench.py --sizes 1,100 --repeats 1        (a quick look)
    .venv/bin/python bench/executor_bench.py --executor tcp://127.0.0.1:8786   (a real cluster)

Each row is ONE `resume-check --format json PATH` call (traces from bench/tracegen.py, seeded,
5% violating), waited for with os.wait4: CPU is user+system seconds of the whole process tree,
which for `--executor local:N` includes the LocalCluster's worker processes and the TLC runs
they start (for a tcp:// cluster only the client: the workers' CPU is then the shards' own
figures, read from the CLI's "executor: shard ... done" lines). The batch of 1 is the fixed cost
of a call, so the difference between the batches is the cost per event, from which the report
extrapolates to a million events, saying so.

Every executor report must equal the local run's (timings aside), and every local verdict must
be what the generator intended; otherwise the benchmark stops with exit code 2 and writes
nothing: numbers about wrong answers are worthless.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracegen import Trace, generate

_SHARD = re.compile(r"^executor: shard \d+/\d+ of \w+ done on .*, ([\d.]+) CPU-s$", re.M)


class BenchError(RuntimeError):
    """The benchmark cannot give trustworthy numbers."""


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    shard_cpu: float
    """The shards' own CPU-s as the workers reported them (0 for a local run)."""


@dataclass
class Row:
    mode: str
    size: int
    options: tuple[str, ...]
    samples: list[Sample] = field(default_factory=list)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, help="write the report here (else stdout)")
    parser.add_argument("--sizes", default="1,1000", help="batch sizes, comma-separated")
    parser.add_argument("--executor", default="local:2", help="the ADDRESS for --executor")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of every row")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    cli = Path(sys.executable).parent / "resume-check"
    load_before = os.getloadavg()
    try:
        with tempfile.TemporaryDirectory(prefix="executor-bench-") as tmp:
            corpus = [generate(i, args.seed) for i in range(max(sizes))]
            folders = {n: _write(Path(tmp) / f"batch-{n:05d}", corpus[:n]) for n in sizes}
            rows = [
                Row(mode, n, options)
                for n in sizes
                for mode, options in (("local", ()), (args.executor, ("--executor", args.executor)))
            ]
            for round_ in range(args.repeats):
                order = rows[round_ % len(rows) :] + rows[: round_ % len(rows)]
                local_reports: dict[int, dict[str, Any]] = {}
                for row in sorted(order, key=lambda r: r.mode != "local"):
                    sample, report = _run(cli, row, folders[row.size])
                    if row.mode == "local":
                        _verify(report, corpus[: row.size])
                        local_reports[row.size] = report
                    elif report != local_reports[row.size]:
                        raise BenchError(f"{row.mode}, {row.size} traces: not the local report")
                    row.samples.append(sample)
                    print(f"[bench] {row.mode} {row.size}: {sample}", file=sys.stderr)
    except BenchError as exc:
        print(f"executor_bench: {exc}", file=sys.stderr)
        return 2
    events = {n: sum(len(t.events) for t in corpus[:n]) for n in sizes}
    text = _report(rows, events, args, load_before, os.getloadavg())
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        print(f"[bench] wrote {args.out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


def _write(folder: Path, traces: list[Trace]) -> Path:
    folder.mkdir(parents=True)
    for trace in traces:
        trace.write(folder)
    return folder


def _run(cli: Path, row: Row, folder: Path) -> tuple[Sample, dict[str, Any]]:
    command = [str(cli), "--format", "json", *row.options, str(folder)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    code = os.waitstatus_to_exitcode(status)
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        raise BenchError(f"{row.mode}: exit code {code}, no report: {stderr[-2000:]}") from None
    for name in ("started", "seconds", "command"):
        report.pop(name, None)
    for trace in report["traces"]:
        trace.pop("seconds", None)
    shard_cpu = sum(float(m) for m in _SHARD.findall(stderr))
    return Sample(wall, usage.ru_utime + usage.ru_stime, shard_cpu), report


def _verify(report: dict[str, Any], traces: list[Trace]) -> None:
    """The local run's verdicts are the generator's: the executor is then compared with it."""
    wanted = {t.file: t.expected for t in traces}
    for verdict in report["traces"]:
        want = wanted.pop(Path(verdict["path"]).name)
        got = (verdict["status"], verdict.get("event_index"), tuple(verdict.get("properties", ())))
        if got != (want.status, want.event, want.properties):
            raise BenchError(f"{verdict['path']}: got {got}, wanted {want}")
    if wanted:
        raise BenchError(f"no verdict for {len(wanted)} trace(s)")


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _report(
    rows: list[Row],
    events: dict[int, int],
    args: argparse.Namespace,
    before: tuple[float, float, float],
    after: tuple[float, float, float],
) -> str:
    cores = len(os.sched_getaffinity(0))
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes")
    lines = [
        "# `--executor` against a local run",
        "",
        f"Written by `bench/executor_bench.py` at {now} on {cores} usable cores (load average "
        f"{before[0]:.1f} before, {after[0]:.1f} after: the machine is shared, so CPU-s is the "
        "figure to trust). Each row is one `resume-check --format json` call; CPU-s is user+"
        "system of the whole process tree (for `local:N` the cluster's worker processes and "
        "their TLC runs included); shard CPU-s is what the workers reported for the shards "
        f"themselves. Medians of {args.repeats} round(s). Every executor report equalled the "
        "local run's, and every local verdict was the one the generator intended.",
        "",
        "| traces | events | mode | wall s | CPU-s | shard CPU-s | events per CPU-s |",
        "|---:|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        wall = _median([s.wall for s in row.samples])
        cpu = _median([s.cpu for s in row.samples])
        shard = _median([s.shard_cpu for s in row.samples])
        shard_text = f"{shard:.2f}" if row.mode != "local" else "-"
        lines.append(
            f"| {row.size} | {events[row.size]} | {row.mode} | {wall:.2f} | {cpu:.2f} | "
            f"{shard_text} | {events[row.size] / cpu:.0f} |"
        )
    sizes = sorted(events)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        extra = events[large] - events[small]
        lines += ["", f"## Per million events (an extrapolation from {large} traces)", ""]
        for mode in dict.fromkeys(r.mode for r in rows):
            by = {r.size: r for r in rows if r.mode == mode}
            fixed = _median([s.cpu for s in by[small].samples])
            cpu = _median([s.cpu for s in by[large].samples])
            marginal = (cpu - fixed) / extra * 1e6
            wall_fixed = _median([s.wall for s in by[small].samples])
            wall = _median([s.wall for s in by[large].samples])
            lines.append(
                f"- {mode}: fixed cost of a call {fixed:.1f} CPU-s ({wall_fixed:.1f} s wall); "
                f"then {marginal:.0f} CPU-s and {(wall - wall_fixed) / extra * 1e6:.0f} s wall "
                f"per million events (extrapolated linearly from {extra} events)."
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
