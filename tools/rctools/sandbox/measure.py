"""What a batch of sandbox runs measured, per (workload, policy), next to its verdicts.

Recovery correctness is the share of crash runs whose trace conforms to SandboxCR -- the
contract's verdict, not a check of our own; so is the share of rewind runs (rollbacks and fork
rollouts) that conform. Checkpoint bytes, the share of skipped turns and the time come from the
fault-free runs: bytes, decisions and the time jobs queued for a scheduler slot from their
traces (`job_done` and `checkpoint` events), wall time from the recorder's clock, CPU seconds
from wait4 of the agent processes. The overhead is relative to the median fault-free run of
`chat-only`, which checkpoints no sandbox state at all.

Task success is the paper's measure, beside the contract's: a crash run succeeds when it ends
as the fault-free run of its policy ends -- the same sandbox at the last boundary, and the
same answers from the last turn's commands. It is an outcome, not a property: a run can end
well after a restore that broke the contract (a lost state the later turns never looked at),
and the table shows both.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumecheck import texttable
from resumecheck.verdict import Status, Verdict

from rctools.sandbox.recorder import RunResult

BASELINE = "chat-only"


@dataclass
class PolicyStats:
    workload: str
    policy: str
    crash_runs: int
    correct: int
    correctness: float | None
    task_success: int
    rewind_runs: int
    rewinds_correct: int
    checkpoint_bytes: int | None
    skipped_share: float | None
    seconds: float | None
    cpu_seconds: float | None
    queued_seconds: float | None
    overhead: float | None
    violated: list[str]


def read_events(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [json.loads(line) for line in lines if line.strip()]


def outcome(path: Path) -> tuple[object, ...]:
    """How a run ended: the last boundary's files and processes, the last turn's answers."""
    events = read_events(path)
    bounds = [e for e in events if e["ev"] == "boundary"]
    if not bounds:
        return ()
    answers = {(e["turn"], e["cmd"]): e["out"] for e in events if e["ev"] == "cmd_end"}
    last = bounds[-1]["turn"]
    return (
        bounds[-1]["files"],
        bounds[-1]["procs"],
        tuple(answers[k] for k in sorted(answers) if k[0] == last),
    )


def stats(results: list[RunResult], verdicts: list[Verdict]) -> list[PolicyStats]:
    by_path = {v.path.resolve(): v for v in verdicts}
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for result in results:
        groups.setdefault((result.spec.workload, result.spec.policy), []).append(result)
    table = []
    for (workload, policy), members in groups.items():
        rewound = [r for r in members if r.spec.rollback or r.spec.fork is not None]
        crashed = [r for r in members if r.spec.crash and r not in rewound]
        clean = [r for r in members if not r.spec.crash and r not in rewound]

        def conforming(runs: list[RunResult]) -> int:
            return sum(by_path[r.trace.resolve()].status is Status.CONFORMS for r in runs)

        correct = conforming(crashed)
        reference = outcome(clean[0].trace) if clean else None
        succeeded = sum(outcome(r.trace) == reference for r in crashed)
        violated = sorted({p for r in members for p in by_path[r.trace.resolve()].properties})
        size = skipped = seconds = cpu = queued = None
        if clean:
            events = read_events(clean[0].trace)
            jobs = [e for e in events if e["ev"] == "job_done"]
            size = sum(e.get("bytes", 0) for e in jobs)
            queued = sum(e.get("queued", 0.0) for e in jobs)
            decisions = [e for e in events if e["ev"] == "checkpoint"]
            skipped = sum(not e["capture"] for e in decisions) / len(decisions)
            seconds = statistics.median(r.seconds for r in clean)
            cpu = statistics.median(r.cpu_seconds for r in clean)
        table.append(
            PolicyStats(
                workload,
                policy,
                len(crashed),
                correct,
                correct / len(crashed) if crashed else None,
                succeeded,
                len(rewound),
                conforming(rewound),
                size,
                skipped,
                seconds,
                cpu,
                queued,
                None,
                violated,
            )
        )
    for entry in table:
        base = next(
            (s for s in table if s.workload == entry.workload and s.policy == BASELINE), None
        )
        if base and base.seconds and entry.seconds is not None:
            entry.overhead = entry.seconds / base.seconds - 1
    return table


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with `share` of them at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * share) - 1)]


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"


def render_stats(table: list[PolicyStats]) -> str:
    right = texttable.right
    columns = [
        "workload",
        "policy",
        right("correct"),
        right("task ok"),
        right("rewinds"),
        right("ckpt bytes"),
        right("skipped"),
        right("wall s"),
        right("cpu s"),
        right("queued s"),
        right("overhead"),
        "violated",
    ]
    rows = [
        (
            s.workload,
            s.policy,
            f"{s.correct}/{s.crash_runs} {percent(s.correctness)}",
            f"{s.task_success}/{s.crash_runs}",
            f"{s.rewinds_correct}/{s.rewind_runs}",
            "-" if s.checkpoint_bytes is None else f"{s.checkpoint_bytes:,}",
            percent(s.skipped_share),
            "-" if s.seconds is None else f"{s.seconds:.2f}",
            "-" if s.cpu_seconds is None else f"{s.cpu_seconds:.2f}",
            "-" if s.queued_seconds is None else f"{s.queued_seconds:.2f}",
            "-" if s.overhead is None else f"{100 * s.overhead:+.1f} %",
            ", ".join(s.violated) or "-",
        )
        for s in table
    ]
    return texttable.render(columns, rows)
