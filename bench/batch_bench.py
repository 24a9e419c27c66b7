"""Batched versus per-trace TLC runs: what judging a batch in ONE TLC run buys.

    .venv/bin/python bench/batch_bench.py --out bench/results.md        (what `make bench` runs)
    .venv/bin/python bench/batch_bench.py --sizes 1,20 --repeats 1 --sample 3   (a quick look)

resume-check's design bet is that TLC's fixed cost (JVM start, parsing the contract) dominates
judging one trace, so a batch of N traces should cost far less than N runs. This measures the
bet end to end, the way a user pays for it: the `resume-check` CLI as a subprocess, so Python
start-up, JVM start, SANY and TLC all count.

The traces come from bench/tracegen.py: deterministic (seeded), realistic (chains and
fan-out/fan-in, crashes, interrupts, resume values, effects, forks), mostly conformant with 5%
violating. Every trace is checked against the trace schema before anything is timed, and every
timed run's verdicts are checked against what the generator intended, down to the first bad
event and the properties it breaks: a benchmark that times wrong answers is worthless, so any
disagreement stops the run with exit code 2 and no results file.

Per-trace runs of a large batch take long (a few seconds each), so for batches larger than
--sample they are measured on an evenly spread sample and the total is extrapolated from the
sample's median, and labelled so. Batched runs are repeated (--repeats) and the median is
reported, since a shared machine is noisy; the load average is recorded for the same reason.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumecheck.tlc.locate import find_java
from resumecheck.trace.schema import load_schema
from tracegen import TARGET_EVENTS, Trace, generate

TARGET_SIZE = 1000
TARGET_SECONDS = 30.0


class BenchError(RuntimeError):
    """The benchmark cannot give trustworthy numbers (wrong verdicts, invalid traces, no CLI)."""


@dataclass(frozen=True)
class Row:
    """The measurements for one batch size."""

    size: int
    events: int
    violating: int
    batched: list[float]  # wall seconds of each repeat of the one batched run
    per_trace: list[float]  # wall seconds of each per-trace run measured
    sampled: int  # distinct traces run one by one
    per_trace_total: float  # measured sum, or the sample median times `size`
    extrapolated: bool

    @property
    def batched_median(self) -> float:
        return statistics.median(self.batched)

    @property
    def speedup(self) -> float:
        return self.per_trace_total / self.batched_median

    @property
    def events_per_second(self) -> float:
        return self.events / self.batched_median


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark; exit code 2 (and no results file) when a verdict is wrong."""
    args = _parse(argv)
    try:
        return _bench(args)
    except BenchError as exc:
        print(f"batch_bench: FAILED: {exc}", file=sys.stderr)
        return 2


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        default="1,100,1000",
        type=_sizes,
        help="batch sizes, comma-separated (default: 1,100,1000)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="batched runs per size (median)")
    parser.add_argument(
        "--sample", type=int, default=20, help="traces run one by one per size (then extrapolated)"
    )
    parser.add_argument("--seed", type=int, default=1, help="corpus seed (default: 1)")
    parser.add_argument("--out", type=Path, help="write the results as Markdown here")
    parser.add_argument(
        "--workdir", type=Path, help="keep the generated traces here (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    if not args.sizes or min(args.sizes) < 1 or args.repeats < 1 or args.sample < 1:
        parser.error("--sizes, --repeats and --sample must be positive")
    return args


def _sizes(text: str) -> list[int]:
    """`1,100,1000` -> [1, 100, 1000]: the batch sizes, each measured on its own."""
    try:
        return sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None


def _bench(args: argparse.Namespace) -> int:
    cli = _find_cli()
    machine = _machine()
    started = datetime.datetime.now(datetime.UTC)
    temp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="resume-check-bench-")) if temp else args.workdir
    try:
        corpus = _corpus(max(args.sizes), args.seed)
        dirs = _write_batches(workdir, corpus, args.sizes)
        _log(f"{len(corpus)} traces, {sum(len(t.events) for t in corpus)} events, schema-valid")
        # One untimed run so that the first timed one does not also pay for a cold disk cache.
        _timed_cli(cli, [dirs[min(args.sizes)]], corpus[: min(args.sizes)])
        load_before = os.getloadavg()
        rows = [_measure(cli, dirs[size], corpus[:size], args) for size in args.sizes]
        load_after = os.getloadavg()
    finally:
        if temp:
            shutil.rmtree(workdir, ignore_errors=True)
    report = _report(rows, args, machine, started, (load_before, load_after))
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
        _log(f"wrote {args.out}")
    return 0


def _log(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def _find_cli() -> Path:
    """The `resume-check` script of this interpreter's environment, i.e. the code under test."""
    cli = Path(sys.executable).parent / "resume-check"
    if not cli.is_file():
        raise BenchError(f"{cli} not found; install the project (make setup)")
    return cli


def _machine() -> dict[str, str]:
    """What the numbers depend on: cores, the JVM, Python and the code's revision."""
    java = find_java()
    version = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    first = (version.stderr or version.stdout).splitlines()
    root = Path(__file__).resolve().parent.parent
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "nproc": str(len(os.sched_getaffinity(0))),
        "java": first[0] if first else "unknown",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "commit": (commit or "unknown") + (" with uncommitted changes" if dirty else ""),
    }


def _corpus(count: int, seed: int) -> list[Trace]:
    """The first `count` traces, each checked against the schema the CLI checks them with."""
    schema = load_schema("ResumeCore")
    if schema is None:
        raise BenchError("the installed resumecheck ships no ResumeCore schema")
    corpus = [generate(i, seed) for i in range(count)]
    for trace in corpus:
        problem = schema.header_problem(trace.header)
        for i, event in enumerate(trace.events, start=1):
            problem = problem or schema.event_problem(event)
            if problem:
                raise BenchError(f"generated trace {trace.name} event {i} is invalid: {problem}")
    return corpus


def _write_batches(workdir: Path, corpus: list[Trace], sizes: list[int]) -> dict[int, Path]:
    """One folder per size holding the first `size` traces: the CLI judges a whole folder."""
    dirs = {}
    for size in sizes:
        folder = workdir / f"batch-{size:05d}"
        shutil.rmtree(folder, ignore_errors=True)  # a kept --workdir may hold an older corpus
        folder.mkdir(parents=True)
        for trace in corpus[:size]:
            trace.write(folder)
        dirs[size] = folder
    return dirs


def _measure(cli: Path, folder: Path, traces: list[Trace], args: argparse.Namespace) -> Row:
    """The batched runs, then per-trace runs of a sample, all verified."""
    size = len(traces)
    batched = []
    for repeat in range(args.repeats):
        seconds = _timed_cli(cli, [folder], traces)
        batched.append(seconds)
        _log(f"size {size}: batched run {repeat + 1}/{args.repeats}: {seconds:.2f} s")
    by_name = {t.name: t for t in traces}
    names = sorted(by_name)
    if size <= args.sample:
        # Every trace alone; a tiny batch is run often enough for a median of `repeats` runs.
        runs = max(1, -(-args.repeats // size))
        chosen = [name for name in names for _ in range(runs)]
    else:
        chosen = [names[i * size // args.sample] for i in range(args.sample)]
    times: dict[str, list[float]] = {}
    for name in chosen:
        seconds = _timed_cli(cli, [folder / f"{name}.jsonl"], [by_name[name]])
        times.setdefault(name, []).append(seconds)
    per_run = [s for runs in times.values() for s in runs]
    _log(f"size {size}: {len(per_run)} per-trace runs, median {statistics.median(per_run):.2f} s")
    extrapolated = size > args.sample
    if extrapolated:
        total = statistics.median(per_run) * size
    else:
        total = sum(statistics.median(runs) for runs in times.values())
    return Row(
        size=size,
        events=sum(len(t.events) for t in traces),
        violating=sum(t.expected.status == "violates" for t in traces),
        batched=batched,
        per_trace=per_run,
        sampled=len(times),
        per_trace_total=total,
        extrapolated=extrapolated,
    )


def _timed_cli(cli: Path, paths: list[Path], traces: list[Trace]) -> float:
    """Wall time of one `resume-check --format json PATHS...`; raises if any verdict is wrong."""
    command = [str(cli), "--format", "json", "--no-progress", *map(str, paths)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    _verify(done, traces)
    return seconds


def _verify(done: subprocess.CompletedProcess[str], traces: list[Trace]) -> None:
    """Every trace got exactly the verdict it was generated for, and the exit code agrees."""
    try:
        document: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise BenchError(
            f"resume-check exited {done.returncode} without a JSON report: "
            f"{done.stderr.strip()[-2000:]}"
        ) from None
    expected = {t.name: t for t in traces}
    wrong: list[str] = []
    seen = set()
    for verdict in document["traces"]:
        name = Path(verdict["path"]).stem
        seen.add(name)
        trace = expected.get(name)
        if trace is None:
            wrong.append(f"{name}: judged but not generated")
            continue
        want = trace.expected
        got = (
            verdict["status"],
            verdict.get("event_index"),
            tuple(verdict.get("properties", ())),
            verdict["events"],
        )
        if got != (want.status, want.event, want.properties, len(trace.events)):
            wrong.append(
                f"{name}: got {got[0]} at event {got[1]} {list(got[2])} "
                f"({got[3]} events), wanted {want.status} at event {want.event} "
                f"{list(want.properties)} ({len(trace.events)} events); "
                f"{verdict.get('reason', '')}"
            )
    wrong.extend(f"{name}: no verdict" for name in sorted(set(expected) - seen))
    should_exit = 1 if any(t.expected.status == "violates" for t in traces) else 0
    if not wrong and done.returncode != should_exit:
        wrong.append(f"exit code {done.returncode}, wanted {should_exit}")
    if wrong:
        more = f" (and {len(wrong) - 10} more)" if len(wrong) > 10 else ""
        raise BenchError(
            f"{len(wrong)} wrong verdict(s){more}; the numbers would be meaningless:\n  "
            + "\n  ".join(wrong[:10])
        )


def _report(
    rows: list[Row],
    args: argparse.Namespace,
    machine: dict[str, str],
    started: datetime.datetime,
    loads: tuple[tuple[float, float, float], tuple[float, float, float]],
) -> str:
    """The results as Markdown: the table first, then what it was measured on and how."""
    table = [
        "| batch size | traces (violating) | events | batched wall, median "
        f"of {args.repeats} (min-max) | per-trace wall, total | per-trace basis "
        "| speed-up | events/s (batched) |",
        "|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        median = statistics.median(row.per_trace)
        if row.extrapolated:
            total = f"≈ {row.per_trace_total:.0f} s (extrapolated)"
            basis = (
                f"extrapolated: median of a {row.sampled}-trace sample, "
                f"{median:.2f} s/trace x {row.size}"
            )
        else:
            total = f"{row.per_trace_total:.2f} s (measured)"
            basis = f"measured: all {row.size} trace(s), {len(row.per_trace)} run(s)"
        table.append(
            f"| {row.size} | {row.size} ({row.violating}) | {row.events} "
            f"| {row.batched_median:.2f} s ({min(row.batched):.2f}-{max(row.batched):.2f}) "
            f"| {total} | {basis} | {row.speedup:.1f}x | {row.events_per_second:.0f} |"
        )
    target = next((r for r in rows if r.size == TARGET_SIZE), None)
    if target is None:
        verdict = f"not measured in this run (no batch of {TARGET_SIZE})."
    else:
        met = "met" if target.batched_median <= TARGET_SECONDS else "MISSED"
        verdict = (
            f"**{met}**: the batch of {TARGET_SIZE} took {target.batched_median:.1f} s "
            f"(median of {len(target.batched)})."
        )
    before, after = loads
    nproc = int(machine["nproc"])
    busy = max(before[0], after[0]) > nproc * 0.75
    lines = [
        "# resume-check batch benchmark",
        "",
        "Wall time of judging N traces with ONE `resume-check --format json DIR` call (one TLC "
        "run for the batch) versus one `resume-check --format json FILE` call per trace. Both "
        "run the CLI as a subprocess, so Python start-up, JVM start, SANY parsing and TLC all "
        "count. Every run's verdicts were checked against what the generator intended "
        "(status, first bad event, properties).",
        "",
        *table,
        "",
        f"Target: the batch of {TARGET_SIZE} judged within {TARGET_SECONDS:.0f} s — {verdict}",
        "",
        "## Machine",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- nproc: {machine['nproc']}",
        f"- java: {machine['java']}",
        f"- python: {machine['python']}",
        f"- platform: {machine['platform']}",
        f"- code: {machine['commit']}",
        f"- load average (1/5/15 min) before the timed runs: {_load(before)}; after: "
        f"{_load(after)}"
        + (
            " — the machine was busy with other work, so absolute times are inflated; "
            "the ratios were measured under the same load"
            if busy
            else ""
        ),
        "",
        "## Method",
        "",
        f"- corpus: `bench/tracegen.py`, seed {args.seed}; the batch of N is the first N "
        f"traces, ~{TARGET_EVENTS} events each: chains and fan-out/fan-in workflows with "
        "crashes and resumes, interrupts and resume values, effects, task failures and "
        "retries, forks, sync/async/exit durability, exactly-once/at-least-once effects; "
        "1 in 20 traces violates the contract (each of CV, PC, RD, EO, FD, CO in turn) and "
        "ends at its first bad event.",
        f"- batched: {args.repeats} runs per size after one untimed warm-up run; the table "
        "shows the median and the range.",
        f"- per-trace: batches up to {args.sample} traces run every trace alone (measured); "
        f"larger ones run a sample of {args.sample} evenly spread traces once each and "
        "multiply the sample's median by N (extrapolated, labelled so).",
        "- speed-up: per-trace total / batched median; events/s: events in the batch / "
        "batched median.",
        "- reproduce: `make bench` (or `.venv/bin/python bench/batch_bench.py --help`).",
        "",
    ]
    return "\n".join(lines)


def _load(values: tuple[float, float, float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
