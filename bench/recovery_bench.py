"""Restore policies compared: what each one costs and whether the contract accepts it.

    .venv/bin/python bench/recovery_bench.py --out bench/recovery-results.md
    .venv/bin/python bench/recovery_bench.py --repeats 1 --out /tmp/r.md     (a quick look)

Every (policy, workload) pair of `resume-check run recovery` runs --repeats times on real
LangGraph with SqliteSaver; all traces are judged in one batch against the SemanticRecovery
spec. Per pair the table reports: success (the task got done and the trace conforms, over all
repeats), replayed actions (actions beyond those of a run without failure), committed instances
preserved (other instances committed at the failure and not re-executed, where the contract
accepts the run), blocks and whether
each was necessary (the spec counts blocks taken although an admissible checkpoint existed),
and the median time from the failure to the end of recovery. The machine is shared and noisy:
times are medians, and the ratio to `retry` on the same workload is measured in the same run.
The runs are deterministic apart from their timing: every repeat must get the same verdict, or
the benchmark stops with exit code 2 and writes nothing.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import click
from rctools.recovery.matrix import Judged, judge_runs, record
from rctools.recovery.policies import POLICIES
from rctools.recovery.workloads import WORKLOADS
from recovery_audit_bench import HEADING as AUDIT_HEADING

# Each model and tool call takes this long, so that replayed work shows in the time to recovery
# as it would with a real model and remote tools; LangGraph and SQLite costs come on top.
LATENCY_MS = 20.0


class BenchError(RuntimeError):
    """The runs disagree with each other: the numbers would not mean anything."""


def measure(repeats: int, latency: float) -> dict[tuple[str, str], list[Judged]]:
    with tempfile.TemporaryDirectory(prefix="recovery-bench-") as folder:
        runs = record(
            list(POLICIES), list(WORKLOADS), Path(folder), repeat=repeats, latency=latency
        )
        judged = judge_runs(runs)
    pairs: dict[tuple[str, str], list[Judged]] = defaultdict(list)
    for j in judged:
        pairs[(j.run.policy, j.run.workload)].append(j)
    for pair, group in pairs.items():
        if len({(j.verdict_text, j.run.outcome) for j in group}) != 1:
            raise BenchError(f"{pair}: repeats disagree on verdict or outcome")
    return pairs


def _median_ms(group: list[Judged]) -> float:
    return statistics.median(1000 * (j.run.recovery_seconds or 0.0) for j in group)


def table(pairs: dict[tuple[str, str], list[Judged]], repeats: int) -> str:
    """The results table in Markdown, one row per (workload, policy)."""
    lines = [
        "| workload | policy | verdict | success | replayed actions | instances preserved "
        f"| blocks (necessary) | time to recovery, median of {repeats} | vs retry |",
        "|---|---|---|---:|---:|---:|---|---:|---:|",
    ]
    for workload in WORKLOADS:
        retry_ms = _median_ms(pairs[("retry", workload)])
        for policy in POLICIES:
            group = pairs[(policy, workload)]
            first = group[0]
            wins = sum(j.success for j in group)
            blocked = first.run.outcome == "blocked"
            if first.verdict.summary:
                blocks = first.verdict.summary.get("blocks", 0)
                needless = first.verdict.summary.get("needless_blocks", 0)
                block_text = f"{blocks} ({'yes' if not needless else 'no'})" if blocks else "0"
            else:
                block_text = "-"
            ms = _median_ms(group)
            timing = (
                f"blocked after {ms:.1f} ms | -"
                if blocked
                else f"{ms:.1f} ms | {ms / retry_ms:.2f}x"
            )
            lines.append(
                f"| {workload} | {policy} | {first.verdict_text} | {wins}/{len(group)} "
                f"| {'-' if blocked else first.run.replayed} "
                f"| {first.run.preserved if first.conforms and not blocked else '-'} "
                f"| {block_text} | {timing} |"
            )
    return "\n".join(lines) + "\n"


def report(pairs: dict[tuple[str, str], list[Judged]], repeats: int, latency_ms: float) -> str:
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    code = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return (
        "# Restore policies on commitment-sensitive workloads\n\n"
        "Each workload fails instance A once, after its consumers committed on A's output "
        "(`docs/recovery.md`). `success`: the task got done and its trace conforms to "
        "SemanticRecovery; `replayed actions`: actions beyond those of a run without failure; "
        "`instances preserved`: other instances committed at the failure and not re-executed, "
        "counted where the contract accepts the run (elsewhere they are kept but orphaned); "
        "`blocks (necessary)`: blocks, and whether the spec found no admissible checkpoint at "
        "the time (`-` where the trace violates the contract, so the spec gives no summary); "
        "`time to recovery`: from the failure to the end of the run or the block.\n\n"
        + table(pairs, repeats)
        + "\n## Machine\n\n"
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n"
        f"- nproc: {os.cpu_count()}\n"
        f"- python: {platform.python_implementation()} {platform.python_version()}\n"
        f"- platform: {platform.platform()}\n"
        f"- code: {code or 'unknown'}\n"
        f"- load average (1/5/15 min) after the runs: {load} (a shared machine: absolute "
        "times are inflated, the ratios were measured under the same load)\n\n"
        "## Method\n\n"
        f"- every model and tool call took {latency_ms:g} ms (a sleep standing for a model's "
        "response time and a remote tool's round trip), so replayed work costs time.\n"
        f"- every (policy, workload) pair ran {repeats} times in one process, one after the "
        "other; all traces were judged in one `judge()` call (one TLC run); every repeat of a "
        "pair got the same verdict and outcome.\n"
        "- reproduce: `.venv/bin/python bench/recovery_bench.py --out bench/recovery-results.md`"
        "\n"
    )


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@click.option("--repeats", type=int, default=7)
@click.option("--out", type=click.Path(path_type=Path), default=Path("bench/recovery-results.md"))
@click.option(
    "--latency-ms",
    type=float,
    default=LATENCY_MS,
    help="time each model and tool call takes (a remote round trip)",
)
def main(repeats: int, out: Path, latency_ms: float) -> None:
    """Exit code 2 (and nothing written) when the repeats' verdicts differ; passed to
    sys.exit, since click ignores a command's return value."""
    try:
        pairs = measure(repeats, latency_ms / 1000)
    except BenchError as exc:
        print(f"recovery_bench: {exc}", file=sys.stderr)
        sys.exit(2)
    # Keep the audit's section (recovery_audit_bench.py writes it into the same file).
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    kept = old[old.find(AUDIT_HEADING) :] if AUDIT_HEADING in old else ""
    out.write_text(
        report(pairs, repeats, latency_ms) + ("\n" + kept if kept else ""), encoding="utf-8"
    )
    print(table(pairs, repeats), end="")


if __name__ == "__main__":
    main()
