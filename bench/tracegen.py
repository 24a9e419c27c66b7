"""Deterministic synthetic ResumeCore traces for the batch benchmark.

A benchmark is only worth its numbers if the checker gives the right answers on the inputs it
times, so the traces are not random event soup: they are recorded from a small simulator of
the ResumeCore reference runtime (spec/ResumeCore.tla, `Run`), which tracks what is durable,
what a crash loses, what the effect ledger has seen and which resume value answers which
interrupt, and writes each move as the event the real recorders write (compare
traces/core/*.jsonl). A trace meant to violate the contract runs the same simulator until a
randomly chosen point and then makes exactly one wrong move of a known kind (the kinds of
traces/core's violating examples); that event is the last one, and the generator records its
index and the properties it breaks, so the benchmark can check TLC's verdict to the event.

Everything is drawn from `random.Random` seeded with the trace's own index, so trace i is the
same whatever the batch size, and a batch of 100 is the first 100 traces of the batch of 1000.
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The wrong moves a violating trace can make, each with the properties TLC must name for it
# (the same as for the matching example in traces/core and traces/core/manifest.json).
VIOLATIONS: dict[str, tuple[str, ...]] = {
    "cv-stale-latest": ("CV",),
    "cv-dropped-pending-write": ("CV",),
    "pc-rerun-durable-task": ("PC", "RD"),
    "pc-sync-step-before-save": ("PC",),
    "rd-step-skips-scheduled-task": ("RD",),
    "eo-effect-refired": ("EO",),
    "fd-fork-carries-pending-writes": ("FD",),
    "co-two-workers-resume-one-interrupt": ("CO",),
}

# Every VIOLATING_EVERY-th trace (at offset VIOLATING_OFFSET) violates: 5% of a batch, and
# trace 0, the batch of one, conforms.
VIOLATING_EVERY = 20
VIOLATING_OFFSET = 7

TARGET_EVENTS = 100
_EVENT_RANGE = (85, 120)
# A violating trace ends at its wrong move, placed late so the trace is still long.
_VIOLATING_RANGE = (50, 120)
_MAX_ATTEMPTS = 200

Op = tuple[str, str]  # ("effect", intent) or ("interrupt", "")


@dataclass(frozen=True)
class Expected:
    """What the checker must say about a trace: the status, and for a violation the 1-based
    index of the first bad event and the properties it breaks."""

    status: str
    event: int | None = None
    properties: tuple[str, ...] = ()


@dataclass(frozen=True)
class Trace:
    """One generated trace and the verdict it was generated to get."""

    name: str
    header: dict[str, Any]
    events: list[dict[str, Any]]
    expected: Expected

    def write(self, folder: Path) -> Path:
        """Writes the trace as JSON Lines (header first) to `folder/<name>.jsonl`."""
        path = folder / f"{self.name}.jsonl"
        lines = [json.dumps(self.header)] + [json.dumps(e) for e in self.events]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


@dataclass(frozen=True)
class Workflow:
    """A DAG run in supersteps: stage i+1 waits for every node of stage i."""

    shape: str
    stages: list[list[str]]
    body: dict[str, list[Op]]

    @property
    def nodes(self) -> list[str]:
        return [n for stage in self.stages for n in stage]

    @property
    def edges(self) -> list[tuple[str, str]]:
        pairs = zip(self.stages, self.stages[1:], strict=False)
        return [(a, b) for s, t in pairs for a in s for b in t]

    def ready(self, done: frozenset[str]) -> list[str]:
        """The nodes not done whose inputs all are, in workflow order (ResumeCore's Ready)."""
        for stage in self.stages:
            missing = [n for n in stage if n not in done]
            if missing:
                return missing
        return []


def generate(index: int, seed: int) -> Trace:
    """Trace `index` of the benchmark corpus for `seed`: the same on every machine and run."""
    rng = random.Random(f"resume-check-bench:{seed}:{index}")
    violation = None
    if index % VIOLATING_EVERY == VIOLATING_OFFSET:
        kinds = sorted(VIOLATIONS)
        violation = kinds[(index // VIOLATING_EVERY) % len(kinds)]
    best: Trace | None = None
    nodes = 14
    for _ in range(_MAX_ATTEMPTS):
        trace = _attempt(rng, index, violation, nodes)
        if trace is None:
            continue
        count = len(trace.events)
        if best is None or abs(count - TARGET_EVENTS) < abs(len(best.events) - TARGET_EVENTS):
            best = trace
        low, high = _VIOLATING_RANGE if violation else _EVENT_RANGE
        if low <= count <= high:
            return trace
        # Steer the workflow size toward the target; the rest is left to chance.
        nodes = max(3, min(40, round(nodes * TARGET_EVENTS / count)))
    if best is None:
        raise RuntimeError(f"trace {index}: could not place violation {violation!r}")
    return best


def _attempt(rng: random.Random, index: int, violation: str | None, nodes: int) -> Trace | None:
    shape = rng.choice(["chain", "chain", "fan", "fan", "mixed"])
    if violation == "rd-step-skips-scheduled-task" and shape == "chain":
        shape = "fan"
    workflow = _workflow(rng, shape, nodes, need_interrupt=violation is not None)
    durability = rng.choices(["sync", "async", "exit"], weights=[7, 2, 1])[0]
    if violation == "pc-sync-step-before-save":
        durability = "sync"
    effects = rng.choices(["exactly-once", "at-least-once"], weights=[4, 1])[0]
    sim = _Sim(rng, workflow, durability, effects, violation)
    with contextlib.suppress(_Violated):
        sim.scenario()
    if violation is not None and sim.expected is None:
        return None  # the wrong move never had its chance: try another run
    expected = sim.expected or Expected("conforms")
    kind = f"violates-{violation}" if violation else "conforms"
    features = "-".join(sorted(sim.features)) or "plain"
    header = {
        "format": "resume-check/v1",
        "contract": "ResumeCore",
        "runtime": {"name": "synthetic", "version": "1"},
        "backend": "sqlite",
        "thread": f"t{index}",
        "scenario": f"{shape} of {len(workflow.nodes)} nodes, {durability}, {effects}: "
        f"{features}; {kind}",
        "guarantees": {"durability": durability, "effects": effects},
        "workflow": {"nodes": workflow.nodes, "edges": [list(e) for e in workflow.edges]},
    }
    return Trace(f"{index:04d}-{shape}-{kind}", header, sim.events, expected)


def _workflow(rng: random.Random, shape: str, nodes: int, *, need_interrupt: bool) -> Workflow:
    """Stages for `shape` with about `nodes` nodes; bodies with effects and interrupts."""
    widths: list[int] = []
    while sum(widths) < nodes:
        if shape == "chain":
            widths.append(1)
        elif shape == "fan":
            widths.append(1 if len(widths) % 2 == 0 else rng.randint(2, 4))
        else:
            widths.append(rng.choice([1, 1, 2, 3]))
    stages = [
        [f"s{i + 1:02d}{'abcd'[j]}" if width > 1 else f"s{i + 1:02d}" for j in range(width)]
        for i, width in enumerate(widths)
    ]
    body: dict[str, list[Op]] = {}
    interrupts = 0
    for stage in stages:
        for node in stage:
            ops: list[Op] = []
            if rng.random() < 0.3:
                ops.append(("effect", f"{node}-{rng.choice(['mail', 'charge', 'post'])}"))
            if interrupts < 2 and rng.random() < 0.07:
                interrupts += 1
                ops.append(("interrupt", ""))
                if rng.random() < 0.3:
                    ops.append(("interrupt", ""))
                if rng.random() < 0.4:
                    ops.append(("effect", f"{node}-notify"))
            body[node] = ops
    if need_interrupt and not interrupts:
        # Violations of CO and EO need an answered interrupt with an effect before it.
        node = rng.choice([n for stage in stages[1:] for n in stage] or stages[0])
        body[node] = [("effect", f"{node}-mail"), ("interrupt", "")]
    return Workflow(shape, stages, body)


class _Violated(Exception):
    """The wrong move has been made: the trace ends with it."""


@dataclass(frozen=True)
class _Ckpt:
    parent: str | None
    done: frozenset[str]
    fork: bool


@dataclass(frozen=True)
class _Write:
    at: str
    node: str | None
    kind: str  # ok | error | interrupt | resume
    index: int = 0
    value: str | None = None


@dataclass
class _Run:
    """A process's invocation: what it runs from and what it holds only in memory."""

    proc: str
    at: str | None = None
    done: frozenset[str] = frozenset()
    ok: frozenset[str] = frozenset()
    rv: set[str] = field(default_factory=set)
    mem_cks: list[str] = field(default_factory=list)
    mem_ws: list[_Write] = field(default_factory=list)
    deferred_put: str | None = None  # async: the checkpoint saved after the next task starts


class _Sim:
    """The reference runtime with faults, recording events. Mirrors ResumeCore's `Run`/`Fault`:
    if it disagrees with the spec, the benchmark's verdict check says so."""

    def __init__(
        self,
        rng: random.Random,
        workflow: Workflow,
        durability: str,
        effects: str,
        violation: str | None,
    ) -> None:
        self.rng = rng
        self.wf = workflow
        self.durability = durability
        self.effects = effects
        self.violation = violation
        # No wrong move before this many events (a fork's wrong move waits for the fork).
        self.arm_at = 0 if violation == "fd-fork-carries-pending-writes" else rng.randint(50, 95)
        self.expected: Expected | None = None
        self.events: list[dict[str, Any]] = []
        self.features: set[str] = set()
        self.made: dict[str, _Ckpt] = {}  # every checkpoint ever made, durable or not
        self.ckpts: dict[str, _Ckpt] = {}  # durable
        self.writes: set[_Write] = set()  # durable
        self.ledger: dict[tuple[str, str, str], list[int]] = {}  # key -> [total, recent]
        self.addr: dict[str, tuple[str, str, int]] = {}
        self.procs = 0
        self.values = 0
        self.crashes_left = rng.choice([0, 1, 1, 2, 2, 3])
        self.crash_p = 0.04
        self.errors_left = 1 if rng.random() < 0.2 else 0
        self.forks_left = 1 if rng.random() < 0.3 else 0
        if violation == "fd-fork-carries-pending-writes":
            self.forks_left = 1
        if violation in ("cv-dropped-pending-write", "pc-rerun-durable-task"):
            self.crashes_left = max(self.crashes_left, 2)
            self.crash_p = 0.08

    # -- the thread ----------------------------------------------------------------------------

    def scenario(self) -> None:
        """Run to completion, with crashes, failures and resumes; then maybe fork and rerun."""
        run = self._worker()
        outcome = self._invoke(run, resume=False)
        while True:
            outcome = self._until_done(run, outcome)
            if not self.forks_left:
                return
            self.forks_left -= 1
            run = run if self.rng.random() < 0.5 else self._worker()
            outcome = self._fork(run)

    def _until_done(self, run: _Run, outcome: str) -> str:
        while outcome != "done":
            if outcome == "crashed":
                run = self._worker()
                outcome = self._invoke(run, resume=False)
            elif outcome == "parked":
                if self._armed("co-two-workers-resume-one-interrupt"):
                    self._two_resumers()
                run = run if self.rng.random() < 0.5 else self._worker()
                outcome = self._invoke(run, resume=True)
            else:  # a task failed: the caller retries the invocation
                outcome = self._invoke(run, resume=False)
        return outcome

    def _worker(self) -> _Run:
        self.procs += 1
        return _Run(f"w{self.procs}")

    def _invoke(self, run: _Run, *, resume: bool) -> str:
        self._load(run)
        if run.at is None:
            if self._step(run):
                return "crashed"
        elif resume:
            self._resume_parked(run)
        return self._drive(run)

    def _drive(self, run: _Run) -> str:
        """Steps until the workflow is done, a task parks or fails, or the process dies."""
        while True:
            ready = self.wf.ready(run.done)
            if not ready:
                return self._finish(run, "done")
            schedule = [n for n in ready if n not in run.ok]
            outcome = self._run_tasks(run, schedule)
            if outcome == "crashed":
                return outcome
            if outcome != "ok":
                return self._finish(run, outcome)
            if self._step(run):
                return "crashed"

    # -- moves ---------------------------------------------------------------------------------

    def _emit(self, ev: str, proc: str, **fields: Any) -> None:
        seq = len(self.events)
        ts = round(1_700_000_000 + seq * 0.013, 3)
        self.events.append({"seq": seq, "ts": ts, "ev": ev, "proc": proc, **fields})

    def _armed(self, kind: str) -> bool:
        return self.violation == kind and self.expected is None and len(self.events) >= self.arm_at

    def _violated(self) -> None:
        """Marks the event just emitted as the wrong move and ends the trace."""
        assert self.violation is not None
        self.expected = Expected("violates", len(self.events), VIOLATIONS[self.violation])
        raise _Violated

    def _sorted(self, nodes: frozenset[str] | set[str]) -> list[str]:
        return [n for n in self.wf.nodes if n in nodes]

    def _latest(self) -> str | None:
        # Checkpoint ids are numbered in order of creation, as the spec's Latest assumes.
        return max(self.ckpts, key=lambda c: int(c[1:]), default=None)

    def _saved(self, c: str | None) -> dict[str, Any]:
        """What the store holds for checkpoint c: ResumeCore's Saved(c)."""
        if c is None:
            return {"checkpoint": None, "parent": None, "done": [], "ok": [], "values": []}
        here = [w for w in self.writes if w.at == c]
        return {
            "checkpoint": c,
            "parent": self.ckpts[c].parent,
            "done": self._sorted(self.ckpts[c].done),
            "ok": self._sorted({w.node for w in here if w.kind == "ok" and w.node}),
            "values": sorted(w.value for w in here if w.kind == "resume" and w.value),
        }

    def _load(self, run: _Run) -> None:
        got = self._saved(self._latest())
        bad = False
        if self._armed("cv-stale-latest") and got["parent"] is not None:
            got, bad = self._saved(got["parent"]), True
        elif self._armed("cv-dropped-pending-write") and got["ok"]:
            got, bad = {**got, "ok": got["ok"][1:]}, True
        self._emit("load", run.proc, **got)
        if bad:
            self._violated()
        run.at = got["checkpoint"]
        run.done = frozenset(got["done"])
        run.ok = frozenset(got["ok"])
        run.rv = set(got["values"])
        run.mem_cks, run.mem_ws, run.deferred_put = [], [], None
        if run.at is not None:
            self.features.add("resumed")
        if self._armed("pc-rerun-durable-task") and run.ok:
            self._emit("task_start", run.proc, node=self._sorted(run.ok)[0])
            self._violated()

    def _step(self, run: _Run) -> bool:
        """Ends the step with the next checkpoint; True when the process crashed on the way."""
        self._flush_deferred(run)
        done = run.done | frozenset(self.wf.ready(run.done)) if run.at is not None else run.done
        c = self._new_checkpoint(run, run.at, done, fork=False)
        self._emit("step", run.proc, checkpoint=c, parent=run.at, done=self._sorted(done))
        run.at, run.done, run.ok, run.rv = c, done, frozenset(), set()
        if self._armed("pc-sync-step-before-save") and self.wf.ready(done):
            self._emit("task_start", run.proc, node=self.wf.ready(done)[0])
            self._violated()
        if self.durability == "sync" and self._maybe_crash(run):
            return True
        self._saved_when_made(run, c)
        return False

    def _fork(self, run: _Run) -> str:
        """Time travel: fork a durable checkpoint with work left after it, run from the copy."""
        sources = sorted(
            (c for c, k in self.ckpts.items() if self.wf.ready(k.done) and not k.fork),
            key=lambda c: int(c[1:]),
        )
        src = self.rng.choice(sources)
        done = self.ckpts[src].done
        carried = self._saved(src)["ok"] if self._armed("fd-fork-carries-pending-writes") else []
        c = self._new_checkpoint(run, src, done, fork=True)
        self._emit(
            "fork",
            run.proc,
            parent=src,
            checkpoint=c,
            done=self._sorted(done),
            ok=carried,
            values=[],
        )
        self.features.add("fork")
        if carried:
            self._violated()
        run.at, run.done, run.ok, run.rv = c, done, frozenset(), set()
        run.mem_ws, run.deferred_put = [], None
        run.mem_cks = [c]
        self._saved_when_made(run, c)
        return self._drive(run)

    def _new_checkpoint(
        self, run: _Run, parent: str | None, done: frozenset[str], *, fork: bool
    ) -> str:
        c = f"c{len(self.made)}"
        self.made[c] = _Ckpt(parent, done, fork)
        run.mem_cks.append(c)
        return c

    def _saved_when_made(self, run: _Run, c: str) -> None:
        """Sync saves a checkpoint at once, async while the step goes on, exit at the end."""
        if self.durability == "sync":
            self._put(run, c)
        elif self.durability == "async":
            run.deferred_put = c

    def _flush_deferred(self, run: _Run) -> None:
        if run.deferred_put is not None:
            c, run.deferred_put = run.deferred_put, None
            self._put(run, c)

    def _put(self, run: _Run, c: str) -> None:
        self._emit("put", run.proc, checkpoint=c)
        run.mem_cks.remove(c)
        self.ckpts[c] = self.made[c]

    def _write(self, run: _Run, w: _Write) -> None:
        run.mem_ws.append(w)
        if self.durability != "exit":
            self._put_write(run, w)

    def _put_write(self, run: _Run, w: _Write) -> None:
        self._emit(
            "put_writes",
            run.proc,
            checkpoint=w.at,
            node=w.node,
            kind=w.kind,
            index=w.index,
            value=w.value,
        )
        run.mem_ws.remove(w)
        self.writes.add(w)

    def _finish(self, run: _Run, outcome: str) -> str:
        """An invocation returns only once all it made is durable (exit mode saves it now)."""
        self._flush_deferred(run)
        for c in list(run.mem_cks):
            self._put(run, c)
        for w in list(run.mem_ws):
            self._put_write(run, w)
        self._emit("finish", run.proc)
        return outcome

    def _maybe_crash(self, run: _Run) -> bool:
        """SIGKILL, now and then: the store may already hold some of what was in flight."""
        in_flight = len(run.mem_cks) + len(run.mem_ws)
        if not self.crashes_left or in_flight > 2 or self.rng.random() >= self.crash_p:
            return False
        self.crashes_left -= 1
        self.features.add("crash")
        self._emit("crash", run.proc)
        for c in run.mem_cks:
            if self.rng.random() < 0.5:
                self.ckpts[c] = self.made[c]
        for w in run.mem_ws:
            if self.rng.random() < 0.5:
                self.writes.add(w)
        for entry in self.ledger.values():
            entry[1] = 0
        return True

    # -- interrupts and resume values ----------------------------------------------------------

    def _parked(self, at: str) -> list[tuple[str, int]]:
        found = {(w.node, w.index) for w in self.writes if w.at == at and w.kind == "interrupt"}
        return sorted((n, i) for n, i in found if n is not None)

    def _answer(self, run: _Run, to: tuple[str, str, int]) -> str | None:
        return next((v for v in sorted(run.rv) if self.addr[v] == to), None)

    def _new_value(self, to: tuple[str, str, int]) -> str:
        self.values += 1
        value = f"v{self.values}-{self.rng.choice(['yes', 'no', 'edit', 'approve'])}"
        self.addr[value] = to
        return value

    def _resume_parked(self, run: _Run) -> None:
        """A person answers every interrupt the loaded checkpoint is parked at."""
        assert run.at is not None
        for node, index in self._parked(run.at):
            to = (run.at, node, index)
            if self._answer(run, to) is not None:
                continue
            value = self._new_value(to)
            self._emit("resume", run.proc, value=value, checkpoint=run.at, node=node, index=index)
            self.features.add("interrupt")
            run.rv.add(value)
            self._write(run, _Write(run.at, None, "resume", 0, value))

    def _two_resumers(self) -> None:
        """The wrong move for CO: two workers answer the same parked interrupt."""
        a, b = self._worker(), self._worker()
        self._load(a)
        self._load(b)
        assert a.at is not None
        at = a.at
        node, index = next((n, i) for n, i in self._parked(at) if not self._answer(a, (at, n, i)))
        for run in (a, b):
            value = self._new_value((at, node, index))
            self._emit("resume", run.proc, value=value, checkpoint=at, node=node, index=index)
            if run is b:
                self._violated()
            self._write(run, _Write(at, None, "resume", 0, value))

    # -- tasks ---------------------------------------------------------------------------------

    def _run_tasks(self, run: _Run, schedule: list[str]) -> str:
        """Runs the step's tasks concurrently (events interleaved at random)."""
        if self._armed("rd-step-skips-scheduled-task") and len(schedule) >= 2:
            node = next((n for n in schedule if not self._has_interrupt(n)), None)
            if node is not None:
                for _ in self._task(run, node, fail=False):
                    pass
                made = run.done | run.ok | {node}
                c = self._new_checkpoint(run, run.at, made, fork=False)
                self._emit("step", run.proc, checkpoint=c, parent=run.at, done=self._sorted(made))
                self._violated()
        outcomes: dict[str, str] = {}
        tasks: dict[str, Iterator[str | None]] = {}
        for node in schedule:
            fail = self.errors_left > 0 and self.rng.random() < 0.1
            if fail:
                self.errors_left -= 1
                self.features.add("error")
            tasks[node] = self._task(run, node, fail=fail)
        while tasks:
            if self._maybe_crash(run):
                return "crashed"
            node = self.rng.choice(sorted(tasks))
            result = next(tasks[node], None)
            if result is not None:
                outcomes[node] = result
                del tasks[node]
        if "parked" in outcomes.values():
            return "parked"
        return "error" if "error" in outcomes.values() else "ok"

    def _has_interrupt(self, node: str) -> bool:
        return any(kind == "interrupt" for kind, _ in self.wf.body[node])

    def _fires(self, key: tuple[str, str, str]) -> bool:
        """The ledger: exactly-once never fires an intent twice at a checkpoint; at-least-once
        fires it again only after a crash (ResumeCore's EO)."""
        entry = self.ledger.get(key)
        if entry is None:
            return True
        return self.effects == "at-least-once" and entry[1] == 0

    def _task(self, run: _Run, node: str, *, fail: bool) -> Iterator[str | None]:
        """One execution attempt of `node`; yields after each event, last its outcome."""
        assert run.at is not None
        self._emit("task_start", run.proc, node=node)
        self._flush_deferred(run)
        yield None
        index = 0
        for kind, intent in self.wf.body[node]:
            if kind == "effect":
                key = (run.at, node, intent)
                if self._fires(key):
                    entry = self.ledger.setdefault(key, [0, 0])
                    entry[0] += 1
                    entry[1] += 1
                    self.features.add("effect")
                elif self._armed("eo-effect-refired"):
                    self._emit("effect", run.proc, node=node, intent=intent)
                    self._violated()
                else:
                    continue  # the ledger says it fired: skip it
                self._emit("effect", run.proc, node=node, intent=intent)
                yield None
                continue
            index += 1
            to = (run.at, node, index)
            value = self._answer(run, to)
            self._emit("interrupt", run.proc, node=node, index=index, value=value)
            yield None
            if value is None:
                self.features.add("interrupt")
                self._write(run, _Write(run.at, node, "interrupt", index))
                yield "parked"
                return
        outcome = "error" if fail else "ok"
        self._emit("task_end", run.proc, node=node, outcome=outcome)
        yield None
        self._write(run, _Write(run.at, node, outcome))
        yield outcome
