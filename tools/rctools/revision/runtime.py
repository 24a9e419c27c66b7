"""A workflow on a real LangGraph graph that recovers from revisions by a chosen policy.

The workflow's nodes become a LangGraph chain in the workflow's topological order (one node a
superstep, a SQLite checkpoint after each), so "the checkpoint before node X" is a real
checkpoint of the thread. Node bodies read the versioned input record through a tracking proxy
that records each path and version they read; a node declared untracked reads the raw record and
its provenance is unknown. Recovery uses LangGraph's own time travel: the runtime resumes the
thread from the checkpoint before the first node that must run again (a fork), or starts a new
thread for a full restart. Every move is recorded as a DagRevision event.
"""

from __future__ import annotations

import itertools
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from rctools.revision.injection import Injection
from rctools.revision.irreversible import too_late
from rctools.revision.model import FakeModel
from rctools.revision.policies import Plan, Work
from rctools.revision.recorder import Recorder, header, stage
from rctools.revision.staleness import Attempt, Staleness
from rctools.revision.tracking import Inputs, TrackedReads
from rctools.revision.workloads import Revision, Workload


def _merge(old: dict[str, str], new: dict[str, str]) -> dict[str, str]:
    return {**old, **new}


class State(TypedDict):
    outputs: Annotated[dict[str, str], _merge]


@dataclass
class Outcome:
    """What one run cost."""

    calls: int
    tokens: int
    recomputed: list[str]
    """Nodes executed again after the revision arrived, in order."""


class RevisionRuntime(Staleness):
    """Runs one workload once under one policy, with one revision injected at one point."""

    def __init__(
        self, workload: Workload, policy: str, injection: Injection | None, db: Path
    ) -> None:
        super().__init__(workload, policy)
        self.injection = injection
        self.fired = False
        self.model = FakeModel(on_call=lambda: self._inject("during", self.running))
        scenario = f"revision of {injection.revision.path} {injection.label}" if injection else "-"
        self.record = Recorder(header(workload, policy, scenario, metadata.version("langgraph")))
        self.inputs = Inputs(workload.inputs)
        self.attempts: list[Attempt] = []
        self.in_flight: Attempt | None = None
        self.running: str | None = None
        self.pending = False
        self.resume_at: str | None = None
        self.restart = False
        self.recomputed: list[str] = []
        self._ids = itertools.count(1)
        self.id_prefix = "a"  # a restarted process numbers its attempts apart
        self.conn = sqlite3.connect(db, check_same_thread=False)
        self.graph = self._build()

    # --- the LangGraph graph ---------------------------------------------------------------

    def _build(self) -> Any:
        builder = StateGraph(State)
        for name in self.workload.order:
            builder.add_node(name, self._step(name))
        chain = [START, *self.workload.order, END]
        for a, b in itertools.pairwise(chain):
            builder.add_edge(a, b)
        return builder.compile(checkpointer=SqliteSaver(self.conn))

    def _step(self, name: str) -> Callable[[State], dict[str, Any]]:
        def step(state: State) -> dict[str, Any]:
            if self.resume_at is not None:
                return {}  # a recovery is under way: this run is abandoned
            self._inject("before", name)
            self._replan(name)
            if self.resume_at is not None or not self._active(name):
                return {}
            kept = self.cur.get(name)
            if kept is not None and not self._stale(kept):
                return {"outputs": {name: kept.output}}  # reused, revalidated
            return self._execute(name, state)

        return step

    # --- attempts --------------------------------------------------------------------------

    def _execute(self, name: str, state: State) -> dict[str, Any]:
        """Runs attempts of `name` until one commits (a cancelled one is re-run in place) or
        the node leaves the route."""
        node = self.workload.node(name)
        while self._active(name):
            preds = [m for m in node.after if self._active(m)]
            parents = tuple(self.cur[m].id for m in preds if m in self.cur)
            attempt = Attempt(
                f"{self.id_prefix}{next(self._ids)}", name, parents, dict(self.inputs.versions)
            )
            self.attempts.append(attempt)
            self.in_flight = attempt
            if self.fired and any(a.node == name for a in self.attempts[:-1]):
                self.recomputed.append(name)
            self.record("start", attempt=attempt.id, node=name, parents=list(parents))
            self.running = name
            attempt.output = self._body(node, attempt, state)
            self.running = None
            if node.effect:
                attempt.effect = "staged"
                stage(self.record, attempt.id, revocable=not node.irreversible)
            self._replan(name)
            if self.in_flight is None:  # cancelled by the plan
                if self.resume_at is not None:
                    return {}
                continue
            self.in_flight = None
            self.record("end", attempt=attempt.id)
            if self.planner is not None and self._stale(attempt):
                self.record("reject", attempt=attempt.id)
                self.pending = True
                self._replan(name)
                if self.resume_at is not None:
                    return {}
                continue
            self._commit(attempt)
            return {"outputs": {name: attempt.output}}
        return {}

    def _body(self, node: Any, attempt: Attempt, state: State) -> str:
        """The node itself: read its paths, consume its inputs' outputs, ask the model."""

        def on_read(path: str, version: int) -> None:
            attempt.reads.add((path, version))
            self.record("read", attempt=attempt.id, path=path, version=version)

        if node.tracked:
            view = TrackedReads(self.inputs, on_read)
            seen = [f"{p}={view[p]}" for p in node.reads]
        else:
            raw = dict(self.inputs.values)  # escapes tracking: provenance unknown
            attempt.unknown = True
            self.record("read", attempt=attempt.id, path=None)
            seen = [f"{p}={raw[p]}" for p in node.reads]
        upstream = [f"{m}:{state['outputs'].get(m, '')}" for m in node.after if self._active(m)]
        return self.model(f"{node.name} " + " ".join(seen + upstream))

    def _commit(self, attempt: Attempt) -> None:
        """Commit, then publish the staged effect: here, right after revalidation, so an
        irreversible one is fenced (no revision can come between). An irreversible effect of
        a node whose effect is already out stays held: the re-run computed the same one (a
        revision that would change it is refused as too late), and it went out once."""
        self.record("commit", attempt=attempt.id)
        self.cur[attempt.node] = attempt
        if attempt.effect != "staged":
            return
        if self.workload.node(attempt.node).irreversible:
            if attempt.node in self.sent:
                return
            self.sent[attempt.node] = attempt
        attempt.effect = "published"
        self.record("publish", attempt=attempt.id)

    # --- staleness and planning ------------------------------------------------------------

    def _work(self) -> list[Work]:
        items = [(a, True) for a in [self.in_flight] if a is not None]
        return self._plan_work(items + [(a, False) for a in self.cur.values()])

    def _replan(self, at: str | None) -> None:
        """After a revision: plan, apply the plan, and decide where the run resumes."""
        if not self.pending or self.planner is None:
            return
        self.pending = False
        plan = self.planner(self._graph(), self._work())
        self._apply(plan)
        order = self.workload.order
        # Resume before the first node that must run again or whose output was discarded
        # (a dropped branch's output must leave the thread's state too).
        redo = {n for n in order if self._active(n) and n not in self.cur} | plan.invalidate
        if self.in_flight is not None:
            redo.discard(self.in_flight.node)
        here = order.index(at) if at else len(order)
        first = min((order.index(n) for n in redo), default=len(order))
        if first < here:
            self.resume_at = order[first]
            self.restart = plan.mode == "full"

    def _apply(self, plan: Plan) -> None:
        self.record("plan", **self._plan_fields(plan))
        if self.in_flight is not None and self.in_flight.id in plan.cancel:
            self.in_flight = None
        self._invalidate(plan.invalidate, self.record)

    def _too_late(self, rev: Revision) -> bool:
        """Accepting `rev` would need an irreversible effect already out revoked (TooLate)."""
        control = (rev.path, rev.value) if rev.kind == "control" else None
        values = self.inputs.values
        return too_late(self.workload, self.sent, values, {rev.path}, control)

    def _inject(self, point: str, node: str | None) -> bool:
        inj = self.injection
        if self.fired or inj is None or inj.point != point or inj.node != node:
            return False
        self.fired = True
        rev = inj.revision
        base = self.inputs.versions[rev.path]
        if self._too_late(rev):
            value = {"value": rev.value} if rev.kind == "control" else {}
            self.record("revise", kind=rev.kind, path=rev.path, base=base, accepted=False, **value)
            return False
        self.inputs.versions[rev.path] = base + 1
        if rev.kind == "control":
            self.inputs.values[rev.path] = rev.value
            self.record("revise", kind=rev.kind, path=rev.path, base=base, value=rev.value)
        else:
            self.inputs.values[rev.path] = f"{rev.path}-v{base + 1}"
            self.record("revise", kind=rev.kind, path=rev.path, base=base)
        self.pending = True
        return True

    # --- the driver ------------------------------------------------------------------------

    def run(self, resume: dict[str, Any] | None = None) -> Outcome:
        """Runs to the end; `resume` (a restart after a crash) is the thread to continue, after
        replanning against what is durable."""
        config = resume or self._new_thread()
        given: State | None = None if resume else {"outputs": {}}
        if resume:
            self.pending = True
            self._replan(None)
            if self.resume_at is not None:
                config, given = self._resume_point(config)
        while True:
            # sync: a checkpoint is durable before the next node starts, so the checkpoint a
            # restart forks from shows what the killed process had done (async may lose it).
            steps = self.graph.stream(given, config, stream_mode="updates", durability="sync")
            for _ in steps:
                if self.resume_at is not None:
                    break
            if self.resume_at is not None:
                config, given = self._resume_point(config)
                continue
            latest = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
            final = self.graph.get_state(latest).values.get("outputs", {})
            self.record("finish", result=[n for n in self.workload.order if n in final])
            if self._inject("after", None):
                self._replan(None)
                if self.resume_at is not None:
                    config, given = self._resume_point(config)
                    continue
                self.record("finish", result=[n for n in self.workload.order if n in final])
            break
        self.conn.close()
        return Outcome(self.model.calls, self.model.tokens, self.recomputed)

    def _new_thread(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:12]}"}}

    def _resume_point(self, config: dict[str, Any]) -> tuple[dict[str, Any], State | None]:
        """A full restart starts a new thread; otherwise the thread forks from the checkpoint
        before the first node that must run again (LangGraph time travel)."""
        target, self.resume_at = self.resume_at, None
        if self.restart:
            self.restart = False
            return self._new_thread(), {"outputs": {}}
        thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        for snapshot in self.graph.get_state_history(thread):
            if snapshot.next == (target,):
                return snapshot.config, None
        raise RuntimeError(f"no checkpoint before {target} in {thread}")

    def write(self, path: Path) -> None:
        self.record.write(path)
