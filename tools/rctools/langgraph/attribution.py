"""Whose fault is each break: property by property, the saver under test's or LangGraph's.

A property the tested saver breaks in a cell that the reference saver never breaks in its runs
of the same cell is the saver's, even when the reference breaks another property there. Only
the same cell's runs count (killed at the same logical instant: `matrix.same_instant`), never
other cells of the scenario, so the cells `--stride`/`--cells` choose cannot change whose fault
a break is. Two things make that exact without re-implementing any property in Python:

- **What the reference breaks** in a cell is found by judging its traces with what they
  are already known to break tolerated (`judge(..., tolerate=...)`), until nothing new shows:
  a trace that breaks CO first may break EO after it, and that EO is LangGraph's too.
- **What the tested saver breaks beyond that** is its trace judged tolerating the reference's
  set: the first property TLC then reports is one no reference run showed.
- **Only the store's properties are a saver's.** A contract names, in `StoreProperties`,
  the properties a store breaks by how it answers a load (CV in ResumeCore). Every other
  property (EO, CO, PC, RD, FD) the runtime breaks or keeps by what it does with those
  answers: where the tested trace breaks one and every load was answered as the contract
  requires, the runtime broke it with this saver's *timing*. A slower or faster store moves
  LangGraph's races -- a `fanout` sibling cancelled after firing its effect, before its write
  reached any saver, fires it again (EO); a correct saver whose async methods block the event
  loop lost that race in 17 of 246 `fanout` cells through `ainvoke`, AsyncSqliteSaver in none
  of 4 runs of each -- and no number of reference runs samples another store's timing. So
  such a break is a runtime finding, never a saver finding; the trace is judged tolerating it
  until a store property shows or nothing does. A contract that declares no
  `StoreProperties` keeps the older rule: any property no reference run of the cell breaks.

An event that no action of the contract allows at all is the pseudo-property `unmatched`.
TLC decides every break; this module only chooses what to tolerate and compares sets.

Besides the contract's properties, four **runner checks** compare the two runs of a cell,
which a single trace cannot state (the contract judges one run; "the same end as another
run" is not a property of a run). They are named like properties in findings:

- `END`: the reference's thread reaches its end (a fresh process reads nothing left to run)
  and the tested saver's does not;
- `STATE`: both reach their end, and the values of the tested thread's final state differ
  from the reference's (digests of `get_state().values` in one canonical form, read by a
  fresh process: `rctools.langgraph.final`);
- `VALID`: the tested trace is invalid input (the saver returned content the recorder could
  only write as a malformed event) where the reference's trace of the cell is valid;
- `RUNS`: a process raised from the tested saver where the reference ran the cell.

END and STATE are checked only where every reference run of the cell conforms and ends the
same way: a reference that breaks the contract, or ends in different states on different
runs, is no measure of how the thread should end. And only against reference runs killed at
the same logical instant as the tested run: the same saver writes acknowledged before the kill
(`acknowledged`); where there is none the comparison is inconclusive (matrix.py).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

from rctools.langgraph.final import FinalState
from rctools.langgraph.killpoints import ALL, NOTHING

UNMATCHED = "unmatched"
END, STATE, VALID, RUNS = "END", "STATE", "VALID", "RUNS"
RUNNER_CHECKS = {
    END: "the reference's thread reaches its end and the tested saver's does not",
    STATE: "the tested thread ends with other values than the reference's",
    VALID: "the tested trace is invalid (malformed saver content) where the reference's is valid",
    RUNS: "a process raised from the tested saver where the reference ran the cell",
}
NO_TOLERANCE: frozenset[str] = frozenset()


def breaks(verdict: Verdict | None) -> frozenset[str]:
    """The first breaks a verdict reports: its properties, or `unmatched`."""
    if verdict is None or verdict.status is not Status.VIOLATES:
        return NO_TOLERANCE
    return frozenset(verdict.properties) or frozenset({UNMATCHED})


def tolerable(props: Iterable[str]) -> frozenset[str]:
    return frozenset(p for p in props if p != UNMATCHED)


class Judgments:
    """Verdicts per (trace, tolerated properties), judged in batches: one TLC run per
    tolerated set, each trace judged once per set."""

    def __init__(
        self, spec_paths: list[Path], on_line: Callable[[str], None] | None = None
    ) -> None:
        self.spec_paths, self.on_line = spec_paths, on_line
        self._known: dict[tuple[Path, frozenset[str]], Verdict | None] = {}

    def ensure(self, wanted: Iterable[tuple[Path, frozenset[str]]]) -> None:
        todo: dict[frozenset[str], list[Path]] = {}
        for path, tolerate in wanted:
            if (path, tolerate) not in self._known:
                todo.setdefault(tolerate, [])
                if path not in todo[tolerate]:
                    todo[tolerate].append(path)
        for tolerate, paths in todo.items():
            verdicts = judge(
                paths, spec_paths=self.spec_paths, on_line=self.on_line, tolerate=tolerate
            )
            by_path = {v.path: v for v in verdicts}
            for path in paths:
                self._known[(path, tolerate)] = by_path.get(path)

    def get(self, path: Path, tolerate: frozenset[str] = NO_TOLERANCE) -> Verdict | None:
        self.ensure([(path, tolerate)])
        return self._known[(path, tolerate)]


Group = tuple[str, ...]  # the runs pooled: a matrix cell (scenario, fault, durability)


def reference_breaks(
    traces: dict[Group, Sequence[Path]], judgments: Judgments
) -> dict[Group, frozenset[str]]:
    """Every property the reference's traces break in each group (the matrix: a cell): each
    violating trace is judged again tolerating what is known, until nothing new shows."""
    judgments.ensure((p, NO_TOLERANCE) for paths in traces.values() for p in paths)
    group_of = {path: group for group, paths in traces.items() for path in paths}
    found = {
        group: frozenset().union(*(breaks(judgments.get(p)) for p in paths))
        for group, paths in traces.items()
    }
    while True:
        wanted = [
            (path, tolerable(found[group]))
            for group, paths in traces.items()
            for path in paths
            if breaks(judgments.get(path)) and tolerable(found[group])
        ]
        judgments.ensure(wanted)
        grown = False
        for path, tolerate in wanted:
            group = group_of[path]
            new = breaks(judgments.get(path, tolerate)) - found[group]
            if new:
                found[group] |= new
                grown = True
        if not grown:
            return found


def saver_breaks(
    path: Path,
    reference: frozenset[str],
    judgments: Judgments,
    *,
    store: frozenset[str] | None = None,
) -> frozenset[str]:
    """The properties the tested trace breaks that are the saver's (`first_saver_break`)."""
    return first_saver_break(path, reference, judgments, store=store)[0]


def first_saver_break(
    path: Path,
    reference: frozenset[str],
    judgments: Judgments,
    *,
    store: frozenset[str] | None = None,
) -> tuple[frozenset[str], Verdict | None]:
    """The saver's first break in the tested trace, and the verdict that reports it.

    With `store` (the contract's `StoreProperties`), only those are a saver's: the first one
    the trace breaks that no reference run of the cell breaks, every other break tolerated in
    turn as it shows. A store is judged by how it answers a load; a break of another property
    with every load answered as the contract requires is what the runtime did (with the
    saver's timing, which no reference samples: see the module). `unmatched` -- no action
    allows an event, and nothing after it is judged -- is the saver's where no reference run
    shows it. Without `store` (a contract that declares none), the first break no reference
    run shows, or else the first once the reference's are tolerated."""
    verdict = judgments.get(path)
    first = breaks(verdict)
    if store is None:
        if not first or first - reference:
            return first - reference, verdict
        tolerate = tolerable(reference)
        if not tolerate or first == {UNMATCHED}:
            return NO_TOLERANCE, None
        verdict = judgments.get(path, tolerate)
        return breaks(verdict) - tolerate - reference, verdict
    tolerate, found = NO_TOLERANCE, first
    while found:
        if UNMATCHED in found:  # nothing after it is judged
            return frozenset({UNMATCHED}) - reference, verdict
        mine = (found & store) - reference
        if mine:
            return mine, verdict
        tolerate = tolerate | found
        verdict = judgments.get(path, tolerate)
        found = breaks(verdict) - tolerate
    return NO_TOLERANCE, None


def acknowledged(
    trace: Path, inflight: Sequence[Sequence[str]] = ()
) -> Counter[tuple[Any, ...]] | None:
    """The saver writes in the store of a correct saver when a trace's first crash came, in
    a form two runs of one cell share (ids differ from run to run): `("put", n)` for the n-th
    checkpoint the run named, `("put_writes", n, task)` with the task's path or node -- each
    one the trace acknowledged before the crash, and each call `inflight` (label, effect,
    checkpoint id, task id: inside the saver in another thread at the kill) that had taken
    effect (`ALL`); one held in part or unreadable is kept as itself, matching only its like.
    Two runs whose sets differ were killed at different logical instants, whatever point
    their kill was named after: LangGraph's background writer may acknowledge (or commit) a
    task's writes before or after the next checkpoint's put, and a reference kill passed
    while events were held lands later. None: no crash, or no readable trace."""
    try:
        lines = trace.read_text(encoding="utf-8").splitlines()[1:]
    except OSError:
        return None
    order: dict[str, int] = {}
    tasks: dict[str, str] = {}
    found: Counter[tuple[Any, ...]] = Counter()
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            return None
        kind = event.get("ev")
        if kind == "crash":
            for call in inflight:
                label, effect, checkpoint, task = [*map(str, call), "", "", "", ""][:4]
                if effect == ALL:
                    if label.startswith("put_writes"):
                        found[("put_writes", order.get(checkpoint), tasks.get(task))] += 1
                    else:
                        found[("put", order.setdefault(checkpoint, len(order)))] += 1
                elif effect != NOTHING:
                    found[("inflight", label, effect)] += 1
            return found
        for scheduled in event.get("tasks") or []:
            if isinstance(scheduled, dict) and scheduled.get("task"):
                tasks[str(scheduled["task"])] = str(scheduled.get("path") or scheduled.get("node"))
        if kind == "task_start" and event.get("task"):
            tasks.setdefault(str(event["task"]), str(event.get("path") or event.get("node")))
        checkpoint = event.get("checkpoint")
        if isinstance(checkpoint, str):
            order.setdefault(checkpoint, len(order))
        if kind == "put":
            found[("put", order.get(str(checkpoint)))] += 1
        elif kind == "put_writes":
            task = event.get("task")
            node = None if task is None else tasks.get(str(task), "?")
            found[("put_writes", order.get(str(checkpoint)), node)] += 1
    return None


def end_checks(tested: FinalState | None, references: Sequence[FinalState | None]) -> list[str]:
    """END or STATE, when every reference run conformed and ended alike (see the module)."""
    if tested is None or tested.problem or not references:
        return []
    if any(r is None or r.problem or not r.done for r in references):
        return []
    if not tested.done:
        return [END]
    digests = {r.digest for r in references if r is not None}
    if len(digests) == 1 and tested.digest not in digests:
        return [STATE]
    return []
