"""Run one workload on real LangGraph (SqliteSaver) with a restore policy, recording a trace.

Each instance runs inside LangGraph nodes (see `Workload.layout`); parallel nodes of a step run
on LangGraph's worker threads and hand outputs over through a board, so a consumer can act on
a producer's committed output while the producer is still running. The engine keeps, per
instance, its current incarnation: position, outputs, consumptions, effects and the entry,
commit and exit checkpoints (snapshots of where it was and what it knew); with `points`, also a
restore point after every other action (a `checkpoint` event), so that a controller can restore
to any action boundary, not only to those three.

When an instance fails, LangGraph saves the successful parallel tasks' writes and raises. The
controller localizes the failure and asks the policy what to do. A restore resumes the
LangGraph thread, where LangGraph re-runs only the failed node (from the instance checkpoint the
policy chose, or from the node's start), or forks LangGraph's latest checkpoint, where the
whole step re-runs; a rerun starts a fresh thread; a block ends the run. The engine records
what happened; whether it was right is for the SemanticRecovery spec to say.
"""

from __future__ import annotations

import operator
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from rctools.recovery.controller import Localization, kept_after_restore, localize
from rctools.recovery.trace import TraceWriter, header
from rctools.recovery.workloads import Action, Segment, Workload
from rctools.recovery.world import Model, World

NAMED = ("entry", "commit", "exit")
WAIT_SECONDS = 30.0
MAX_RECOVERIES = 3


class InjectedFailure(Exception):
    """An instance failed at an action boundary (the fault this suite injects).

    What the runtime raises names the tool call that failed (`tool`), as a tool's error does;
    `instance` is the injector's answer, written to the trace for the judge and never shown to
    the controller, which localizes the failure from the recorded events (controller.py)."""

    def __init__(self, instance: str, tool: str) -> None:
        super().__init__(f"{tool} failed")
        self.instance = instance
        self.tool = tool


class Stuck(RuntimeError):
    """A handoff never came: the workload or the runtime is broken (a tool failure)."""


@dataclass(frozen=True)
class Snapshot:
    """Where an instance was at a checkpoint: the next action's index and what it knew."""

    index: int
    pos: int
    known: dict[str, str]


@dataclass
class Incarnation:
    """An instance since its last (re)start. Positions count traced actions."""

    attempt: int = 1
    pos: int = 0
    exited: bool = False
    checkpoints: dict[str, Snapshot] = field(default_factory=dict)
    # (pos, value, committed)
    outputs: list[tuple[int, str, bool]] = field(default_factory=list)
    # (pos, producer, the producer's pos of the output, value)
    consumed: list[tuple[int, str, int, str]] = field(default_factory=list)
    # (pos, policy, the effect's row in the world; None for a replay)
    effects: list[tuple[int, str, int | None]] = field(default_factory=list)

    @property
    def committed(self) -> bool:
        return "commit" in self.checkpoints

    def live_output(self, pos: int, value: str) -> bool:
        return any(p == pos and v == value for p, v, _ in self.outputs)


@dataclass(frozen=True)
class Decision:
    """What the controller does about a failure: restore the failed instance, block or rerun.

    A restore resumes the LangGraph thread in one of three ways: from the instance checkpoint
    chosen (`checkpoint`: the re-run node starts there), from LangGraph's own latest checkpoint
    (`node`: the failed node re-runs from its start, the step's successful writes are kept), or
    from a fork of that checkpoint (`fork`: the whole step re-runs, so the instances `also`
    that ran in it start again too).
    """

    kind: Literal["restore", "block", "rerun"]
    boundary: str = ""  # entry, commit, exit, or the name of a restore point
    resume: Literal["checkpoint", "node", "fork"] = "checkpoint"
    also: tuple[str, ...] = ()
    reason: str = "no admissible checkpoint"


NATIVE = Snapshot(-1, -1, {})  # restore point: LangGraph's own node start and saved state


class State(TypedDict):
    known: Annotated[dict[str, dict[str, str]], operator.or_]


@dataclass
class RunResult:
    """What one run did, as measured by the runtime (not a verdict)."""

    workload: str
    policy: str
    trace: Path
    outcome: Literal["completed", "blocked"]
    actions: int
    replayed: int
    preserved: int | None
    recovery_seconds: float | None
    model_calls: int
    effects: dict[str, int]
    # The first failure: the instance the injector made fail, the one the controller blamed
    # from the recorded events, and the candidates it chose among.
    failed: str | None = None
    localized: str | None = None
    candidates: tuple[str, ...] = ()
    restores: int = 0
    blocks: int = 0
    reruns: int = 0
    through_langgraph: int = 0  # restores that resumed from LangGraph's own checkpoint
    to_point: int = 0  # restores to a restore point (not entry, commit or exit)

    @property
    def mislocalized(self) -> bool:
        return self.failed is not None and self.localized != self.failed


class Engine:
    def __init__(
        self,
        workload: Workload,
        policy: str,
        decide: Callable[[Engine, str], Decision],
        trace_path: Path,
        db_path: Path,
        *,
        latency: float = 0.0,
        ledger: bool = True,
        points: bool = False,
    ) -> None:
        self.workload = workload
        self.points = points
        self.policy = policy
        self.decide = decide
        self.cond = threading.Condition()
        self.inc = {name: Incarnation() for name in workload.instances}
        self.resume: dict[str, Snapshot] = {}
        self.failed_segment: Segment | None = None
        self.localization = Localization(None, ())
        self.config: dict[str, Any] = {}
        self.model = Model(latency)
        db_path.parent.mkdir(parents=True, exist_ok=True)
        db_path.unlink(missing_ok=True)
        # LangGraph's saver and the world each get their own connection to the run's database:
        # one connection shared across LangGraph's worker threads interleaves transactions.
        self.db = sqlite3.connect(db_path, check_same_thread=False, timeout=30)
        self.world = World(
            sqlite3.connect(db_path, check_same_thread=False, timeout=30),
            dict(workload.tools),
            latency,
            ledger=ledger,
        )
        self.trace = TraceWriter(trace_path, self._header())
        self.graph = self._graph()

    # --- the trace -------------------------------------------------------------------------

    def _header(self) -> dict[str, Any]:
        w = self.workload
        return header(w.name, self.policy, w.description, list(w.instances), w.tools, thread=w.name)

    def actions_of(self, instance: str) -> tuple[Action, ...]:
        return self.workload.instances[instance]

    def segment(self, node: str) -> Segment:
        return next(s for s in self.workload.layout() if s.node == node)

    def pos_at(self, instance: str, index: int) -> int:
        """The position (traced actions done) before action `index` of an instance."""
        return sum(a.kind != "await" for a in self.actions_of(instance)[:index])

    # --- LangGraph ---------------------------------------------------------------------------

    def _graph(self) -> Any:
        builder = StateGraph(State)
        layout = self.workload.layout()
        for segment in layout:
            builder.add_node(segment.node, self._node(segment))
        targets = {dst for _, dst in self.workload.edges}
        sources = {src for src, _ in self.workload.edges}
        for segment in layout:
            if segment.node not in targets:
                builder.add_edge(START, segment.node)
            if segment.node not in sources:
                builder.add_edge(segment.node, END)
        for src, dst in self.workload.edges:
            builder.add_edge(src, dst)
        return builder.compile(checkpointer=SqliteSaver(self.db))

    def _node(self, segment: Segment) -> Callable[[State], dict[str, Any]]:
        def node(state: State) -> dict[str, Any]:
            try:
                return self.run_segment(segment, state)
            except InjectedFailure:
                self.failed_segment = segment
                raise

        return node

    def run_segment(self, segment: Segment, state: State) -> dict[str, Any]:
        name = segment.instance
        with self.cond:
            inc = self.inc[name]
            point = self.resume.pop(name, None)
            if point is None or point is NATIVE:
                index, known = segment.start, dict(state["known"].get(name, {}))
            else:
                index, known = point.index, dict(point.known)
            if point is None and segment.start == 0:
                inc.checkpoints["entry"] = Snapshot(0, 0, {})
                self.trace.event("begin", instance=name)
        for action in self.actions_of(name)[index : segment.end]:
            self.step(name, action, index, known)
            index += 1
        with self.cond:
            if segment.end == len(self.actions_of(name)):
                inc.exited = True
                inc.checkpoints["exit"] = Snapshot(index, inc.pos, dict(known))
                self.trace.event("exit", instance=name)
                self.cond.notify_all()
        return {"known": {name: known}}

    # --- one action ------------------------------------------------------------------------

    def step(self, name: str, action: Action, index: int, known: dict[str, str]) -> None:
        inc = self.inc[name]
        if action.kind == "await":
            self._wait(lambda: self.inc[action.source].exited, f"{name} waits for {action.source}")
            return
        if action.fails and inc.attempt == 1:
            with self.cond:
                self.trace.event("fail", instance=name, reason=f"{action.intent} failed")
            raise InjectedFailure(name, action.tool)
        if action.kind == "consume":
            self._wait(
                lambda: self._readable(action.source, action.draft) is not None,
                f"{name} waits for {action.source}",
            )
        # The model and the tools are called outside the lock, as parallel instances would.
        intent = f"{name}/{action.intent}"
        issued = self.world.call(action.tool, intent) if action.kind == "effect" else None
        chosen = None
        if action.kind in ("emit", "commit") and not action.template:
            chosen = self.model.choose(action.choices, inc.attempt)
        with self.cond:
            pos = inc.pos + 1
            if action.kind in ("emit", "commit"):
                value = chosen or action.template.format(**known)
                known["self"] = value
                committed = action.kind == "commit"
                output = value if committed else f"{value} (draft)"
                inc.outputs.append((pos, output, committed))
                if committed:
                    inc.checkpoints["commit"] = Snapshot(index + 1, pos, dict(known))
                self.trace.event(action.kind, instance=name, value=output)
            elif action.kind == "consume":
                found = self._readable(action.source, action.draft)
                assert found is not None
                out_pos, output = found
                known[action.source] = output.removesuffix(" (draft)")
                inc.consumed.append((pos, action.source, out_pos, output))
                self.trace.event("consume", instance=name, value=output, **{"from": action.source})
            else:
                assert issued is not None
                policy = self.workload.tools[action.tool]
                if policy != "none":
                    inc.effects.append((pos, policy, issued.effect))
                fields: dict[str, Any] = {"request": issued.request}
                if issued.replayed:
                    fields["replayed"] = True
                self.trace.event("effect", instance=name, tool=action.tool, intent=intent, **fields)
            inc.pos = pos
            if self.points and action.kind != "commit":
                # A restore point at this boundary (the commit's checkpoint already is one).
                point = f"{name}@{pos}"
                inc.checkpoints[point] = Snapshot(index + 1, pos, dict(known))
                self.trace.event("checkpoint", instance=name, point=point)
            self.cond.notify_all()

    def _readable(self, source: str, draft: bool) -> tuple[int, str] | None:
        """The latest live output of `source` a consumer may read: a draft or the commit."""
        outputs = [(p, v) for p, v, c in self.inc[source].outputs if c != draft]
        return outputs[-1] if outputs else None

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        with self.cond:
            if not self.cond.wait_for(ready, timeout=WAIT_SECONDS):
                raise Stuck(f"{self.workload.name}: {what}: no progress in {WAIT_SECONDS:.0f} s")

    # --- recovery --------------------------------------------------------------------------

    def restore(self, name: str, decision: Decision) -> None:
        """Rolls instance `name` back to its checkpoint `decision.boundary` (a named boundary or
        a restore point's name): effects after it are taken back (irreversible ones stay),
        outputs and consumptions after it dropped, checkpoints after it forgotten. The
        instances `decision.also` go back to their start."""
        inc = self.inc[name]
        snap = inc.checkpoints[decision.boundary]
        q = snap.pos
        self._take_back(e for e in inc.effects if e[0] > q)
        inc.effects = [e for e in inc.effects if e[0] <= q or e[1] == "irreversible"]
        inc.outputs = [o for o in inc.outputs if o[0] <= q]
        inc.consumed = [c for c in inc.consumed if c[0] <= q]
        positions = {b: s.pos for b, s in inc.checkpoints.items()}
        kept = kept_after_restore(positions, decision.boundary)
        inc.checkpoints = {b: s for b, s in inc.checkpoints.items() if b in kept}
        inc.pos, inc.exited, inc.attempt = q, False, inc.attempt + 1
        self.resume[name] = snap if decision.resume == "checkpoint" else NATIVE
        for other in decision.also:
            self._take_back(self.inc[other].effects)
            self.inc[other] = Incarnation(attempt=self.inc[other].attempt + 1)
        fields: dict[str, Any] = {"also": list(decision.also)} if decision.also else {}
        if decision.boundary in NAMED:
            self.trace.event("restore", instance=name, boundary=decision.boundary, **fields)
        else:
            self.trace.event(
                "restore", instance=name, boundary="point", point=decision.boundary, **fields
            )

    def _take_back(self, effects: Iterable[tuple[int, str, int | None]]) -> None:
        for _, policy, row in effects:
            if row is not None and policy != "irreversible":
                self.world.take_back(row)

    def rerun(self) -> None:
        """Takes back every effect that can be taken back; every instance starts again."""
        for inc in self.inc.values():
            self._take_back(inc.effects)
        self.inc = {name: Incarnation(attempt=inc.attempt + 1) for name, inc in self.inc.items()}
        self.resume.clear()
        self.trace.event("rerun")

    def run(self) -> RunResult:
        """Runs the workload to completion or to a block, recovering from each failure."""
        try:
            return self._run()
        finally:
            self.trace.close()
            self.world.db.close()
            self.db.close()

    def _run(self) -> RunResult:
        self.config = {"configurable": {"thread_id": str(uuid.uuid4())}}
        payload: dict[str, Any] | None = {"known": {}}
        failed_at: float | None = None
        committed_at_failure: set[str] = set()
        reran = False
        first: tuple[str | None, str | None, tuple[str, ...]] = (None, None, ())
        counts = {"restore": 0, "block": 0, "rerun": 0, "langgraph": 0, "point": 0}
        outcome: Literal["completed", "blocked"] = "completed"
        for _ in range(MAX_RECOVERIES + 1):
            try:
                self.graph.invoke(payload, self.config)
                break
            except InjectedFailure as failure:
                # The controller blames an instance from the recorded events and the error's
                # tool, not from the injector's answer (failure.instance).
                with self.cond:
                    events = list(self.trace.events)
                self.localization = localize(
                    events, self.workload.instances, self.workload.tools, failure.tool
                )
                name = self.localization.instance
                if name is None:
                    raise Stuck(f"{self.workload.name}: nobody to blame for {failure}") from failure
                if failed_at is None:
                    failed_at = time.perf_counter()
                    first = (failure.instance, name, self.localization.candidates)
                    committed_at_failure = {
                        n for n, inc in self.inc.items() if inc.committed and n != name
                    }
                self.trace.event("localize", instance=name)
                decision = self.decide(self, name)
                counts[decision.kind] += 1
                counts["langgraph"] += (
                    decision.kind == "restore" and decision.resume != "checkpoint"
                )
                counts["point"] += decision.kind == "restore" and decision.boundary not in NAMED
                if decision.kind == "block":
                    self.trace.event("block", reason=decision.reason)
                    outcome = "blocked"
                    break
                if decision.kind == "rerun":
                    self.rerun()
                    reran = True
                    self.config = {"configurable": {"thread_id": str(uuid.uuid4())}}
                    payload = {"known": {}}
                else:
                    if decision.resume == "fork":
                        latest = self.graph.get_state(self.config)
                        self.config = self.graph.update_state(latest.config, None)
                    self.restore(name, decision)
                    payload = None
        else:
            raise Stuck(f"{self.workload.name}: still failing after {MAX_RECOVERIES} recoveries")
        done = time.perf_counter()
        actions = sum(e["ev"] in ("emit", "commit", "consume", "effect") for e in self.trace.events)
        completed = outcome == "completed"
        return RunResult(
            workload=self.workload.name,
            policy=self.policy,
            trace=self.trace.path,
            outcome=outcome,
            actions=actions,
            replayed=actions - self.workload.actions() if completed else 0,
            preserved=(0 if reran else len(committed_at_failure)) if completed else None,
            recovery_seconds=None if failed_at is None else done - failed_at,
            model_calls=self.model.calls,
            effects=self.world.counts(),
            failed=first[0],
            localized=first[1],
            candidates=first[2],
            restores=counts["restore"],
            blocks=counts["block"],
            reruns=counts["rerun"],
            through_langgraph=counts["langgraph"],
            to_point=counts["point"],
        )
