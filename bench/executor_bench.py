"""What `--executor` costs against a local run: the same batches judged both ways, side by side.

    .venv/bin/python bench/executor_bench.py --out bench/executor-results.md
    .venv/bin/python bench/executor_bench.py --sizes 1,100 --repeats 1        (a quick look)

Each row is ONE `resume-check --format json PATH` call (traces from bench/tracegen.py, or with
--corpus sim from TLC simulating the contract, bench/simulate.py; seeded, 5% violating), waited
for with os.wait4, in three modes:

- `local`: no executor;
- `local:2`: `--executor local:2`; CPU is the whole process tree, so it includes starting the
  LocalCluster's two worker processes and the TLC runs they start;
- `standing`: `--executor tcp://...` on a `dask scheduler` and `dask worker --nworkers 2
  --nthreads 1` that this script starts once on 127.0.0.1, as a real cluster stands between
  calls; CPU is the client's tree plus what the scheduler's and workers' processes (and the TLC
  runs they waited for) spent during the call, from psutil.

"shard CPU-s" is what the workers reported for the shards themselves (the CLI's "executor:
shard ... done" lines). The batch of 1 is the fixed cost of a call, so the difference between
the batches is the cost per event, from which the report extrapolates to a million events,
saying so.

Every executor report must equal the local run's (timings aside), and every local verdict must
be what the generator intended; otherwise the benchmark stops with exit code 2 and writes
nothing: numbers about wrong answers are worthless.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import psutil
from corpus import CORPORA, Trace, generated

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


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=__doc__.split("\n\n")[0] if __doc__ else None,
)
@click.option("--out", type=click.Path(path_type=Path), help="write the report here (else stdout)")
@click.option("--sizes", "batches", default="1,1000", help="batch sizes, comma-separated")
@click.option("--repeats", type=int, default=1, help="rounds of every row")
@click.option("--seed", type=int, default=1)
@click.option(
    "--corpus", type=click.Choice(CORPORA), default="tracegen", help="the generated traces"
)
def main(out: Path | None, batches: str, repeats: int, seed: int, corpus: str) -> None:
    """Exit code 2 (and no report) when a verdict or an executor's report is wrong; passed to
    sys.exit, since click ignores a command's return value."""
    sizes = sorted({int(s) for s in batches.split(",") if s.strip()})
    cli = Path(sys.executable).parent / "resume-check"
    load_before = os.getloadavg()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="executor-bench-") as tmp,
            _standing_cluster(Path(tmp)) as (address, cluster_cpu),
        ):
            traces = generated(corpus, max(sizes), seed)
            folders = {n: _write(Path(tmp) / f"batch-{n:05d}", traces[:n]) for n in sizes}
            modes = (
                ("local", ()),
                ("local:2", ("--executor", "local:2")),
                ("standing", ("--executor", address)),
            )
            rows = [Row(mode, n, options) for n in sizes for mode, options in modes]
            for round_ in range(repeats):
                order = rows[round_ % len(rows) :] + rows[: round_ % len(rows)]
                local_reports: dict[int, dict[str, Any]] = {}
                for row in sorted(order, key=lambda r: r.mode != "local"):
                    outside = cluster_cpu() if row.mode == "standing" else 0.0
                    sample, report = _run(cli, row, folders[row.size])
                    if row.mode == "standing":
                        extra = cluster_cpu() - outside
                        sample = Sample(sample.wall, sample.cpu + extra, sample.shard_cpu)
                    if row.mode == "local":
                        _verify(report, traces[: row.size])
                        local_reports[row.size] = report
                    elif report != local_reports[row.size]:
                        raise BenchError(f"{row.mode}, {row.size} traces: not the local report")
                    row.samples.append(sample)
                    print(f"[bench] {row.mode} {row.size}: {sample}", file=sys.stderr)
            idle = _idle(cluster_cpu)
    except BenchError as exc:
        print(f"executor_bench: {exc}", file=sys.stderr)
        sys.exit(2)
    events = {n: sum(len(t.events) for t in traces[:n]) for n in sizes}
    text = _report(rows, events, repeats, load_before, os.getloadavg(), idle)
    if out:
        out.write_text(text, encoding="utf-8")
        print(f"[bench] wrote {out}", file=sys.stderr)
    else:
        print(text, end="")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _standing_cluster(folder: Path) -> Iterator[tuple[str, Callable[[], float]]]:
    """A scheduler and two one-thread workers on 127.0.0.1, and a function giving the CPU-s
    their processes (and the TLC runs they waited for) have spent so far."""
    import distributed

    dask = Path(sys.executable).parent / "dask"
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = [
        subprocess.Popen(
            [str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            start_new_session=True,
            **quiet,
        ),
        subprocess.Popen(
            [str(dask), "worker", address, "--nworkers", "2", "--nthreads", "1",
             "--no-dashboard", "--host", "127.0.0.1", "--local-directory", str(folder)],
            start_new_session=True,
            **quiet,
        ),
    ]  # fmt: skip

    def cpu() -> float:
        total = 0.0
        for process in started:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(process.pid)
                for member in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        t = member.cpu_times()
                        total += t.user + t.system + t.children_user + t.children_system
        return total

    try:
        with distributed.Client(address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, cpu
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _idle(cluster_cpu: Callable[[], float], seconds: float = 20.0) -> float:
    """CPU-s per second that the standing scheduler and workers spend doing nothing."""
    before, start = cluster_cpu(), time.monotonic()
    time.sleep(seconds)
    return (cluster_cpu() - before) / (time.monotonic() - start)


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
    repeats: int,
    before: tuple[float, float, float],
    after: tuple[float, float, float],
    idle: float,
) -> str:
    cores = len(os.sched_getaffinity(0))
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="minutes")
    lines = [
        "# `--executor` against a local run",
        "",
        f"Written by `bench/executor_bench.py` at {now} on {cores} usable cores (load average "
        f"{before[0]:.1f} before, {after[0]:.1f} after: the machine is shared, so CPU-s is the "
        "figure to trust). Each row is one `resume-check --format json` call; CPU-s is user+"
        "system of the whole process tree (`local:2`: the LocalCluster it starts included; "
        "`standing`: a scheduler and two one-thread workers started before, their CPU-s "
        "during the call added); shard CPU-s is what the workers reported for the shards "
        f"themselves. Medians of {repeats} round(s). Every executor report equalled the "
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
    lines += [
        "",
        f"Idle, the standing scheduler and two workers spend {idle:.3f} CPU-s per second of "
        "wall time (heartbeats, memory monitors), which a call's `standing` CPU-s includes "
        "for as long as it lasts.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
