"""Sandbox checkpoint policies: recovery correctness, checkpoint bytes, skipped turns, overhead.

    .venv/bin/python bench/sandbox_bench.py --out bench/sandbox-results.md
    .venv/bin/python bench/sandbox_bench.py --reps 1 --latency 0.1 --out /tmp/quick.md

Two measurements per policy on the dev-task workload, in one run on one machine:

1. Correctness: a SIGKILL of the sandbox and the agent at every turn and every crash point
   (in flight, during the checkpoint job, after publish before release), recovery, then the
   contract's verdict on each trace (SandboxCR, one TLC run for the whole batch). Correct =
   conforms. Bytes and skipped turns come from the fault-free run's trace.
2. Overhead: fault-free runs with the model stand-in answering after --latency seconds per turn
   (real model calls take seconds; checkpoint jobs overlap with them), --reps of each policy,
   interleaved and one at a time; the median wall time relative to chat-only's median, which
   checkpoints no sandbox state.

The Crab paper's figures are printed beside ours; the paper measured real terminal tasks with
CRIU, we replay a scripted workload with process re-spawn (docs/sandbox.md says what differs).
A run that cannot be recorded or judged stops the benchmark with exit code 2 and no table.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from rctools.sandbox import measure
from rctools.sandbox.agent import CRASH_POINTS
from rctools.sandbox.command import missing_privileges
from rctools.sandbox.policies import POLICIES
from rctools.sandbox.recorder import RunSpec, matrix, record_all
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status

ORDER = ("chat-only", "chat-files", "full", "effect-aware")
PAPER = {
    "chat-only": "8 to 13 % correct on terminal tasks",
    "chat-files": "loses live processes",
    "full": "100 % correct; the traffic baseline",
    "effect-aware": "100 % correct; up to 87 % less traffic; ≤ 1.9 % overhead",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/sandbox-results.md"))
    parser.add_argument("--workload", default="dev-task")
    parser.add_argument("--reps", type=int, default=5, help="fault-free runs per policy")
    parser.add_argument("--latency", type=float, default=0.5, help="model call, s (overhead)")
    parser.add_argument("--crash-latency", type=float, default=0.02, help="model call, s")
    args = parser.parse_args()
    problem = missing_privileges()
    if problem:
        print(f"sandbox_bench: {problem}", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="rc-sandbox-bench-"))
    try:
        return _bench(args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _bench(args: argparse.Namespace, scratch: Path) -> int:
    load_before = os.getloadavg()

    print("recording crash runs ...", file=sys.stderr)
    crash_specs = matrix([args.workload], list(ORDER), list(CRASH_POINTS))
    crash_runs = record_all(crash_specs, scratch / "crash", scratch / "run", args.crash_latency)
    verdicts = judge([scratch / "crash"], spec_paths=default_spec_paths())
    correctness = {s.policy: s for s in measure.stats(crash_runs, verdicts)}

    print("recording fault-free runs for the overhead ...", file=sys.stderr)
    # Interleaved (policy after policy, repetition after repetition) and one at a time, so that
    # a change in the machine's load hits every policy alike.
    timed_specs = [RunSpec(args.workload, p, None) for _ in range(args.reps) for p in ORDER]
    timed = record_all(timed_specs, scratch / "timed", scratch / "run", args.latency, jobs=1)
    timed_verdicts = judge([scratch / "timed"], spec_paths=default_spec_paths())
    bad = [v for v in [*verdicts, *timed_verdicts] if v.status in (Status.INVALID, Status.ERROR)]
    if bad:
        print(f"sandbox_bench: {bad[0].path}: {bad[0].reason}", file=sys.stderr)
        return 2
    if any(v.status is not Status.CONFORMS for v in timed_verdicts):
        print("sandbox_bench: a fault-free run does not conform", file=sys.stderr)
        return 2
    seconds = {p: [r.seconds for r in timed if r.spec.policy == p] for p in ORDER}
    medians = {p: statistics.median(values) for p, values in seconds.items()}
    load_after = os.getloadavg()

    full_bytes = correctness["full"].checkpoint_bytes or 1
    lines = [
        "# Sandbox checkpoint policies (SandboxCR)",
        "",
        f"Workload `{args.workload}`: {len(crash_specs) // len(ORDER) - 1} crash runs per policy "
        f"(a SIGKILL at each of {len(CRASH_POINTS)} points of every turn), each judged by "
        "SandboxCR; plus fault-free runs for bytes, skipped turns and wall time.",
        "",
        "| policy | recovery correct (all crash points) | checkpoint bytes (fault-free run) "
        "| vs full | turns skipped | wall time, median of "
        f"{args.reps} (model {args.latency:g} s/turn) | overhead vs chat-only "
        "| properties violated | Crab paper |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for policy in ORDER:
        s = correctness[policy]
        size = s.checkpoint_bytes or 0
        lines.append(
            f"| {policy} | {s.correct}/{s.crash_runs} = {measure.percent(s.correctness)} "
            f"| {size:,} | {-100 * (1 - size / full_bytes):+.0f} % "
            f"| {measure.percent(s.skipped_share)} "
            f"| {medians[policy]:.2f} s (min {min(seconds[policy]):.2f}, "
            f"max {max(seconds[policy]):.2f}) "
            f"| {100 * (medians[policy] / medians['chat-only'] - 1):+.1f} % "
            f"| {', '.join(s.violated) or '-'} | {PAPER[policy]} |"
        )
    code = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    lines += [
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
        + " — a shared, busy machine: compare the ratios, not the absolute times",
        "",
        "## Method",
        "",
        f"- correctness: `resume-check run sandbox --workload {args.workload}` does the same; "
        f"model stand-in {args.crash_latency:g} s per turn; a run is correct iff its trace "
        "conforms to SandboxCR.",
        "- bytes: what the checkpoint jobs wrote in the fault-free run (`job_done.bytes`: "
        "copied file data, image metadata, process tables). full and chat-files copy the "
        "overlay's whole upper layer every turn; effect-aware stores only what changed since "
        "the last file image, and nothing on a skipped turn. Process images are process "
        "tables (re-spawn), not CRIU memory dumps: see docs/sandbox.md.",
        "- overhead: fault-free runs, one at a time, policies interleaved; median wall time "
        "over chat-only's median, minus 1.",
        f"- policies: {'; '.join(f'{p}: {POLICIES[p].summary}' for p in ORDER)}.",
        f"- reproduce: `.venv/bin/python bench/sandbox_bench.py --reps {args.reps} "
        f"--latency {args.latency:g}`.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
