"""What each revision recovery policy costs: model calls, tokens, nodes recomputed.

    .venv/bin/python bench/revision_bench.py --out bench/revision-results.md

Two measurements on real LangGraph runs (SQLite checkpoints, deterministic model stand-in):

1. A revision after the run, once for every revisable path of each workload (each data path
   replaced, each control path flipped), as the REVISE paper measures: the model calls, tokens
   and node executions spent on recovery, set against the affected set (what must be
   recomputed) and the topological suffix from the earliest conflict, both computed here from
   the workload's definition. The 10-node app's row sits beside the paper's figures.
2. The workload's main revision injected at every point (before and while each node runs, and
   after): total model calls per run, the average over the points.
3. Racing executions: the DAG on worker threads, several revisions per execution sent by another
   process at seeded instants (all four kinds, nested paths in `digest`), the same seeds for every
   policy; model calls per execution, averaged per workload.

Every table states validity-guided recovery against both baselines: full restart and suffix
recompute (the saving in model calls, in per cent of the baseline).

Every trace is judged by DagRevision in one batch; a recovering policy's run that does not
conform stops the benchmark (exit code 2): a cost figure for a wrong recovery means nothing.
Counts are deterministic; the wall time column is a median on a shared, noisy machine.
"""

from __future__ import annotations

import datetime
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click
from rctools.revision.injection import Injection, injection_points
from rctools.revision.matrix import Racing, Run, record_racing
from rctools.revision.racing import RaceOutcome
from rctools.revision.runtime import Outcome, RevisionRuntime
from rctools.revision.workloads import RACING_WORKLOADS, WORKLOADS, Revision, Workload
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status

POLICIES = ("full", "suffix", "validity", "stale")
REVISE = {"full": 10.0, "suffix": 7.8, "validity": 4.4}  # model calls, 10-node LangGraph app
_RUNS = itertools.count(1)


@dataclass
class Measured:
    workload: str
    policy: str
    label: str
    outcome: Outcome
    baseline: int  # model calls of the run without a revision
    seconds: float
    trace: Path


def _run(
    w: Workload, policy: str, inj: Injection | None, folder: Path
) -> tuple[Outcome, float, Path]:
    where = f"{inj.revision.path}-{inj.label}" if inj else "none"
    name = f"{next(_RUNS)}-{w.name}-{policy}-{where}"  # numbered: every run its own database
    start = time.perf_counter()
    runtime = RevisionRuntime(w, policy, inj, folder / f"{name}.sqlite")
    outcome = runtime.run()
    seconds = time.perf_counter() - start
    trace = folder / f"{name}.jsonl"
    runtime.write(trace)
    return outcome, seconds, trace


def closure(w: Workload, rev: Revision) -> tuple[set[str], set[str], list[str]]:
    """(affected set, suffix, nodes active after) for a revision after the run, from the
    workload's definition: readers of the path and everything downstream of them."""
    hit = {n.name for n in w.nodes if rev.path in n.reads or (n.route and n.route[0] == rev.path)}
    while True:
        more = {n.name for n in w.nodes if set(n.after) & hit} - hit
        if not more:
            break
        hit |= more
    values = {**w.inputs, **({rev.path: rev.value} if rev.kind == "control" else {})}
    active = [n.name for n in w.nodes if n.route is None or values[n.route[0]] == n.route[1]]
    first = min(w.order.index(n) for n in hit)
    return hit & set(active), {n for n in w.order[first:] if n in active}, active


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.split("\n")[0]
)
@click.option("--out", type=click.Path(path_type=Path), default=Path("bench/revision-results.md"))
@click.option("--racing-executions", type=int, default=300, help="racing executions per policy")
@click.option("--seed", type=int, default=1, help="seed of the racing executions")
def main(out: Path, racing_executions: int, seed: int) -> None:
    """Exit code 2 when a recovering policy's run does not conform; passed to sys.exit, since
    click ignores a command's return value."""
    folder = Path(tempfile.mkdtemp(prefix="rc-revision-bench-"))
    try:
        code = _bench(folder, out, racing_executions, seed)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(code)


def _bench(folder: Path, out: Path, executions: int, seed: int) -> int:
    baseline = {w: _run(WORKLOADS[w], "full", None, folder)[0].calls for w in WORKLOADS}
    after: list[tuple[Measured, Revision]] = []
    points: list[Measured] = []
    for w in WORKLOADS.values():
        for policy in POLICIES:
            for rev in w.revisions():
                o, s, t = _run(w, policy, Injection("after", None, rev), folder)
                after.append((Measured(w.name, policy, rev.path, o, baseline[w.name], s, t), rev))
            for inj in injection_points(w):
                o, s, t = _run(w, policy, inj, folder)
                points.append(Measured(w.name, policy, inj.label, o, baseline[w.name], s, t))
        print(f"recorded {w.name}", file=sys.stderr)
    racing: list[Run] = []
    for policy in POLICIES:
        racing += record_racing(
            list(RACING_WORKLOADS.values()), policy, folder / "racing", Racing(executions, seed)
        )
        print(f"recorded {executions} racing executions under {policy}", file=sys.stderr)
    runs = [(m.policy, m.trace) for m, _ in after] + [(m.policy, m.trace) for m in points]
    runs += [(r.policy, r.trace) for r in racing]
    verdicts = judge([t for _, t in runs], spec_paths=default_spec_paths())
    status = {v.path.resolve(): v for v in verdicts}
    wrong = [
        t
        for policy, t in runs
        if policy != "stale" and status[t.resolve()].status != Status.CONFORMS
    ]
    if wrong:
        for t in wrong:
            print(f"does not conform: {t.name}: {status[t.resolve()].reason}", file=sys.stderr)
        return 2
    caught = {t for _, t in runs if status[t.resolve()].status is Status.VIOLATES}
    out.write_text(_report(after, points, racing, caught, seed), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _mean(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f}"


def _saving(cost: float, baseline: float) -> str:
    """What `cost` saves against `baseline`, in per cent of the baseline."""
    return f"{100 * (baseline - cost) / baseline:.1f} %" if baseline else "-"


def _report(
    after: list[tuple[Measured, Revision]],
    points: list[Measured],
    racing: list[Run],
    caught: set[Path],
    seed: int,
) -> str:
    lines = [
        "# Revision recovery: what each policy costs",
        "",
        "Real LangGraph runs (SQLite checkpoints) of each workload with a deterministic model "
        "stand-in that counts calls and tokens; every trace judged by DagRevision. "
        "`stale` (keep running, the naive baseline) is listed for its cost and for how often the "
        "contract rejects it; the other policies conformed on every run.",
        "",
        "## A revision after the run (every revisable path, averaged)",
        "",
        "Recovery cost = what the policy spent after the revision arrived. *affected* is the "
        "affected set (readers of the revised path and everything downstream, on the route); "
        "*suffix* the nodes on the route from the earliest reader on, in the workflow's order.",
        "",
        "| workload | policy | revisions | recovery model calls | recovery tokens "
        "| nodes recomputed | affected set | suffix | rejected by DagRevision |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in WORKLOADS.values():
        first_run_tokens = _tokens_without_revision(w)
        for policy in POLICIES:
            rows = [(m, r) for m, r in after if m.workload == w.name and m.policy == policy]
            measured = [m for m, _ in rows]
            sets = [closure(w, r) for _, r in rows]
            lines.append(
                f"| {w.name} | {policy} | {len(rows)} | "
                f"{_mean([m.outcome.calls - m.baseline for m in measured])} | "
                f"{_mean([m.outcome.tokens - first_run_tokens for m in measured])} | "
                f"{_mean([len(m.outcome.recomputed) for m in measured])} | "
                f"{_mean([len(a) for a, _, _ in sets])} | {_mean([len(s) for _, s, _ in sets])} | "
                f"{sum(m.trace in caught for m in measured)} of {len(rows)} |"
            )
    lines += [
        "",
        "### Validity-guided recovery against both baselines (a revision after the run)",
        "",
        "| workload | full | suffix | validity | validity saves vs full "
        "| validity saves vs suffix |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for w in WORKLOADS.values():
        rec = {
            p: statistics.mean(
                m.outcome.calls - m.baseline
                for m, _ in after
                if m.workload == w.name and m.policy == p
            )
            for p in ("full", "suffix", "validity")
        }
        lines.append(
            f"| {w.name} | {rec['full']:.1f} | {rec['suffix']:.1f} | {rec['validity']:.1f} | "
            f"{_saving(rec['validity'], rec['full'])} | {_saving(rec['validity'], rec['suffix'])} |"
        )
    app = {
        p: statistics.mean(
            m.outcome.calls - m.baseline
            for m, _ in after
            if m.workload == "app10" and m.policy == p
        )
        for p in ("full", "suffix", "validity")
    }
    lines += [
        "",
        "## Beside the REVISE paper (10-node LangGraph app, model calls per recovery)",
        "",
        "| policy | REVISE paper | app10 here | ratio to full (paper) | ratio to full (here) "
        "| ratio to suffix (paper) | ratio to suffix (here) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in ("full", "suffix", "validity"):
        lines.append(
            f"| {p} | {REVISE[p]:.1f} | {app[p]:.1f} | {REVISE[p] / REVISE['full']:.2f} | "
            f"{app[p] / app['full']:.2f} | {REVISE[p] / REVISE['suffix']:.2f} | "
            f"{app[p] / app['suffix']:.2f} |"
        )
    lines += [
        "",
        "app10 has 11 nodes, 10 of them on the route at a time, one model call each; its "
        "revisions are spread evenly over its 10 input paths (one of them the route). The paper's "
        "app and revision mix differ, so compare the ratios, not the absolute figures.",
        "",
        "## The main revision at every point of the run",
        "",
        "Total model calls per run (first run included), averaged over the revision points "
        "(before and while each node runs, and after the run); wall time is the median per run.",
        "",
        "| workload | main revision | points | "
        + " | ".join(f"{p} calls" for p in POLICIES)
        + " | "
        + " | ".join(f"{p} median s" for p in POLICIES)
        + " | stale rejected |",
        "|---|---|---:|" + "---:|" * (2 * len(POLICIES) + 1),
    ]
    for w in WORKLOADS.values():
        per = {p: [m for m in points if m.workload == w.name and m.policy == p] for p in POLICIES}
        lines.append(
            f"| {w.name} | {w.revision.kind} {w.revision.path} | {len(per['full'])} | "
            + " | ".join(_mean([m.outcome.calls for m in per[p]]) for p in POLICIES)
            + " | "
            + " | ".join(f"{statistics.median(m.seconds for m in per[p]):.2f}" for p in POLICIES)
            + f" | {sum(m.trace in caught for m in per['stale'])} of {len(per['stale'])} |"
        )
    lines += _racing_report(racing, caught, seed)
    lines += [
        "",
        "## Machine",
        "",
        *_machine(),
        "",
        "Reproduce: `.venv/bin/python bench/revision_bench.py`.",
        "",
    ]
    return "\n".join(lines)


def _paired(mine: list[Run], other: list[Run]) -> str:
    """The mean difference in model calls per execution over executions with the same seed
    (the same revision schedule), with a 95 % confidence interval (normal approximation)."""
    theirs = {r.point: r.outcome.calls for r in other if r.outcome is not None}
    diffs = [r.outcome.calls - theirs[r.point] for r in mine if r.outcome is not None]
    half = 1.96 * statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
    return f"{statistics.mean(diffs):+.1f} ({statistics.mean(diffs) - half:+.1f} .. " + (
        f"{statistics.mean(diffs) + half:+.1f})"
    )


def _span(values: list[int]) -> str:
    return str(min(values)) if min(values) == max(values) else f"{min(values)}-{max(values)}"


def _racing_report(racing: list[Run], caught: set[Path], seed: int) -> list[str]:
    def outcome(r: Run) -> RaceOutcome:
        assert isinstance(r.outcome, RaceOutcome)
        return r.outcome

    per_policy = {p: [r for r in racing if r.policy == p] for p in POLICIES}
    n = len(per_policy["validity"])
    revs = [outcome(r).revisions for r in racing]
    lines = [
        "",
        "## Racing: parallel branches, several revisions per execution",
        "",
        f"{n} executions per policy (seed {seed}; the workloads in turn, the same seeds -- so the "
        "same revision schedules -- for every policy), 3 worker threads, each model call 2-6 ms "
        "of wall time. A separate process sends each execution "
        f"{_span(revs)} accepted revisions at instants drawn from the seed (plus some "
        "against an old version, refused); they race the attempts' reads, model calls and "
        "commits. Model calls per execution, the first run included; *recovery* subtracts the "
        "calls of a run without revisions (one per node on the initial route). Every trace "
        "judged by DagRevision.",
        "",
        "| workload | executions per policy | full calls | suffix calls | validity calls "
        "| stale calls | full recovery | suffix recovery | validity recovery "
        "| validity saves vs full (recovery) | validity saves vs suffix (recovery) "
        "| validity saves vs full (whole run) | validity saves vs suffix (whole run) "
        "| validity - full, paired (95 % CI) | validity - suffix, paired (95 % CI) "
        "| rejected at commit (validity) | stale rejected |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in RACING_WORKLOADS.values():
        mine = {p: [r for r in per_policy[p] if r.workload == w.name] for p in POLICIES}
        calls = {p: statistics.mean(outcome(r).calls for r in mine[p]) for p in POLICIES}
        first = len([x for x in w.nodes if x.route is None or w.inputs[x.route[0]] == x.route[1]])
        rec = {p: calls[p] - first for p in POLICIES}
        lines.append(
            f"| {w.name} | {len(mine['validity'])} | "
            + " | ".join(f"{calls[p]:.1f}" for p in POLICIES)
            + " | "
            + " | ".join(f"{rec[p]:.1f}" for p in ("full", "suffix", "validity"))
            + f" | {_saving(rec['validity'], rec['full'])} | "
            f"{_saving(rec['validity'], rec['suffix'])} | "
            f"{_saving(calls['validity'], calls['full'])} | "
            f"{_saving(calls['validity'], calls['suffix'])} | "
            f"{_paired(mine['validity'], mine['full'])} | "
            f"{_paired(mine['validity'], mine['suffix'])} | "
            f"{sum(outcome(r).rejected for r in mine['validity'])} | "
            f"{sum(r.trace in caught for r in mine['stale'])} of {len(mine['stale'])} |"
        )
    kinds: dict[str, int] = {}
    for r in racing:
        for k in outcome(r).kinds:
            kinds[k] = kinds.get(k, 0) + 1
    lines += [
        "",
        "Revisions by kind (all policies): "
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        + f"; refused {sum(outcome(r).refused for r in racing)}. The most model calls running "
        f"at once: {max(outcome(r).max_parallel for r in racing)}. Attempts rejected at commit "
        f"(a revision landed between their end and their commit), all policies: "
        f"{sum(outcome(r).rejected for r in racing)}.",
    ]
    return lines


def _tokens_without_revision(w: Workload) -> int:
    folder = Path(tempfile.mkdtemp(prefix="rc-revision-base-"))
    try:
        return _run(w, "full", None, folder)[0].tokens
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _machine() -> list[str]:
    def cmd(*argv: str) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
        except OSError:
            return "?"

    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- nproc: {os.cpu_count()}, load average (1/5/15 min) at the end: {load}",
        f"- python: {sys.version.split()[0]}; code: {cmd('git', 'rev-parse', '--short', 'HEAD')}",
    ]


if __name__ == "__main__":
    main()
