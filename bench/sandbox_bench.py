"""Sandbox checkpoint policies, made comparable: correctness, traffic split by cause, overhead.

    .venv/bin/python bench/sandbox_bench.py --out bench/sandbox-results.md
    .venv/bin/python bench/sandbox_bench.py --reps 1 --crash-points checkpoint --out /tmp/q.md

Everything runs on real sandboxes (namespaces, overlayfs, criu 4.1 process images), in one run
on one machine, and every trace is judged by SandboxCR:

1. Correctness: a SIGKILL of the sandbox and the agent at the chosen crash points of every
   turn, recovery, then two measures per run -- the contract's verdict (conforms or not) and
   task success (the run ends as the fault-free run ends: same sandbox, same last answers;
   `measure.outcome`). Plus each workload's rollback run and fork run (two rollouts).
2. Traffic: the fault-free run's checkpoint bytes, split into file images and criu process
   images. `full` (complete snapshots) and `full-delta` (deltas, no skipping) split
   effect-aware's saving into its two causes: storing deltas, and skipping turns.
3. Overhead, with and without a crash: runs with the model stand-in answering after --latency
   seconds per turn, one at a time, policies interleaved, --reps each: fault-free runs, and
   runs with a SIGKILL in one turn's checkpoint job (recovery included). Medians of wall time
   and of CPU seconds (wait4 of the agent processes), side by side in this run.
4. The host scheduler: --colocated sandboxes (full policy, fault-free) started together,
   with a budget of 1 checkpoint job at a time on the host and with none; median wall time,
   total queueing, the longest job and the peak number of jobs running at once.

With `--agent CMD` it measures the host-side runtime instead (`_bench_host`, default output
bench/sandbox-results-host.md): an unmodified agent program in each of `--sandboxes`
co-located sandboxes (default 16) under one host checkpoint budget (`--slots`), checkpointed
between it and the chat stand-in, on the code-repair and shell-heavy workloads:

5. Correctness under density: the fault-free run and a SIGKILL in the checkpoint job of every
   turn, chat-only, full and effect-aware, all `--sandboxes` at once; the contract's verdicts.
6. Traffic and overhead under density: rounds of `--sandboxes` fault-free runs at once (half
   of each workload), the policies interleaved round by round, `--reps` rounds each: checkpoint
   bytes, turns skipped, median wall and CPU seconds per run, and the turn latency -- request to
   released answer, p50 and p95 over every turn of the rounds -- side by side with chat-only.
7. The inspector's accuracy (`accuracy.py`) over every turn of every trace of 5 and 6: what it
   said against a full file-tree diff and a process-table diff.

With `--agent CMD --pages-study` it measures only the inspector's process classification
against a diff of the processes' memory (`_pages_study`, bench/sandbox-results-pages.md): runs
under `full` (a criu image every turn) of the workloads with servers, their stores kept, each
turn's memory compared with the previous turn's (`accuracy.pages_study`): the page images
with the rseq words the kernel writes on its own masked (`pages.py`), and byte for byte.

A run that cannot be recorded or judged stops the benchmark with exit code 3 and no table.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rctools.sandbox import accuracy, measure
from rctools.sandbox.command import missing_criu
from rctools.sandbox.policies import POLICIES
from rctools.sandbox.recorder import (
    RecordError,
    RunResult,
    RunSpec,
    header,
    matrix,
    record_all,
)
from rctools.sandbox.standin import serving
from rctools.sandbox.workloads import WORKLOADS
from rctools.suite.pool import PoolTaskFailed
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

# (policy, with a crash, CPU instead of wall) -> seconds of the timed runs
Timer = Callable[[str, bool, bool], list[float]]
ORDER = ("chat-only", "chat-files", "full", "full-delta", "effect-aware")
TIMED = ("chat-only", "full", "full-delta", "effect-aware")


@dataclass(frozen=True)
class Options:
    """The command line, as the functions below read it (`args`)."""

    out: Path
    workload: str
    reps: int
    latency: float
    crash_latency: float
    crash_points: str
    crash_turns: str
    crash_turn: int
    colocated: int
    jobs: int
    agent: str | None
    sandboxes: int
    slots: int
    agent_workloads: str
    pages_study: bool


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@click.option("--out", type=click.Path(path_type=Path), default=Path("bench/sandbox-results.md"))
@click.option("--workload", default="dev-task")
@click.option("--reps", type=int, default=3, help="timed runs per policy and kind")
@click.option("--latency", type=float, default=0.5, help="model call, s (overhead)")
@click.option("--crash-latency", type=float, default=0.02, help="model call, s")
@click.option("--crash-points", default="checkpoint", help="comma-separated")
@click.option("--crash-turns", default="all", help="correctness runs: e.g. 2,5")
@click.option("--crash-turn", type=int, default=5, help="timed crash runs: turn")
@click.option("--colocated", type=int, default=4, help="sandboxes side by side")
@click.option("--jobs", type=int, default=4, help="correctness runs at once")
@click.option("--agent", help="an agent's command line: bench the host-side runtime")
@click.option("--sandboxes", type=int, default=16, help="with --agent: sandboxes at once")
@click.option("--slots", type=int, default=2, help="with --agent: the host's checkpoint budget")
@click.option("--agent-workloads", default="code-repair,shell-heavy", help="with --agent")
@click.option("--pages-study", is_flag=True, help="with --agent: the memory diff study only")
def main(**options: Any) -> None:
    """Exit code 3 when criu is missing or a run cannot be recorded or judged; passed to
    sys.exit, since click ignores a command's return value."""
    args = Options(**options)
    problem = missing_criu()
    if problem:
        print(f"sandbox_bench: {problem}", file=sys.stderr)
        sys.exit(3)
    scratch = Path(tempfile.mkdtemp(prefix="rc-sandbox-bench-"))
    try:
        if args.agent and args.pages_study:
            code = _pages_study(args, scratch)
        else:
            code = _bench_host(args, scratch) if args.agent else _bench(args, scratch)
    except (RecordError, PoolTaskFailed, BenchError) as exc:
        print(f"sandbox_bench: {exc}", file=sys.stderr)
        code = 3
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(code)


class BenchError(RuntimeError):
    """A trace could not be judged, or a fault-free run does not conform."""


def _judged(folder: Path) -> list[Verdict]:
    verdicts = judge([folder], spec_paths=default_spec_paths())
    bad = [v for v in verdicts if v.status in (Status.INVALID, Status.ERROR)]
    if bad:
        raise BenchError(f"{bad[0].path}: {bad[0].reason}")
    return verdicts


def _bytes(results: list[RunResult], policy: str) -> dict[str, int]:
    (clean,) = [
        r
        for r in results
        if r.spec.policy == policy
        and not r.spec.crash
        and not r.spec.rollback
        and r.spec.fork is None
    ]
    events = measure.read_events(clean.trace)
    jobs = [e for e in events if e["ev"] == "job_done"]
    return {kind: sum(e.get(f"{kind}_bytes", 0) for e in jobs) for kind in ("files", "procs")}


def _jobs(trace: Path) -> list[tuple[float, float]]:
    """(start, end) of each checkpoint job that took a slot, on the wall clock."""
    found = []
    for event in measure.read_events(trace):
        if event["ev"] == "job_done" and "seconds" in event:
            found.append((event["ts"] - event["seconds"], event["ts"]))
    return found


def _peak(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def _bench(args: Options, scratch: Path) -> int:
    load_before = os.getloadavg()
    points = [p.strip() for p in args.crash_points.split(",")]

    print("1/4 crash, rollback and fork runs ...", file=sys.stderr)
    turns = None if args.crash_turns == "all" else {int(t) for t in args.crash_turns.split(",")}
    specs = matrix([args.workload], list(ORDER), points, turns=turns)
    runs = record_all(
        specs, scratch / "crash", scratch / "run", args.crash_latency, jobs=args.jobs, slots=1
    )
    verdicts = _judged(scratch / "crash")
    correctness = {s.policy: s for s in measure.stats(runs, verdicts)}
    traffic = {p: _bytes(runs, p) for p in ORDER}

    print("2/4 timed runs, with and without a crash ...", file=sys.stderr)
    crash = (args.crash_turn, "checkpoint")
    timed_specs = [
        RunSpec(args.workload, p, c) for _ in range(args.reps) for p in TIMED for c in (None, crash)
    ]
    timed = record_all(timed_specs, scratch / "timed", scratch / "run", args.latency, jobs=1)
    timed_verdicts = {v.path.name: v for v in _judged(scratch / "timed")}
    for r in timed:
        if r.spec.policy != "chat-only" and timed_verdicts[r.trace.name].status is not (
            Status.CONFORMS
        ):
            raise BenchError(f"{r.trace.name} does not conform")

    def times(policy: str, crashed: bool, cpu: bool = False) -> list[float]:
        """The timed runs' wall (or CPU) seconds of `policy`, with or without the crash."""
        return [
            r.cpu_seconds if cpu else r.seconds
            for r in timed
            if r.spec.policy == policy and (r.spec.crash is not None) == crashed
        ]

    print("3/4 co-located sandboxes and the host scheduler ...", file=sys.stderr)
    colocated: dict[int, list[RunResult]] = {}
    for slots in (1, 0):
        group = [RunSpec(args.workload, "full", None)] * args.colocated
        out = scratch / f"colocated-{slots}"
        colocated[slots] = record_all(
            group * args.reps,
            out,
            scratch / "run",
            args.latency,
            jobs=args.colocated,
            slots=slots,
        )
        if any(v.status is not Status.CONFORMS for v in _judged(out)):
            raise BenchError(f"a co-located run with {slots} slots does not conform")
    load_after = os.getloadavg()

    print("4/4 table ...", file=sys.stderr)
    lines = _table(args, specs, correctness, traffic, times, colocated, load_before, load_after)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = args.out.with_suffix(".json")
    summary.write_text(
        json.dumps(
            {
                "policies": {p: correctness[p].__dict__ for p in ORDER},
                "traffic": traffic,
                "timed": {
                    p: {
                        "fault_free_s": times(p, False),
                        "crash_s": times(p, True),
                        "fault_free_cpu_s": times(p, False, True),
                        "crash_cpu_s": times(p, True, True),
                    }
                    for p in TIMED
                },
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print("\n".join(lines))
    return 0


def _table(
    args: Options,
    specs: list[RunSpec],
    correctness: dict[str, measure.PolicyStats],
    traffic: dict[str, dict[str, int]],
    times: Timer,
    colocated: dict[int, list[RunResult]],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> list[str]:
    med = statistics.median
    timer = times
    full = sum(traffic["full"].values()) or 1
    free = {p: med(timer(p, False)) for p in TIMED}
    lines = [
        "# Sandbox checkpoint policies (SandboxCR)",
        "",
        f"Workload `{args.workload}`, real sandboxes with criu 4.1 process images. Crash runs: "
        f"a SIGKILL at `{args.crash_points}` of each turn; every trace judged by SandboxCR.",
        "",
        "## Correctness and traffic",
        "",
        "| policy | contract: crash runs conforming | task success after restore "
        "| rollback + fork rollouts conforming | file image bytes | process image bytes "
        "| total vs full | turns skipped | properties violated |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for policy in ORDER:
        s = correctness[policy]
        size = traffic[policy]
        total = sum(size.values())
        lines.append(
            f"| {policy} | {s.correct}/{s.crash_runs} = {measure.percent(s.correctness)} "
            f"| {s.task_success}/{s.crash_runs} "
            f"= {measure.percent(s.task_success / s.crash_runs if s.crash_runs else None)} "
            f"| {s.rewinds_correct}/{s.rewind_runs} | {size['files']:,} | {size['procs']:,} "
            f"| {-100 * (1 - total / full):+.0f} % | {measure.percent(s.skipped_share)} "
            f"| {', '.join(s.violated) or '-'} |"
        )
    lines += [
        "",
        f"## Overhead (model {args.latency:g} s/turn; median of {args.reps}, one run at a time)",
        "",
        "| policy | fault-free wall | vs chat-only | fault-free CPU s "
        f"| with a SIGKILL in turn {args.crash_turn}'s checkpoint job, wall | vs own fault-free "
        "| with the SIGKILL, CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for policy in TIMED:
        crashed = med(timer(policy, True))
        lines.append(
            f"| {policy} | {free[policy]:.2f} s "
            f"| {100 * (free[policy] / free['chat-only'] - 1):+.1f} % "
            f"| {med(timer(policy, False, True)):.2f} "
            f"| {crashed:.2f} s | {100 * (crashed / free[policy] - 1):+.1f} % "
            f"| {med(timer(policy, True, True)):.2f} |"
        )
    lines += [
        "",
        f"## {args.colocated} co-located sandboxes, one host scheduler (full policy, "
        f"fault-free, {args.reps} rounds)",
        "",
        "| checkpoint budget | median wall per run | median CPU s per run | total queued "
        "| longest job | peak jobs at once | conforming |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for slots, group in colocated.items():
        jobs = [j for r in group for j in _jobs(r.trace)]
        queued = sum(
            e.get("queued", 0.0)
            for r in group
            for e in measure.read_events(r.trace)
            if e["ev"] == "job_done"
        )
        lines.append(
            f"| {'1 job at a time' if slots else 'none'} | {med(r.seconds for r in group):.2f} s "
            f"| {med(r.cpu_seconds for r in group):.2f} | {queued:.2f} s "
            f"| {max(b - a for a, b in jobs):.2f} s | {_peak(jobs)} | {len(group)}/{len(group)} |"
        )
    lines += [
        *_machine(load_before, load_after),
        "## Method",
        "",
        f"- {len(specs)} correctness runs, {args.jobs} sandboxes at a time with one checkpoint "
        f"slot for the host; model stand-in {args.crash_latency:g} s per turn. A crash run "
        "conforms iff SandboxCR accepts its trace; it succeeds iff it ends with the fault-free "
        "run's last sandbox state and last answers (`measure.outcome`).",
        "- bytes: what the fault-free run's checkpoint jobs wrote (`job_done.files_bytes`, "
        "`procs_bytes`). Process images are complete criu dumps in every policy (no soft-dirty "
        "tracking on this kernel, so no incremental memory dumps).",
        f"- policies: {'; '.join(f'{p}: {POLICIES[p].summary}' for p in ORDER)}.",
        f"- reproduce: `.venv/bin/python bench/sandbox_bench.py --reps {args.reps} "
        f"--latency {args.latency:g} --crash-points {args.crash_points}`.",
    ]
    return lines


HOST_POLICIES = ("chat-only", "full", "effect-aware")


def _bench_host(args: Options, scratch: Path) -> int:
    """Sections 5-7 of the module's docstring, in one run."""
    out = args.out
    if out == Path("bench/sandbox-results.md"):
        out = Path("bench/sandbox-results-host.md")
    workloads = [w.strip() for w in args.agent_workloads.split(",")]
    load_before = os.getloadavg()

    print("5 crash runs, all sandboxes at once ...", file=sys.stderr)
    specs = matrix(workloads, list(HOST_POLICIES), ["checkpoint"], agent=args.agent)
    runs = record_all(
        specs,
        scratch / "crash",
        scratch / "run",
        args.crash_latency,
        jobs=args.sandboxes,
        slots=args.slots,
    )
    crash_verdicts = _judged(scratch / "crash")
    correctness = measure.stats(runs, crash_verdicts)

    print("6 dense rounds, policies interleaved ...", file=sys.stderr)
    rounds: dict[str, list[RunResult]] = {p: [] for p in HOST_POLICIES}
    conforming: dict[str, int] = dict.fromkeys(HOST_POLICIES, 0)
    for rep in range(args.reps):
        for policy in HOST_POLICIES:
            group = [
                RunSpec(workloads[i % len(workloads)], policy, None, agent=args.agent)
                for i in range(args.sandboxes)
            ]
            folder = scratch / f"round-{rep}-{policy}"
            rounds[policy] += record_all(
                group,
                folder,
                scratch / "run",
                args.latency,
                jobs=args.sandboxes,
                slots=args.slots,
            )
            verdicts = _judged(folder)
            conforming[policy] += sum(v.status is Status.CONFORMS for v in verdicts)
            if policy != "chat-only" and any(v.status is not Status.CONFORMS for v in verdicts):
                raise BenchError(f"a fault-free {policy} run of round {rep} does not conform")
    load_after = os.getloadavg()

    traces = {w: [r.trace for r in runs if r.spec.workload == w] for w in workloads}
    for group in rounds.values():
        for r in group:
            traces[r.spec.workload].append(r.trace)
    studied = {w: accuracy.study(paths) for w, paths in traces.items()}

    lines = _host_table(
        args, workloads, specs, correctness, rounds, conforming, studied, load_before, load_after
    )
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "correctness": [s.__dict__ for s in correctness],
                "rounds": {
                    p: [
                        {
                            "workload": r.spec.workload,
                            "seconds": r.seconds,
                            "cpu_seconds": r.cpu_seconds,
                            "turns": r.turns,
                            "bytes": _trace_bytes(r.trace),
                        }
                        for r in group
                    ]
                    for p, group in rounds.items()
                },
                "accuracy": {w: c.__dict__ for w, c in studied.items()},
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print("\n".join(lines))
    return 0


def _shown(agent: str) -> str:
    """The agent's command line as the results show it: this checkout's folder as `$PWD`, so
    that a result names no one's worktree (the agent runs inside the sandbox, from its
    workspace, so the bench itself needs the absolute path)."""
    return agent.replace(str(Path.cwd()), "$PWD")


def _quoted(agent: str) -> str:
    """`_shown`, quoted for a shell that expands `$PWD` (double quotes where they are safe)."""
    shown = _shown(agent)
    if any(c in shown for c in '"\\`') or shown.count("$") != shown.count("$PWD"):
        return shlex.quote(shown)
    return f'"{shown}"'


PAGES_WORKLOADS = ("shell-heavy", "memory-server", "dev-task")


def _pages_study(args: Options, scratch: Path) -> int:
    """The host process run by hand (not through `record`, which removes the run's folder),
    so that every turn's criu images stay to be compared."""
    rows: list[tuple[str, int, list[accuracy.PagesTurn]]] = []
    with serving(args.crash_latency) as model:
        for workload in PAGES_WORKLOADS:
            for rep in range(args.reps):
                run = scratch / f"pages-{workload}-{rep}"
                run.mkdir(parents=True)
                WORKLOADS[workload].build_base(run / "base")
                spec = RunSpec(workload, "full", None, agent=args.agent)
                (run / "trace.jsonl").write_text(json.dumps(header(spec)) + "\n")
                argv = [sys.executable, "-m", "rctools.sandbox.host", str(run)]
                argv += ["--workload", workload, "--policy", "full"]
                proc = subprocess.run(
                    [*argv, "--agent", args.agent, "--model", model],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise BenchError(f"{workload}: the host exited {proc.returncode}: "
                                     f"{proc.stderr.strip()[-300:]}")  # fmt: skip
                trace = measure.read_events(run / "trace.jsonl")
                rows.append((workload, rep, accuracy.pages_study(trace, run / "store/images")))
    lines = [
        "# The inspector's process classification against the processes' memory",
        "",
        f"Agent `{_shown(args.agent)}`, policy `full` (a criu image every turn), {args.reps} "
        "runs per workload. A turn's memory changed iff its page images (criu `pages-*.img`, every "
        "process tree) differ from the previous turn's, once the rseq words the kernel rewrites "
        "when a thread changes CPU are masked (`tools/rctools/sandbox/pages.py`). Turns without "
        "a process are left out. The last column counts the turns whose page images differ "
        "byte for byte while the masked memory is equal and the inspector said no change: the "
        "misses an unmasked diff reports.",
        "",
        "| workload | turns with a process | hit | **miss** (memory changed, inspector said no) "
        "| false alarm (said changed, memory equal) | quiet | missed turns "
        "| kernel's rseq words only (turns) |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for workload in PAGES_WORKLOADS:
        turns = [t for w, _, ts in rows if w == workload for t in ts if t.pages is not None]
        missed = sorted({t.turn for t in turns if t.changed and not t.said})
        kernel = [t.turn for t in turns if t.raw and not t.changed and not t.said]
        lines.append(
            f"| {workload} | {len(turns)} | {sum(t.said and t.changed for t in turns)} "
            f"| **{sum(t.changed and not t.said for t in turns)}** "
            f"| {sum(t.said and not t.changed for t in turns)} "
            f"| {sum(not t.said and not t.changed for t in turns)} "
            f"| {', '.join(map(str, missed)) or '-'} "
            f"| {len(kernel)} ({', '.join(map(str, sorted(set(kernel)))) or '-'}) |"
        )
    lines += [
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; reproduce: "
        f"`.venv/bin/python bench/sandbox_bench.py --agent {_quoted(args.agent)} "
        f"--pages-study --reps {args.reps}`",
    ]
    out = (
        Path("bench/sandbox-results-pages.md")
        if args.out == Path("bench/sandbox-results.md")
        else args.out
    )
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


def _trace_bytes(trace: Path) -> int:
    return sum(e.get("bytes", 0) for e in measure.read_events(trace) if e["ev"] == "job_done")


def _skipped(trace: Path) -> tuple[int, int]:
    decisions = [e for e in measure.read_events(trace) if e["ev"] == "checkpoint"]
    return sum(not e["capture"] for e in decisions), len(decisions)


def _host_table(
    args: Options,
    workloads: list[str],
    specs: list[RunSpec],
    correctness: list[measure.PolicyStats],
    rounds: dict[str, list[RunResult]],
    conforming: dict[str, int],
    studied: dict[str, accuracy.Counts],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> list[str]:
    med = statistics.median
    lines = [
        "# An unmodified agent under the host-side runtime (SandboxCR)",
        "",
        f"Agent: `{_shown(args.agent)}` -- a plain program against OpenAI's chat completions "
        "API, "
        f"run unchanged in each sandbox. {args.sandboxes} sandboxes at once on this machine, "
        f"one host budget of {args.slots} checkpoint jobs at a time; real namespaces, overlayfs, "
        "fanotify, criu 4.1 process images; every trace judged by SandboxCR.",
        "",
        f"## Correctness: a SIGKILL in the checkpoint job of every turn, {args.sandboxes} at once",
        "",
        "| workload | policy | crash runs conforming | task success after restore "
        "| turns skipped (fault-free) | properties violated |",
        "|---|---|---:|---:|---:|---|",
    ]
    for s in correctness:
        lines.append(
            f"| {s.workload} | {s.policy} | {s.correct}/{s.crash_runs} = "
            f"{measure.percent(s.correctness)} | {s.task_success}/{s.crash_runs} "
            f"| {measure.percent(s.skipped_share)} | {', '.join(s.violated) or '-'} |"
        )
    base = rounds["chat-only"]
    base_wall = med(r.seconds for r in base)
    base_turns = [t for r in base for t, _ in r.turns]
    full_bytes = sum(_trace_bytes(r.trace) for r in rounds["full"]) or 1
    lines += [
        "",
        f"## Traffic and overhead: {args.sandboxes} fault-free runs at once, "
        f"{args.reps} rounds per policy, interleaved; model stand-in {args.latency:g} s per "
        "call (x 0.5-1.5, seeded)",
        "",
        "| policy | runs conforming | checkpoint bytes per round | vs full | turns skipped "
        "| median wall per run | vs chat-only | median CPU s per run "
        "| turn latency p50 | p95 | p95 vs chat-only |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for policy, group in rounds.items():
        size = sum(_trace_bytes(r.trace) for r in group) / args.reps
        skipped = [_skipped(r.trace) for r in group]
        wall = med(r.seconds for r in group)
        turns = [t for r in group for t, _ in r.turns]
        p95 = measure.percentile(turns, 0.95)
        lines.append(
            f"| {policy} | {conforming[policy]}/{len(group)} | {size:,.0f} "
            f"| {-100 * (1 - size * args.reps / full_bytes):+.0f} % "
            f"| {measure.percent(sum(a for a, _ in skipped) / sum(b for _, b in skipped))} "
            f"| {wall:.2f} s | {100 * (wall / base_wall - 1):+.1f} % "
            f"| {med(r.cpu_seconds for r in group):.2f} | {med(turns):.3f} s | {p95:.3f} s "
            f"| {100 * (p95 / measure.percentile(base_turns, 0.95) - 1):+.1f} % |"
        )
    lines += [
        "",
        "## The inspector against a full diff, every turn of every trace above",
        "",
        "| workload | turns | effect-free turns | files: hit / miss / false alarm / quiet "
        "| processes: hit / miss / false alarm (woken) / quiet |",
        "|---|---:|---:|---|---|",
    ]
    for workload, c in studied.items():
        lines.append(
            f"| {workload} | {c.turns} | {c.effect_free} "
            f"({measure.percent(c.effect_free / c.turns if c.turns else None)}) "
            f"| {c.hit['files']} / **{c.miss['files']}** / {c.alarm['files']} / "
            f"{c.quiet['files']} | {c.hit['procs']} / **{c.miss['procs']}** / "
            f"{c.alarm['procs']} / {c.quiet['procs']} |"
        )
    lines += [
        *_machine(load_before, load_after),
        "## Method",
        "",
        f"- {len(specs)} correctness runs ({', '.join(workloads)}; the crash runs' model "
        f"stand-in {args.crash_latency:g} s per call), {args.sandboxes} at once. A crash run "
        "conforms iff SandboxCR accepts its trace; it succeeds iff it ends with the fault-free "
        "run's last sandbox state and last answers (`measure.outcome`).",
        "- turn latency: the host's clock from a request's arrival to its answer's release "
        "(inspection, checkpoint job and its wait for a slot, the model call they overlap); "
        "wall and CPU per run: the recorder's clock and wait4 of the host process and what it "
        "waited for (the agent, its commands, criu).",
        "- accuracy: a miss (the inspector said no effect, the full diff says changed) is a "
        "checkpoint skipped that should not have been; a false alarm costs a needless image. "
        "The process diff is of the process table (command lines, working directories); a "
        "process the inspector saw woken since its image counts as a false alarm there, "
        "though its memory may have changed.",
        f"- reproduce: `.venv/bin/python bench/sandbox_bench.py --agent {_quoted(args.agent)} "
        f"--sandboxes {args.sandboxes} --slots {args.slots} --reps {args.reps} "
        f"--latency {args.latency:g}`.",
    ]
    return lines


def _machine(load_before: Sequence[float], load_after: Sequence[float]) -> list[str]:
    """The results' "Machine" section: when, where, which code, and how loaded the machine was."""
    code = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return [
        "",
        "## Machine",
        "",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- nproc: {os.cpu_count()}; platform: {platform.platform()}",
        f"- code: {code}",
        "- load average (1/5/15 min) before: "
        + " / ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + " / ".join(f"{x:.2f}" for x in load_after)
        + " — a shared, busy machine: compare ratios measured side by side, not absolute times",
        "",
    ]


if __name__ == "__main__":
    main()
