"""What the revision policies cost on user-style LangGraph graphs (`run revision --app`).

    .venv/bin/python bench/revision_app_bench.py --out bench/revision-app-results.md

For each graph under tests/fixtures/revapp/ (plain LangGraph code, a deterministic fake chat
model; triage.py routes with a conditional edge, fanout.py fans out with `Send`) and each
revision of one of its input channels, the channel is revised at every point of a run -- inside
each model call, at each node's start, between each node's end and its commit -- and every
policy recovers on LangGraph's own checkpoints. The static graphs get every input channel
revised once; the fan-out gets its topic list grown, shrunk and one topic changed (all through
`request`, which the planner reads) and `style` (read only by `write`), run as
`run revision --app ... --send-bound 3` runs it (the grown list's three tasks). Model calls
and tokens (words of prompt and completion) are counted by a LangChain callback. Every trace is
judged by DagRevision in one batch; a recovering policy's run that does not conform stops the
benchmark (exit code 2): a cost figure for a wrong recovery means nothing.

Two rows per revision: the average over every point of the run, and the revision arriving at
the last point (the joiner ended, not yet committed: every node has run, as after the run in
REVISE's measurement). Beside them, what explains the figures: where the channel's first reader
sits in the node order (the conflict position) and how wide the DAG is (the most nodes one node
fans out to; on the fan-out, the Send tasks of the first run and of the revised one), and how
many of the stale runs DagRevision rejected. Where validity saves nothing over suffix on the
fan-out, the report says why from the runs: which nodes each re-ran. Wall and CPU seconds are
medians per run; the machine is shared, so the load average is printed beside them.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from langgraph.checkpoint.memory import InMemorySaver
from rctools.langgraph.app import load_factory
from rctools.revision.app import (
    APP_POLICIES,
    AppOutcome,
    AppRevisionRun,
    AppWorkflow,
    Point,
    points_of,
    probe,
    workflow_of,
)
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "revapp"
SEND_BOUND = 3
"""Slots per Send target: the most topics any revision of the fan-out lists."""


@dataclass(frozen=True)
class Revision:
    """One input channel revised to one new value; `label` names the row."""

    channel: str
    value: Any
    label: str


@dataclass(frozen=True)
class App:
    """A fixture graph, its first input and the revisions measured on it."""

    name: str
    inputs: dict[str, Any]
    shape: str
    revisions: tuple[Revision, ...]

    def factory(self) -> Callable[[Any], Any]:
        return load_factory(f"{FIXTURES / self.name}.py:make_graph")


def _static(name: str, inputs: dict[str, Any], shape: str, **new: Any) -> App:
    """A graph with each input channel revised once, to `new`'s value or `CHANNEL-v1`."""
    revisions = tuple(Revision(c, new.get(c, f"{c}-v1"), c) for c in inputs)
    return App(name, inputs, shape, revisions)


STATIC = [
    _static("plan_execute", {"request": "r0", "notes": "n0"}, "planner, search | lookup, joiner"),
    _static(
        "compiler_wide",
        {"request": "r0", "q1": "a", "q2": "b", "q3": "c", "q4": "d"},
        "planner, t1 | t2 | t3 | t4, joiner",
    ),
    # triage's new message turns a question into a refund request, so its conditional edge
    # flips (`message-v1` would not exercise the graph)
    _static(
        "triage",
        {"message": "where is my parcel", "notes": "n0"},
        "classify, refund ? answer, reply",
        message="I want a refund",
    ),
]
FANOUT = App(
    "fanout",
    {"request": "solar, wind", "style": "plain"},
    "plan, one research per topic through Send, write",
    (
        Revision("request", "solar, tidal, wind", "request: the topic list grows"),
        Revision("request", "solar", "request: the topic list shrinks"),
        Revision("request", "solar, geothermal", "request: one topic changes"),
        Revision("style", "formal", "style (read only by write)"),
    ),
)
# Loops, stated as laps (`--loop-bound`, 4 by default): the request sets how often each goes round
LOOPS = [
    App(
        "plan_execute_loop",
        {"request": "a; b; c", "tone": "plain"},
        "planner, then agent -> replan per step (three laps)",
        (
            Revision("request", "a; b", "request: one step fewer"),
            Revision("request", "a; b; c; d", "request: one step more"),
            Revision("tone", "formal", "tone (read by replan)"),
        ),
    ),
    App(
        "compiler_loop",
        {"question": "solar? wind? tides?", "language": "en"},
        "plan_and_schedule (parallel tools inside) -> join per round (three laps)",
        (
            Revision("question", "solar? wind?", "question: one round fewer"),
            Revision("question", "solar? wind? tides? waves?", "question: one round more"),
            Revision("language", "fr", "language (read by join)"),
        ),
    ),
]
APPS = [*STATIC, FANOUT, *LOOPS]


@dataclass
class Measured:
    """One run: the revision, the policy, the point it arrived at, what it cost."""

    app: str
    revision: Revision
    policy: str
    point: str
    outcome: AppOutcome
    wall: float
    cpu: float
    status: Status | None = None
    """DagRevision's verdict, once the batch is judged."""


@dataclass(frozen=True)
class Probed:
    """What the fault-free run of an app says: its model calls, its points, its fan-outs."""

    calls: int
    points: list[Point]
    fanouts: frozenset[str]

    @property
    def labels(self) -> list[str]:
        return [p.label for p in self.points]

    @property
    def last(self) -> str:
        """The last point: the joiner ended, its step not yet committed."""
        return [p.label for p in self.points if p.kind == "commit"][-1]


def _probe(app: App) -> Probed:
    fault_free = probe(app.factory(), app.inputs, SEND_BOUND)
    points = points_of(app.factory(), app.inputs, SEND_BOUND, fault_free)
    return Probed(fault_free.calls, points, frozenset(fault_free.fanouts))


def _measure(folder: Path, apps: Iterable[App], probed: dict[str, Probed]) -> list[Measured]:
    """Every revision of each app at every point `probed` lists, under every policy."""
    found = []
    for app in apps:
        factory = app.factory()
        for k, rev in enumerate(app.revisions):
            for policy in APP_POLICIES:
                for point in probed[app.name].points:
                    name = f"{app.name}-{k}-{rev.channel}-{policy}-{point.label}"
                    run = AppRevisionRun(
                        factory, app.inputs, rev.channel, rev.value, point, policy,
                        folder / f"{name}.sqlite", bound=SEND_BOUND,
                        fanouts=probed[app.name].fanouts,
                    )  # fmt: skip
                    wall, cpu = time.perf_counter(), time.process_time()
                    outcome = run.run(folder / f"{name}.jsonl")
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    found.append(Measured(app.name, rev, policy, point.label, outcome, wall, cpu))
    return found


def _workflow(app: App, probed: Probed) -> AppWorkflow:
    return workflow_of(app.factory()(InMemorySaver()), app.inputs, None, SEND_BOUND, probed.fanouts)


def _shape(app: App, rev: Revision, probed: Probed) -> tuple[str, str]:
    """The conflict position of `rev`'s channel and the DAG's width (on a fan-out, the Send
    tasks of the fault-free run and of one on the revised input)."""
    wf = _workflow(app, probed)
    readers = [i for i, n in enumerate(wf.order, 1) if rev.channel in wf.reads[n]]
    position = f"{min(readers)} of {len(wf.order)}" if readers else "-"
    if not wf.slots:
        return position, str(max(len([b for a, b in wf.edges if a == n]) for n in wf.order))
    revised = {**app.inputs, rev.channel: rev.value}
    before = len(probe(app.factory(), app.inputs, SEND_BOUND).slots)
    after = len(probe(app.factory(), revised, SEND_BOUND).slots)
    return position, f"{before} → {after}" if before != after else str(before)


def _pct(mine: float, base: float) -> str:
    return f"{100 * (mine - base) / base:+.1f} %" if base else "-"


def _rows(app: App, rev: Revision, measured: list[Measured], probed: Probed) -> list[str]:
    position, width = _shape(app, rev, probed)
    mine = [m for m in measured if (m.app, m.revision) == (app.name, rev)]
    joiner = [m for m in mine if m.point == probed.last]
    rows = []
    for where, chosen in (("every point (mean)", mine), ("after the joiner", joiner)):
        calls = {
            p: statistics.mean(m.outcome.calls for m in chosen if m.policy == p)
            for p in APP_POLICIES
        }
        tokens = {
            p: statistics.mean(m.outcome.tokens for m in chosen if m.policy == p)
            for p in APP_POLICIES
        }
        stale = [m for m in chosen if m.policy == "stale"]
        rejected = sum(1 for m in stale if m.status is Status.VIOLATES)
        rows.append(
            f"| {app.name} | {rev.label} | {position} | {width} | {where} | "
            f"{calls['full']:.1f} | {calls['suffix']:.1f} | {calls['validity']:.1f} | "
            f"{calls['stale']:.1f} | {_pct(calls['validity'], calls['full'])} | "
            f"{_pct(calls['validity'], calls['suffix'])} | {tokens['full']:.0f} / "
            f"{tokens['suffix']:.0f} / {tokens['validity']:.0f} | {rejected} of {len(stale)} |"
        )
    return rows


def _table(apps: Iterable[App], measured: list[Measured], probed: dict[str, Probed]) -> str:
    rows = [
        "| graph | channel revised | conflict position | width | where | full calls | suffix "
        "calls | validity calls | stale calls | validity vs full | validity vs suffix | tokens "
        "full / suffix / validity | stale rejected |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for app in apps:
        for rev in app.revisions:
            rows += _rows(app, rev, measured, probed[app.name])
    return "\n".join(rows)


def _why(app: App, measured: list[Measured], probed: Probed) -> list[str]:
    """Per revision of `app`: the model calls summed over every point, and where validity
    saves nothing over suffix, why, from the runs: the nodes each re-ran, and where the
    channel's readers sit."""
    wf = _workflow(app, probed)
    lines = []
    for rev in app.revisions:
        mine = [m for m in measured if (m.app, m.revision) == (app.name, rev)]
        by = {(m.policy, m.point): m.outcome for m in mine}
        total = {p: sum(m.outcome.calls for m in mine if m.policy == p) for p in APP_POLICIES}
        line = (
            f"- {rev.label} (`{rev.value}`): {total['validity']} / {total['suffix']} / "
            f"{total['full']} model calls validity / suffix / full over the "
            f"{len(probed.labels)} points (stale {total['stale']})"
        )
        if total["validity"] != total["suffix"]:
            lines.append(line + ".")
            continue
        same = sum(
            by["validity", p].recomputed == by["suffix", p].recomputed for p in probed.labels
        )
        redone = [by["validity", p].recomputed for p in probed.labels]
        first = sorted({nodes[0] for nodes in redone if nodes})
        readers = [n for n in wf.order if rev.channel in wf.reads[n]]
        line += (
            f". Validity saves nothing over suffix: the two re-ran the same nodes at {same} of "
            f"{len(redone)} points (at {sum(map(bool, redone))} of them validity re-ran any, "
            f"starting with {' or '.join(first) or '-'}); `{rev.channel}` is read by "
            f"{', '.join(readers)} alone"
        )
        if readers == wf.order[:1]:
            line += (
                ", the first node: the planner reads the request, so its output (the task "
                "list) and everything after it is affected -- the affected set is the whole "
                "suffix"
            )
            line += (
                ", and a suffix from the first node costs a full restart."
                if total["full"] == total["suffix"]
                else "."
            )
        elif readers == wf.order[-1:]:
            line += (
                ", the last node, alone in its superstep: the affected set is that node, which "
                "is all suffix re-runs; both keep the plan and the research tasks a full "
                "restart repeats."
            )
        else:
            line += "."
        lines.append(line)
    return lines


def _judge(measured: list[Measured]) -> None:
    """DagRevision's verdict on every run, in one batch."""
    verdicts = {
        v.path.resolve(): v
        for v in judge([m.outcome.trace for m in measured], spec_paths=default_spec_paths())
    }
    for m in measured:
        m.status = verdicts[m.outcome.trace.resolve()].status


@click.command()
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the report.")
def main(out: Path | None) -> None:
    load_before = os.getloadavg()
    probed = {app.name: _probe(app) for app in APPS}
    with tempfile.TemporaryDirectory(prefix="revapp-bench-") as scratch:
        measured = _measure(Path(scratch), APPS, probed)
        _judge(measured)
    load_after = os.getloadavg()
    wrong = [m for m in measured if m.policy != "stale" and m.status is not Status.CONFORMS]
    if wrong:
        print(f"{len(wrong)} recovering run(s) do not conform, e.g. {wrong[0]}", file=sys.stderr)
        sys.exit(2)
    stale = [m for m in measured if m.policy == "stale"]
    stale_caught = sum(1 for m in stale if m.status is Status.VIOLATES)
    wall = statistics.median(m.wall for m in measured)
    cpu = statistics.median(m.cpu for m in measured)
    first = "; ".join(f"{probed[a.name].calls} on {a.name} ({a.shape})" for a in APPS)
    report = "\n".join(
        [
            "# Revision policies on user-style LangGraph graphs (`run revision --app`)",
            "",
            f"{datetime.date.today()}, langgraph "
            f"{__import__('importlib.metadata').metadata.version('langgraph')}, "
            f"{os.cpu_count()} CPUs (shared); `.venv/bin/python bench/revision_app_bench.py "
            "--out bench/revision-app-results.md`.",
            "",
            f"{len(measured)} runs, every one judged by DagRevision: every full, suffix and "
            f"validity run conforms; stale rejected in {stale_caught} of {len(stale)}. Median "
            f"per run: {wall:.3f} s wall, {cpu:.3f} CPU-s (this process; TLC not included). The "
            f"machine is shared: load average {load_before[0]:.1f} at the start, "
            f"{load_after[0]:.1f} at the end (1 min), so wall times are noisy; CPU-s less so. "
            "The model calls and tokens are deterministic.",
            "",
            f"Model calls per run, the first run included. Fault-free: {first}; triage's new "
            "message flips its conditional edge from answer to refund. *Conflict position*: "
            "where the channel's first reader sits in the node order; *width*: the most nodes "
            "one node fans out to (run in one superstep); *stale rejected*: stale runs "
            "DagRevision rejected.",
            "",
            _table(STATIC, measured, probed),
            "",
            f"## A fan-out with `Send` (`fanout.py`, `--send-bound {SEND_BOUND}`)",
            "",
            f"`plan` lists the topics of `request` (first input `{json.dumps(FANOUT.inputs)}`), "
            "its conditional edge sends one `research` task per topic, `write` joins their "
            f"findings in `style`. The node order counts the {SEND_BOUND} slots of the bound "
            "(`research#1` ..); *width* is the Send tasks of the first run and of one on the "
            "revised input.",
            "",
            _table([FANOUT], measured, probed),
            "",
            *_why(FANOUT, measured, probed[FANOUT.name]),
            "",
            "## Loops as laps (`plan_execute_loop.py`, `compiler_loop.py`)",
            "",
            "A loop's k-th turn is node `N(k)`, a branch of the turn before; the node order counts "
            "every lap of the bound (4). A revision a lap reads re-runs that lap and every later "
            "one (each lap's input is the one before), so validity keeps what comes before the "
            "first reader and saves over suffix only where the DAG is wider than a chain.",
            "",
            _table(LOOPS, measured, probed),
            "",
            *[line for app in LOOPS for line in _why(app, measured, probed[app.name])],
            "",
        ]
    )
    print(report)
    if out is not None:
        out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
