"""One run of a user's graph (rctools.recovery.app) under a restore policy, as a SemanticRecovery
trace, on LangGraph's own checkpoints (SqliteSaver).

What the contract calls an instance is a node execution (`book`, or `book#2` for a node's
second execution in a run); its actions are what LangGraph's callbacks and the declared tools
show, with nothing changed in the graph:

- `begin` when the node starts (its entry checkpoint: the checkpoint LangGraph wrote before the
  node's step), `consume` for every instance whose committed write is in the node's input,
  `effect` for every call of a declared tool (the tool's module attribute is wrapped for the
  run; an irreversible intent -- instance, tool, call number -- goes through a ledger that
  replays its result when asked again), `commit` (a digest of what it returned) and `exit` when
  it returns. No restore point lies inside a node: LangGraph checkpoints between steps only.
- the failure: before the K-th declared-tool call of one instance, on its first execution, the
  wrapped tool raises (an exception in the node, as a tool's error is), and `fail` is written.
- the controller localizes the failure from LangGraph's own state (the task whose error
  LangGraph kept) and the policy decides: `retry` reruns on a new thread; `resume` invokes the
  thread again (LangGraph re-runs the failed node from its entry and keeps its siblings'
  writes); `native` forks LangGraph's latest checkpoint (time travel: the whole step re-runs,
  so the siblings that ran in it are rolled back with it); `admissible` restores like `resume`
  only when the controller certifies the failed instance's entry (controller.certify), and
  blocks otherwise. A restore or a rerun calls the declared undo of every reversible or
  compensable effect it takes back.

The runtime records; the spec judges.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from langgraph.config import get_config
from langgraph.errors import GraphInterrupt

from rctools.langgraph.app import resume_all, static_interrupts
from rctools.langgraph.appdriver import Listener, driver
from rctools.langgraph.callbacks import NodeCallbacks
from rctools.langgraph.observe import value_id
from rctools.recovery.app import RecoveryApp, Tool
from rctools.recovery.appkill import KILL_POINT, SideLog
from rctools.recovery.controller import certify
from rctools.recovery.engine import RunResult, Stuck
from rctools.recovery.trace import TraceWriter, header
from rctools.suite.crash import KillPoints

APP_POLICIES = ("retry", "native", "resume", "admissible")
MAX_RECOVERIES = 3
MAX_PAUSES = 32
"""The most stops one run goes on from (a static interrupt, or an `interrupt()` answered with
`--answer`): a graph that stops again after as many never ends."""
DRAIN_SECONDS = 30.0


class InjectedFailure(Exception):
    """The failure this suite injects: a declared tool raising, as a tool's error does."""

    def __init__(self, tool: str) -> None:
        super().__init__(f"{tool} failed")
        self.tool = tool


@dataclass(frozen=True)
class FailurePoint:
    """Fail `instance` before its `call`-th declared-tool call (of `tool`)."""

    instance: str
    call: int
    tool: str

    @property
    def name(self) -> str:
        return f"{self.instance}.{self.call}-{self.tool}"


@dataclass
class Instance:
    """A node execution since its last (re)start."""

    name: str
    node: str
    state: Literal["idle", "run", "restored", "parked", "ended", "done", "cancelled"] = "idle"
    """ended: returned, its writes not saved yet; done: committed (its writes saved); parked:
    raised at an `interrupt()`, to run again when answered."""
    attempt: int = 1
    calls: int = 0
    value: str | None = None  # its committed output's id
    writes: frozenset[str] = frozenset()  # the state keys its commit wrote
    undo: list[Callable[[], Any]] = field(default_factory=list)  # its effects, taken back
    actions: int = 0  # consumes and effects since its begin: its position
    points: list[tuple[str, int, int, int]] = field(default_factory=list)
    """Restore points inside it (a subgraph's checkpoints): (name, position, undo, calls)."""

    def boundary(self) -> tuple[str, int, int, int]:
        """Its latest checkpoint: (entry or a point's name, position, undo, calls)."""
        return self.points[-1] if self.points else ("entry", 0, 0, 0)


class _Callbacks(NodeCallbacks[Instance]):
    """Node starts and ends of the graph's own nodes (a subgraph's nodes run inside theirs)."""

    def __init__(self, run: AppRun) -> None:
        super().__init__()
        self.run = run

    def node_started(self, run_id: UUID, node: str, metadata: dict[str, Any], inputs: Any) -> None:
        if "|" not in str(metadata.get("langgraph_checkpoint_ns", "")):
            self.runs[run_id] = self.run.started(node, _task(metadata), inputs)

    def node_finished(self, tracked: Instance, outputs: Any) -> None:
        self.run.finished(tracked, outputs)

    def node_failed(self, tracked: Instance, error: BaseException) -> None:
        self.run.ended(tracked, error)


def _task(metadata: dict[str, Any]) -> str:
    """The graph's task a callback or a tool call belongs to: a subgraph's inner nodes belong
    to the task of the subgraph's node (the first part of the namespace)."""
    namespace = str(metadata.get("langgraph_checkpoint_ns", ""))
    return namespace.split("|")[0].rpartition(":")[2]


def _failed(error: Any) -> bool:
    """A task's error LangGraph kept is a failure, not a sibling it cancelled when another task
    failed first (kept as `CancelledError()`, a task that never ran: a `Send` fan-out's)."""
    cancelled = isinstance(error, asyncio.CancelledError) or error == "CancelledError()"
    return error is not None and not cancelled


Mode = Literal["raise", "kill", "recover"]


class AppRun(Listener):
    """Runs the app once under `policy`, failing at `target` (None: a fault-free run).

    `mode`: the failure is the tool raising ("raise"); or this process is killed there
    ("kill", in the child of appkill: it leaves a side log for its successor); or this process
    recovers after the kill ("recover": the trace, the saver's database and the side log the
    killed process left, on its `thread`)."""

    def __init__(
        self,
        app: RecoveryApp,
        policy: str,
        target: FailurePoint | None,
        trace_path: Path,
        db_path: Path,
        instances: list[str],
        *,
        mode: Mode = "raise",
        thread: str | None = None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.target = target
        self.mode = mode
        self.thread_id = thread or str(uuid.uuid4())
        self.cond = threading.Condition()
        self.instances: dict[str, Instance] = {}
        self.by_task: dict[str, Instance] = {}
        self.active: set[str] = set()
        self.ledger: dict[str, Any] = {}
        self.requests = itertools.count(1)
        self.points: list[FailurePoint] = []  # every declared call made, once (pilot's)
        self.injected = False
        self.undone = 0
        db_path.parent.mkdir(parents=True, exist_ok=True)
        side = db_path.with_suffix(".side.jsonl")
        if mode != "recover":
            db_path.unlink(missing_ok=True)
            side.unlink(missing_ok=True)
        # Every finished step checkpointed before the next starts: LangGraph's default
        # durability ("async") writes a step's checkpoint while the next step runs, and a kill
        # then loses it -- a committed node runs again on resume.
        self.driver = driver(self._built, db_path, app.asynchronous, "sync", self)
        self.graph = self.driver.graph
        self.declared = list(instances)  # the header's: every name a run may use
        header = None if mode == "recover" else self._header(instances)
        self.trace = TraceWriter(trace_path, header)
        self.side = SideLog(side) if mode == "kill" else None
        if mode == "recover":
            self._rebuild(SideLog.read(side))

    def _rebuild(self, records: list[dict[str, Any]]) -> None:
        """The bookkeeping of the killed process, from its trace and side log: its instances
        (committed, or running when it died: those died with it), which task ran which, what
        each commit wrote, the undo of every effect that can be taken back, the restore points
        inside a subgraph node, the ledger."""
        nodes = {r["instance"]: r["node"] for r in records if r["kind"] == "task"}
        for e in self.trace.events:
            name = e.get("instance")
            if e["ev"] == "begin":
                self.instances[name] = Instance(name, nodes[name], state="run")
            elif e["ev"] == "commit":
                self.instances[name].value, self.instances[name].state = e["value"], "done"
            elif e["ev"] == "effect":
                self.instances[name].calls += 1
                self.instances[name].actions += 1
                next(self.requests)
            elif e["ev"] == "consume":
                self.instances[name].actions += 1
        for r in records:
            if r["kind"] == "task":
                self.by_task[r["task"]] = self.instances[r["instance"]]
            elif r["kind"] == "commit":
                self.instances[r["instance"]].writes = frozenset(r["writes"])
            elif r["kind"] == "point":
                self.instances[r["instance"]].points.append(tuple(r["point"]))  # type: ignore[arg-type]
            elif r["kind"] == "ledger":
                self.ledger[r["intent"]] = SideLog.unpack(r["result"])
            elif r["kind"] == "undo":
                undo, (args, kwargs) = self.app.tools[r["tool"]].undo, SideLog.unpack(r["args"])
                if undo is not None:
                    self.instances[r["instance"]].undo.append(
                        lambda u=undo, a=args, k=kwargs: u(*a, **k)
                    )
            elif r["kind"] == "unpark":  # taken back before the answer ran it again
                del self.instances[r["instance"]].undo[r["undo"] :]
        failed = [e["instance"] for e in self.trace.events if e["ev"] == "fail"]
        for inst in self.instances.values():
            if inst.state == "run" and inst.name not in failed:
                inst.state = "cancelled"  # killed mid-run with the failed one
        self.injected = True

    def _header(self, instances: list[str]) -> dict[str, Any]:
        failure = f"fails before {self.target.name}" if self.target else "no failure"
        spec = self.app.spec
        return header(spec, self.policy, f"{spec}: {failure}", instances, self.app.policies)

    # --- what the callbacks and the tools report --------------------------------------------

    def started(self, node: str, task: str, inputs: Any) -> Instance:
        with self.cond:
            inst = self.by_task.get(task) or self._instance_for(node)
            if self.side is not None and task not in self.by_task:
                self.side.write("task", task=task, instance=inst.name, node=node)
            self.by_task[task] = inst
            self.active.add(inst.name)
            # a restored instance runs on from its checkpoint; a parked one, answered, from its
            # start (see _unpark)
            if inst.state not in ("restored", "parked"):
                self.trace.event("begin", instance=inst.name)
            inst.state = "run"
            read = set(inputs) if isinstance(inputs, dict) else set()
            for producer in self.instances.values():
                if producer is not inst and producer.value and producer.writes & read:
                    source = {"from": producer.name}
                    self.trace.event("consume", instance=inst.name, value=producer.value, **source)
                    inst.actions += 1
            return inst

    def _instance_for(self, node: str) -> Instance:
        """The node's instance waiting to run again (restored, or rolled back), else a new one."""
        for inst in self.instances.values():
            if inst.node == node and inst.state in ("idle", "restored"):
                return inst
        count = sum(i.node == node for i in self.instances.values())
        name = node if count == 0 else f"{node}#{count + 1}"
        self.instances[name] = Instance(name, node)
        return self.instances[name]

    def finished(self, inst: Instance, outputs: Any) -> None:
        """The node returned: its output is committed once LangGraph has saved its writes."""
        with self.cond:
            if inst.state == "run":
                inst.value = value_id(outputs)
                inst.writes = frozenset(outputs) if isinstance(outputs, dict) else frozenset()
                inst.state = "ended"
            self.active.discard(inst.name)
            self.cond.notify_all()

    def saved(self, task: str | None) -> None:
        """LangGraph saved a task's writes, or a checkpoint (None: it holds the writes of every
        node that had returned): those outputs are committed (a kill after this keeps them;
        before, LangGraph runs the node again)."""
        with self.cond:
            if task is None:
                ended = [i for i in self.instances.values() if i.state == "ended"]
            else:
                ended = [i for i in [self.by_task.get(task)] if i and i.state == "ended"]
            for inst in ended:
                self._commit(inst)

    def inner(self, namespace: str, step: int) -> None:
        """A subgraph's checkpoint after one of its steps: a restore point of the subgraph
        node's instance (LangGraph resumes a failed subgraph from its latest one), saved as a
        `checkpoint` when the instance acted since its last checkpoint (one per boundary)."""
        with self.cond:
            inst = self.by_task.get(namespace.rpartition(":")[2])
            if inst is None or inst.state != "run" or step < 1:
                return
            if inst.actions == inst.boundary()[1]:
                return
            name = f"{inst.name}@{inst.actions}"
            inst.points.append((name, inst.actions, len(inst.undo), inst.calls))
            self.trace.event("checkpoint", instance=inst.name, point=name)
            if self.side is not None:
                self.side.write("point", instance=inst.name, point=list(inst.points[-1]))

    def _commit(self, inst: Instance) -> None:
        self.trace.event("commit", instance=inst.name, value=inst.value)
        self.trace.event("exit", instance=inst.name)
        if self.side is not None:
            self.side.write("commit", instance=inst.name, writes=sorted(inst.writes))
        inst.state = "done"

    def ended(self, inst: Instance, error: BaseException) -> None:
        """A node raised, or parked at an `interrupt()` (`GraphInterrupt`: no failure, the
        answer runs it again), or LangGraph cancelled it mid-run when a sibling failed (async
        nodes: LangGraph will run it again from its start, so a restore rolls it back)."""
        with self.cond:
            if isinstance(error, GraphInterrupt) and inst.state == "run":
                inst.state = "parked"
            elif isinstance(error, asyncio.CancelledError) and inst.state == "run":
                inst.state = "cancelled"
            self.active.discard(inst.name)
            self.cond.notify_all()

    def before_call(self, tool: Tool) -> tuple[Instance, str, bool] | None:
        """A declared tool about to be called by a node: failed at the target, else its intent
        and whether the ledger replays it (None: called outside a node, not recorded)."""
        try:
            task = _task(get_config().get("metadata", {}))
        except RuntimeError:  # called outside a node
            return None
        with self.cond:
            inst = self.by_task.get(task)
            if inst is None:
                return None
            inst.calls += 1
            k = inst.calls
            at = FailurePoint(inst.name, k, tool.name)
            if at not in self.points:
                self.points.append(at)
            if self.target == at and inst.attempt == 1 and not self.injected:
                self.injected = True
                if self.mode == "kill":  # the framework's kill point; the parent kills
                    self.trace.event("fail", instance=inst.name, reason="process killed")
                    KillPoints().hit(KILL_POINT)
                self.trace.event("fail", instance=inst.name, reason=f"{tool.name} failed")
                raise InjectedFailure(tool.name)
            intent = f"{inst.name}/{tool.name}#{k}"
            return inst, intent, tool.policy == "irreversible" and intent in self.ledger

    def after_call(
        self, tool: Tool, inst: Instance, intent: str, replayed: bool, result: Any, call: Any
    ) -> None:
        """The call made (or replayed): ledgered, its undo kept, its effect recorded."""
        args, kwargs = call
        with self.cond:
            if tool.policy == "irreversible":
                self.ledger[intent] = result
                if self.side is not None:
                    self.side.write("ledger", intent=intent, result=SideLog.pack(result))
            if tool.policy in ("reversible", "compensable") and tool.undo is not None:
                undo = tool.undo
                inst.undo.append(lambda: undo(*args, **kwargs))
                if self.side is not None:
                    packed = SideLog.pack((args, kwargs))
                    self.side.write("undo", instance=inst.name, tool=tool.name, args=packed)
            fields: dict[str, Any] = {"request": f"req-{next(self.requests)}"}
            if replayed:
                fields["replayed"] = True
            self.trace.event("effect", instance=inst.name, tool=tool.name, intent=intent, **fields)
            inst.actions += 1

    # --- recovery ---------------------------------------------------------------------------

    def _take_back(self, inst: Instance, since: int = 0) -> None:
        """Takes back, latest first, what `inst` did that can be taken back after its first
        `since` such effects (a boundary's undo count)."""
        for undo in reversed(inst.undo[since:]):
            self.driver.settle(undo())
            self.undone += 1
        del inst.undo[since:]

    def _restart(
        self, inst: Instance, state: Literal["idle", "restored"], to: str = "entry"
    ) -> None:
        """`inst` runs again: from its entry or restore point `to` (restored), or from its
        start (idle). What it did after that point is taken back."""
        kept = [p for p in inst.points if p[0] == to]
        _, pos, undo, calls = kept[0] if kept else ("entry", 0, 0, 0)
        self._take_back(inst, undo)
        inst.points = inst.points[: inst.points.index(kept[0]) + 1] if kept else []
        inst.state, inst.attempt, inst.calls, inst.actions = state, inst.attempt + 1, calls, pos
        inst.value, inst.writes = None, frozenset()

    def _unpark(self) -> None:
        """Before the answer: LangGraph runs each parked node again from its start (a subgraph
        from its latest checkpoint), so its declared calls come again in the same order, by the
        same intents -- the ledger replays an irreversible one -- and what it did that can be
        taken back is taken back first, as a restore to that boundary does. The trace shows no
        event for it: SemanticRecovery has no park; the node's actions simply come again."""
        for inst in self.instances.values():
            if inst.state != "parked":
                continue
            _, _, undo, calls = inst.boundary()
            self._take_back(inst, undo)
            inst.calls = calls
            if self.side is not None:
                self.side.write("unpark", instance=inst.name, undo=undo)

    def _drain(self) -> None:
        """Waits for the failed step's siblings still running: what they do is recorded
        before the controller decides."""
        with self.cond:
            if not self.cond.wait_for(lambda: not self.active, timeout=DRAIN_SECONDS):
                raise Stuck(f"{self.app.spec}: {sorted(self.active)} still running")

    @contextlib.contextmanager
    def _tools_wrapped(self) -> Iterator[None]:
        """The declared tools wrapped in their places (a module's attribute, or a LangChain
        tool's `func` or `coroutine`: a pydantic model that takes a plain assignment), and put
        back after."""
        places = [(tool, place) for tool in self.app.tools.values() for place in tool.places]
        originals = [getattr(holder, slot) for _, (holder, slot) in places]
        for (tool, (holder, slot)), original in zip(places, originals, strict=True):
            setattr(holder, slot, self._wrapped(tool, original))
        try:
            yield
        finally:
            for (_, (holder, slot)), original in zip(places, originals, strict=True):
                setattr(holder, slot, original)

    def _built(self, saver: Any) -> Any:
        """The app's graph, built while the tools are wrapped: a graph that takes its tools in
        when it is built (`ToolNode`, `create_agent` given plain functions) holds the wrapped
        ones; a node that looks a tool up when it runs finds it wrapped by `run`."""
        with self._tools_wrapped():
            return self.app.factory(saver)

    def run(self) -> RunResult:
        """Runs to completion or to a block, recovering from the injected failure."""
        try:
            with self._tools_wrapped():
                return self._run()
        finally:
            self.trace.close()
            self.driver.close()
            if self.side is not None:
                self.side.close()

    def _wrapped(self, tool: Tool, original: Callable[..., Any]) -> Callable[..., Any]:
        """The tool as the nodes see it during the run: the same call, recorded; an
        `async def` tool stays one."""
        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)  # its name, signature, docstring: a tool's schema
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                found = self.before_call(tool)
                if found is None:
                    return await original(*args, **kwargs)
                inst, intent, replayed = found
                result = self.ledger[intent] if replayed else await original(*args, **kwargs)
                self.after_call(tool, inst, intent, replayed, result, (args, kwargs))
                return result

            return awrapper

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            found = self.before_call(tool)
            if found is None:
                return original(*args, **kwargs)
            inst, intent, replayed = found
            result = self.ledger[intent] if replayed else original(*args, **kwargs)
            self.after_call(tool, inst, intent, replayed, result, (args, kwargs))
            return result

        return wrapper

    def _run(self) -> RunResult:
        callbacks = [_Callbacks(self)]
        thread: dict[str, Any] = {
            "configurable": {"thread_id": self.thread_id},
            "callbacks": callbacks,
        }
        config = thread  # a fork's config once, to run from the forked checkpoint
        payload: Any = self.app.input
        counts = {"restore": 0, "block": 0, "rerun": 0, "point": 0}
        first: tuple[str | None, str | None] = (None, None)
        failed_at: float | None = None
        outcome: Literal["completed", "blocked"] = "completed"
        killed = self.mode == "recover"  # the failure happened in the killed process
        for _ in range(MAX_RECOVERIES + 1):
            if not killed:
                try:
                    self._invoke(payload, config, thread)
                    break
                except InjectedFailure:
                    pass
            failed_at = failed_at or time.perf_counter()
            self._drain()
            self._settle(commit=False)
            config = thread
            latest = self.graph.get_state(thread)
            blamed = self._localize(latest, killed)
            killed = False
            if first[1] is None:
                first = (self.target.instance if self.target else None, blamed.name)
            # LangGraph runs the failed node's cancelled siblings again under any restore: the
            # contract's admissibility must roll them back too (`with`)
            forced = sorted(i.name for i in self.instances.values() if i.state == "cancelled")
            told: dict[str, Any] = {"with": forced} if forced else {}
            self.trace.event("localize", instance=blamed.name, **told)
            kind = self._decide(blamed)
            counts[kind] += 1
            if kind == "block":
                lost = self._lost_siblings(list(self.trace.events))
                why = f"restoring would re-run {', '.join(lost)}" if lost else ""
                self.trace.event("block", reason=why or "no admissible checkpoint")
                outcome = "blocked"
                break
            if kind == "rerun":
                for inst in self.instances.values():
                    self._take_back(inst)
                self.instances, self.by_task = {}, {}
                self.trace.event("rerun")
                thread = {**thread, "configurable": {"thread_id": str(uuid.uuid4())}}
                config = thread
                payload = self.app.input
                continue
            # Siblings LangGraph cancelled mid-run start again, under every restore.
            also = [i for i in self.instances.values() if i.state == "cancelled"]
            if self.policy == "native":  # the step's committed instances, rolled back too
                ran = [self.by_task[t.id] for t in latest.tasks if t.id in self.by_task]
                also += [i for i in ran if i.state == "done" and i is not blamed]
                # Time travel: a copy of the latest checkpoint, without its pending writes.
                forked = self.graph.update_state(latest.config, None, as_node="__copy__")
                config = {**forked, "callbacks": callbacks}
            # LangGraph resumes a failed subgraph from its latest checkpoint; a fork, from entry.
            to = "entry" if self.policy == "native" else blamed.boundary()[0]
            self._restart(blamed, "restored", to)
            for inst in also:
                self._restart(inst, "idle")
            fields: dict[str, Any] = {"also": [i.name for i in also]} if also else {}
            if to == "entry":
                self.trace.event("restore", instance=blamed.name, boundary="entry", **fields)
            else:
                self.trace.event(
                    "restore", instance=blamed.name, boundary="point", point=to, **fields
                )
                counts["point"] += 1
            payload = None
        else:
            raise Stuck(f"{self.app.spec}: still failing after {MAX_RECOVERIES} recoveries")
        done = time.perf_counter()
        events = self.trace.events
        actions = sum(e["ev"] in ("emit", "commit", "consume", "effect") for e in events)
        return RunResult(
            workload=self.target.name if self.target else "no-failure",
            policy=self.policy,
            trace=self.trace.path,
            outcome=outcome,
            actions=actions,
            replayed=0,
            preserved=None,
            recovery_seconds=None if failed_at is None else done - failed_at,
            model_calls=0,
            effects={"undone": self.undone},
            failed=first[0],
            localized=first[1],
            candidates=(first[1],) if first[1] else (),
            restores=counts["restore"],
            blocks=counts["block"],
            reruns=counts["rerun"],
            through_langgraph=counts["restore"],
            to_point=counts["point"],
        )

    def _invoke(self, payload: Any, config: dict[str, Any], thread: dict[str, Any]) -> None:
        """Runs the graph to its end. At a static interrupt (`interrupt_before`/
        `interrupt_after`) the run stops between two steps with nothing in flight, and goes on
        as LangGraph resumes one (`invoke(None)`); at an `interrupt()` in a node it goes on with
        the human's answer (`--answer`: `Command(resume=...)`, a map resume when several wait),
        which runs the parked node again."""
        for _ in range(MAX_PAUSES + 1):
            self.driver.invoke(payload, config)
            self._settle(commit=True)  # what ran before a stop is done, whatever fails after
            state = self.graph.get_state(thread)
            if not state.next:
                return
            if state.interrupts:
                if not self.app.answer:
                    raise Stuck(
                        f"{self.app.spec}: parked at an interrupt(); give --answer JSON, the "
                        "value a human answers every interrupt with"
                    )
                self._unpark()
                payload, config = resume_all(state, self.app.answer[0]), thread
                continue
            if not static_interrupts(self.graph):
                raise Stuck(f"{self.app.spec}: stopped with {list(state.next)} left to run")
            payload, config = None, thread
        raise Stuck(
            f"{self.app.spec}: still waiting after going on {MAX_PAUSES} times (a static "
            "interrupt, or an interrupt() answered again and again)"
        )

    def _settle(self, commit: bool) -> None:
        """After LangGraph returned, nodes that returned but whose writes it never saved: a
        node that wrote nothing (nothing to lose: committed) after a step that completed, or
        one whose step failed (LangGraph runs it again: rolled back with the failed one)."""
        with self.cond:
            for inst in self.instances.values():
                if inst.state == "ended":
                    if commit:
                        self._commit(inst)
                    else:
                        inst.state = "cancelled"

    def _localize(self, latest: Any, killed: bool) -> Instance:
        """The failed instance: the task whose error LangGraph kept; after a kill, when
        LangGraph kept none, the instance the killed process's trace says failed."""
        if killed:
            (failed,) = [e["instance"] for e in self.trace.events if e["ev"] == "fail"]
            return self.instances[failed]
        errored = [t for t in latest.tasks if _failed(t.error)]
        blamed = self.by_task.get(errored[0].id) if len(errored) == 1 else None
        if blamed is None:
            raise Stuck(f"{self.app.spec}: LangGraph kept no single failed task")
        return blamed

    def _decide(self, blamed: Instance) -> Literal["restore", "block", "rerun"]:
        if self.policy == "retry":
            return "rerun"
        if self.policy == "admissible":
            events = list(self.trace.events)
            found = certify(events, blamed.name, self.declared, self.app.policies)
            # LangGraph's resume goes back to the latest checkpoint, no further
            latest = blamed.boundary()[0]
            return "restore" if latest in found and not self._lost_siblings(events) else "block"
        return "restore"  # resume and native restore the failed node's entry, admissible or not

    def _lost_siblings(self, events: list[dict[str, Any]]) -> list[str]:
        """Siblings LangGraph will run again with the failed node (they died, or were cancelled,
        uncommitted) that already did something irreversible: a restore would lose it, whatever
        the failed node's entry holds, so `admissible` blocks."""
        irreversible = {n for n, p in self.app.policies.items() if p == "irreversible"}
        done = {e["instance"] for e in events if e["ev"] == "effect" and e["tool"] in irreversible}
        return sorted(
            i.name for i in self.instances.values() if i.state == "cancelled" and i.name in done
        )


def pilot(app: RecoveryApp, scratch: Path) -> tuple[list[str], list[FailurePoint]]:
    """A fault-free run: the node executions it made (the trace's instances) and a failure
    point before every declared-tool call of each."""
    names = sorted({n for n in app.factory(None).builder.nodes})
    run = AppRun(app, "none", None, scratch / "pilot.jsonl", scratch / "pilot.sqlite", names)
    run.run()
    instances = sorted(set(names) | set(run.instances))
    return instances, run.points
