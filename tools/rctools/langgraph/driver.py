"""Runs one matrix cell: a scenario, one fault, one durability mode, on one saver.

Every invocation runs in a worker process forked from this one (LangGraph is imported once,
so a process costs milliseconds, yet each worker has its own memory and its own saver),
started and supervised by the suite framework's child harness (`suite.child.start_forked`):
the worker stops at the chosen point, says so through a pipe, and is SIGKILLed there by the
harness; the driver appends the `crash` event and a fresh worker resumes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rctools.langgraph import coverage, effect, record, worker
from rctools.langgraph.backends import open_saver
from rctools.langgraph.killpoints import KillPoint, for_reference
from rctools.langgraph.scenarios import Scenario
from rctools.langgraph.tracefile import TraceFile
from rctools.suite.child import Running, start_forked

WORKER_TIMEOUT = 120.0
MAX_INVOCATIONS = 12


@dataclass
class CellRun:
    """What happened in a cell, besides the trace: for the report and for choosing kills."""

    trace: Path
    killed_at: str | None = None  # "w1: put_writes A entry": the process and where it died
    kill_point: tuple[str, int] | None = None  # (label, occurrence in the whole cell) it died at
    asked: KillPoint | None = None  # the kill point the cell was asked to kill at
    # where the reference saver is killed for this cell (killpoints.for_reference)
    reference_point: KillPoint | None = None
    # killed inside a write call: what the store held of it right after the kill (read back
    # by a fresh process, `effect.probe`): killpoints.NOTHING, ALL, PART or UNKNOWN
    effect: str | None = None
    # the other write calls inside the saver when the kill landed (LangGraph's background
    # writer): label, what the store held of it (effect), its checkpoint id and task id
    inflight: list[tuple[str, ...]] = field(default_factory=list)
    invocations: int = 0
    parks: int = 0  # invocations of the first thread that left it parked at an interrupt
    checkpoints: int = 0  # checkpoints of the first thread's top chain at the end
    nested: int = 0  # ... and inside its subgraphs, those that schedule a task
    failure: str | None = None
    notes: list[str] = field(default_factory=list)
    # every kill point the cell passed (label -> times) and, per write call, the line events
    # of each occurrence: what `killpoints.plan` makes the kill cells of
    points: dict[str, int] = field(default_factory=dict)
    lines: dict[str, list[int]] = field(default_factory=dict)
    durations: dict[str, list[float]] = field(default_factory=dict)
    overlaps: int = 0  # unserialized cells: pairs of write calls of two processes that overlapped
    # the saver calls of the cell's processes by shape (`coverage.Shape.key` -> calls)
    saver_calls: dict[str, int] = field(default_factory=dict)

    @property
    def kill_reached(self) -> bool | None:
        """None: no kill was asked; else whether the worker died at (or after) the point."""
        return None if self.asked is None else self.killed_at is not None


def header(
    scenario: Scenario, fault: str, durability: str, backend: str, api: str = ""
) -> dict[str, Any]:
    through = ", async API" if api == "async" else ""
    return record.header(
        scenario.build(),
        durability=durability,
        backend=backend,
        scenario=f"{scenario.name} ({fault}, durability={durability}{through}): "
        f"{scenario.description}",
        thread=", ".join(scenario.threads),
    )


def run_cell(
    folder: Path,
    scenario: Scenario,
    durability: str,
    factory: worker.SaverFactory,
    backend: str,
    fault: str = "none",
    in_process: bool = False,
    kill_point: tuple[str, int] | KillPoint | None = None,
    *,
    serialize: bool = True,
    api: str = "",
) -> CellRun:
    """Records the cell into folder/trace.jsonl; the saver keeps its data in folder/store.

    `in_process`: every invocation runs in one worker process that keeps one saver (a saver
    that lives in memory has nothing to hand to a second process). `kill_point`: the
    (label, occurrence) to kill at (`killpoints`). `serialize=False`: saver calls of
    different processes are not serialized, so they can race. `api="async"`: the graph is
    driven through the saver's async API even where it has the sync one."""
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "store"
    store.mkdir(exist_ok=True)
    os.environ["RESUME_CHECK_STORE"] = str(store)
    trace = folder / "trace.jsonl"
    cell = worker.Cell(
        folder=folder,
        trace=trace,
        durability=durability,
        build=scenario.build,
        make_input=scenario.make_input,
        factory=factory,
        serialize=serialize,
        api=api,
    )
    with TraceFile(trace, "-") as first:
        first.header(header(scenario, fault, durability, backend, api))
    result = CellRun(trace)
    if isinstance(kill_point, tuple):
        kill_point = KillPoint(*kill_point)
    result.asked = kill_point
    if in_process:
        return _in_one_process(cell, scenario, result)
    _Session(cell, scenario, result, kill_point=kill_point).play()
    if kill_point is not None and result.killed_at is None:
        result.notes.append(f"kill point {kill_point.label} #{kill_point.occurrence} not reached")
    if not serialize:
        result.overlaps = overlaps(folder / "calls.jsonl")
    return result


def overlaps(calls: Path) -> int:
    """Pairs of write calls of two different processes whose intervals overlapped."""
    if not calls.is_file():
        return 0
    spans = [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines() if line]
    return sum(
        1
        for i, a in enumerate(spans)
        for b in spans[i + 1 :]
        if a["proc"] != b["proc"] and a["start"] < b["end"] and b["start"] < a["end"]
    )


def _in_one_process(cell: worker.Cell, scenario: Scenario, result: CellRun) -> CellRun:
    job = worker.Invocation(kind="session", proc="-", nonce="-")
    report = _wait(cell, job, _spawn(cell, job, lambda: _play_here(cell, scenario, result)))
    for name in (
        "invocations",
        "parks",
        "checkpoints",
        "nested",
        "failure",
        "notes",
        "points",
        "lines",
        "durations",
        "saver_calls",
    ):
        if name in report:
            setattr(result, name, report[name])
    return result


def _play_here(cell: worker.Cell, scenario: Scenario, result: CellRun) -> dict[str, Any]:
    with open_saver(cell.factory) as saver:
        _Session(cell, scenario, result, saver).play()
    return {
        "invocations": result.invocations,
        "parks": result.parks,
        "checkpoints": result.checkpoints,
        "nested": result.nested,
        "failure": result.failure,
        "notes": result.notes,
        "points": result.points,
        "lines": result.lines,
        "durations": result.durations,
        "saver_calls": result.saver_calls,
    }


class _Session:
    """Plays a scenario's script on each of its threads in turn (step by step, so threads
    that share one saver interleave); a kill happens once in the cell, and the killed
    thread is resumed before the script goes on."""

    def __init__(
        self,
        cell: worker.Cell,
        scenario: Scenario,
        result: CellRun,
        saver: Any = None,
        kill_point: KillPoint | None = None,
    ) -> None:
        self.cell, self.scenario, self.result = cell, scenario, result
        self.kill_point = kill_point
        self.saver = saver
        self.seen = result.points  # kill points passed so far, per label, in the whole cell
        self.procs = 0
        self.thread = scenario.threads[0]
        self.parks: dict[str, list[dict[str, Any]]] = {}  # per thread, every park, in order
        self.budget = MAX_INVOCATIONS * len(scenario.threads)

    def _stop(self) -> bool:
        return bool(self.result.failure) or self.result.invocations >= self.budget

    def play(self) -> None:
        """Plays the scenario's script; after a kill, the thread is resumed first."""
        reports: dict[str, dict[str, Any]] = {t: {"done": False} for t in self.scenario.threads}
        for step in self.scenario.script:
            for thread in self.scenario.threads:
                if self._stop():
                    break
                self.thread = thread
                reports[thread] = self.step(step, reports[thread])
        first = reports[self.scenario.threads[0]]
        self.result.checkpoints = int(first.get("checkpoints") or 0)
        self.result.nested = int(first.get("nested") or 0)
        if not all(r.get("done") for r in reports.values()) and not self.result.failure:
            self.result.notes.append("the thread did not finish")

    def step(self, step: tuple[Any, ...], report: dict[str, Any]) -> dict[str, Any]:
        kind = step[0]
        if kind == "start":
            report = self.invoke("start")
        elif kind == "auto":
            report = self.until_done(report)
        elif kind == "answer" and report.get("parked"):
            report = self.invoke("resume", parked=report["parked"][0])
        elif kind == "answers":  # answer until the thread parks for the n-th time
            while report.get("parked") and self.result.parks < int(step[1]) and not self._stop():
                report = self.invoke("resume", parked=report["parked"][0])
                if report.get("killed"):
                    break
        elif kind == "none":
            report = self.invoke("none")
        elif kind == "concurrent" and report.get("parked"):
            self.invoke_many("resume", int(step[1]), report["parked"][0])
            report = {"done": False}
        elif kind in ("pinned", "again") and (parked := self._park(*step[1:])):
            report = self.invoke(kind, parked=parked)
        elif kind == "fork":
            report = self.invoke("fork", target=step[1])
        elif kind == "update":
            report = self.invoke("update", target=step[1], as_node=step[2], values=step[3])
        elif kind == "delete":
            report = self.invoke("delete")
        if report.get("killed") and kind != "auto":
            report = self.until_done(report, stop_parked=True)
        return report

    def until_done(self, report: dict[str, Any], stop_parked: bool = False) -> dict[str, Any]:
        """Resumes until the thread is done (`stop_parked`: until it waits for an answer
        again, which the script gives)."""
        while not (report.get("done") and not report.get("parked")):
            if self._stop():
                break
            if stop_parked and report.get("parked") and not report.get("killed"):
                break
            report = self.invoke(
                "continue" if stop_parked else "auto", recover=bool(report.get("killed"))
            )
            if report.get("empty") and not report.get("ran"):
                # nothing was saved: what the user does is send the input again
                report = self.invoke("start")
            if not report.get("ran", True) and not report.get("killed"):
                break
        return report

    def _job(self, kind: str, parked: dict[str, Any] | None, **extra: Any) -> worker.Invocation:
        self.procs += 1
        label = None
        point = self.kill_point
        if self.result.killed_at is None and point is not None:
            # occurrences are counted over the whole cell; a process counts its own
            left = point.occurrence - self.seen.get(point.counted_as, 0)
            label = (point.label, left) if left > 0 else None
        return worker.Invocation(
            kind=kind,
            proc=f"w{self.procs}",
            nonce=f"w{self.procs}",
            parked=parked,
            kill_label=label,
            kill_line=point.line if point is not None else 0,
            kill_delay=point.delay if point is not None else 0.0,
            measure=point is None,
            thread=self.thread,
            answer=self.scenario.answer,
            **extra,
        )

    def invoke(
        self, kind: str, parked: dict[str, Any] | None = None, **extra: Any
    ) -> dict[str, Any]:
        job = self._job(kind, parked, **extra)
        if self.saver is not None:
            try:
                report = worker.run(self.cell, job, None, self.saver)
            except Exception as exc:
                report = {"failure": f"{type(exc).__name__}: {exc}"}
            return self._account(job, report)
        report = _wait(self.cell, job, _spawn(self.cell, job))
        return self._account(job, report)

    def invoke_many(self, kind: str, n: int, parked: dict[str, Any]) -> None:
        """N processes at once: each waits for the others before it invokes, so that they
        all resume the same parked checkpoint."""
        jobs = [self._job(kind, parked, barrier=n) for _ in range(n)]
        started = [(job, _spawn(self.cell, job)) for job in jobs]
        for job, child in started:
            self._account(job, _wait(self.cell, job, child))

    def _killed(self, job: worker.Invocation, killed: dict[str, Any]) -> None:
        """Where the worker died, numbered over the whole cell (its report counts within
        the process)."""
        landed, _, nth = str(killed["landed"]).rpartition("#")
        occurrence = self.seen.get(KillPoint(landed, 1).counted_as, 0) + int(nth or 1)
        self.result.killed_at = f"{job.proc}: {landed}"
        self.result.kill_point = (landed, occurrence)
        if killed.get("deferred_from"):
            self.result.notes.append(
                f"kill point {killed['deferred_from']} passed while events were held; "
                f"killed at the next point, {landed}"
            )
        call = killed.get("call")
        in_call = None
        if call:
            in_call = (str(call[0]), self.seen.get(f"{call[0]} entry", 0) + int(call[1]))
        point = KillPoint(landed, occurrence)
        store = self.cell.folder / "store"
        if point.call is not None and in_call is not None and self.saver is None:
            # killed inside a write call: which instant that was is what the store holds
            # now, before anything resumes (effect.py), never the fraction of the call run
            self.result.effect = effect.probe(store, self.cell.factory, killed.get("identity"))
        if self.saver is None:
            # calls another thread had inside the saver: cut too, taken effect or not
            self.result.inflight = sorted(
                (
                    str(label),
                    effect.probe(store, self.cell.factory, identity),
                    str(identity.get("checkpoint_id")),
                    str(identity.get("task_id") or ""),
                )
                for label, identity in killed.get("inflight") or []
            )
        self.result.reference_point = for_reference(point, in_call, self.result.effect)

    def _account(self, job: worker.Invocation, report: dict[str, Any]) -> dict[str, Any]:
        self.result.invocations += 1
        if report.get("killed"):
            self._killed(job, report["killed"])
        for name, count in (report.get("points") or {}).items():
            self.seen[name] = self.seen.get(name, 0) + int(count)
        for call, counts in (report.get("lines") or {}).items():
            self.result.lines.setdefault(call, []).extend(int(n) for n in counts)
        for call, spans in (report.get("durations") or {}).items():
            self.result.durations.setdefault(call, []).extend(float(t) for t in spans)
        coverage.add(self.result.saver_calls, report.get("saver_calls"))
        if report.get("failure"):
            self.result.failure = f"{job.proc}: {report['failure']}"
        if report.get("parked"):
            parks = self.parks.setdefault(job.thread, [])
            if not parks or report.get("ran"):
                parks.append(report["parked"][0])
            if job.thread == self.scenario.threads[0] and report.get("ran"):
                self.result.parks += 1
        return report

    def _park(self, k: int = 1) -> dict[str, Any] | None:
        """The k-th interrupt this thread parked at (1: the first), if it got that far."""
        parks = self.parks.get(self.thread, [])
        return parks[int(k) - 1] if 0 < int(k) <= len(parks) else None


def _spawn(
    cell: worker.Cell, job: worker.Invocation, work: Callable[[], dict[str, Any]] | None = None
) -> Running:
    """Starts the invocation (or `work`) in a worker forked from this process, under the
    suite framework's child harness; its output goes to the cell's workers.log."""

    def run(kill_fd: int) -> dict[str, Any]:
        try:
            return work() if work is not None else worker.run(cell, job, kill_fd)
        except BaseException as exc:  # reported to the parent as a tool failure
            return {"failure": f"{type(exc).__name__}: {exc}"}

    return start_forked(
        run, proc=job.proc, role=job.kind, log=cell.folder / "workers.log", timeout=WORKER_TIMEOUT
    )


def _has_events(trace: Path, proc: str) -> bool:
    """Whether the process did anything the contract follows: a process that only read
    (an `update_state` killed before it handed the saver its write: no `edit` event yet) ran
    nothing that a crash could cut short."""
    marker = f'"proc": "{proc}"'
    return any(
        marker in line and '"ev": "read"' not in line
        for line in trace.read_text(encoding="utf-8").splitlines()[1:]
    )


def _wait(cell: worker.Cell, job: worker.Invocation, running: Running) -> dict[str, Any]:
    """The worker's report; for a worker SIGKILLed at its point, the crash it recorded."""
    ended = running.wait()
    if ended.exit == "killed":
        if _has_events(cell.trace, job.proc):  # else it died before doing anything
            with TraceFile(cell.trace, job.proc) as lines:
                lines.event("crash")
        point = dict(ended.told or {})
        calls = point.pop("saver_calls", None) or {}
        return {"killed": point, "saver_calls": calls}
    if ended.exit == "error":
        return {"failure": ended.error or "worker died silently"}
    report: dict[str, Any] | None = ended.result
    return report if report is not None else {"failure": "worker died silently"}
