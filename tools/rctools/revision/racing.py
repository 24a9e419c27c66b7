"""Revision recovery with parallel branches and revisions racing the run.

The workflow runs as a DAG on a pool of worker threads: every node whose inputs are committed
starts, up to `width` attempts at once, so independent branches really run at the same time
(each model call takes a few milliseconds of wall time, outside any lock). The revisions come
from another process (`rctools.revision.sender`) at random instants drawn from a seed: they
land while attempts read, while they call the model, between an attempt's end and its commit,
or after the run has finished -- several per run, of all four kinds. Reads go through the
nested tracking view (`docs[0].title`, `prefs.lang`, the whole `docs` list).

One lock orders what the contract sees: a revision is applied and recorded under it, a plan is
computed and applied under it, and an attempt's every event (start, read, stage, end, commit or
reject, publish) is recorded under it, so the trace is the order things took effect. Between an
attempt's end and its commit the lock is released: a revision landing there makes the commit's
revalidation reject the attempt, unless the scheduler's plan cancels it first -- both happen.

After the last revision the runtime runs to quiescence and records `finish`; every trace is
judged by DagRevision (OracleEquivalence: the final outputs and published effects are those of
a full restart on the latest inputs). Nothing here decides whether a run was right.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from rctools.revision import staleness
from rctools.revision.irreversible import too_late
from rctools.revision.model import COMPLETION_TOKENS
from rctools.revision.nested import NestedInputs, TrackedView, assign, read, resolve
from rctools.revision.recorder import Recorder, header, stage
from rctools.revision.sender import RevisionSender
from rctools.revision.workloads import Workload

RUNTIME = {"name": "rctools-threads", "version": "1"}


@dataclass
class Attempt(staleness.Attempt):
    """An attempt on a worker thread: also its inputs' outputs, taken when it starts, and how
    far it got."""

    upstream: list[str] = field(default_factory=list)
    state: str = "run"  # "run", "done", "committed", "rejected", "cancelled"


@dataclass
class RaceOutcome:
    """What one racing execution did and cost."""

    calls: int
    tokens: int
    recomputed: list[str]
    """Attempts of a node that had been attempted before, in start order."""
    revisions: int
    """Accepted user revisions (one may make new versions of several nested paths)."""
    refused: int
    kinds: list[str]
    max_parallel: int
    """The most model calls that were running at the same instant."""
    rejected: int
    """Attempts rejected at commit (a revision landed between their end and their commit)."""
    seconds: float


class SlowModel:
    """The model stand-in of `model.FakeModel`, thread-safe, taking wall time per call."""

    def __init__(self, seed: int, latency: tuple[float, float]) -> None:
        self.seed = seed
        self.latency = latency
        self.lock = threading.Lock()
        self.calls = 0
        self.tokens = 0
        self.active = 0
        self.max_active = 0

    def __call__(self, prompt: str, key: str) -> str:
        with self.lock:
            self.calls += 1
            self.tokens += len(prompt.split()) + COMPLETION_TOKENS
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(random.Random(f"{self.seed}:{key}").uniform(*self.latency))
        finally:
            with self.lock:
                self.active -= 1
        return "out-" + hashlib.sha256(prompt.encode()).hexdigest()[:12]


def depth(workload: Workload) -> int:
    """The longest chain of the DAG, in nodes."""
    longest: dict[str, int] = {}
    for n in workload.nodes:
        longest[n.name] = 1 + max((longest[m] for m in n.after), default=0)
    return max(longest.values())


class RacingRuntime(staleness.Staleness):
    """Runs one workload once under one policy while a sender process revises its inputs."""

    def __init__(
        self,
        workload: Workload,
        policy: str,
        sender: RevisionSender,
        *,
        seed: int,
        revisions: int = 3,
        width: int = 3,
        latency: tuple[float, float] = (0.002, 0.006),
        stale_share: float = 0.15,
    ) -> None:
        super().__init__(workload, policy)
        self.sender = sender
        self.seed = seed
        self.count = revisions
        self.width = width
        self.stale_share = stale_share
        self.cond = threading.Condition()
        self.model = SlowModel(seed, latency)
        self.inputs = NestedInputs(workload.inputs, workload.declared_paths)
        head = header(workload, policy, f"racing seed {seed}, {revisions} revisions", "")
        head["runtime"] = RUNTIME
        self.record = Recorder(head)
        self.span = 1.5 * depth(workload) * sum(latency) / 2
        self.history: dict[str, list[Any]] = {}
        self.attempts: list[Attempt] = []
        self.in_flight: dict[str, Attempt] = {}
        self.held: list[Attempt] = []
        """Committed attempts whose irreversible effect waits until no stale work reaches them."""
        self.pending = False
        self.finished = False
        self.sender_done = False
        self.error: BaseException | None = None
        self.recomputed: list[str] = []
        self.kinds: list[str] = []
        self.accepted = 0
        self.refused = 0
        self.rejected = 0
        self._ids = itertools.count(1)
        self._fresh = itertools.count(1)
        self._t0 = time.monotonic()

    def _event(self, ev: str, **fields: Any) -> None:
        self.record(ev, **fields, ts=round(time.monotonic() - self._t0, 6))

    # --- the revisions -------------------------------------------------------------------

    def _on_revision(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A revision from the sender, applied and recorded under the lock (listener thread)."""
        with self.cond:
            path, kind, base = msg["path"], msg["kind"], msg["base"]
            value = msg.get("value", 0)
            extra = {"value": value} if kind == "control" else {}
            if base != self.inputs.versions[path]:
                self._event("revise", kind=kind, path=path, base=base, accepted=False, **extra)
                self.refused += 1
                return {"accepted": False, "versions": {}}
            before = self.inputs.snapshot()
            undo = copy.deepcopy(self.inputs.values), copy.deepcopy(self.history)
            self._change(path, kind, value)
            changed = [path] + [q for q in self.inputs.changed(before) if q != path]
            control = (path, value) if kind == "control" else None
            if too_late(self.workload, self.sent, undo[0], set(changed), control):
                self.inputs.values, self.history = undo  # too late for an e-mail out: refused
                self._event("revise", kind=kind, path=path, base=base, accepted=False, **extra)
                self.refused += 1
                return {"accepted": False, "late": True, "versions": {}}
            for q in changed:
                self._event("revise", kind=kind, path=q, base=self.inputs.versions[q], **extra)
                self.inputs.versions[q] += 1
            self.accepted += 1
            self.kinds.append(kind)
            self.pending = True
            self.finished = False
            self.cond.notify_all()
            return {"accepted": True, "versions": {q: self.inputs.versions[q] for q in changed}}

    def _change(self, path: str, kind: str, value: int) -> None:
        record = self.inputs.values
        current = resolve(record, path)
        n = next(self._fresh)
        if kind == "control":
            assign(record, path, value)
            return
        if kind == "cancel":
            assign(record, path, self.history[path].pop())
            return
        self.history.setdefault(path, []).append(copy.deepcopy(current))
        leaf = path.rsplit(".", 1)[-1]
        if kind == "replace":
            if isinstance(current, dict):
                assign(record, path, {k: f"{k}-r{n}" for k in current})
            else:
                assign(record, path, f"{leaf}-r{n}")
        elif isinstance(current, list):  # append an element shaped like the first
            current.append({k: f"{k}-new{n}" for k in current[0]} if current else f"item{n}")
        else:
            assign(record, path, f"{current} +{n}")

    def _on_sender_done(self) -> None:
        with self.cond:
            self.sender_done = True
            self.cond.notify_all()

    # --- staleness and planning ----------------------------------------------------------

    def _work_items(self) -> list[tuple[Attempt, bool]]:
        """What a plan decides about: every attempt in flight (several, here) and every current
        commit; True for in flight."""
        items = [(a, True) for a in self.in_flight.values()]
        return items + [(a, False) for a in self.cur.values()]

    def _replan(self) -> None:
        assert self.planner is not None
        self.pending = False
        plan = self.planner(self._graph(), self._plan_work(self._work_items()))
        self._event("plan", **self._plan_fields(plan))
        for attempt_id in plan.cancel:
            self.in_flight.pop(attempt_id).state = "cancelled"
        self._invalidate([n for n in self.workload.order if n in plan.invalidate], self._event)

    # --- attempts ------------------------------------------------------------------------

    def _start_ready(self, pool: ThreadPoolExecutor) -> None:
        busy = {a.node for a in self.in_flight.values()}
        for name in self.workload.order:
            if len(self.in_flight) >= self.width:
                return
            node = self.workload.node(name)
            preds = [m for m in node.after if self._active(m)]
            if not self._active(name) or name in self.cur or name in busy:
                continue
            if any(m not in self.cur for m in preds):
                continue
            attempt = Attempt(
                f"a{next(self._ids)}",
                name,
                tuple(self.cur[m].id for m in preds),
                dict(self.inputs.versions),
                upstream=[f"{m}:{self.cur[m].output}" for m in preds],
            )
            if any(a.node == name for a in self.attempts):
                self.recomputed.append(name)
            self.attempts.append(attempt)
            self.in_flight[attempt.id] = attempt
            busy.add(name)
            self._event("start", attempt=attempt.id, node=name, parents=list(attempt.parents))
            pool.submit(self._work, attempt)

    def _work(self, a: Attempt) -> None:
        """One attempt on a worker thread: its reads, its model call, its end and commit."""
        try:
            self._attempt(a)
        except BaseException as exc:  # the scheduler raises it
            with self.cond:
                self.error = exc
        finally:
            with self.cond:
                self.cond.notify_all()

    def _gap(self, a: Attempt, what: str) -> float:
        """A short pause (0 to 2 ms, drawn from the seed) where the lock is free."""
        return random.Random(f"{self.seed}:{a.id}:{what}").uniform(0, 0.002)

    def _attempt(self, a: Attempt) -> None:
        node = self.workload.node(a.node)
        seen: list[str] = []

        def on_read(path: str, version: int) -> None:
            a.reads.add((path, version))
            self._event("read", attempt=a.id, path=path, version=version)

        if node.tracked:
            for path in node.reads:
                with self.cond:
                    if a.state != "run":
                        return
                    seen.append(f"{path}={read(TrackedView(self.inputs, on_read), path)}")
                time.sleep(self._gap(a, f"read {path}"))  # a revision may land between reads
        else:
            with self.cond:
                if a.state != "run":
                    return
                a.unknown = True  # reads the raw record: tracking sees nothing
                self._event("read", attempt=a.id, path=None)
                seen = [f"{p}={resolve(self.inputs.values, p)}" for p in node.reads]
        with self.cond:
            if a.state != "run":
                return
        output = self.model(f"{a.node} " + " ".join(seen + a.upstream), a.id)
        with self.cond:
            if a.state != "run":
                return
            a.output = output
            if node.effect:
                a.effect = "staged"
                stage(self._event, a.id, revocable=not node.irreversible)
            self._event("end", attempt=a.id)
            a.state = "done"
        time.sleep(self._gap(a, "commit"))  # the commit races the revisions
        with self.cond:
            if a.state != "done":
                return  # cancelled by a plan meanwhile
            del self.in_flight[a.id]
            if self.planner is not None and self._stale(a):
                a.state = "rejected"
                self.rejected += 1
                self._event("reject", attempt=a.id)
                return
            a.state = "committed"
            self._event("commit", attempt=a.id)
            self.cur[a.node] = a
            if a.effect == "staged" and node.irreversible:
                self.held.append(a)
                self._release_held()
            elif a.effect == "staged":
                a.effect = "published"
                self._event("publish", attempt=a.id)

    def _release_held(self) -> None:
        """Sends each held irreversible effect whose attempt is still its node's current output
        once no plan is due and no stale work reaches its node (fenced); drops the ones a plan
        invalidated, and the re-runs of a node whose effect is already out (the same effect)."""
        if self.pending and self.planner is not None:
            return
        stale = {a.node for a, _ in self._work_items() if self._stale(a)}
        reached = stale.union(*(nx.descendants(self.dag, n) for n in stale))
        for a in list(self.held):
            if self.cur.get(a.node) is not a or a.node in self.sent:
                self.held.remove(a)
            elif a.node not in reached or self.planner is None:
                self.held.remove(a)
                a.effect = "published"
                self.sent[a.node] = a
                self._event("publish", attempt=a.id)

    # --- the driver ----------------------------------------------------------------------

    def run(self) -> RaceOutcome:
        controls = {
            p: {"value": self.inputs.values[p], "values": self.workload.route_values(p)}
            for p in sorted(self.workload.controls)
        }
        listener = self.sender.serve(
            {
                "run": self.seed,
                "seed": self.seed,
                "menu": self.workload.racing_menu(),
                "versions": dict(self.inputs.versions),
                "controls": controls,
                "count": self.count,
                "span": self.span,
                "stale_share": self.stale_share,
            },
            self._on_revision,
            self._on_sender_done,
        )
        with ThreadPoolExecutor(self.width, thread_name_prefix="attempt") as pool, self.cond:
            while self.error is None:
                if self.pending and self.planner is not None:
                    self._replan()
                self._release_held()
                self._start_ready(pool)
                quiet = not self.in_flight and not (self.pending and self.planner) and not self.held
                active = [n for n in self.workload.order if self._active(n)]
                if quiet and all(n in self.cur for n in active):
                    if not self.finished:
                        self._event("finish", result=active)
                        self.finished = True
                    if self.sender_done:
                        break
                self.cond.wait(timeout=0.2)
        listener.join(timeout=30)
        errors = [*([self.error] if self.error else []), *self.sender.errors]
        if errors:
            raise RuntimeError(f"racing run {self.workload.name} seed {self.seed}") from errors[0]
        return RaceOutcome(
            self.model.calls,
            self.model.tokens,
            self.recomputed,
            self.accepted,
            self.refused,
            self.kinds,
            self.model.max_active,
            self.rejected,
            time.monotonic() - self._t0,
        )

    def write(self, path: Any) -> None:
        self.record.write(path)
