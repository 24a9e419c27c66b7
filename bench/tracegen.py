"""Deterministic synthetic ResumeCore v2 traces for the benchmarks.

    .venv/bin/python bench/tracegen.py OUT --count 100          100 traces of ~100 events
    .venv/bin/python bench/tracegen.py OUT --events 10000       ONE long conforming trace

Both write `manifest.json` beside the traces (the format of traces/core/manifest.json), so
`resume-check --format json OUT` can be compared with what each trace was generated to get.

A benchmark is only worth its numbers if the checker gives the right answers on the inputs it
times, so the traces are not random event soup: they are recorded from a small simulator of
the ResumeCore reference runtime (spec/ResumeCore.tla, `Run`, with the faults of `Fault`). It
keeps the store's side the way the contract does -- which checkpoints and writes are made,
stored or lost, what each process has in flight, which answers are live, what the effect
ledger has seen -- and writes each move as the event a recorder writes (traces/core/*.jsonl
are the models). A thread's checkpoints schedule task instances from a script of turns: loops
(a node again in a later step), fan-out (Send tasks of one node on distinct paths), interrupts
answered by later invocations, effects at their declared level, a subgraph on its own chain
(`ns`), SIGKILLs that keep or lose what was in flight, retries, time-travel forks and
update_state edits, under sync, async or exit durability.

A violating trace (1 in 20) runs the same simulator until a random point and then makes one
wrong move of a known kind, shaped like the examples in traces/core; that event is the last,
and the generator records its index and the properties it breaks, so a benchmark can check
TLC's verdict to the event.

Trace i is drawn from `random.Random` seeded with (seed, i) alone, so it is the same whatever
the batch size: a batch of 100 is the first 100 traces of the batch of 1000.

One rule keeps the contract's search narrow, as real recorders do with their observations: a
process is killed only when the next load reveals every hidden choice of the crash (at most
one checkpoint in flight per chain, and writes or answers in flight only on a chain's stored
latest checkpoint). Otherwise TLC would have to carry both outcomes of an unobservable choice
to the end of the trace, and the benchmark would time that instead of the contract.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from corpus import Expected, Trace, write_manifest

TARGET_EVENTS = 100

# Exit durability is not generated for now: the contract changed it (f5894ea, "exit durability
# saves only a run's last checkpoint", as a child of the last stored one) and this simulator
# still saves every checkpoint of an exit-mode run when it returns, so its exit traces are
# judged, rightly, to break CV. Those graphs run in async mode until the simulator follows.
EXIT_DURABILITY = False
LONG_EVENTS = 10_000

# The wrong moves, each with the properties TLC must name for it. The order matters: trace
# VIOLATING_OFFSET + 20 k makes kind k mod 12, so the first six violating traces already cover
# all six properties.
VIOLATIONS: dict[str, tuple[str, ...]] = {
    "cv-content-differs": ("CV",),
    "eo-skipped-unfired": ("EO",),
    "rd-task-under-other-node": ("RD",),
    "co-lease-violated": ("CO",),
    "pc-sync-runs-ahead": ("PC",),
    "fd-fork-copy-differs": ("FD",),
    "cv-dropped-pending-write": ("CV",),
    "eo-refire-on-re-execution": ("EO",),
    "rd-schedule-differs-on-resume": ("RD",),
    "co-foreign-value": ("CO",),
    "pc-rerun-stored-task": ("PC",),
    "fd-step-on-pinned-checkpoint": ("FD",),
}

# What each wrong move looks like, for the trace's scenario line and the manifest.
MEANINGS: dict[str, str] = {
    "cv-content-differs": "a load returns the latest checkpoint with other content than was saved",
    "eo-skipped-unfired": "a task skips an effect as if it had fired, but it never did",
    "rd-task-under-other-node": "a scheduled task id starts under another node's name",
    "co-lease-violated": "a lease is declared, yet a second process loads while the first runs",
    "pc-sync-runs-ahead": "sync durability: a task starts before its step's checkpoint is saved",
    "fd-fork-copy-differs": "the fork copy is saved with other content than its source",
    "cv-dropped-pending-write": "a load omits a stored pending write",
    "eo-refire-on-re-execution": "a re-executed task fires an effect again that may fire once",
    "rd-schedule-differs-on-resume": "a reloaded checkpoint schedules another task than before",
    "co-foreign-value": "a resumed task receives a value nobody answered",
    "pc-rerun-stored-task": "a reloaded step starts a task whose result is stored",
    "fd-step-on-pinned-checkpoint": "a run from an older checkpoint steps on it instead of forking",
}

# Every VIOLATING_EVERY-th trace (at offset VIOLATING_OFFSET) violates: 5% of a batch, and
# trace 0, the batch of one, conforms.
VIOLATING_EVERY = 20
VIOLATING_OFFSET = 7

_MAX_ATTEMPTS = 50

Chain = tuple[str, str]  # (thread, namespace): a chain of checkpoints
Pos = tuple[int, int]  # (turn, step) in a chain's script
# ("effect", intent, kind), ("interrupt", "", None) or ("sub", "", None)
Op = tuple[str, str, str | None]
Shape = tuple[tuple[str, str], ...]  # one step's tasks as (node, path)


def violation_of(index: int) -> str | None:
    """The wrong move trace `index` makes, or None for a conforming trace."""
    if index % VIOLATING_EVERY != VIOLATING_OFFSET:
        return None
    kinds = list(VIOLATIONS)
    return kinds[(index // VIOLATING_EVERY) % len(kinds)]


def generate(index: int, seed: int) -> Trace:
    """Trace `index` of the corpus for `seed`, ~TARGET_EVENTS events: the same on every run."""
    rng = random.Random(f"resume-check-bench-v2:{seed}:{index}")
    violation = violation_of(index)
    for _ in range(_MAX_ATTEMPTS):
        graph = _Graph.draw(rng, violation)
        sim = _Sim(rng, f"t{index}", graph, violation, stop_at=rng.randint(70, 95))
        trace = sim.record(f"{index:04d}")
        if trace is not None:
            return trace
    raise RuntimeError(f"trace {index}: could not place violation {violation!r}")


def generate_long(seed: int, events: int = LONG_EVENTS) -> Trace:
    """ONE conforming trace of at least `events` events: a long-running thread (an assistant
    that loops, fans out, asks, runs a subgraph) with crashes, resumes, forks and edits."""
    rng = random.Random(f"resume-check-bench-v2:long:{seed}:{events}")
    graph = _Graph.draw(rng, None, family="assistant", durability=rng.choice(["sync", "async"]))
    trace = _Sim(rng, "long", graph, None, stop_at=events).record(f"long-{events}")
    assert trace is not None  # a conforming run always completes
    return trace


# -- the workflow ------------------------------------------------------------------------------

# Node bodies: what a task of the node does, in order. An effect's intent is stable across
# re-executions (the effect ledger's key); "sub" runs the node's child graph on its own chain.
_BODIES: dict[str, tuple[Op, ...]] = {
    "agent": (("effect", "agent:ask-model", "llm"),),
    "tools": (("effect", "tools:call", "search"),),
    "approve": (("interrupt", "", None),),
    "respond": (("effect", "respond:mail", "mail"),),
    "plan": (("effect", "plan:ask-model", "llm"),),
    "worker": (("effect", "worker:fetch", "search"),),
    "reduce": (("effect", "reduce:post", "notify"),),
    "review": (
        ("effect", "review:draft", "llm"),
        ("interrupt", "", None),
        ("effect", "review:send", "mail"),
    ),
    "fetch": (("effect", "fetch:get", "search"),),
    "enrich": (("effect", "enrich:ask-model", "llm"),),
    "score": (),
    "signoff": (("interrupt", "", None), ("interrupt", "", None), ("effect", "signoff:pay", None)),
    "publish": (("effect", "publish:charge", "payment"),),
    "router": (),
    "research": (("sub", "", None),),
    "search": (("effect", "search:query", "search"),),
    "ask": (("interrupt", "", None),),
    "summarize": (("effect", "summarize:ask-model", "llm"),),
    "write": (("effect", "write:mail", "mail"),),
}

_FAMILIES: dict[str, tuple[str, ...]] = {
    "react": ("agent", "tools", "approve", "respond"),
    "mapreduce": ("plan", "worker", "review", "reduce"),
    "pipeline": ("fetch", "enrich", "score", "review", "signoff", "publish"),
    "research": ("router", "research", "search", "ask", "summarize", "write", "fetch"),
}
_FAMILIES["assistant"] = tuple(dict.fromkeys(n for f in _FAMILIES.values() for n in f))

# Wrong moves that need something of the workflow: an interrupt to answer, or a step of
# several tasks (so that one result is stored while the step is unfinished).
_NEEDS_INTERRUPT = {"co-foreign-value", "eo-refire-on-re-execution", "cv-dropped-pending-write"}
_NEEDS_FANOUT = {"pc-rerun-stored-task"}


@dataclass
class _Graph:
    """A workflow and its declared guarantees. Turns are drawn as the thread needs them."""

    family: str
    durability: str
    fencing: str
    default_level: str
    levels: dict[str, str]
    child: tuple[Shape, ...]  # the research subgraph's steps
    interrupts: bool  # every turn asks a person something

    @staticmethod
    def draw(
        rng: random.Random,
        violation: str | None,
        *,
        family: str | None = None,
        durability: str | None = None,
    ) -> _Graph:
        family = family or rng.choice(["react", "mapreduce", "pipeline", "research", "assistant"])
        if violation in _NEEDS_FANOUT and family in ("react", "research"):
            family = "mapreduce"
        durability = durability or rng.choices(["sync", "async", "exit"], weights=[5, 3, 2])[0]
        if durability == "exit" and not EXIT_DURABILITY:
            durability = "async"  # drawn as before, so trace i is otherwise the same
        if violation == "pc-sync-runs-ahead":
            durability = "sync"
        fencing = rng.choice(["lease", "lease", "none"])
        if violation == "co-lease-violated":
            fencing = "lease"
        default_level = rng.choice(["exactly-once", "exactly-once", "at-least-once"])
        levels: dict[str, str] = {}
        if default_level == "at-least-once" or rng.random() < 0.3:
            levels["payment"] = "exactly-once"
        if rng.random() < 0.3:
            levels["notify"] = "at-most-once"
        child: list[Shape] = [(("search", "search"),)]
        if rng.random() < 0.5:
            child.append((("ask", "ask"),))
        child.append((("summarize", "summarize"),))
        interrupts = violation in _NEEDS_INTERRUPT or rng.random() < 0.5
        return _Graph(family, durability, fencing, default_level, levels, tuple(child), interrupts)

    @property
    def nodes(self) -> list[str]:
        return list(_FAMILIES[self.family])

    def level(self, kind: str | None) -> str:
        return self.levels.get(kind or "", self.default_level)

    def turn(self, rng: random.Random) -> list[Shape]:
        """The steps one input runs through, as the runtime's routing will decide them."""
        family = self.family
        if family == "assistant":
            family = rng.choice(["react", "mapreduce", "pipeline", "research"])
        ask = self.interrupts or rng.random() < 0.3
        if family == "react":
            steps: list[Shape] = [_one("agent")]
            for _ in range(rng.randint(1, 3)):  # the loop: agent runs again in a later step
                if ask and rng.random() < 0.5:
                    steps.append(_one("approve"))
                steps.append(_send("tools", rng.choice([1, 1, 2, 3])))
                steps.append(_one("agent"))
            return [*steps, _one("respond")]
        if family == "mapreduce":
            steps = [_one("plan"), _send("worker", rng.randint(2, 4))]
            if ask:
                steps.append(_one("review"))
            return [*steps, _one("reduce")]
        if family == "pipeline":
            steps = [_one("fetch"), (("enrich", "enrich"), ("score", "score"))]
            if ask:
                steps.append(_one(rng.choice(["review", "signoff"])))
            return [*steps, _one("publish")]
        middle: Shape = (("research", "research"),)
        if rng.random() < 0.4:
            middle = (("research", "research"), ("fetch", "fetch"))
        return [_one("router"), middle, _one("write")]


def _one(node: str) -> Shape:
    return ((node, node),)


def _send(node: str, width: int) -> Shape:
    """`width` Send tasks of one node, each on its own path (one task: a plain edge)."""
    if width == 1:
        return _one(node)
    return tuple((node, f"{node}#{i}") for i in range(width))


# -- the store and the processes ---------------------------------------------------------------


class _Violated(Exception):
    """The wrong move has been made: the trace ends with it."""


class _Killed(Exception):
    """The process was SIGKILLed: every frame of its invocation unwinds."""


@dataclass(frozen=True)
class _Task:
    id: str
    node: str
    path: str


@dataclass
class _Write:
    """A task's pending write; answers are kept apart (`_Ck.answers`)."""

    kind: str  # ok | error | interrupt
    interrupt: str | None
    by: str


@dataclass
class _Ck:
    """A checkpoint as the contract sees it (`ck`, `sched`, `wr`, `aw` of ResumeCore)."""

    id: str
    chain: Chain
    parent: str | None
    order: int
    depth: int
    branch: str
    origin: str | None  # the fork's source
    pos: Pos
    content: str  # its content digest
    st: str = "made"  # made | stored | lost
    put: bool = False  # the saver acknowledged it with its digest
    tasks: tuple[_Task, ...] | None = None  # its schedule, once decided
    writes: dict[str, _Write] = field(default_factory=dict)  # stored, per task
    # writes the contract knows are stored: acknowledged by put_writes, or returned by a load
    # (a write in flight at a crash may or may not have been kept until a load shows it)
    known: set[str] = field(default_factory=set)
    fly: dict[str, _Write] = field(default_factory=dict)  # made, not acknowledged
    answers: dict[str, str] = field(default_factory=dict)  # stored: interrupt -> value
    fly_answers: dict[str, tuple[str, str]] = field(default_factory=dict)  # -> (value, by)

    def stored_ok(self, task: _Task) -> bool:
        write = self.writes.get(task.id)
        return write is not None and write.kind == "ok"


@dataclass
class _Inflight:
    """What a process made that the store has not acknowledged (`inflight[p]`)."""

    cks: set[str] = field(default_factory=set)
    wrs: set[tuple[str, str]] = field(default_factory=set)  # (checkpoint, task)
    ans: set[tuple[str, str]] = field(default_factory=set)  # (checkpoint, interrupt)

    def empty(self) -> bool:
        return not (self.cks or self.wrs or self.ans)


@dataclass
class _Run:
    """A process's run on one chain (`run[<<p, ch>>]`)."""

    proc: str
    chain: Chain
    cur: _Ck | None = None


@dataclass
class _Invocation:
    """One invocation of the runtime by one process: the answers it knows (loaded with its
    checkpoint or written by itself) and its async saves not yet made."""

    proc: str
    answers: dict[str, str] = field(default_factory=dict)
    pending: list[tuple[str, str, str]] = field(default_factory=list)  # (what, ck, task)


class _Sim:
    """The reference runtime with faults, recording events; mirrors ResumeCore's `Run` and
    `Fault`. Where it disagrees with the spec, the benchmark's verdict check says so."""

    def __init__(
        self,
        rng: random.Random,
        thread: str,
        graph: _Graph,
        violation: str | None,
        *,
        stop_at: int,
    ) -> None:
        self.rng = rng
        self.graph = graph
        self.violation = violation
        self.main: Chain = (thread, "")
        self.stop_at = stop_at
        # A violating trace makes its wrong move at the first chance after this many events.
        self.arm_at = rng.randint(35, 80) if violation else 0
        self.cap = 4 * stop_at  # a violating run that found no chance by then starts over
        self.expected: Expected | None = None
        self.events: list[dict[str, Any]] = []
        self.features: set[str] = set()
        self.turns: list[list[Shape]] = []
        self.cks: dict[str, _Ck] = {}
        self.latest: dict[Chain, _Ck] = {}
        self.inflight: dict[str, _Inflight] = {"editor": _Inflight()}
        self.runs: dict[tuple[str, Chain], _Ck | None] = {}  # (proc, chain) -> its cur
        self.up: set[str] = set()
        self.live: dict[str, set[tuple[str, str]]] = {}  # interrupt -> {(proc, value)}: `ans`
        # effect key (chain, branch, depth, path, intent) -> (the process and task of its last
        # fire, whether that attempt has ended otherwise than ok), or None once that process
        # crashed while the attempt was still on: the crash cut that work short
        self.ledger: dict[tuple[Chain, str, int, str, str], tuple[str, str, bool] | None] = {}
        self.slots: list[str] = []
        self.tasks = 0
        self.crash_p = 0.1 if violation in _NEEDS_FANOUT else 0.03
        self.error_p = 0.03

    # -- the thread ----------------------------------------------------------------------------

    def record(self, prefix: str) -> Trace | None:
        """Runs the thread; the trace, or None when a wrong move never had its chance."""
        with contextlib.suppress(_Violated):
            self._scenario()
        if self.violation is not None and self.expected is None:
            return None
        expected = self.expected or Expected("conforms", complete=True)
        kind = self.violation or "conforms"
        features = ", ".join(sorted(self.features)) or "plain"
        meaning = MEANINGS[self.violation] if self.violation else "a correct run"
        g = self.graph
        levels = [{"kind": k, "level": v} for k, v in sorted(g.levels.items())]
        header = {
            "format": "resume-check/v2",
            "contract": "ResumeCore",
            "runtime": {"name": "synthetic", "version": "2"},
            "backend": "simulated",
            "thread": self.main[0],
            "scenario": f"{g.family}, {g.durability} durability, fencing {g.fencing}: "
            f"{features}; {meaning}",
            "guarantees": {
                "durability": g.durability,
                "effects": {"default": g.default_level, "kinds": levels},
                "fencing": g.fencing,
            },
            "graph": {"nodes": g.nodes},
        }
        name = f"{prefix}-{g.family}-{g.durability}-{kind}"
        return Trace(name, header, self.events, expected)

    def _scenario(self) -> None:
        """Invocations until the thread rests at an end past `stop_at` events: new input after
        done, an answer (or an edit) after parked, a retry after failed, recovery after a
        crash; now and then a read, a time-travel fork or an edit of a resting thread."""
        outcome = self._invoke(answer=False, new_input=True)
        while True:
            if outcome == "crashed":
                outcome = self._invoke(answer=False, new_input=False)
                continue
            if len(self.events) >= (self.cap if self.violation else self.stop_at):
                return
            roll = self.rng.random()
            if roll < 0.1:
                self._read()
            travel = self._armed("fd-fork-copy-differs") or self._armed(
                "fd-step-on-pinned-checkpoint"
            )
            if outcome == "parked":
                if roll < 0.15:
                    outcome = self._after_edit(self._edit(self._latest(self.main)))
                else:
                    outcome = self._invoke(answer=True, new_input=False)
            elif outcome == "failed":
                outcome = self._invoke(answer=False, new_input=False)
            elif (travel or roll < 0.15) and self._fork_sources():
                outcome = self._time_travel()
            elif roll < 0.25:
                outcome = self._after_edit(self._edit(self._edit_target()))
            else:
                outcome = self._invoke(answer=False, new_input=True)

    def _after_edit(self, edit: _Ck) -> str:
        """invoke(None) on the edited thread; new input if the edit leaves nothing to run."""
        return self._invoke(answer=False, new_input=not self._shape_at(edit))

    def _invoke(self, *, answer: bool, new_input: bool) -> str:
        """One invocation: load the latest checkpoint, then answer what it is parked at, or
        take new input, and run steps until done, parked, failed or killed."""
        inv = _Invocation(self._worker())
        run = _Run(inv.proc, self.main)
        try:
            self._load(run)
            cur = run.cur
            if cur is None:
                self._step(inv, run)
            else:
                inv.answers = dict(cur.answers)
                if new_input:
                    self._schedule(run)
                    self._step(inv, run)
                elif answer:
                    self._answer(inv, run)
                self._rerun_stored(run)
            return self._drive(inv, run)
        except _Killed:
            return "crashed"

    def _drive(self, inv: _Invocation, run: _Run) -> str:
        while True:
            tasks = self._schedule(run)
            if not tasks:
                return self._finish(inv, run, "done")
            outcome = self._run_step(inv, run, tasks)
            if outcome != "ok":
                return self._finish(inv, run, "parked" if outcome == "parked" else "failed")
            self._step(inv, run)

    def _worker(self) -> str:
        """A worker slot to run the next invocation: one that is idle and carries nothing
        from earlier ones, or a new one. A slot whose earlier child-graph run stopped before
        its end is not reused: Finish judges every run a process ever had, so its
        next "done" would count that run."""
        idle = [p for p in self.slots if p not in self.up and self._reusable(p)]
        if idle and (len(self.slots) >= 3 or self.rng.random() < 0.7):
            return self.rng.choice(idle)
        proc = f"w{len(self.slots) + 1}"
        self.slots.append(proc)
        self.inflight[proc] = _Inflight()
        return proc

    def _reusable(self, proc: str) -> bool:
        if not self.inflight[proc].empty():
            return False
        return not any(
            cur is None or cur.st != "stored" or bool(cur.tasks)
            for (p, chain), cur in self.runs.items()
            if p == proc and chain != self.main
        )

    # -- moves ---------------------------------------------------------------------------------

    def _emit(self, ev: str, proc: str, chain: Chain | None = None, **fields: Any) -> None:
        event: dict[str, Any] = {"seq": len(self.events), "ev": ev, "proc": proc}
        if chain is not None:
            event["thread"] = chain[0]
            if chain[1]:
                event["ns"] = chain[1]
        event.update(fields)
        event["ts"] = round(1_764_000_000 + len(self.events) * 0.011, 3)
        self.events.append(event)

    def _armed(self, kind: str) -> bool:
        return self.violation == kind and self.expected is None and len(self.events) >= self.arm_at

    def _violated(self) -> None:
        """Marks the event just emitted as the wrong move and ends the trace."""
        assert self.violation is not None
        self.expected = Expected("violates", len(self.events), VIOLATIONS[self.violation])
        raise _Violated

    def _latest(self, chain: Chain) -> _Ck | None:
        return self.latest.get(chain)

    def _stored(self, ck: _Ck) -> None:
        ck.st = "stored"
        best = self.latest.get(ck.chain)
        if best is None or ck.order > best.order:
            self.latest[ck.chain] = ck

    def _load_fields(self, chain: Chain, asked: _Ck | None) -> dict[str, Any]:
        """A correct load: the checkpoint asked for or the latest, with what the store holds."""
        got = asked or self._latest(chain)
        if got is None:
            return {
                "asked": None,
                "checkpoint": None,
                "parent": None,
                "digest": None,
                "writes": [],
                "answers": [],
            }
        writes = []
        for task, w in sorted(got.writes.items()):
            seen: dict[str, Any] = {"task": task, "kind": w.kind}
            if w.interrupt is not None:
                seen["interrupt"] = w.interrupt
            writes.append(seen)
        answers = [{"interrupt": a, "value": v} for a, v in sorted(got.answers.items())]
        return {
            "asked": asked.id if asked else None,
            "checkpoint": got.id,
            "parent": got.parent,
            "digest": got.content,
            "writes": writes,
            "answers": answers,
        }

    @staticmethod
    def _known_write(fields: dict[str, Any], got: _Ck) -> dict[str, Any] | None:
        """A write the load must return (omitting it breaks CV): one known to be stored."""
        return next((w for w in fields["writes"] if w["task"] in got.known), None)

    def _load(self, run: _Run, asked: _Ck | None = None, under: str | None = None) -> None:
        """A load; `under`: a subgraph's, inside that task of its parent (as the LangGraph
        recorder writes it: the chain it settles ends with that task)."""
        fields = self._load_fields(run.chain, asked)
        if under is not None:
            fields["nested"], fields["under"] = True, under
        got = asked or self._latest(run.chain)
        bad = False
        if got is not None and got.put and self._armed("cv-content-differs"):
            fields["digest"], bad = "d-garbled", True
        elif (
            got is not None
            and (known := self._known_write(fields, got)) is not None
            and self._armed("cv-dropped-pending-write")
        ):
            fields["writes"], bad = [w for w in fields["writes"] if w is not known], True
        self._emit("load", run.proc, run.chain, **fields)
        if got is not None:
            got.known |= {w["task"] for w in fields["writes"]}
        if bad:
            self._violated()
        run.cur = got
        self.runs[(run.proc, run.chain)] = got
        self.up.add(run.proc)

    def _read(self) -> None:
        """get_state by an observer: the latest, or (time travel) an older checkpoint."""
        older = self._fork_sources()
        asked = self.rng.choice(older) if older and self.rng.random() < 0.3 else None
        fields = self._load_fields(self.main, asked)
        self._emit("read", "reader", self.main, **fields)
        got = asked or self._latest(self.main)
        if got is not None:
            got.known |= {w["task"] for w in fields["writes"]}
        self.features.add("read")

    def _make(
        self,
        proc: str,
        chain: Chain,
        parent: _Ck | None,
        *,
        depth: int,
        branch: str | None,
        origin: _Ck | None,
        pos: Pos,
        letter: str,
    ) -> _Ck:
        """A new checkpoint in `proc`'s memory (ResumeCore's Made); `branch` None: its own."""
        cid = f"{letter}{len(self.cks)}"
        ck = _Ck(
            id=cid,
            chain=chain,
            parent=parent.id if parent else None,
            order=len(self.cks) + 1,
            depth=depth,
            branch=cid if branch is None else branch,
            origin=origin.id if origin else None,
            pos=pos,
            content=origin.content if origin else f"d-{cid}",
        )
        self.cks[cid] = ck
        self.inflight[proc].cks.add(cid)
        return ck

    def _turns(self, chain: Chain) -> list[list[Shape]]:
        return self.turns if chain == self.main else [list(self.graph.child)]

    def _shape_at(self, ck: _Ck) -> Shape:
        turn, step = ck.pos
        turns = self._turns(ck.chain)
        while turn >= len(turns):
            turns.append(self.graph.turn(self.rng))
        steps = turns[turn]
        return steps[step] if step < len(steps) else ()

    def _next_pos(self, ck: _Ck) -> Pos:
        """The step after `ck`: the next of its turn, or (after a done checkpoint) new input."""
        turn, step = ck.pos
        return (turn, step + 1) if self._shape_at(ck) else (turn + 1, 0)

    def _step(self, inv: _Invocation, run: _Run) -> None:
        """Ends the step from run.cur with the next checkpoint and saves it as declared."""
        parent = run.cur
        ck = self._make(
            run.proc,
            run.chain,
            parent,
            depth=parent.depth + 1 if parent else 0,
            branch=parent.branch if parent else "",
            origin=None,
            pos=self._next_pos(parent) if parent else (0, 0),
            letter="c" if run.chain == self.main else "s",
        )
        self._emit("step", run.proc, run.chain, checkpoint=ck.id, parent=ck.parent)
        run.cur = ck
        self.runs[(run.proc, run.chain)] = ck
        if self._loops(ck):
            self.features.add("loop")
        if run.chain == self.main and self._shape_at(ck) and self._armed("pc-sync-runs-ahead"):
            tasks = self._schedule(run)
            self._emit(
                "task_start",
                run.proc,
                run.chain,
                task=tasks[0].id,
                node=tasks[0].node,
                path=tasks[0].path,
            )
            self._violated()
        self._save(inv, run.chain, "ck", ck.id)

    def _loops(self, ck: _Ck) -> bool:
        """Whether a node of ck's step already ran in an earlier step of its turn."""
        turn, step = ck.pos
        nodes = {n for n, _ in self._shape_at(ck)}
        return any(n in nodes for s in self._turns(ck.chain)[turn][:step] for n, _ in s)

    def _save(self, inv: _Invocation, chain: Chain, what: str, ck: str, task: str = "") -> None:
        """Saves a checkpoint, write or the answers as the durability mode says: sync at once
        (a crash may come first), async later in the run, exit when the invocation returns.
        A subgraph saves as it goes in every mode, so nothing of it is in flight when its
        parent task ends."""
        mode = self.graph.durability if chain == self.main else "sync"
        if mode == "sync":
            self._maybe_crash(inv.proc)
            self._flush(inv.proc, (what, ck, task))
        elif mode == "async" or what == "ans":  # exit mode saves the rest in _finish
            inv.pending.append((what, ck, task))

    def _flush(self, proc: str, save: tuple[str, str, str]) -> None:
        what, cid, task = save
        ck = self.cks[cid]
        if what == "ck":
            self._put(proc, ck)
        elif what == "wr":
            self._put_write(proc, ck, task)
        else:
            self._put_answers(proc, ck)

    def _put(self, proc: str, ck: _Ck) -> None:
        digest = ck.content
        origin = self.cks[ck.origin] if ck.origin else None
        bad = origin is not None and origin.put and self._armed("fd-fork-copy-differs")
        if bad:
            digest = "d-garbled"
        self._emit("put", proc, checkpoint=ck.id, digest=digest)
        if bad:
            self._violated()
        self.inflight[proc].cks.discard(ck.id)
        ck.put = True
        self._stored(ck)

    def _put_write(self, proc: str, ck: _Ck, task: str) -> None:
        w = ck.fly[task]
        fields: dict[str, Any] = {"checkpoint": ck.id, "task": task, "kind": w.kind}
        if w.interrupt is not None:
            fields["interrupt"] = w.interrupt
        self._emit("put_writes", proc, ck.chain, **fields)
        ck.writes[task] = ck.fly.pop(task)
        ck.known.add(task)
        self.inflight[proc].wrs.discard((ck.id, task))

    def _put_answers(self, proc: str, ck: _Ck) -> None:
        mine = [a for a, (_, by) in ck.fly_answers.items() if by == proc]
        if not mine:
            return
        self._emit("put_writes", proc, ck.chain, checkpoint=ck.id, task=None, kind="resume")
        for a in mine:
            ck.answers[a] = ck.fly_answers.pop(a)[0]
            self.inflight[proc].ans.discard((ck.id, a))

    def _schedule(self, run: _Run) -> tuple[_Task, ...]:
        """The tasks run.cur schedules: decided once (a fork copy: its source's nodes and
        paths, new task ids), the same every time it is scheduled again."""
        ck = run.cur
        assert ck is not None
        again = ck.tasks is not None
        if ck.tasks is None:
            ck.tasks = tuple(_Task(self._task_id(), n, p) for n, p in self._shape_at(ck))
        listed = [{"task": t.id, "node": t.node, "path": t.path} for t in ck.tasks]
        bad = again and ck.origin is None and self._armed("rd-schedule-differs-on-resume")
        if bad:
            node = self.rng.choice(self.graph.nodes)
            listed.append({"task": self._task_id(), "node": node, "path": f"{node}#extra"})
        self._emit("schedule", run.proc, run.chain, checkpoint=ck.id, tasks=listed)
        if bad:
            self._violated()
        if len(ck.tasks) > 1 and len({t.node for t in ck.tasks}) == 1:
            self.features.add("fan-out")
        return ck.tasks

    def _task_id(self) -> str:
        self.tasks += 1
        return f"k{self.tasks}"

    def _finish(self, inv: _Invocation, run: _Run, outcome: str) -> str:
        """Returns only once the step's checkpoint and writes are stored (exit mode saves them
        now, with every answer; its intermediate checkpoints are dropped)."""
        for save in inv.pending:
            self._flush(inv.proc, save)
        inv.pending.clear()
        cur = run.cur
        assert cur is not None
        if cur.st == "made":
            self._put(inv.proc, cur)
        for task in sorted(t for t, w in cur.fly.items() if w.by == inv.proc):
            self._put_write(inv.proc, cur, task)
        self._emit("finish", inv.proc, outcome=outcome)
        for cid in self.inflight[inv.proc].cks:
            self.cks[cid].st = "lost"
        self.inflight[inv.proc].cks.clear()
        self.up.discard(inv.proc)
        self.features.add(outcome)
        return outcome

    # -- faults --------------------------------------------------------------------------------

    def _maybe_crash(self, proc: str) -> None:
        """SIGKILL, now and then, when the next load will tell what the store kept."""
        if self.rng.random() >= self.crash_p or not self._revealable(proc):
            return
        self._emit("crash", proc)
        self.features.add("crash")
        f = self.inflight[proc]
        for cid in sorted(f.cks):
            ck = self.cks[cid]
            if self.rng.random() < 0.5:
                self._stored(ck)
            else:
                ck.st = "lost"
        for cid, task in sorted(f.wrs):
            w = self.cks[cid].fly.pop(task)
            if self.rng.random() < 0.5:
                self.cks[cid].writes[task] = w
        for cid, a in sorted(f.ans):
            value, _ = self.cks[cid].fly_answers.pop(a)
            if self.rng.random() < 0.5:
                self.cks[cid].answers[a] = value
            else:
                self.live[a].discard((proc, value))
        self.inflight[proc] = _Inflight()
        self.ledger = {
            k: None if fire is not None and fire[0] == proc and not fire[2] else fire
            for k, fire in self.ledger.items()
        }
        self.runs = {k: v for k, v in self.runs.items() if k[0] != proc}
        self.up.discard(proc)
        raise _Killed

    def _revealable(self, proc: str) -> bool:
        """Whether the recovery's loads will reveal every choice a crash of `proc` makes now:
        per chain at most one checkpoint in flight (then nothing else), or writes and answers
        only on the stored latest; and a subgraph's chain only while its parent task runs
        from a stored checkpoint (the recovery reruns that task, which loads the subgraph)."""
        f = self.inflight[proc]
        made: dict[Chain, int] = {}
        others: dict[Chain, set[str]] = {}
        for cid in f.cks:
            chain = self.cks[cid].chain
            made[chain] = made.get(chain, 0) + 1
        for cid, _ in f.wrs | f.ans:
            others.setdefault(self.cks[cid].chain, set()).add(cid)
        for chain in made.keys() | others.keys():
            latest = self._latest(chain)
            if made.get(chain, 0) > 1 or (made.get(chain) and others.get(chain)):
                return False
            if any(latest is None or cid != latest.id for cid in others.get(chain, ())):
                return False
            if chain != self.main and made.get(self.main):
                return False
        return True

    def _edit_target(self) -> _Ck:
        older = self._fork_sources()
        latest = self._latest(self.main)
        assert latest is not None
        return self.rng.choice(older) if older and self.rng.random() < 0.4 else latest

    def _edit(self, target: _Ck | None) -> _Ck:
        """update_state by an editor while the thread rests: a checkpoint after `target` (as
        if its step had run), saved at once; on an older checkpoint, a branch of its own."""
        assert target is not None
        latest = self._latest(self.main)
        shape = self._shape_at(target)
        turn, step = target.pos
        ck = self._make(
            "editor",
            self.main,
            target,
            depth=target.depth + 1,
            branch=target.branch if target is latest else None,
            origin=None,
            pos=(turn, step + 1) if shape else target.pos,
            letter="u",
        )
        self._emit("update", "editor", self.main, parent=target.id, checkpoint=ck.id)
        self.features.add("update")
        self._put("editor", ck)
        return ck

    def _fork_sources(self) -> list[_Ck]:
        latest = self._latest(self.main)
        return [
            ck
            for ck in self.cks.values()
            if ck.chain == self.main
            and ck.st == "stored"
            and ck.tasks is not None
            and latest is not None
            and ck.order < latest.order
        ]

    def _time_travel(self) -> str:
        """Load an older checkpoint, fork it, and run the copy's branch to its end."""
        sources = self._fork_sources()
        pinned_step = self._armed("fd-step-on-pinned-checkpoint")
        if pinned_step:
            complete = [ck for ck in sources if all(ck.stored_ok(t) for t in ck.tasks or ())]
            sources = complete or sources
        src = self.rng.choice(sources)
        inv = _Invocation(self._worker())
        run = _Run(inv.proc, self.main)
        try:
            self._load(run, asked=src)
            if pinned_step and all(src.stored_ok(t) for t in src.tasks or ()):
                self._schedule(run)
                ck = self._make(
                    inv.proc,
                    self.main,
                    src,
                    depth=src.depth + 1,
                    branch=src.branch,
                    origin=None,
                    pos=self._next_pos(src),
                    letter="c",
                )
                self._emit("step", inv.proc, self.main, checkpoint=ck.id, parent=src.id)
                self._violated()
            ck = self._make(
                inv.proc,
                self.main,
                src,
                depth=src.depth,
                branch=None,
                origin=src,
                pos=src.pos,
                letter="f",
            )
            self._emit("fork", inv.proc, self.main, parent=src.id, checkpoint=ck.id)
            self.features.add("fork")
            run.cur = ck
            self.runs[(inv.proc, self.main)] = ck
            self._save(inv, self.main, "ck", ck.id)
            return self._drive(inv, run)
        except _Killed:
            return "crashed"

    # -- interrupts ----------------------------------------------------------------------------

    def _answer(self, inv: _Invocation, run: _Run) -> None:
        """A person answers the interrupts run.cur is parked at (now and then only one)."""
        cur = run.cur
        assert cur is not None
        parked = sorted(
            w.interrupt
            for w in cur.writes.values()
            if w.kind == "interrupt" and w.interrupt is not None and not self.live.get(w.interrupt)
        )
        if len(parked) > 1 and self.rng.random() < 0.3:
            parked = parked[:1]
        for a in parked:
            value = self.rng.choice(["yes", "no", "approve", "edit"])
            self._emit("resume", inv.proc, run.chain, checkpoint=cur.id, interrupt=a, value=value)
            self.features.add("interrupt")
            cur.fly_answers[a] = (value, inv.proc)
            self.live.setdefault(a, set()).add((inv.proc, value))
            self.inflight[inv.proc].ans.add((cur.id, a))
            inv.answers[a] = value
        if parked:
            self._save(inv, run.chain, "ans", cur.id)

    def _rerun_stored(self, run: _Run) -> None:
        """The wrong move for PC: a reloaded step starts a task whose result is stored."""
        cur = run.cur
        if cur is None or cur.tasks is None or not self._armed("pc-rerun-stored-task"):
            return
        done = [t for t in cur.tasks if cur.stored_ok(t)]
        if done and len(done) < len(cur.tasks):
            self._schedule(run)
            task = done[0]
            self._emit(
                "task_start", run.proc, run.chain, task=task.id, node=task.node, path=task.path
            )
            self._violated()

    # -- tasks ---------------------------------------------------------------------------------

    def _run_step(self, inv: _Invocation, run: _Run, tasks: tuple[_Task, ...]) -> str:
        """Runs the step's tasks that have no stored result, concurrently (their events
        interleaved at random): "ok", "parked" or "error"."""
        cur = run.cur
        assert cur is not None
        attempts = {t.id: self._task(inv, run, t) for t in tasks if not cur.stored_ok(t)}
        outcomes: dict[str, str] = {}
        while attempts:
            self._tick(inv, run)
            tid = self.rng.choice(sorted(attempts))
            try:
                next(attempts[tid])
            except StopIteration as stop:
                outcomes[tid] = stop.value
                del attempts[tid]
        if "parked" in outcomes.values():
            return "parked"
        return "error" if "error" in outcomes.values() else "ok"

    def _tick(self, inv: _Invocation, run: _Run) -> None:
        """Between two events of a step: an async save may land, another process may barge
        in (the wrong move for CO), the process may be killed."""
        if inv.pending and self.rng.random() < 0.5:
            self._flush(inv.proc, inv.pending.pop(0))
        if run.chain == self.main and self._armed("co-lease-violated"):
            intruder = next((p for p in self.slots if p not in self.up), "intruder")
            self._emit("load", intruder, self.main, **self._load_fields(self.main, None))
            self._violated()
        self._maybe_crash(inv.proc)

    def _task(self, inv: _Invocation, run: _Run, task: _Task) -> Generator[None, None, str]:
        """Attempts of one task until one ends (an error may be retried in process, without
        saving it); yields after each event, returns "ok", "parked" or "error"."""
        while True:
            outcome = yield from self._attempt(inv, run, task)
            if outcome != "retry":
                return outcome
            self.features.add("retry")

    def _attempt(self, inv: _Invocation, run: _Run, task: _Task) -> Generator[None, None, str]:
        cur = run.cur
        assert cur is not None
        node = task.node
        if self._armed("rd-task-under-other-node"):
            node = self.rng.choice([n for n in self.graph.nodes if n != task.node])
        self._emit("task_start", run.proc, run.chain, task=task.id, node=node, path=task.path)
        if node != task.node:
            self._violated()
        yield
        body = _BODIES[task.node]
        fail_at = self.rng.randrange(len(body) + 1) if self.rng.random() < self.error_p else -1
        res: list[tuple[str, str]] = []
        asked = 0
        for i, (op, intent, kind) in enumerate([*body, ("end", "", None)]):
            if i == fail_at:
                self.features.add("error")
                retry = self.rng.random() < 0.5
                self._end(inv, run, task, "error", None, res, save=not retry)
                return "retry" if retry else "error"
            if op == "effect":
                self._effect(run, task, intent, kind)
                yield
            elif op == "interrupt":
                asked += 1
                a = f"{task.id}:{asked}"
                value = inv.answers.get(a)
                if value is None:
                    self._end(inv, run, task, "interrupt", a, res)
                    return "parked"
                res.append((a, value))
            elif op == "sub":
                outcome, a = self._subgraph(inv, run, task)
                yield
                if outcome != "ok":
                    self._end(inv, run, task, outcome, a, res)
                    return "parked" if outcome == "interrupt" else "error"
        self._end(inv, run, task, "ok", None, res)
        return "ok"

    def _effect(self, run: _Run, task: _Task, intent: str, kind: str | None) -> None:
        """Fires an effect, or skips it when the ledger says it fired and its level forbids a
        second time; at-least-once fires again once a crash cut short the attempt that fired
        it last (ResumeCore's EffectWrong: its process crashed before that attempt ended
        otherwise than ok)."""
        cur = run.cur
        assert cur is not None
        key = (run.chain, cur.branch, cur.depth, task.path, intent)
        level = self.graph.level(kind)
        fired = key in self.ledger
        if not fired:
            status = "fired"
            wrong = level != "at-most-once" and self._armed("eo-skipped-unfired")
            shown = "skipped" if wrong else status
        else:
            again = level == "at-least-once" and self.ledger[key] is None
            status = "fired" if again and self.rng.random() < 0.7 else "skipped"
            wrong = status == "skipped" and not again and self._armed("eo-refire-on-re-execution")
            shown = "fired" if wrong else status
        fields: dict[str, Any] = {"task": task.id, "intent": intent}
        if kind is not None:
            fields["kind"] = kind
        if shown == "skipped":
            fields["status"] = "skipped"
        self._emit("effect", run.proc, run.chain, **fields)
        if wrong:
            self._violated()
        self.features.add("effect" if not fired else f"effect {status} again")
        if status == "fired":
            self.ledger[key] = (run.proc, task.id, False)

    def _end(
        self,
        inv: _Invocation,
        run: _Run,
        task: _Task,
        outcome: str,
        interrupt: str | None,
        res: list[tuple[str, str]],
        *,
        save: bool = True,
    ) -> None:
        cur = run.cur
        assert cur is not None
        fields: dict[str, Any] = {"task": task.id, "outcome": outcome}
        if interrupt is not None:
            fields["interrupt"] = interrupt
        shown = list(res)
        bad = bool(res) and self._armed("co-foreign-value")
        if bad:
            shown[-1] = (shown[-1][0], "forged")
        if shown:
            fields["resumed"] = [{"interrupt": a, "value": v} for a, v in shown]
        self._emit("task_end", run.proc, run.chain, **fields)
        if bad:
            self._violated()
        if outcome != "ok":  # a later crash of the process no longer cuts its effects short
            self.ledger = {
                k: (fire[0], fire[1], True) if fire is not None and fire[:2] == (run.proc, task.id)
                else fire
                for k, fire in self.ledger.items()
            }  # fmt: skip
        cur.fly[task.id] = _Write(outcome, interrupt, run.proc)
        self.inflight[run.proc].wrs.add((cur.id, task.id))
        if save:
            self._save(inv, run.chain, "wr", cur.id, task.id)

    def _subgraph(self, inv: _Invocation, parent: _Run, task: _Task) -> tuple[str, str | None]:
        """The task's child graph on its own chain (namespace `node:task`), from its latest
        checkpoint: ("ok", None), ("interrupt", the child's interrupt) or ("error", None)."""
        run = _Run(parent.proc, (self.main[0], f"{task.node}:{task.id}"))
        self.features.add("subgraph")
        self._load(run, under=task.id)
        if run.cur is None:
            self._step(inv, run)
        while True:
            tasks = self._schedule(run)
            if not tasks:
                return "ok", None
            outcome = self._run_step(inv, run, tasks)
            cur = run.cur
            assert cur is not None
            if outcome == "parked":
                parked = [w.interrupt for w in cur.writes.values() if w.kind == "interrupt"]
                return "interrupt", parked[0]
            if outcome == "error":
                return "error", None
            self._step(inv, run)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=(__doc__.split("\n\n")[0] if __doc__ else "")
    + "\n\nOUT: folder to write the traces and manifest.json to.",
)
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--count", type=int, default=100, help="traces of ~100 events")
@click.option("--start", type=int, default=0, help="index of the first trace")
@click.option("--seed", type=int, default=1)
@click.option("--events", type=int, help="instead: ONE conforming trace this long")
def main(out: Path, count: int, start: int, seed: int, events: int | None) -> None:
    """Writes a corpus (or one long trace) and its manifest to a folder."""
    out.mkdir(parents=True, exist_ok=True)
    if events:
        traces = [generate_long(seed, events)]
    else:
        traces = [generate(i, seed) for i in range(start, start + count)]
    for trace in traces:
        trace.write(out)
    write_manifest(out, traces)
    total = sum(len(t.events) for t in traces)
    bad = sum(t.expected.status == "violates" for t in traces)
    print(f"{len(traces)} trace(s), {total} events, {bad} violating -> {out}")


if __name__ == "__main__":
    main()
