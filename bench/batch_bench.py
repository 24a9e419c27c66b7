"""What judging ResumeCore traces costs: batch sizes, history length, one process per trace.

    .venv/bin/python bench/batch_bench.py --out bench/results.md          (what `make bench` runs)
    .venv/bin/python bench/batch_bench.py --sizes 1,100 --repeats 1      (a quick look)

Each row is one `resume-check --format json --no-progress PATH` call, timed the way a user pays
for it: Python start-up, the JVM, SANY and TLC all count. Besides wall time it records the CPU
seconds of the whole process tree (the CLI and the JVM it waits for, from os.wait4) and the
peak RSS of its largest process (the JVM), because the machine this runs on is shared: wall
time says how busy the neighbours were, CPU time what the checker itself spent.

Rows (traces from bench/tracegen.py, or with --corpus sim from TLC simulating the contract's
reference runtime, bench/simulate.py; seeded, 5% violating; the last row recorded ones):

- batches of 1, 100 and 1,000 traces of ~100 events, each in ONE call (one TLC run);
- ONE 10,000-event trace (a long-running thread), against the batch of 100 (about as many
  events in short histories): the contract checks each property on the move that can break
  it, so the cost of an event should not grow with the history before it. The ratio of their
  events per CPU-second says whether it does; the target is the long trace in 10 CPU-s;
- a few single traces, one process each: the price of not batching, extrapolated to N;
- the committed traces of traces/ and corpora/ (every one whose header names the ResumeCore
  contract, the violating ones too), copied into one folder and judged in ONE call, against
  the generated batch closest in events: whether real histories cost what generated ones do.
  The traces of other contracts are left out: each contract is a TLC run of its own spec, so
  they would add other specs' fixed costs and per-event costs to a rate that is ResumeCore's.

Every row runs once per round, all rows side by side in each round (order rotated), for
--repeats rounds; the report gives medians, and ratios are taken within a round and then the
median, so a noisy neighbour slows both sides of a ratio alike. Every run's verdicts are
checked against what the generator intended -- status, first bad event, properties,
completeness -- or, for the recorded traces, what their folder's manifest.json records (the
same, completeness where recorded), and any difference stops the benchmark with exit code 2
and no results file: a benchmark that times wrong answers is worthless.
"""

from __future__ import annotations

import datetime
import json
import math
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import simulate
from corpus import CORPORA, Expected, Trace, generated
from resumecheck import tracemanifest
from resumecheck.batch import TLC_WORKERS
from resumecheck.contract import SPEC_PATH_ENV
from resumecheck.tlc.locate import find_java
from resumecheck.tlc.runner import JAVA_OPTS_ENV
from resumecheck.tlc.warm import MODE_ENV
from resumecheck.trace.schema import load_schema
from tracegen import LONG_EVENTS, TARGET_EVENTS, generate_long

TARGET_LONG_CPU = 10.0  # CPU-seconds for the 10,000-event trace
# Event fields a --baseline checker may not know (ResumeCore v3: a nested load's host); the
# baseline judges the traces without them.
NEWER_FIELDS = ("under", "into")
SHORT_SIZE = 100  # the batch the long trace is compared with
ROOT = Path(__file__).resolve().parent.parent
TRACES = (ROOT / "traces", ROOT / "corpora")  # the committed traces: hand-written, recorded
REAL_CONTRACT = "ResumeCore"  # the only contract of the generated rows


class BenchError(RuntimeError):
    """The benchmark cannot give trustworthy numbers (wrong verdicts, invalid traces, no CLI)."""


@dataclass(frozen=True)
class Sample:
    """One CLI call: wall seconds, CPU seconds of the process tree, peak RSS in KiB."""

    wall: float
    cpu: float
    rss_kib: int


@dataclass(frozen=True)
class Recorded(Trace):
    """A committed trace of traces/ or corpora/ and the verdict its manifest records; `name`
    is its path in the repository with `__` for `/`, so that every area fits in one flat folder."""

    source: Path

    @property
    def file(self) -> str:
        return self.name + self.source.suffix

    def write(self, folder: Path) -> Path:
        """Copies the file as recorded, byte for byte."""
        return Path(shutil.copyfile(self.source, folder / self.file))


@dataclass
class Row:
    """One input judged in one call per round."""

    key: str
    path: Path
    traces: list[Trace]
    samples: list[Sample] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    options: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    """Another command instead of judging `path` (the `spec` row)."""
    once: bool = False
    """Run in the first round only (the 10,000-trace batch: minutes per call)."""
    cli: tuple[str, ...] = ()
    """Another checker's command instead of this one's (`--baseline`): its verdicts follow
    its own contract, so only that it judged every trace is checked."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Traces of other contracts not in this input, by contract (the `real` row)."""

    @property
    def events(self) -> int:
        return sum(len(t.events) for t in self.traces)

    @property
    def violating(self) -> int:
        return sum(t.expected.status == "violates" for t in self.traces)

    @property
    def reached(self) -> int:
        """Events up to each violating trace's first bad event: the TLC run that reports it
        matches nothing after it, and a recorded trace may go on (a generated one ends there)."""
        return sum(t.expected.event or len(t.events) for t in self.traces)

    def median(self, attribute: str) -> float:
        return statistics.median(getattr(s, attribute) for s in self.samples)

    def spread(self, attribute: str) -> str:
        values = [getattr(s, attribute) for s in self.samples]
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


@dataclass(frozen=True)
class Options:
    """The command line, as the functions below read it (`args`)."""

    sizes: list[int]
    repeats: int
    once_from: int
    long_events: int
    singles: int
    before_sizes: list[int]
    jobs_size: int
    real: bool
    spec: bool
    baseline: str | None
    baseline_size: int
    corpus: str
    seed: int
    out: Path | None
    workdir: Path | None


def _sizes(ctx: click.Context, param: click.Parameter, text: str) -> list[int]:
    """`1,100,1000` -> [1, 100, 1000]; the defaults are strings too, parsed the same way."""
    try:
        return sorted({int(part) for part in text.split(",") if part.strip() and part != "-"})
    except ValueError:
        raise click.BadParameter(f"not a list of integers: {text!r}") from None


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=__doc__.split("\n\n")[0] if __doc__ else None,
)
@click.option(
    "--sizes",
    default="1,100,1000,10000",
    callback=_sizes,
    help="batch sizes, comma-separated (default: 1,100,1000,10000; --sizes 1,100 drops "
    "the slow rows)",
)
@click.option("--repeats", type=int, default=3, help="rounds (medians of them)")
@click.option(
    "--once-from",
    type=int,
    default=10000,
    help="batches of at least this many traces run in the first round only (default 10000)",
)
@click.option(
    "--long-events",
    type=int,
    default=LONG_EVENTS,
    help=f"events of the one long trace (default {LONG_EVENTS}; 0: no long trace)",
)
@click.option(
    "--singles",
    type=int,
    default=4,
    help="traces judged one process each per round (default 4; 0: none)",
)
@click.option(
    "--before-sizes",
    default="1,100,1000",
    callback=_sizes,
    help="batch sizes also judged the way before the Java override, through the generated "
    "module (default: 1,100,1000; an empty list: none)",
)
@click.option(
    "--jobs-size", type=int, default=1000, help="the batch also judged with --jobs 2 (0: none)"
)
@click.option(
    "--real/--no-real",
    default=True,
    help="judge the committed ResumeCore traces of traces/ and corpora/ (violating ones too) "
    "in one call, against the generated batch closest in events; verdicts checked against the "
    "manifests (default: on)",
)
@click.option(
    "--no-spec",
    "spec",
    flag_value=False,
    default=True,
    help="do not time `resume-check spec` (by default once per round, and once with a "
    "JVM per TLC run)",
)
@click.option(
    "--baseline",
    metavar="REF",
    help="also judge the batch of --baseline-size with the checker and spec at this git "
    "commit (e.g. the last v2 one), side by side in every round",
)
@click.option(
    "--baseline-size", type=int, default=1000, help="the batch --baseline judges (default 1000)"
)
@click.option(
    "--corpus",
    type=click.Choice(CORPORA),
    default="tracegen",
    help="the generated traces: bench/tracegen.py's simulator (default; the corpus the v2 "
    "baseline is measured on) or TLC simulating the contract (bench/simulate.py)",
)
@click.option("--seed", type=int, default=1, help="corpus seed (default: 1)")
@click.option("--out", type=click.Path(path_type=Path), help="write the results as Markdown here")
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    help="keep the generated traces here (default: a temp dir)",
)
def main(**options: Any) -> None:
    """Runs the benchmark; exit code 2 (and no results file) when a verdict is wrong. The
    exit code is passed to sys.exit: click ignores a command's return value."""
    args = Options(**options)
    if not args.sizes or min(args.sizes) < 1 or args.repeats < 1:
        raise click.UsageError("--sizes and --repeats must be positive")
    if args.long_events < 0 or args.singles < 0:
        raise click.UsageError("--long-events and --singles must not be negative")
    if args.corpus == "sim" and args.long_events:
        raise click.UsageError("--corpus sim has no long trace yet: add --long-events 0")
    try:
        code = _bench(args)
    except BenchError as exc:
        print(f"batch_bench: FAILED: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


def _bench(args: Options) -> int:
    cli = _find_cli()
    _start_spawner()
    machine = _machine()
    started = datetime.datetime.now(datetime.UTC)
    temp = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="resume-check-bench-")) if temp else args.workdir
    try:
        rows = _rows(workdir, args)
        if args.baseline:
            rows += _baseline_rows(rows, args, workdir)
        for row in rows:
            _log(f"{row.key}: {len(row.traces)} trace(s), {row.events} events")
        # One untimed run, so that the first timed one does not also pay for a cold disk cache.
        _run(cli, rows[0])
        load_before = os.getloadavg()
        for round_ in range(args.repeats):
            shift = round_ % len(rows)
            for row in rows[shift:] + rows[:shift]:
                if row.once and round_ > 0:
                    continue
                sample = _run(cli, row)
                row.samples.append(sample)
                _log(
                    f"round {round_ + 1}/{args.repeats} {row.key}: {sample.wall:.2f} s wall, "
                    f"{sample.cpu:.2f} CPU-s, {sample.rss_kib // 1024} MiB"
                )
        load_after = os.getloadavg()
    finally:
        if args.baseline:
            _git("worktree", "remove", "--force", str(workdir / "baseline"))
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


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def _machine() -> dict[str, str]:
    """What the numbers depend on: cores, the JVM and its options, Python, the code."""
    java = find_java()
    version = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    first = (version.stderr or version.stdout).splitlines()
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "nproc": f"{len(os.sched_getaffinity(0))} usable of {os.cpu_count()}",
        "java": first[0] if first else "unknown",
        "java options": os.environ.get(JAVA_OPTS_ENV, "") or "none",
        "TLC workers": str(TLC_WORKERS),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "commit": commit + (" with uncommitted changes" if dirty else ""),
    }


def _rows(workdir: Path, args: Options) -> list[Row]:
    """The inputs, written one folder each (the CLI judges a folder), schema-checked."""
    corpus = generated(args.corpus, max(args.sizes), args.seed)
    rows = [
        Row(f"batch-{n}", workdir / f"batch-{n:05d}", corpus[:n], once=n >= args.once_from)
        for n in args.sizes
    ]
    module = {"RESUME_CHECK_TRACE_DATA": "module"}
    rows += [
        Row(f"module-{n}", workdir / f"batch-{n:05d}", corpus[:n], env=module)
        for n in args.before_sizes
        if n in args.sizes
    ]
    if args.jobs_size in args.sizes:
        n = args.jobs_size
        rows.append(
            Row(f"jobs2-{n}", workdir / f"batch-{n:05d}", corpus[:n], options=("--jobs", "2"))
        )
    if args.spec:
        spec = ("spec", "--format", "json", "--no-progress")
        rows.append(Row("spec", workdir, [], command=spec))
        # Before: SANY loaded anew for every run too, and a JVM per configuration and mutant
        # (resumecheck.tlc.warm's fallback).
        for mode in ("loader-per-run", "per-run"):
            rows.append(Row(f"spec-{mode}", workdir, [], command=spec, env={MODE_ENV: mode}))
    if args.long_events:
        long = generate_long(args.seed, args.long_events)
        rows.append(Row("long", workdir / "long", [long]))
    # Singles spread evenly over the first 100 traces, one of them a violating one.
    pool = corpus[:SHORT_SIZE]
    picks = sorted({i * len(pool) // args.singles for i in range(args.singles)})
    violating = [i for i, t in enumerate(pool) if t.expected.status == "violates"]
    if picks and violating and not set(picks) & set(violating):
        picks[len(picks) // 2] = violating[0]
    rows += [Row(f"single-{i}", workdir / f"single-{i:04d}", [pool[i]]) for i in sorted(picks)]
    if args.real:
        recorded = _recorded()
        left_out: dict[str, int] = {}
        for trace in recorded:
            contract = str(trace.header.get("contract"))
            if contract != REAL_CONTRACT:
                left_out[contract] = left_out.get(contract, 0) + 1
        kept = [t for t in recorded if t.header.get("contract") == REAL_CONTRACT]
        if not kept:
            raise BenchError(f"no {REAL_CONTRACT} trace under {' or '.join(map(str, TRACES))}")
        rows.append(Row("real", workdir / "real", kept, left_out=left_out))
    schema = load_schema("ResumeCore")
    if schema is None:
        raise BenchError("the installed resumecheck ships no ResumeCore schema")
    checked: set[str] = set()
    for row in rows:
        if row.env or row.options or row.command:
            continue  # the same folder as another row
        shutil.rmtree(row.path, ignore_errors=True)  # a kept --workdir may hold an older corpus
        row.path.mkdir(parents=True)
        for trace in row.traces:
            if trace.name not in checked:
                _schema_check(schema, trace)
                checked.add(trace.name)
            trace.write(row.path)
    return rows


def _recorded() -> list[Recorded]:
    """Every trace of traces/ and corpora/ (any contract) with the verdict its manifest
    records: properties sorted (a manifest keeps them in no particular order), completeness
    only where recorded."""
    traces: list[Recorded] = []
    for path, entry in sorted(tracemanifest.expected(*TRACES).items()):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        name = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", "__")
        expected = Expected(
            entry["status"],
            entry.get("event"),
            tuple(sorted(entry.get("properties", ()))),
            entry.get("complete"),
        )
        events = [json.loads(line) for line in lines[1:]]
        traces.append(Recorded(name, json.loads(lines[0]), events, expected, path))
    files = [t.file for t in traces]
    if len(set(files)) != len(files):
        raise BenchError("two recorded traces flatten to the same name")
    return traces


def _baseline_rows(rows: list[Row], args: Options, workdir: Path) -> list[Row]:
    """The batch judged by the checker and spec at `--baseline`: a git worktree of that
    commit, its package first on PYTHONPATH and its spec first on the spec path."""
    batch = next((r for r in rows if r.key == f"batch-{args.baseline_size}"), None)
    if batch is None:
        raise BenchError(f"--baseline-size {args.baseline_size} is not one of --sizes")
    tree = workdir / "baseline"
    _git("worktree", "remove", "--force", str(tree))
    if not _git("worktree", "add", "--detach", str(tree), args.baseline) and not tree.is_dir():
        raise BenchError(f"--baseline {args.baseline}: no such commit")
    cli = (sys.executable, "-c", "import sys; from resumecheck.cli import main; main()")
    env = {"PYTHONPATH": str(tree / "checker"), SPEC_PATH_ENV: str(tree / "spec")}
    # the same traces without the fields that version's schema did not know yet
    folder = workdir / f"baseline-batch-{args.baseline_size:05d}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for trace in batch.traces:
        trace.write(folder)
        path = folder / trace.file
        lines = path.read_text(encoding="utf-8").splitlines()
        events = [json.loads(line) for line in lines[1:]]
        for event in events:
            for name in NEWER_FIELDS:
                event.pop(name, None)
        path.write_text("\n".join([lines[0], *map(json.dumps, events)]) + "\n", encoding="utf-8")
    return [Row(f"baseline-{args.baseline_size}", folder, batch.traces, env=env, cli=cli)]


def _schema_check(schema: Any, trace: Trace) -> None:
    problem = schema.header_problem(trace.header)
    for i, event in enumerate(trace.events, start=1):
        problem = problem or schema.event_problem(event)
        if problem:
            raise BenchError(f"trace {trace.name} event {i} is invalid: {problem}")


def _run(cli: Path, row: Row) -> Sample:
    """One `resume-check --format json ROW` call, waited for with os.wait4 so that its
    resource usage covers the CLI and every process it waited for (the JVM); raises if any
    verdict is wrong.

    The call is started from a fresh child of a small fork server, not from this process:
    Linux counts the RSS a process had when it called exec in the new program's peak RSS,
    and this process holds the whole corpus (half a gigabyte at 10,000 traces)."""
    judge = list(row.cli) or [str(cli)]
    command = [*judge, "--format", "json", "--no-progress", *row.options, str(row.path)]
    if row.command:
        command = [str(cli), *row.command]
    assert _SPAWNER is not None
    code, stdout, stderr, wall, cpu, rss = _SPAWNER.apply(_spawn, (command, row.env))
    _verify(row, code, stdout, stderr)
    return Sample(wall, cpu, rss)


_SPAWNER: Any = None


def _start_spawner() -> None:
    """The fork server and its one-task workers, started while this process is still small."""
    global _SPAWNER
    context = multiprocessing.get_context("forkserver")
    _SPAWNER = context.Pool(1, maxtasksperchild=1)
    _SPAWNER.apply(int, (0,))  # starts the server and a worker now


def _spawn(command: list[str], env: dict[str, str]) -> tuple[int, str, str, float, float, int]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, env={**os.environ, **env})
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    return code, stdout, stderr, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _verify(row: Row, code: int, stdout: str, stderr: str) -> None:
    """Every trace got exactly the verdict it was generated for (a recorded trace: the one its
    manifest records), and the exit code agrees."""
    if row.command:
        if code != 0:
            raise BenchError(f"{row.key}: exit code {code}: {stderr.strip()[-2000:]}")
        return
    try:
        document: dict[str, Any] = json.loads(stdout)
    except json.JSONDecodeError:
        raise BenchError(
            f"{row.key}: resume-check exited {code} without a JSON report: {stderr.strip()[-2000:]}"
        ) from None
    if row.cli:
        judged = len(document.get("traces", []))
        if code not in (0, 1) or judged != len(row.traces):
            raise BenchError(f"{row.key}: exit code {code}, {judged} of {len(row.traces)} judged")
        return
    expected = {t.file: t for t in row.traces}
    wrong: list[str] = []
    seen = set()
    for verdict in document["traces"]:
        name = Path(verdict["path"]).name
        seen.add(name)
        trace = expected.get(name)
        if trace is None:
            wrong.append(f"{name}: judged but not in the input")
            continue
        want = trace.expected
        properties = tuple(verdict.get("properties", ()))
        complete = verdict.get("complete")
        if isinstance(trace, Recorded):  # as _recorded reads a manifest
            properties = tuple(sorted(properties))
            complete = None if want.complete is None else complete
        got = (
            verdict["status"],
            verdict.get("event_index"),
            properties,
            complete,
            verdict["events"],
        )
        if got != (want.status, want.event, want.properties, want.complete, len(trace.events)):
            wrong.append(
                f"{name}: got {got[0]} at event {got[1]} {list(got[2])} complete={got[3]} "
                f"({got[4]} events), wanted {want.status} at event {want.event} "
                f"{list(want.properties)} complete={want.complete} ({len(trace.events)} events); "
                f"{verdict.get('reason', '')}"
            )
    wrong.extend(f"{name}: no verdict" for name in sorted(set(expected) - seen))
    should_exit = 1 if row.violating else 0
    if not wrong and code != should_exit:
        wrong.append(f"exit code {code}, wanted {should_exit}")
    if wrong:
        more = f" (and {len(wrong) - 10} more)" if len(wrong) > 10 else ""
        raise BenchError(
            f"{row.key}: {len(wrong)} wrong verdict(s){more}; the numbers would be meaningless:"
            "\n  " + "\n  ".join(wrong[:10])
        )


# -- the report --------------------------------------------------------------------------------


def _per_round(rows: dict[str, Row], fn: Any) -> list[float]:
    """`fn(samples of one round by key)` for every round: ratios taken side by side."""
    rounds = min(len(r.samples) for r in rows.values())
    return [fn({k: r.samples[i] for k, r in rows.items()}) for i in range(rounds)]


def _mib(kib: float) -> str:
    return f"{kib / 1024:.0f} MiB"


def _report(
    rows: list[Row],
    args: Options,
    machine: dict[str, str],
    started: datetime.datetime,
    loads: tuple[tuple[float, float, float], tuple[float, float, float]],
) -> str:
    """The results as Markdown: the tables first, then what they were measured on and how."""
    by_key = {r.key: r for r in rows}
    batches = [r for r in rows if r.key.startswith("batch-")]
    # (the module- and jobs2- rows are reported in the before/after section)
    singles = [r for r in rows if r.key.startswith("single-")]
    one = by_key.get("batch-1")
    lines = [
        "# resume-check benchmark: judging ResumeCore traces",
        "",
        "Each row is ONE `resume-check --format json --no-progress PATH` call: Python start-up, "
        "the JVM, SANY and TLC all count. CPU is user+system seconds of the whole process tree "
        "(the CLI and the JVM it waits for, from `os.wait4`); peak RSS is that of its largest "
        "process, the JVM. Medians of "
        f"{args.repeats} rounds (min-max; a batch of {args.once_from:,} traces or more: one "
        "round); every round ran every row once, side by side, and "
        "ratios are medians of the per-round ratios. Every run's verdicts matched what the "
        "generator intended (status, first bad event, properties, completeness) or, for the "
        "recorded traces, what their manifests record.",
        "",
        "## Batches of ~100-event traces, one call each",
        "",
        "| traces (violating) | events | wall s | CPU-s | peak RSS | events per CPU-s "
        "| CPU-s per trace |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in batches:
        cpu = row.median("cpu")
        lines.append(
            f"| {len(row.traces)} ({row.violating}) | {row.events} | {row.spread('wall')} "
            f"| {row.spread('cpu')} | {_mib(row.median('rss_kib'))} | {row.events / cpu:.0f} "
            f"| {cpu / len(row.traces):.3f} |"
        )
    if one is not None:
        extra = [
            f"{statistics.median(_per_round({'n': r, '1': one}, _marginal(len(r.traces)))):.3f} "
            f"CPU-s in the batch of {len(r.traces)}"
            for r in batches
            if len(r.traces) > 1
        ]
        lines += [
            "",
            "The batch of 1 is the fixed cost of a call (start-up, SANY, one short trace): "
            f"{one.median('cpu'):.2f} CPU-s"
            + (f"; each further trace adds {', '.join(extra)}" if extra else "")
            + " (medians of per-round differences).",
        ]
    lines += _before_after_section(by_key)
    lines += _long_section(by_key, args)
    lines += _singles_section(batches, singles)
    lines += _real_section(by_key.get("real"), batches)
    before, after = loads
    busy = max(before[0], after[0]) > len(os.sched_getaffinity(0)) * 0.75
    lines += [
        "",
        "## Machine",
        "",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        *(f"- {k}: {v}" for k, v in machine.items()),
        f"- load average (1/5/15 min) before the timed runs: {_load(before)}; after: "
        f"{_load(after)}"
        + (
            " -- the machine was busy with other work: wall times are inflated, CPU times "
            "less so, and the ratios were measured under the same load"
            if busy
            else ""
        ),
        "",
        "## Method",
        "",
        _corpus_line(args),
        *(
            [
                "- the long trace: `python bench/tracegen.py DIR --events N`, one thread over "
                "many invocations (its scenario line lists what it contains), conforming."
            ]
            if args.long_events
            else []
        ),
        "- each round runs every row once (rotating the order); one untimed warm-up call before.",
        "- one process per trace: each single trace in its own call; the total for N traces is "
        "N times their median (extrapolated).",
        *(
            [
                f"- the recorded traces: every {REAL_CONTRACT} trace of `traces/` and `corpora/` "
                "(its header's `contract`), copied byte for byte into one flat folder (its path "
                "in the repository with `__` for `/`); each verdict checked against its manifest "
                "(status, first bad event, properties; completeness where recorded). Not judged "
                "by --baseline: they use fields older checkers do not know."
            ]
            if args.real
            else []
        ),
        *(
            [
                f"- the checker at --baseline is commit `{args.baseline}` (its package first on "
                "PYTHONPATH, its spec first on the spec path), judging the same traces: its "
                "verdicts follow its own contract, so only that it judged every trace is "
                "checked."
            ]
            if args.baseline
            else []
        ),
        "- reproduce: `make bench` (or `.venv/bin/python bench/batch_bench.py --help`; "
        "`--sizes 1,100` drops the 1,000-trace batch, the slowest row).",
        "",
    ]
    return "\n".join(lines)


def _before_after_section(by_key: dict[str, Row]) -> list[str]:
    """The Java override against the generated module, --jobs 2 against one TLC run, and
    `resume-check spec`: each pair side by side in every round."""
    lines = ["", "## Before and after, side by side"]
    pairs = [
        (f"module-{key[6:]}", key, "generated module", "Java override")
        for key in by_key
        if key.startswith("batch-") and f"module-{key[6:]}" in by_key
    ]
    pairs += [
        (key, f"batch-{key[9:]}", "checker at --baseline", "this checker")
        for key in by_key
        if key.startswith("baseline-") and f"batch-{key[9:]}" in by_key
    ]
    pairs += [
        (f"batch-{key[6:]}", key, "one TLC run (2 workers)", "--jobs 2 (1 worker each)")
        for key in by_key
        if key.startswith("jobs2-") and f"batch-{key[6:]}" in by_key
    ]
    if pairs:
        lines += [
            "",
            "| input | before | CPU-s | wall s | peak RSS | after | CPU-s | wall s | peak RSS "
            "| CPU ratio after/before |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
    for old_key, new_key, old_name, new_name in pairs:
        old, new = by_key[old_key], by_key[new_key]
        ratio = statistics.median(
            _per_round({"o": old, "n": new}, lambda s: s["n"].cpu / s["o"].cpu)
        )
        lines.append(
            f"| {len(new.traces)} traces, {new.events} events | {old_name} | {old.spread('cpu')} "
            f"| {old.spread('wall')} | {_mib(old.median('rss_kib'))} | {new_name} "
            f"| {new.spread('cpu')} | {new.spread('wall')} | {_mib(new.median('rss_kib'))} "
            f"| {ratio:.2f} |"
        )
    spec = by_key.get("spec")
    if spec is not None:
        lines += [
            "",
            f"`resume-check spec` (every MC configuration and mutant, --jobs 2), several TLC "
            f"runs per JVM with SANY shared (the default): {spec.spread('wall')} s wall, "
            f"{spec.spread('cpu')} CPU-s, peak RSS {_mib(spec.median('rss_kib'))}",
        ]
        for mode, what in (
            ("loader-per-run", "several runs per JVM, SANY loaded for every run"),
            ("per-run", "a JVM per run"),
        ):
            other = by_key.get(f"spec-{mode}")
            if other is None:
                continue
            ratio = statistics.median(
                _per_round({"o": other, "n": spec}, lambda s: s["n"].cpu / s["o"].cpu)
            )
            lines[-1] += (
                f"; {what} (`{MODE_ENV}={mode}`): {other.spread('wall')} s wall, "
                f"{other.spread('cpu')} CPU-s, peak RSS {_mib(other.median('rss_kib'))}, "
                f"CPU ratio default/{mode} {ratio:.2f}"
            )
        lines[-1] += "."
    return lines if len(lines) > 2 else []  # the heading alone says nothing


def _marginal(size: int) -> Any:
    """CPU-s per trace beyond the first, within one round."""
    return lambda s: (s["n"].cpu - s["1"].cpu) / (size - 1)


def _corpus_line(args: Options) -> str:
    if args.corpus == "sim":
        return (
            f"- corpus: `bench/simulate.py`, seed {args.seed}; the batch of N is the first N "
            f"traces, ~{simulate.TARGET_EVENTS} events each: walks of ONE TLC `-simulate` run "
            "of the contract's reference runtime (spec/SimResumeCore.tla: one thread, a loop, "
            "Send fan-out, interrupts and answers, effects at every level, three processes, "
            "SIGKILLs keeping any part of what was in flight, time-travel forks, update_state "
            "edits, sync/async/exit durability, lease or no fencing), each printed once its "
            "last invocation returned. 1 in 20 traces is a mutant of earlier ones "
            "(resumecheck.mutation) that the history oracle calls broken, cut after the event "
            "it names; the checker must name the same event and properties."
        )
    return (
        f"- corpus: `bench/tracegen.py`, seed {args.seed}; the batch of N is the first N traces, "
        f"~{TARGET_EVENTS} events each, recorded from a simulator of the contract's reference "
        "runtime: ReAct loops, Send fan-out, pipelines, a subgraph on its own chain, interrupts "
        "and answers, effects at declared levels, SIGKILLs keeping or losing what was in "
        "flight, retries, time-travel forks, update_state edits, sync/async/exit durability. "
        "1 in 20 traces makes one wrong move (two kinds per property PC, EO, CO, CV, FD, RD, "
        "shaped like traces/core) and ends at it."
    )


def _long_section(by_key: dict[str, Row], args: Options) -> list[str]:
    long, short, one = by_key.get("long"), by_key.get(f"batch-{SHORT_SIZE}"), by_key.get("batch-1")
    if long is None or short is None:
        return []
    pair = {"long": long, "short": short}
    ratio = statistics.median(
        _per_round(pair, lambda s: (long.events / s["long"].cpu) / (short.events / s["short"].cpu))
    )
    lines = [
        "",
        f"## History length: ONE {long.events:,}-event trace vs {SHORT_SIZE} traces of "
        f"~{TARGET_EVENTS} events",
        "",
        "| input | events | wall s | CPU-s | peak RSS | events per CPU-s "
        "| events per CPU-s beyond the fixed cost |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    net_ratio = None
    if one is not None:
        pair["one"] = one
        net_ratio = statistics.median(
            _per_round(
                pair,
                lambda s: (
                    (long.events / (s["long"].cpu - s["one"].cpu))
                    / (short.events / (s["short"].cpu - s["one"].cpu))
                ),
            )
        )
    for label, row in (
        (f"1 trace of {long.events:,} events", long),
        (f"{len(short.traces)} traces ({short.violating} violating)", short),
    ):
        cpu = row.median("cpu")
        net = (
            f"{row.events / (cpu - one.median('cpu')):.0f}"
            if one is not None and cpu > one.median("cpu")
            else "n/a"
        )
        lines.append(
            f"| {label} | {row.events} | {row.spread('wall')} | {row.spread('cpu')} "
            f"| {_mib(row.median('rss_kib'))} | {row.events / cpu:.0f} | {net} |"
        )
    cpu = long.median("cpu")
    met = "met" if cpu <= TARGET_LONG_CPU else "MISSED"
    if args.long_events != LONG_EVENTS:
        met = f"not measured (--long-events {args.long_events})"
    lines += [
        "",
        f"Events per CPU-second, long / short (median of per-round ratios): **{ratio:.2f}**"
        + (f"; beyond the fixed cost (the batch of 1): **{net_ratio:.2f}**" if net_ratio else "")
        + f". 1.0 would mean an event costs the same after {long.events:,} events of history as "
        f"after ~{TARGET_EVENTS}; below 1, a longer history makes each event dearer.",
        "",
        f"Target: a {LONG_EVENTS:,}-event trace judged in at most {TARGET_LONG_CPU:.0f} CPU-s "
        f"-- **{met}**: {cpu:.2f} CPU-s (median of {len(long.samples)}), "
        f"{long.median('wall'):.2f} s wall.",
    ]
    return lines


def _singles_section(batches: list[Row], singles: list[Row]) -> list[str]:
    if not singles:
        return []
    cpu = statistics.median(s.cpu for r in singles for s in r.samples)
    wall = statistics.median(s.wall for r in singles for s in r.samples)
    lines = [
        "",
        "## One process per trace",
        "",
        f"{len(singles)} traces ({', '.join(r.traces[0].name for r in singles)}) judged one "
        f"call each: median {cpu:.2f} CPU-s, {wall:.2f} s wall per trace.",
        "",
        "| traces | one call: CPU-s | one call per trace: CPU-s (extrapolated) | ratio "
        "| one call: wall s | one call per trace: wall s (extrapolated) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in batches:
        n = len(row.traces)
        lines.append(
            f"| {n} | {row.median('cpu'):.2f} | {cpu * n:.1f} | {cpu * n / row.median('cpu'):.1f}x "
            f"| {row.median('wall'):.2f} | {wall * n:.1f} |"
        )
    return lines


def _real_section(real: Row | None, batches: list[Row]) -> list[str]:
    """The committed traces of traces/ and corpora/ beside the generated batch closest in
    events (by ratio)."""
    if real is None:
        return []
    lines = [
        "",
        "## Real recorded traces",
        "",
        f"Every trace under `traces/` and `corpora/` whose header names the {REAL_CONTRACT} "
        "contract, violating ones included, copied as recorded into one folder and judged in "
        "one call; verdicts checked against their manifests.",
    ]
    if real.left_out:
        others = ", ".join(f"{n} {c}" for c, n in sorted(real.left_out.items()))
        lines[-1] += (
            f" Left out: {others} traces -- each contract is a TLC run of its own spec, so they "
            f"would add other specs' fixed and per-event costs to a rate that is {REAL_CONTRACT}'s."
        )
    if not batches:
        return lines
    near = min(batches, key=lambda r: abs(math.log(r.events / real.events)))
    lines += [
        "",
        "| input | traces (violating) | events | wall s | CPU-s | peak RSS | events per CPU-s "
        "| events reached per CPU-s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, row in (("recorded (traces/)", real), ("generated", near)):
        cpu = row.median("cpu")
        lines.append(
            f"| {label} | {len(row.traces)} ({row.violating}) | {row.events} "
            f"| {row.spread('wall')} | {row.spread('cpu')} | {_mib(row.median('rss_kib'))} "
            f"| {row.events / cpu:.0f} | {row.reached / cpu:.0f} |"
        )
    pair = {"real": real, "near": near}
    ratio = statistics.median(
        _per_round(pair, lambda s: (real.events / s["real"].cpu) / (near.events / s["near"].cpu))
    )
    reached = statistics.median(
        _per_round(pair, lambda s: (real.reached / s["real"].cpu) / (near.reached / s["near"].cpu))
    )
    lines += [
        "",
        f"Events per CPU-second, recorded / generated (the batch of {len(near.traces):,}, the "
        f"closest in events; median of per-round ratios): **{ratio:.2f}**; counting only the "
        f"events reached: **{reached:.2f}**. Both include the fixed cost of a call. An event is "
        "reached when it is not after a violating trace's first bad event: the TLC run that "
        "reports a violation matches nothing after it (only a store-property violation judged "
        "again, the other properties tolerated, may be followed further). "
        f"{real.events - real.reached:,} of the recorded events come after one; a generated "
        "violating trace ends at its bad event.",
    ]
    return lines


def _load(values: tuple[float, float, float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    main()
