"""What one process saw of LangGraph, turned into ResumeCore events (trace format v2).

The recorder is fed by the checkpointer wrapper (`saver`: what was persisted and loaded), the
LangChain callbacks (`callbacks`: task attempts and tool calls) and, in `exit` durability, the
loop's `checkpoints` stream (the checkpoints it makes in memory). It translates; it never
decides whether what happened was right.

Ordering. Several threads report: LangGraph saves on background threads, tasks run in a pool,
and an observation can reach the recorder later than something it caused. An event is
therefore written only once what it follows is written, and held until then:

- a task's events wait for the checkpoint its step runs from (in `async` durability a step's
  tasks start before `put` of its checkpoint is even called);
- `task_end` is written when the task's writes reach `put_writes` -- that is where LangGraph
  says how it ended (an `__interrupt__` write, an `__error__` write, its own `__resume__`
  list) -- and a checkpoint's `step` waits for the `task_end` of every task it follows (the
  loop calls `put` for the next checkpoint before the last task's `put_writes` as often as
  not);
- `put` and `put_writes` wait for the checkpoint they are about;
- a subgraph's `load` waits for the `task_start` of the task it runs inside.

Only the order of lines changes, never what happened. While anything is held the process is
at no kill point: a SIGKILL there would leave the trace without something that happened.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph._internal._config import recast_checkpoint_ns
from langgraph._internal._constants import NULL_TASK_ID, RESUME
from langgraph.pregel._algo import task_path_str

from rctools.langgraph import observe
from rctools.langgraph.compat import read_task_statuses
from rctools.langgraph.killpoints import KillSwitch
from rctools.langgraph.observe import Chain
from rctools.langgraph.tracefile import TraceFile

START = "__start__"


class AddressBook:
    """What the trace already says about interrupts, shared by the processes of a trace
    through the trace itself: an interrupt id's address (`<id>#<k>`, known from the task
    that raised it), and which interrupt an answer on a checkpoint was addressed to (the
    `resume` event that wrote it). A parent task parks at its subgraph's interrupt under the
    same id; a later load of an answer must name the interrupt the answer was written for."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self.by_id: dict[str, str] = {}
        self.answers: dict[tuple[str, str, str, str], str] = {}
        self.given: dict[str, str] = {}  # interrupt address -> the value last answered to it
        self.chains: set[tuple[str, str]] = set()  # every (thread, namespace) the trace names

    def note(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("thread"), str):
            self.chains.add((event["thread"], str(event.get("ns") or "")))
        addresses = [event.get("interrupt")]
        addresses += [w.get("interrupt") for w in event.get("writes") or ()]
        addresses += [a.get("interrupt") for a in event.get("resumed") or ()]
        for address in addresses:
            if isinstance(address, str) and "#" in address:
                self.by_id.setdefault(address.rpartition("#")[0], address)
        if event.get("ev") == "resume":
            key = (event["thread"], event.get("ns", ""), event["checkpoint"], event["value"])
            self.answers[key] = event["interrupt"]
            self.given[event["interrupt"]] = event["value"]

    def refresh(self) -> None:
        """Reads the lines other processes appended since the last look."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self._offset += end
        for raw in data[:end].splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict) and "ev" in event:
                self.note(event)

    def address(self, interrupt_id: str) -> str | None:
        if interrupt_id not in self.by_id:
            self.refresh()
        return self.by_id.get(interrupt_id)

    def answered(self, own_ns: str, upto: int | None) -> list[dict[str, str]]:
        """The answers the trace gave to the first `upto` interrupt() calls of the task whose
        namespace is `own_ns` (None: as many as were answered), in order; [] if one is
        missing."""
        self.refresh()
        out: list[dict[str, str]] = []
        for i in range(1, (upto if upto is not None else 64) + 1):
            address = observe.answered_address(own_ns, i)
            value = self.given.get(address)
            if value is None:
                return out if upto is None else []
            out.append({"interrupt": address, "value": value})
        return out

    def answer(self, chain: Chain, checkpoint: str, value: str) -> str | None:
        key = (chain[0], chain[1], checkpoint, value)
        if key not in self.answers:
            self.refresh()
        return self.answers.get(key)


@dataclass
class Attempt:
    """One execution attempt of a task in this process."""

    chain: Chain
    task: str
    node: str
    path: str
    step: int
    by: str | None = None  # the task whose run made it: a call's caller, a handler's failed task
    own_ns: str | None = None  # its checkpoint namespace, where its interrupts live
    checkpoint: str | None = None  # known when its writes reach put_writes
    started: bool = False  # its task_start is written
    ended: bool = False  # its task_end is written (or queued)
    end: tuple[str, Any] | None = None  # what the callbacks saw: (outcome, exception)

    @property
    def ns(self) -> str:
        """A scheduled task's namespace is its chain's plus `node:task`; a task another
        task's run made (a functional-API call, an error handler) nests under that task's
        instead (`own_ns`, from LangGraph's metadata)."""
        return self.own_ns or observe.task_ns(self.chain[1], self.node, self.task)


@dataclass
class ChainRun:
    """This process's run on one chain, as far as the trace shows it."""

    chain: Chain
    live: bool = False  # loaded in the current invocation
    starting: bool = False  # its load is made but held (written after its task's start)
    cur: str | None = None  # the checkpoint its current step runs from (written)
    cur_step: int = -2
    last: str | None = None  # the last checkpoint made here (written or held)

    @property
    def running(self) -> bool:
        """Loaded in the current invocation, the load written or held: what a checkpoint
        made now is (a step of this run, not an update from outside)."""
        return self.live or self.starting


@dataclass
class _Held:
    ready: Callable[[], bool]
    write: Callable[[], None]
    what: str


@dataclass
class Observed:
    """A CheckpointTuple in the contract's terms."""

    checkpoint: str | None
    parent: str | None
    step: int
    digest: str | None
    writes: list[dict[str, Any]]
    answers: list[dict[str, str]]
    tasks: list[dict[str, str]] | None
    ok: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)  # tasks whose stored write is an error
    pending: list[str] = field(default_factory=list)  # unanswered interrupts, addressed


class Recorder:
    """Turns one process's observations into events, in an order the contract can follow."""

    def __init__(
        self,
        trace: TraceFile,
        *,
        durability: str = "sync",
        kill: KillSwitch | None = None,
    ) -> None:
        self.trace = trace
        self.durability = durability
        self.exit = durability == "exit"
        self.kill = kill or KillSwitch()
        self.kill.paused = lambda: bool(self._held)
        self.graph: Any = None  # the compiled root graph (set by Recording.attach)
        self.inner: Any = None  # the unwrapped saver
        self.serde: Any = None
        self.book = AddressBook(trace.path)
        self._lock = threading.RLock()
        self._written = threading.Condition(self._lock)  # notified at every line written
        self._held: list[_Held] = []
        self._chains: dict[Chain, ChainRun] = {}
        self._known: set[str] = set()  # checkpoints the trace has as made or seen
        self._deltas: dict[str, frozenset[str]] = {}  # namespace -> its DeltaChannels
        self._stored: set[str] = set()  # checkpoints the trace has as put or loaded
        self._inputs: set[str] = set()  # checkpoints made with source "input"
        self._steps: dict[str, int] = {}  # checkpoint -> its step
        self._sched: dict[str, list[dict[str, str]]] = {}  # written schedules
        self._sched_exact: dict[str, list[dict[str, str]]] = {}  # computed, not yet written
        self._chunk_tasks: dict[str, list[tuple[str, str]]] = {}  # exit mode: from the stream
        self._results: dict[str, set[str]] = {}  # checkpoint -> tasks with a result
        # checkpoint -> tasks whose attempt failed here or whose stored write is an error
        self._failed: dict[str, set[str]] = {}
        self._pending: dict[str, list[str]] = {}  # checkpoint -> unanswered interrupts
        self._attempts: dict[tuple[Chain, str], Attempt] = {}
        self._paths: dict[tuple[Chain, str], str] = {}
        self._ended: set[tuple[Chain, str | None, str]] = set()  # (chain, checkpoint, task)
        self._resumed: set[tuple[Chain, str, str]] = set()  # answers written (chain, ck, value)
        # answers stored only with the task writes that receive them, per (chain, checkpoint)
        self._carried: dict[tuple[Chain, str], Counter[str]] = {}
        self._answered: set[tuple[Chain, str, str, str]] = set()  # (chain, ck, interrupt, value)
        self._expect: Any = None  # the resume value this invocation was given
        self._into: str | None = None  # the subgraph checkpoint it was asked to continue from
        self._thread = ""  # the thread of the current invocation

    @property
    def lock(self) -> threading.RLock:
        """The lock every line of this process is written under."""
        return self._lock

    def made_before_call(self, submit: Callable[[], Any], timeout: float) -> Any:
        """Runs `submit` (`putting`, `writes_called`: a write is made) and waits, at most
        `timeout` s, until the events it submitted are written (they can be held behind
        what they follow). A saver whose calls run unserialized needs it: a process that
        reads the store while the call runs must find the write already made in the trace.
        In exit durability a run's `put` is announced only by the stream after it returns,
        so that one is not waited for."""
        with self._lock:
            before = {id(h) for h in self._held}
            result = submit()
            mine = [h for h in self._held if id(h) not in before and h.what != "exit put"]
            if mine:
                self._written.wait_for(
                    lambda: not any(h is x for h in mine for x in self._held), timeout
                )
        return result

    # -- writing -----------------------------------------------------------------------

    def _write(self, ev: str, fields: dict[str, Any]) -> None:
        ns = fields.pop("ns", None)
        if ns:
            fields = {"thread": fields.pop("thread"), "ns": ns, **fields}
        event = {"ev": ev, **fields}
        self.book.note(event)
        self.trace.event(ev, **fields)
        self._written.notify_all()

    def _submit(
        self, ready: Callable[[], bool] | None, write: Callable[[], None], what: str
    ) -> None:
        """Writes now, or holds until `ready` (and keeps the order of what is held)."""
        with self._lock:
            if ready is None or (not self._held and ready()):
                write()
                self._release()
            else:
                self._held.append(_Held(ready or (lambda: True), write, what))
                self._release()

    def _release(self) -> None:
        progress = True
        while progress and self._held:
            progress = False
            keep: list[_Held] = []
            for held in self._held:
                if not progress and held.ready():
                    held.write()
                    progress = True
                else:
                    keep.append(held)
            self._held = keep if progress else self._held

    def _flush(self) -> None:
        """Writes everything held, in order: nothing may be lost at the end."""
        while self._held:
            self._release()
            if self._held:
                held = self._held.pop(0)
                held.write()

    def _run(self, chain: Chain) -> ChainRun:
        run = self._chains.get(chain)
        if run is None:
            run = self._chains[chain] = ChainRun(chain)
        return run

    @staticmethod
    def _where(chain: Chain) -> dict[str, Any]:
        return {"thread": chain[0], "ns": chain[1]}

    def _may_start(self, checkpoint: str) -> bool:
        return checkpoint in self._known and (
            self.durability != "sync" or checkpoint in self._stored
        )

    def _step_ready(self, chain: Chain, step: int) -> bool:
        """A task of loop step `step` may be written: its checkpoint is the current one."""
        run = self._chains.get(chain)
        return run is not None and run.live and run.cur is not None and run.cur_step >= step - 1

    def _has_results(self, checkpoint: str) -> bool:
        tasks = self._sched.get(checkpoint)
        if tasks is None:
            return False
        done = self._results.get(checkpoint, set())
        return all(t["task"] in done for t in tasks)

    # -- reads -------------------------------------------------------------------------

    def observe(self, chain: Chain, tup: Any) -> Observed:
        """What the saver returned, in the contract's terms."""
        if tup is None:
            return Observed(None, None, -2, None, [], [], None)
        checkpoint = tup.checkpoint
        cid = checkpoint["id"]
        metadata = dict(tup.metadata or {})
        tasks = self._schedule(chain, checkpoint, metadata)
        nodes = {t["task"]: t["node"] for t in tasks or ()}
        pending = [(str(t), c, v) for t, c, v in tup.pending_writes or ()]
        writes, ok, failed, waiting = [], set(), set(), []
        for task, seen in observe.collapse(pending).items():
            address = None
            if seen.kind == "interrupt":
                address = self._address(chain, task, nodes.get(task), seen)
            write = {"task": task, "kind": seen.kind, "interrupt": address}
            if seen.kind == "ok":
                content = observe.write_digest(
                    ((c, v) for t, c, v in pending if t == task), self.serde
                )
                if content is not None:
                    write["digest"] = content
            writes.append(write)
            if seen.kind == "ok":
                ok.add(task)
            elif seen.kind == "error":
                failed.add(task)
        for status in read_task_statuses(pending).values():
            for intr in status.pending_interrupts:
                for w in writes:
                    if w["interrupt"] and w["interrupt"].rpartition("#")[0] == intr.id:
                        waiting.append(w["interrupt"])
        answers = []
        for value in observe.null_answers(pending):
            vid = observe.value_id(value)
            to = self.book.answer(chain, cid, vid) or (waiting[0] if len(waiting) == 1 else None)
            if to is not None:
                answers.append({"interrupt": to, "value": vid})
        parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        return Observed(
            checkpoint=cid,
            parent=parent,
            step=int(metadata.get("step", -1)),
            digest=observe.digest(checkpoint, self.serde, self._delta(chain)),
            writes=sorted(writes, key=lambda w: w["task"]),
            answers=answers,
            tasks=tasks,
            ok=ok,
            failed=failed,
            pending=sorted(set(waiting)),
        )

    def read(
        self, config: dict[str, Any], tup: Any, run_start: bool, before: str | None = None
    ) -> None:
        """A `get_tuple`: a load when a Pregel loop starts a run on the chain, else a read;
        `before`: the request was for the latest checkpoint made before that one."""
        conf = config.get("configurable", {})
        chain = (str(conf.get("thread_id")), conf.get("checkpoint_ns") or "")
        asked = conf.get("checkpoint_id")
        with self._lock:
            seen = self.observe(chain, tup)
            fields = {
                **self._where(chain),
                "asked": asked,
                **({"before": before} if before is not None else {}),
                "checkpoint": seen.checkpoint,
                "parent": seen.parent,
                "digest": seen.digest,
                "writes": seen.writes,
                "answers": seen.answers,
            }
            if run_start and not chain[1] and self._into is not None:
                # time travel into a subgraph: the top-level run must continue from there
                fields["into"], self._into = self._into, None
            if run_start and chain[1]:
                fields["nested"] = True  # a subgraph's loop, inside a task of its parent
                hosts = [a for a in self._hosts(chain) if not a.ended]
                if len(hosts) == 1:
                    fields["under"] = hosts[0].task  # that task: it must not end ok parked

            def write() -> None:
                self._write("load" if run_start else "read", fields)
                if seen.checkpoint is not None:
                    self._known.add(seen.checkpoint)
                    self._stored.add(seen.checkpoint)
                    self._steps[seen.checkpoint] = seen.step
                    self._results.setdefault(seen.checkpoint, set()).update(seen.ok)
                    self._failed.setdefault(seen.checkpoint, set()).update(seen.failed)
                    self._pending[seen.checkpoint] = seen.pending
                if not run_start:
                    return
                run = self._run(chain)
                if chain[1] == "":
                    self._thread = chain[0]
                run.starting = False
                run.live, run.cur, run.cur_step, run.last = (
                    True,
                    seen.checkpoint,
                    seen.step,
                    seen.checkpoint,
                )
                if seen.checkpoint is not None and seen.tasks is not None:
                    self._write_schedule(chain, seen.checkpoint, seen.tasks)
                if chain[1] == "":
                    self._answers_from_input(chain, seen)

            ready: Callable[[], bool] | None = None
            if run_start and chain[1]:
                # a subgraph's load follows the `task_start` of the task it runs inside,
                # which can be held behind its step's checkpoint (async durability)
                # (a subgraph compiled with checkpointer=True keeps one namespace for every
                # run: its task's, without the task id)
                inside = next((a for a in self._hosts(chain) if not a.started), None)
                if inside is not None:
                    ready = lambda: inside.started  # noqa: E731
                    self._run(chain).starting = True
            self._submit(ready, write, "load")

    def _hosts(self, chain: Chain) -> list[Attempt]:
        """The attempts of this process a subgraph's run on `chain` may run inside (ended
        ones included: an end queued before its start still holds the load): those of
        its thread whose namespace is the subgraph's (a subgraph compiled with
        checkpointer=True keeps one namespace for every run: its task's, without the task
        id, so two tasks of one node both fit it)."""
        return [
            a
            for a in self._attempts.values()
            if a.chain[0] == chain[0] and chain[1] in (a.ns, recast_checkpoint_ns(a.ns))
        ]

    def replay_load(self, config: dict[str, Any], before: Any, tup: Any) -> None:
        """A subgraph's run starts while its parent replays: LangGraph asked for the
        subgraph's latest checkpoint made before the replayed parent checkpoint
        (`list(before=..., limit=1)`); the load records that request as `before`, so
        a saver whose `list` ignores `before` is a CV."""
        mark = (before or {}).get("configurable", {}).get("checkpoint_id")
        self.read(config, tup, True, before=mark)

    def _answers_from_input(self, chain: Chain, seen: Observed) -> None:
        """The answers an invocation is given, written when its run loads the checkpoint
        they answer: a map `Command(resume={id: value})` (delivered through the config,
        stored only in the receiving task's own `__resume__` list), in exit durability any
        answer (kept in memory until the invocation returns), and otherwise an answer to the
        one pending interrupt (stored by a `put_writes` of its own, acknowledged later)."""
        value, self._expect = self._expect, None
        if value is None or seen.checkpoint is None:
            return
        if isinstance(value, dict) and value and all(self._is_interrupt_id(k) for k in value):
            for iid, answer in value.items():
                pending = [a for a in seen.pending if a.startswith(f"{iid}#")]
                if not pending:
                    # an id no longer pending (answered, or never raised here): LangGraph
                    # hands the entry to no task and stores it nowhere, so it is no answer;
                    # a task that still receives it shows a value nobody answered
                    continue
                known = self.book.address(iid)
                to = known if known in pending else pending[0]
                if self._resume(chain, seen.checkpoint, to, answer):
                    self._carried.setdefault((chain, seen.checkpoint), Counter())[
                        observe.value_id(answer)
                    ] += 1
        elif len(seen.pending) == 1:
            # The answer is handed over with the invocation, before any task runs. In sync
            # and async durability LangGraph stores it through a `put_writes` of its own
            # (`_answer_written` writes that acknowledgement), but submits that write to its
            # background writer: on a loaded machine it reached the saver after the task
            # that received the answer had ended, and the answer written there came after
            # its delivery (a CO on a correct run).
            written = self._resume(chain, seen.checkpoint, seen.pending[0], value)
            if written and self.exit:
                self._carried[(chain, seen.checkpoint)] = Counter([observe.value_id(value)])

    def _carried_stored(self, resumed: tuple[Any, ...]) -> None:
        """A map answer, or an answer in exit durability, is stored only inside the task
        write that received it (its own `__resume__` list): once the saver acknowledged that
        write, the answer is stored -- the `put_writes` of a checkpoint's answers is written
        once every answer given on it was received by an acknowledged write."""
        for value in resumed:
            vid = observe.value_id(value)
            for (chain, cid), waiting in list(self._carried.items()):
                if waiting[vid] <= 0:
                    continue
                waiting[vid] -= 1
                if +waiting:
                    break
                del self._carried[(chain, cid)]
                self._write(
                    "put_writes",
                    {**self._where(chain), "checkpoint": cid, "task": None, "kind": "resume"},
                )
                break

    @staticmethod
    def _is_interrupt_id(key: Any) -> bool:
        return isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)

    def expect_resume(self, value: Any) -> None:
        """This invocation was given `Command(resume=value)`."""
        self._expect = value

    def expect_into(self, config: dict[str, Any]) -> None:
        """This invocation's config names a checkpoint inside a subgraph (a namespace and a
        checkpoint id: time travel into it, as LangGraph's history hands it out); its
        top-level load records that request as `into`."""
        conf = config.get("configurable") or {}
        if conf.get("checkpoint_ns") and conf.get("checkpoint_id"):
            self._into = str(conf["checkpoint_id"])

    def _resume(self, chain: Chain, checkpoint: str, to: str, value: Any) -> bool:
        """Writes the answer `value` to interrupt `to` (once); whether it was written now.
        Equal values to different interrupts (a map resume) are different answers."""
        vid = observe.value_id(value)
        if (chain, checkpoint, to, vid) in self._answered:
            return False
        self._answered.add((chain, checkpoint, to, vid))
        self._resumed.add((chain, checkpoint, vid))
        self._write(
            "resume",
            {**self._where(chain), "checkpoint": checkpoint, "interrupt": to, "value": vid},
        )
        return True

    # -- checkpoints -------------------------------------------------------------------

    def _delta(self, chain: Chain) -> frozenset[str]:
        """The chain's `DeltaChannel`s, which a content digest leaves out (`observe.digest`);
        found once per namespace, not at every put and load."""
        if self.graph is None:
            return frozenset()
        if chain[1] not in self._deltas:
            graph = observe.graph_for(self.graph, chain[1])
            self._deltas[chain[1]] = (
                observe.delta_channels(graph) if graph is not None else frozenset()
            )
        return self._deltas[chain[1]]

    def _schedule(
        self, chain: Chain, checkpoint: dict[str, Any], metadata: dict[str, Any]
    ) -> list[dict[str, str]] | None:
        graph = observe.graph_for(self.graph, chain[1]) if self.graph is not None else None
        if graph is None:
            return None
        return observe.schedule(graph, checkpoint, metadata, chain[0], chain[1], self.inner)

    def _write_schedule(self, chain: Chain, checkpoint: str, tasks: list[dict[str, str]]) -> None:
        if checkpoint in self._sched:
            return
        self._sched[checkpoint] = tasks
        self._sched_exact.pop(checkpoint, None)
        self._write("schedule", {**self._where(chain), "checkpoint": checkpoint, "tasks": tasks})
        for t in tasks:
            self._paths.setdefault((chain, t["task"]), t["path"])

    def can_step(self, config: dict[str, Any], metadata: dict[str, Any]) -> bool:
        """Whether the `step` a `put` makes can be written now: what it follows is (the
        `task_end` of every task of the checkpoint it leaves is written when that task's
        `put_writes` is called, which can be a little after the loop calls `put`)."""
        conf = config.get("configurable", {})
        chain = (str(conf.get("thread_id")), conf.get("checkpoint_ns") or "")
        parent = conf.get("checkpoint_id")
        with self._lock:
            run = self._chains.get(chain)
            if run is None or not run.live or self.exit:
                return True
            if parent is None:
                return True
            if metadata.get("source") == "fork":
                return parent in self._known
            return parent in self._known and self._has_results(parent)

    def wait_step(self, config: dict[str, Any], metadata: dict[str, Any], timeout: float) -> None:
        """Blocks (at most `timeout` seconds) until `can_step`: the saver must not have a
        checkpoint the trace has not shown made, or a process reading it concurrently would
        load a checkpoint the trace does not know. Only the `put_writes` calls are waited for
        (they record before taking the saver lock), never what the saver does with them, so
        the order in which the store gets puts and writes is LangGraph's."""
        with self._written:
            self._written.wait_for(lambda: self.can_step(config, metadata), timeout)

    def putting(
        self, config: dict[str, Any], checkpoint: dict[str, Any], metadata: dict[str, Any]
    ) -> str | None:
        """`put` was called: the checkpoint was made. Returns its content digest."""
        conf = config.get("configurable", {})
        chain = (str(conf.get("thread_id")), conf.get("checkpoint_ns") or "")
        cid, parent = checkpoint["id"], conf.get("checkpoint_id")
        with self._lock:
            dig = observe.digest(checkpoint, self.serde, self._delta(chain))
            tasks = self._schedule(chain, checkpoint, metadata)
            run = self._run(chain)
            source = metadata.get("source")
            if self.exit and run.running and source != "update":
                # Made in memory and announced by the stream; the saver gets it at exit
                # (with the checkpoint the run started from as its parent). Until the stream
                # says so, the process is at no kill point: a kill would leave the trace
                # with a saved checkpoint it never saw made.
                if tasks is not None and cid not in self._sched:
                    self._sched_exact[cid] = tasks
                self._submit(lambda: cid in self._known, lambda: None, "exit put")
                return dig
            kind = "update" if not run.running else "fork" if source == "fork" else "step"
            if kind != "update":
                run.last = cid
            if source == "input":
                self._inputs.add(cid)

            def ready() -> bool:
                if kind == "update":
                    return parent in self._known
                if parent is None:
                    return run.live
                if parent not in self._known:
                    return False
                return kind == "fork" or self._has_results(parent)

            def write() -> None:
                made = {"checkpoint": cid, "parent": parent, "digest": dig}
                self._write(kind, {**self._where(chain), **made})
                self._made(chain, cid, int(metadata.get("step", -1)), moves=kind != "update")
                if tasks is not None:
                    self._write_schedule(chain, cid, tasks)

            self._submit(ready, write, kind)
            return dig

    def _made(self, chain: Chain, cid: str, step: int, moves: bool) -> None:
        self._known.add(cid)
        self._steps[cid] = step
        if moves:
            run = self._run(chain)
            run.cur, run.cur_step = cid, step

    def deleted(self, thread: str) -> None:
        """The saver deleted the thread (`delete_thread` returned): every chain of it is gone,
        its root and each subgraph namespace any process of the trace ran on it."""
        with self._lock:
            self._flush()
            self.book.refresh()
            chains = {c for c in self.book.chains if c[0] == thread} | {(thread, "")}
            for chain in sorted(chains):
                self._write("delete", self._where(chain))
                self._chains.pop(chain, None)

    def put_done(self, config: dict[str, Any], checkpoint: dict[str, Any], dig: str | None) -> None:
        """The saver acknowledged the checkpoint."""
        conf = config.get("configurable", {})
        chain = (str(conf.get("thread_id")), conf.get("checkpoint_ns") or "")
        cid = checkpoint["id"]

        def write() -> None:
            self._write("put", {"checkpoint": cid, "digest": dig})
            self._stored.add(cid)
            exact = self._sched_exact.get(cid)
            if exact is not None:
                self._write_schedule(chain, cid, exact)

        self._submit(lambda: cid in self._known, write, "put")

    def checkpoint_chunk(self, namespace: tuple[str, ...], payload: dict[str, Any]) -> None:
        """Exit durability: the loop made a checkpoint in memory (`checkpoints` stream)."""
        conf = (payload.get("config") or {}).get("configurable", {})
        cid = conf.get("checkpoint_id")
        if not cid:
            return
        chain = (str(conf.get("thread_id")), "|".join(namespace))
        with self._lock:
            run = self._run(chain)
            if cid in self._known or cid in self._chunk_tasks or cid == run.last:
                return
            metadata = payload.get("metadata") or {}
            self._chunk_tasks[cid] = [(t["id"], t["name"]) for t in payload.get("tasks") or ()]
            parent = run.last
            run.last = cid
            kind = "fork" if metadata.get("source") == "fork" else "step"
            if parent is not None and kind == "step":
                self._start_input_task(chain, parent)

            def ready() -> bool:
                if parent is None:
                    return run.live
                if parent not in self._known:
                    return False
                return (
                    kind == "fork"
                    or self._has_results(parent)
                    or (parent not in self._sched and self._chunk_done(parent))
                )

            def write() -> None:
                if parent is not None and kind == "step":
                    self._write_schedule(chain, parent, self._tasks_of_chunk(chain, parent))
                self._write(kind, {**self._where(chain), "checkpoint": cid, "parent": parent})
                self._made(chain, cid, int(metadata.get("step", -1)), moves=True)
                if not self._chunk_tasks[cid]:
                    self._write_schedule(chain, cid, [])

            self._submit(ready, write, kind)

    def _chunk_done(self, checkpoint: str) -> bool:
        done = self._results.get(checkpoint, set())
        return all(task in done for task, _ in self._chunk_tasks.get(checkpoint, ()))

    def _tasks_of_chunk(self, chain: Chain, checkpoint: str) -> list[dict[str, str]]:
        """Exit durability: a checkpoint the saver never sees schedules the tasks the stream
        listed; their paths are the ones their runs reported (a task that never started --
        the input task -- is a pull task: LangGraph's path for it is (PULL, node))."""
        if checkpoint in self._sched_exact:
            return self._sched_exact[checkpoint]
        out = []
        for task, node in self._chunk_tasks.get(checkpoint, ()):
            path = self._paths.get((chain, task)) or task_path_str(("__pregel_pull", node))
            out.append({"task": task, "node": node, "path": path})
        return out

    def _start_input_task(self, chain: Chain, checkpoint: str) -> None:
        """The input task (`__start__`) runs without callbacks (unless a router or `Send`
        leaves START) and is not in the `tasks` stream; in exit durability its writes reach
        no saver either. It ran when the loop made the next checkpoint."""
        for task, node in self._chunk_tasks.get(checkpoint, ()):
            if node != START or task in self._results.get(checkpoint, set()):
                continue
            seen = self._attempts.get((chain, task))
            if seen is not None and not seen.ended:
                # it had callbacks (a router or `Send` leaves START); the `tasks` stream
                # does not report the input task: it ended when the next checkpoint was made
                seen.checkpoint = checkpoint
                self._queue_end(seen, "ok", None, ())
                continue
            if seen is None:
                path = task_path_str(("__pregel_pull", node))
                attempt = Attempt(chain, task, node, path, self._steps.get(checkpoint, -1) + 1)
                attempt.checkpoint = checkpoint
                self._attempts[(chain, task)] = attempt
                self._paths[(chain, task)] = path
                self._queue_start(attempt, lambda: checkpoint in self._known)
                self._queue_end(attempt, "ok", None, ())

    # -- tasks -------------------------------------------------------------------------

    def _queue_start(self, attempt: Attempt, ready: Callable[[], bool]) -> None:
        def write() -> None:
            self._write(
                "task_start",
                {
                    **self._where(attempt.chain),
                    "task": attempt.task,
                    "node": attempt.node,
                    "path": attempt.path,
                    **({"by": attempt.by} if attempt.by is not None else {}),
                },
            )
            attempt.started = True

        self._submit(ready, write, f"task_start {attempt.node} step {attempt.step}")

    def _queue_end(
        self,
        attempt: Attempt,
        outcome: str,
        interrupt: str | None,
        resumed: tuple[Any, ...],
        answers: list[dict[str, str]] | None = None,
        content: str | None = None,
    ) -> None:
        attempt.ended = True
        own = attempt.ns
        if answers is None:
            answers = [
                {"interrupt": observe.answered_address(own, i), "value": observe.value_id(v)}
                for i, v in enumerate(resumed, 1)
            ]

        def write() -> None:
            fields: dict[str, Any] = {
                **self._where(attempt.chain),
                "task": attempt.task,
                "outcome": outcome,
            }
            if interrupt is not None:
                fields["interrupt"] = interrupt
            if answers:
                fields["resumed"] = answers
            if content is not None and outcome == "ok":
                fields["digest"] = content
            self._write("task_end", fields)
            if self._attempts.get((attempt.chain, attempt.task)) is attempt:
                del self._attempts[(attempt.chain, attempt.task)]
            if attempt.checkpoint is None:  # exit durability: the step it ran in
                attempt.checkpoint = self._run(attempt.chain).cur
            self._ended.add((attempt.chain, attempt.checkpoint, attempt.task))
            results = self._results.setdefault(attempt.checkpoint, set())
            failed = self._failed.setdefault(attempt.checkpoint, set())
            if outcome == "ok":
                results.add(attempt.task)
                if attempt.by in failed:
                    results.add(attempt.by)  # an error handler's result stands in for it
            elif outcome == "error":
                failed.add(attempt.task)

        self._submit(lambda: attempt.started, write, "task_end")

    def task_started(self, metadata: dict[str, Any]) -> Attempt | None:
        """A node's run began: one execution attempt of its task."""
        where = _task_of(metadata)
        if where is None:
            return None
        chain, task, node, path, step, by, ns = where
        with self._lock:
            previous = self._attempts.get((chain, task))
            if previous is not None and not previous.ended:
                if previous.end is None:
                    return None  # a nested run of the same task (a subgraph's own run)
                # it ended without handing writes over: retried by its RetryPolicy
                self._end_from_callback(previous)
            attempt = Attempt(chain, task, node, path, step, by=by, own_ns=ns)
            self._attempts[(chain, task)] = attempt
            self._paths[(chain, task)] = path
            if self.durability == "sync":
                # LangGraph awaits each step's checkpoint before the next step, but not the
                # input checkpoint before the first: a task of an input checkpoint (START's,
                # an @entrypoint's) is placed after its `put` (docs/langgraph.md, "What
                # --app records"). A fork's copy is not awaited either; that stays visible.
                def ready() -> bool:
                    cur = self._run(chain).cur
                    return self._step_ready(chain, step) and (
                        cur not in self._inputs or cur in self._stored
                    )

                self._queue_start(attempt, ready)
            else:
                self._queue_start(attempt, lambda: self._step_ready(chain, step))
            return attempt

    def task_finished(self, attempt: Attempt, outcome: str, error: BaseException | None) -> None:
        """A node's run ended (callbacks). Its end is written when its writes are made: when
        they reach `put_writes`, or, in exit durability, where LangGraph keeps them in
        memory, when the `tasks` stream reports the task's result (`task_result`). A run
        that ended without either (a sibling's error ended the step first) is still running
        as far as the trace can tell."""
        with self._lock:
            attempt.end = (outcome, error)

    def task_result(self, namespace: tuple[str, ...], payload: dict[str, Any]) -> None:
        """Exit durability: the loop made a task's writes in memory (`tasks` stream: a task
        result, reported when the writes are made)."""
        task = payload.get("id")
        with self._lock:
            chain = (self._thread, "|".join(namespace))
            attempt = self._attempts.get((chain, str(task)))
            if attempt is None or attempt.ended:
                return
            interrupts = payload.get("interrupts") or ()
            interrupt = mine = None
            own = attempt.ns
            if interrupts:
                outcome = "interrupt"
                iid = str(interrupts[-1].get("id"))
                mine = observe.address_of(iid, own, None)
                interrupt = mine or self.book.address(iid) or f"{iid}#1"
            elif payload.get("error") is not None:
                outcome = "error"
            else:
                outcome = "ok"
            # Its own `__resume__` list stays in memory: the answers it received are those
            # the trace gave to its interrupt() calls before the one it parks at (LangGraph
            # numbers a task's calls, and call k gets the k-th answer), or all of them.
            upto = int(mine.rpartition("#")[2]) - 1 if mine else None
            answers = self.book.answered(own, upto) if outcome == "ok" or mine else []
            self._queue_end(attempt, outcome, interrupt, (), answers)

    def _end_from_callback(self, attempt: Attempt) -> None:
        outcome, error = attempt.end or ("error", None)
        interrupt = None
        if outcome == "interrupt":
            interrupts = (error.args[0] if error is not None and error.args else ()) or ()
            if interrupts:
                interrupt = self._address_of_interrupt(attempt, interrupts[-1], None)
            else:  # a breakpoint or a command bubbling up: not an interrupt() call
                outcome = "error"
        self._queue_end(attempt, outcome, interrupt, ())

    def _address(self, chain: Chain, task: str, node: str | None, seen: observe.SeenTask) -> str:
        own = observe.task_ns(chain[1], node, task) if node else None
        intr = seen.interrupt
        return (
            observe.address_of(intr.id, own, len(seen.resumed))
            or self.book.address(intr.id)
            or f"{intr.id}#1"
        )

    def _address_of_interrupt(self, attempt: Attempt, intr: Any, answered: int | None) -> str:
        own = attempt.ns
        return (
            observe.address_of(intr.id, own, answered)
            or self.book.address(intr.id)
            or (f"{intr.id}#1")
        )

    def writes_called(
        self, config: dict[str, Any], writes: list[tuple[str, Any]], task_id: str, task_path: str
    ) -> Callable[[], None]:
        """`put_writes` was called: the task's end (from its writes) or the process's answer
        is written before the saver gets it. Returns what to record once it acknowledged."""
        conf = config.get("configurable", {})
        chain = (str(conf.get("thread_id")), conf.get("checkpoint_ns") or "")
        cid = conf.get("checkpoint_id")
        with self._lock:
            if task_id == NULL_TASK_ID:
                return self._answer_written(chain, cid, writes)
            seen = observe.collapse([(task_id, c, v) for c, v in writes]).get(task_id)
            if seen is None:
                return lambda: None  # only answers a re-executed task consumed
            attempt = self._attempts.get((chain, task_id))
            run = self._chains.get(chain)
            if (
                attempt is None
                and run is not None
                and run.running
                and (chain, cid, task_id) not in self._ended
            ):
                # a task that ran without callbacks: the input task (or a cached one)
                node = self._node_in(cid, task_id) or _node_of_path(task_path)
                if node is not None:
                    attempt = Attempt(chain, task_id, node, task_path, self._steps.get(cid, -1) + 1)
                    self._attempts[(chain, task_id)] = attempt
                    # It has no start of its own to observe; it ran before its writes were
                    # handed over, and in sync durability LangGraph promises a step starts
                    # from a saved checkpoint: it is placed after the checkpoint's `put` then.
                    self._queue_start(attempt, lambda: self._may_start(cid))
            interrupt = None
            if seen.kind == "interrupt":
                node = attempt.node if attempt else self._node_in(cid, task_id)
                interrupt = self._address(chain, task_id, node, seen)
            # the content of a result, as the saver is handed it
            content = observe.write_digest(writes, self.serde) if seen.kind == "ok" else None
            ended = attempt
            if attempt is not None and not attempt.ended:
                attempt.checkpoint = cid
                self._queue_end(attempt, seen.kind, interrupt, seen.resumed, content=content)
            else:
                ended = None
            if attempt is None and not (run is not None and run.running) and seen.kind == "ok":
                # An edit (update_state): its write is handed over now; a kill before the
                # saver's answer may leave it stored, as a task's write after its end.
                edit = {**self._where(chain), "checkpoint": cid, "task": task_id}
                if content is not None:
                    edit["digest"] = content
                self._submit(lambda: cid in self._known, lambda: self._write("edit", edit), "edit")
        kind, resumed = seen.kind, seen.resumed

        def acknowledged() -> None:
            fields = {**self._where(chain), "checkpoint": cid, "task": task_id, "kind": kind}
            if interrupt is not None:
                fields["interrupt"] = interrupt
            if content is not None:
                fields["digest"] = content

            def write() -> None:
                self._write("put_writes", dict(fields))
                if kind == "ok":
                    self._results.setdefault(cid, set()).add(task_id)
                self._carried_stored(resumed)

            def ready() -> bool:
                return cid in self._known and (ended is None or ended.started)

            self._submit(ready, write, "put_writes")

        return acknowledged

    def _node_in(self, checkpoint: str | None, task: str) -> str | None:
        for t in self._sched.get(checkpoint or "", ()):
            if t["task"] == task:
                return t["node"]
        return None

    def _answer_written(
        self, chain: Chain, cid: str, writes: list[tuple[str, Any]]
    ) -> Callable[[], None]:
        values = [v for c, v in writes if c == RESUME]
        if not values:
            return lambda: None  # a Command's update: input, not an answer
        value = values[-1]
        vid = observe.value_id(value)
        pending = self._pending.get(cid, [])
        if (chain, cid, vid) not in self._resumed:
            if len(pending) != 1:
                return lambda: None  # answers no interrupt: nothing the contract can name
            self._expect = None
            self._submit(
                lambda: cid in self._known,
                lambda: self._resume(chain, cid, pending[0], value),
                "resume",
            )

        def acknowledged() -> None:
            self._submit(
                lambda: (chain, cid, vid) in self._resumed and cid in self._known,
                lambda: self._write(
                    "put_writes",
                    {**self._where(chain), "checkpoint": cid, "task": None, "kind": "resume"},
                ),
                "put_writes",
            )

        return acknowledged

    def effect(self, metadata: dict[str, Any], intent: str, kind: str | None) -> None:
        """A running task fires an effect (a tool call, or `ledger.fire`)."""
        where = _task_of(metadata)
        if where is None:
            return
        chain, task = where[0], where[1]
        with self._lock:
            attempt = self._attempts.get((chain, task))
            fields = {**self._where(chain), "task": task, "intent": intent}
            if kind is not None:
                fields["kind"] = kind
            self._submit(
                (lambda: attempt.started) if attempt is not None else None,
                lambda: self._write("effect", fields),
                "effect",
            )

    # -- the invocation ----------------------------------------------------------------

    def finished(self, error: BaseException | None) -> None:
        """The invocation returned (or raised): everything held is written, then `finish`."""
        with self._lock:
            self._flush()
            for chain, run in self._chains.items():
                if run.live and run.cur is not None and run.cur not in self._sched:
                    tasks = self._sched_exact.get(run.cur)
                    if tasks is None and run.cur in self._chunk_tasks:
                        tasks = self._tasks_of_chunk(chain, run.cur)
                    if tasks is not None:
                        self._write_schedule(chain, run.cur, tasks)
            top = next((r for c, r in self._chains.items() if c[1] == "" and r.live), None)
            if error is not None:
                outcome = "failed"
            elif top is not None and top.cur is not None and not self._sched.get(top.cur):
                outcome = "done" if top.cur in self._sched else "parked"
            else:
                outcome = "parked"
            self._write("finish", {"outcome": outcome})
            for run in self._chains.values():
                run.live = run.starting = False
            self._attempts.clear()
            self._chunk_tasks.clear()
            self._ended.clear()
            self._carried.clear()
            self._expect = None
            self._into = None


def _node_of_path(task_path: str) -> str | None:
    """The node of a pull task from its path `~__pregel_pull, NODE` (a push task's path
    names no node)."""
    head, _, node = task_path.partition(", ")
    return node or None if head == "~__pregel_pull" else None


def _task_of(
    metadata: dict[str, Any],
) -> tuple[Chain, str, str, str, int, str | None, str] | None:
    """(chain, task id, node, path, step, maker, namespace) of the task a callback's run
    belongs to; the maker is the task whose run made it (`observe.maker_of`)."""
    node = metadata.get("langgraph_node")
    ns = str(metadata.get("langgraph_checkpoint_ns", ""))
    if not node or ":" not in ns:
        return None
    raw = tuple(metadata.get("langgraph_path") or ("__pregel_pull", node))
    chain_ns, task = observe.chain_of_task_ns(ns, raw)
    path = task_path_str(raw)
    thread = str(metadata.get("thread_id", ""))
    step = int(metadata.get("langgraph_step", 0))
    return (thread, chain_ns), task, str(node), path, step, observe.maker_of(ns, raw), ns
