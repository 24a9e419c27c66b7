"""Where a SIGKILL may land, named so that every run of a cell finds the same moment.

A kill point is a *label* and an *occurrence*: `put_writes A entry` #2 is the second time any
process of the cell entered `put_writes` for task path `A`. Labels come from what LangGraph
and the saver do, never from timing, so the fault-free run of a cell lists every point, and
the cell killed at (label, n) is the same cell on every run and on every saver that reaches
that label. The kinds of point:

- `start NODE`, `end NODE`: a task attempt's first and last callback;
- `get_tuple|put|put_writes PATH entry|exit`: a saver call, before it reaches the saver and
  after the saver returned (before the recorder writes the acknowledgement);
- `put|put_writes PATH sql K VERB` (`cmd` for redis): inside a write call, just before the
  K-th statement or round trip that call sends through a driver the saver holds
  (`sqlite3`'s statement trace, a `psycopg` cursor, a `redis` client and its pipelines: the
  saver is not edited), once a statement it sent before may be committed (the connection
  is in no open transaction) -- between a saver's two transactions;
- `put|put_writes PATH @F`: inside a write call, after the fraction F (drawn from a seeded
  RNG) of the Python line events the call ran in the fault-free run -- a seeded instant
  inside any saver's call, counted in executed lines, not seconds, so it is the same instant
  on every run of the same saver.

A point reached while the recorder holds events (it cannot write them in order yet) is
counted but cannot be killed there: the kill lands at the next point, and the report names
both. A point never reached is reported as not reached, never run silently fault-free.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumecheck.waiting import poll

from rctools.suite.crash import KillPoints

FAULT_PREFIX = "kill:"
WRITE_CALLS = ("put", "put_writes")
ROUND_TRIPS = ("sql", "cmd")  # the statement points' kinds: SQL statements, redis round trips
# How long a chosen point reached while the recorder holds events waits for them to be
# written before the kill moves on to the next point.
HELD_WAIT = 0.1


@dataclass(frozen=True, order=True)
class KillPoint:
    """One kill point of a cell: the `occurrence`-th time `label` is reached in the cell.

    `line` and `delay` are set for a seeded instant (`label` ends in `@F`): the line event of
    the call at which to kill (a sync call), or the delay after its entry (an async call),
    computed from the fault-free run; they are no part of the name."""

    label: str
    occurrence: int
    line: int = field(default=0, compare=False)
    delay: float = field(default=0.0, compare=False)  # seconds after entry (an async call)

    @property
    def fault(self) -> str:
        return f"{FAULT_PREFIX}{self.label}#{self.occurrence}"

    @property
    def call(self) -> str | None:
        """The saver call a point inside a call belongs to (`put_writes A`), else None."""
        head, sep, _ = self.label.rpartition(" @")
        if sep:
            return head
        for kind in ROUND_TRIPS:
            head, sep, _ = self.label.partition(f" {kind} ")
            if sep:
                return head
        return None

    @property
    def counted_as(self) -> str:
        """The label whose occurrences number this point: a seeded instant is numbered by its
        call's entries (it is no point of its own in the fault-free run)."""
        return f"{self.call} entry" if "@" in self.label else self.label

    @classmethod
    def parse(cls, fault: str) -> KillPoint | None:
        if not fault.startswith(FAULT_PREFIX):
            return None
        label, _, nth = fault[len(FAULT_PREFIX) :].rpartition("#")
        return cls(label, int(nth)) if label and nth.isdigit() else None


def plan(
    seen: dict[str, int],
    lines: dict[str, list[int]],
    durations: dict[str, list[float]] | None = None,
    *,
    stride: int = 1,
    seed: int = 0,
    inside: bool = True,
) -> list[KillPoint]:
    """Every kill point of a cell, from its fault-free run: each label reached (`seen`:
    label -> times) and, with `inside`, the statement points and one seeded instant in each
    write call (`lines`: call label -> line events of each of its occurrences, for a sync
    call; `durations`: seconds of each occurrence, for an async call, which has no lines of
    its own). Sorted by name, then every `stride`-th: the same list on every run that reached
    the same points."""
    points = [
        KillPoint(label, n)
        for label, count in seen.items()
        if inside or KillPoint(label, 1).call is None
        for n in range(1, count + 1)
    ]
    durations = durations or {}
    if inside:
        for call in sorted(set(lines) | set(durations)):
            counts, spans = lines.get(call, []), durations.get(call, [])
            for n in range(1, max(len(counts), len(spans)) + 1):
                total = counts[n - 1] if n <= len(counts) else 0
                span = spans[n - 1] if n <= len(spans) else 0.0
                frac = random.Random(f"{seed}:{call}:{n}").randint(1, 999) / 1000
                if total > 0:
                    points.append(KillPoint(f"{call} @{frac:.3f}", n, max(1, round(frac * total))))
                elif span > 0:
                    points.append(KillPoint(f"{call} @{frac:.3f}", n, delay=frac * span))
    points.sort(key=lambda p: (p.label, p.occurrence))
    return points[:: max(stride, 1)]


def kind(label: str) -> str:
    """What a kill point is, whatever node, task path, statement or instant it names: `start`,
    `end`, `put entry`, `put_writes exit`, `put sql` (between two statements), `put @` (a
    seeded instant inside the call). Two points of one kind test the same thing of a saver
    at different places of a run."""
    words = label.split()
    head = words[0] if words else label
    if head in ("start", "end"):
        return head
    if " @" in label:
        return f"{head} @"
    for round_trip in ROUND_TRIPS:
        if f" {round_trip} " in label:
            return f"{head} {round_trip}"
    return f"{head} {words[-1]}" if len(words) > 1 else head


def by_kind(points: list[KillPoint], per_kind: int, reached: list[str]) -> list[KillPoint]:
    """At most `per_kind` points of each kind (`kind`), the ones a saver's bug most likely
    shows at: first the latest occurrence of the label reached most often (the node a resume
    re-enters, the call made on every step: the most work acknowledged before it, so a write
    or checkpoint lost there is one a resume needs), then the earliest point, then the rest
    from the latest back. `reached`: the labels in the order the fault-free run first reached
    them (its `points`), which breaks ties between labels reached as often. Kept in `points`'
    order."""
    when = {label: n for n, label in enumerate(reached)}
    groups: dict[str, list[KillPoint]] = {}
    for point in points:
        groups.setdefault(kind(point.label), []).append(point)
    chosen: set[KillPoint] = set()
    for group in groups.values():
        often: dict[str, int] = {}
        for point in group:
            often[point.label] = max(often.get(point.label, 0), point.occurrence)
        latest = sorted(
            group,
            key=lambda p: (often[p.label], when.get(p.counted_as, -1), p.occurrence, p.label),
            reverse=True,
        )
        order = [latest[0], latest[-1], *latest[1:-1]] if len(latest) > 1 else latest
        chosen.update(order[:per_kind])
    return [p for p in points if p in chosen]


# What the store held of a write call the saver under test was killed inside (`effect`),
# read back by a fresh process through the saver (rctools.langgraph.effect):
NOTHING = "none"  # nothing of the call: the same instant as a kill at the call's entry
ALL = "all"  # all of it: the same instant as a kill at the call's exit
PART = "part"  # some of it: no kill at an edge of the call leaves the store so
UNKNOWN = "unknown"  # it could not be read back


def for_reference(
    point: KillPoint | None, call: tuple[str, int] | None, effect: str | None = None
) -> KillPoint | None:
    """Where to kill the reference saver for a cell the saver under test died at `point`:
    the same point, except that a point inside a call (its statements, its lines) is the
    tested saver's own and no instant of the reference's. There the reference is killed at
    the edge of the same call (`call`: the call and its occurrence) that left its store as
    the tested saver's was found (`effect`): at its entry when the store held nothing of the
    call, at its exit (before the acknowledgement is recorded) when it held all of it. A
    seeded fraction of a call's lines is the same *time* on both savers, not the same
    *instant*: an atomic saver killed before its commit is where the reference is at the
    call's entry. Where the store held part of the call, or could not be read, no edge is
    the same instant: the reference is killed at the exit, and the cell's comparison is
    inconclusive (matrix.py)."""
    if point is None:
        return None
    if point.call is None or call is None:
        return point
    edge = "entry" if effect == NOTHING else "exit"
    return KillPoint(f"{call[0]} {edge}", call[1])


@dataclass
class _Call:
    label: str
    occurrence: int
    statements: int = 0
    lines: int = 0
    kill_line: int = 0  # 0: no seeded instant armed in this call
    done: bool = False  # the call returned (a timer that fires later is too late)
    durable: bool = False  # a statement it ran before may be committed already
    # what the call writes, for reading back whether it took effect (`effect.identity`)
    identity: dict[str, Any] | None = None


class KillSwitch(KillPoints):
    """The suite framework's kill points (`suite.crash.KillPoints`) extended with LangGraph's:
    at the chosen point the process tells the parent through the same pipe and stops, every
    thread at once, to be killed by the same harness (`suite.child`).

    A point is chosen as the n-th occurrence of a label (`label`, `occurrence`), which finds the
    same moment in every run and on another saver. What LangGraph adds: points inside a saver's
    call (`call`, `statement`, a seeded instant), measured in the fault-free run; a chosen point
    reached while the recorder holds events is deferred to the next point that can be killed
    (every point reached is still counted: the numbering must not depend on timing); the kill
    message tells the call it cut and the writes in flight; with no parent (`pipe_fd` None)
    nothing is killed, the points are only counted."""

    def __init__(
        self,
        pipe_fd: int | None = None,
        label: str | None = None,
        occurrence: int | None = None,
        line: int = 0,
        *,
        delay: float = 0.0,
        measure: bool = False,
    ) -> None:
        # the cell's point is given, never read from the environment
        super().__init__(f"{label}#{occurrence or 1}" if label else "", None)
        self.fd = pipe_fd
        self.target = KillPoint(label, occurrence or 1, line, delay) if label else None
        # per write call label: the Python line events of each occurrence, measured (with
        # `measure`) only in the fault-free run whose points are planned: tracing lines costs
        # CPU, and a recording outside the matrix has no use for it
        self.lines: dict[str, list[int]] = {}
        self.durations: dict[str, list[float]] = {}  # per write call: seconds of each occurrence
        self.measure = measure and label is None
        self.deferred: str | None = None  # the chosen point, passed while it could not land
        # the parent was told (a timer's thread waits to be killed while the call's runs on)
        self.sent = False
        self._local = threading.local()
        # While it returns True the process is at no kill point: the recorder holds events it
        # cannot write in order yet, and a kill would leave the trace without them.
        self.paused: Callable[[], bool] = lambda: False
        self.muted = False  # the driver's own reads are no kill points
        # write calls inside the saver right now, in any thread (LangGraph's background
        # writer runs beside the node): a kill elsewhere may cut them, and whether they took
        # effect is part of the instant the kill stands for
        self.active: dict[int, _Call] = {}
        # called once, at the first task start: concurrent processes meet there
        self.rendezvous: Callable[[], None] | None = None
        # the process's saver calls so far (coverage.py), sent with a kill: a killed process
        # sends no report
        self.tally: Callable[[], dict[str, int]] = dict

    @contextlib.contextmanager
    def mute(self) -> Iterator[None]:
        self.muted = True
        try:
            yield
        finally:
            self.muted = False

    # -- points ------------------------------------------------------------------------

    def hit(self, label: str) -> None:
        if self.rendezvous is not None and label.startswith("start "):
            meet, self.rendezvous = self.rendezvous, None
            meet()
        if self.muted:
            return
        nth = self.reached(label)
        self._maybe_kill(label, nth, self.chosen(label, nth))

    def _maybe_kill(self, label: str, nth: int, hit: bool, here: _Call | None = None) -> None:
        if self.fd is None or self.sent or not (hit or self.deferred):
            return
        if hit and self.paused():
            # what is held waits, most often, for another thread (LangGraph's background
            # writer) that is about to write it: give it a moment, then kill here
            poll(lambda: not self.paused(), timeout=HELD_WAIT, every=0.001)
        if self.paused():
            if hit:
                self.deferred = f"{label}#{nth}"
            return
        call = here or getattr(self._local, "call", None)
        asked = (self.target.label, self.target.occurrence) if self.target else (label, nth)
        report = {
            "label": asked[0],
            "nth": asked[1],
            "landed": f"{label}#{nth}",
            "deferred_from": None if hit else self.deferred,
            "call": [call.label, call.occurrence] if call else None,
            "identity": call.identity if call else None,
            "inflight": self._inflight(call),
            "saver_calls": self.tally(),
        }
        self.sent = True
        self.stop(report["landed"], report)

    def _inflight(self, cut: _Call | None) -> list[list[Any]]:
        """The write calls inside the saver at the kill besides the one it cut: their label
        and what they write (`effect.identity`), for the driver to read back."""
        with self._lock:
            calls = [c for c in self.active.values() if c is not cut and c.identity]
        return [[c.label, c.identity] for c in calls]

    # -- inside a saver call -----------------------------------------------------------

    @contextlib.contextmanager
    def call(
        self, label: str, *, inside: bool = True, identity: dict[str, Any] | None = None
    ) -> Iterator[None]:
        """One saver call: its entry and exit points and, for a write call, the points
        inside it (statements, a seeded instant), and its line count and duration when
        measuring. `inside=False` for a coroutine: while it awaits, the thread runs other
        tasks, so neither its lines nor its statements are its own; its seeded instant is a
        timer armed at entry. `identity`: what a write call writes, sent with a kill inside
        it so that the driver can read back what of it the store holds."""
        self.hit(f"{label} entry")
        if label.split(" ", 1)[0] not in WRITE_CALLS or self.muted:
            yield
            self.hit(f"{label} exit")
            return
        with self._lock:
            occurrence = self.seen.get(f"{label} entry", 0)
        here = _Call(label, occurrence, identity=identity)
        target = self.target
        armed = (
            target is not None
            and target.call == label
            and "@" in target.label
            and target.occurrence == occurrence
        )
        timer = None
        if armed and inside:
            here.kill_line = max(target.line, 1) if target else 1
        elif armed and target is not None and target.delay > 0:
            timer = threading.Timer(target.delay, self._instant, (here,))
            timer.daemon = True
            timer.start()
        previous = getattr(self._local, "call", None)
        with self._lock:
            self.active[id(here)] = here
        if inside:
            self._local.call = here
        tracing = inside and (self.measure or here.kill_line)
        old = sys.gettrace() if tracing else None
        if tracing:
            sys.settrace(self._tracer(here))
        started = time.monotonic()
        try:
            yield
        finally:
            here.done = True
            with self._lock:
                self.active.pop(id(here), None)
            if timer is not None:
                timer.cancel()
            if tracing:
                sys.settrace(old)
            if inside:
                self._local.call = previous
        if self.measure:
            with self._lock:
                if inside:
                    self.lines.setdefault(label, []).append(here.lines)
                self.durations.setdefault(label, []).append(time.monotonic() - started)
        if armed and not self.sent and self.deferred is None and target is not None:
            # the call ended before its instant (fewer lines, or faster, than fault-free)
            self.deferred = f"{target.label}#{target.occurrence}"
        self.hit(f"{label} exit")

    def _tracer(self, here: _Call) -> Any:
        # Only the saver's own lines count: the recorder's and this module's hooks run inside
        # the call too (a statement hook takes this switch's lock), and an instant landing on
        # one of their lines would kill -- or deadlock -- inside our own bookkeeping.
        def trace(frame: Any, event: str, arg: Any) -> Any:
            if event == "call" and frame.f_code.co_filename.startswith(_OWN):
                return None
            if event == "line":
                here.lines += 1
                if here.kill_line and here.lines == here.kill_line:
                    here.kill_line = 0
                    assert self.target is not None
                    self._instant(here)
            return trace

        return trace

    def _instant(self, here: _Call) -> None:
        """The seeded instant of the call `here` came (its line, or its timer)."""
        target = self.target
        if target is None or here.done:
            return
        if (
            here.kill_line == 0
            and sys.gettrace() is not None
            and here is getattr(self._local, "call", None)
        ):
            sys.settrace(None)
        self._maybe_kill(target.label, target.occurrence, True, here)

    def statement(self, sql: str, kind: str = "sql", committed: bool = True) -> None:
        """A statement or round trip is about to be sent by a driver of the saver (sqlite3's
        trace callback, a psycopg cursor, a redis client), in the thread that sends it:
        inside a write call, a point before it -- once something the call sent before may
        be durable: `committed` says the connection is in no open transaction now, so what
        it ran before is committed (a redis round trip always is). Before that, a kill
        leaves the store as a kill at the call's entry does, and is no point of its own.
        `kind`: `sql`, or `cmd` for redis."""
        here = getattr(self._local, "call", None)
        if here is None:
            return
        here.statements += 1
        if here.statements >= 2 and committed:
            here.durable = True
        if here.durable:
            verb = (sql.split(None, 1) or ["?"])[0].upper()
            self.hit(f"{here.label} {kind} {here.statements} {verb}")


_OWN = str(Path(__file__).resolve().parent.parent)  # rctools: the recorder and its hooks


def hook_statements(inner: Any, kill: KillSwitch) -> list[str]:
    """Puts `kill.statement` in front of each statement or round trip of the drivers the
    saver holds as attributes, without editing the saver: a `sqlite3.Connection` (its trace
    callback, which replaces one the saver set itself), a `psycopg.Connection` (its
    `cursor_factory`), a `redis.Redis` client (its `execute_command` and its pipelines'
    `execute`, each one round trip). Returns the drivers hooked."""
    hooked = []
    for value in list(vars(inner).values()):
        if isinstance(value, sqlite3.Connection):
            value.set_trace_callback(_sqlite_hook(value, kill))
            hooked.append("sqlite3")
        elif _instance(value, "psycopg", "Connection"):
            _hook_psycopg(value, kill)
            hooked.append("psycopg")
        elif _instance(value, "redis", "Redis"):
            _hook_redis(value, kill)
            hooked.append("redis")
    return hooked


def _instance(value: Any, package: str, name: str) -> bool:
    """`value` is a `package.name`. A driver the saver holds is imported already, so a
    package not in `sys.modules` answers no without importing it."""
    module = sys.modules.get(package)
    return module is not None and isinstance(value, getattr(module, name))


def _sqlite_hook(conn: sqlite3.Connection, kill: KillSwitch) -> Callable[[str], None]:
    def hook(sql: str) -> None:
        kill.statement(sql, committed=not conn.in_transaction)

    return hook


def _verb(query: Any) -> str:
    if isinstance(query, bytes):
        return query.decode(errors="replace")
    return query if isinstance(query, str) else "SQL"


def _hook_psycopg(conn: Any, kill: KillSwitch) -> None:
    base = conn.cursor_factory

    class Hooked(base):  # type: ignore[misc, valid-type]
        def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            kill.statement(_verb(query), committed=_idle(self.connection))
            return super().execute(query, *args, **kwargs)

        def executemany(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            kill.statement(_verb(query), committed=_idle(self.connection))
            return super().executemany(query, *args, **kwargs)

    conn.cursor_factory = Hooked


def _idle(conn: Any) -> bool:
    """A psycopg connection in no open transaction: what it ran before is committed."""
    from psycopg import pq

    return bool(conn.info.transaction_status == pq.TransactionStatus.IDLE)


def _hook_redis(client: Any, kill: KillSwitch) -> None:
    command = client.execute_command
    pipeline = client.pipeline

    def execute_command(*args: Any, **options: Any) -> Any:
        kill.statement(str(args[0]) if args else "?", "cmd")
        return command(*args, **options)

    def hooked_pipeline(*args: Any, **kwargs: Any) -> Any:
        pipe = pipeline(*args, **kwargs)
        execute = pipe.execute

        def run(*a: Any, **k: Any) -> Any:
            kill.statement("PIPELINE", "cmd")
            return execute(*a, **k)

        pipe.execute = run
        return pipe

    client.execute_command = execute_command
    client.pipeline = hooked_pipeline
