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
import inspect
import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.config import get_config

from rctools.langgraph.observe import value_id
from rctools.recovery.app import RecoveryApp, Tool
from rctools.recovery.appdriver import driver
from rctools.recovery.controller import certify
from rctools.recovery.engine import RunResult, Stuck
from rctools.recovery.trace import TraceWriter

APP_POLICIES = ("retry", "native", "resume", "admissible")
MAX_RECOVERIES = 3
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
    state: Literal["idle", "run", "restored", "done", "cancelled"] = "idle"
    attempt: int = 1
    calls: int = 0
    value: str | None = None  # its committed output's id
    writes: frozenset[str] = frozenset()  # the state keys its commit wrote
    undo: list[Callable[[], Any]] = field(default_factory=list)  # its effects, taken back


class _Callbacks(BaseCallbackHandler):
    """Node starts and ends, from LangGraph's callbacks (as rctools.langgraph.callbacks)."""

    raise_error = True
    run_inline = True

    def __init__(self, run: AppRun) -> None:
        self.run = run
        self.runs: dict[UUID, Instance] = {}

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        if node and kwargs.get("name") == node:
            self.runs[run_id] = self.run.started(node, _task(metadata or {}), inputs)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        inst = self.runs.pop(run_id, None)
        if inst is not None:
            self.run.finished(inst, outputs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        inst = self.runs.pop(run_id, None)
        if inst is not None:
            self.run.ended(inst, error)


def _task(metadata: dict[str, Any]) -> str:
    return str(metadata.get("langgraph_checkpoint_ns", "")).rpartition(":")[2]


def _failed(error: Any) -> bool:
    """A task's error LangGraph kept is a failure, not a sibling it cancelled when another task
    failed first (kept as `CancelledError()`, a task that never ran: a `Send` fan-out's)."""
    cancelled = isinstance(error, asyncio.CancelledError) or error == "CancelledError()"
    return error is not None and not cancelled


class AppRun:
    """Runs the app once under `policy`, failing at `target` (None: a fault-free run)."""

    def __init__(
        self,
        app: RecoveryApp,
        policy: str,
        target: FailurePoint | None,
        trace_path: Path,
        db_path: Path,
        instances: list[str],
    ) -> None:
        self.app = app
        self.policy = policy
        self.target = target
        self.cond = threading.Condition()
        self.instances: dict[str, Instance] = {}
        self.by_task: dict[str, Instance] = {}
        self.active: set[str] = set()
        self.ledger: dict[str, Any] = {}
        self.requests = itertools.count(1)
        self.injected = False
        self.undone = 0
        db_path.parent.mkdir(parents=True, exist_ok=True)
        db_path.unlink(missing_ok=True)
        self.driver = driver(app.factory, db_path, app.asynchronous)
        self.graph = self.driver.graph
        self.declared = list(instances)  # the header's: every name a run may use
        self.trace = TraceWriter(trace_path, self._header(instances))

    def _header(self, instances: list[str]) -> dict[str, Any]:
        return {
            "format": "resume-check/v1",
            "contract": "SemanticRecovery",
            "runtime": {"name": "langgraph", "version": metadata.version("langgraph")},
            "backend": "sqlite",
            "workload": self.app.spec,
            "policy": self.policy,
            "scenario": f"{self.app.spec}: "
            + (f"fails before {self.target.name}" if self.target else "no failure"),
            "workflow": {
                "instances": instances,
                "tools": [{"name": n, "policy": p} for n, p in self.app.policies.items()],
            },
        }

    # --- what the callbacks and the tools report --------------------------------------------

    def started(self, node: str, task: str, inputs: Any) -> Instance:
        with self.cond:
            inst = self.by_task.get(task) or self._instance_for(node)
            self.by_task[task] = inst
            self.active.add(inst.name)
            if inst.state != "restored":  # a restored instance runs on from its checkpoint
                self.trace.event("begin", instance=inst.name)
            inst.state = "run"
            read = set(inputs) if isinstance(inputs, dict) else set()
            for producer in self.instances.values():
                if producer is not inst and producer.value and producer.writes & read:
                    source = {"from": producer.name}
                    self.trace.event("consume", instance=inst.name, value=producer.value, **source)
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
        with self.cond:
            if inst.state == "run":
                inst.value = value_id(outputs)
                inst.writes = frozenset(outputs) if isinstance(outputs, dict) else frozenset()
                self.trace.event("commit", instance=inst.name, value=inst.value)
                self.trace.event("exit", instance=inst.name)
                inst.state = "done"
            self.active.discard(inst.name)
            self.cond.notify_all()

    def ended(self, inst: Instance, error: BaseException) -> None:
        """A node raised, or LangGraph cancelled it mid-run when a sibling failed (async
        nodes: LangGraph will run it again from its start, so a restore rolls it back)."""
        with self.cond:
            if isinstance(error, asyncio.CancelledError) and inst.state == "run":
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
            if self.target == at and inst.attempt == 1 and not self.injected:
                self.injected = True
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
            if tool.policy in ("reversible", "compensable") and tool.undo is not None:
                undo = tool.undo
                inst.undo.append(lambda: undo(*args, **kwargs))
            fields: dict[str, Any] = {"request": f"req-{next(self.requests)}"}
            if replayed:
                fields["replayed"] = True
            self.trace.event("effect", instance=inst.name, tool=tool.name, intent=intent, **fields)

    # --- recovery ---------------------------------------------------------------------------

    def _take_back(self, inst: Instance) -> None:
        for undo in reversed(inst.undo):
            self.driver.settle(undo())
            self.undone += 1
        inst.undo = []

    def _restart(self, inst: Instance, state: Literal["idle", "restored"]) -> None:
        """`inst` runs again: from its entry (restored) or from its start (idle)."""
        self._take_back(inst)
        inst.state, inst.attempt, inst.calls = state, inst.attempt + 1, 0
        inst.value, inst.writes = None, frozenset()

    def _drain(self) -> None:
        """Waits for the failed step's siblings still running: what they do is recorded
        before the controller decides."""
        with self.cond:
            if not self.cond.wait_for(lambda: not self.active, timeout=DRAIN_SECONDS):
                raise Stuck(f"{self.app.spec}: {sorted(self.active)} still running")

    def run(self) -> RunResult:
        """Runs to completion or to a block, recovering from the injected failure."""
        originals = {name: getattr(tool.module, tool.attr) for name, tool in self.app.tools.items()}
        for name, tool in self.app.tools.items():
            setattr(tool.module, tool.attr, self._wrapped(tool, originals[name]))
        try:
            return self._run()
        finally:
            for name, tool in self.app.tools.items():
                setattr(tool.module, tool.attr, originals[name])
            self.trace.close()
            self.driver.close()

    def _wrapped(self, tool: Tool, original: Callable[..., Any]) -> Callable[..., Any]:
        """The tool as the nodes see it during the run: the same call, recorded; an
        `async def` tool stays one."""
        if inspect.iscoroutinefunction(original):

            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                found = self.before_call(tool)
                if found is None:
                    return await original(*args, **kwargs)
                inst, intent, replayed = found
                result = self.ledger[intent] if replayed else await original(*args, **kwargs)
                self.after_call(tool, inst, intent, replayed, result, (args, kwargs))
                return result

            return awrapper

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
            "configurable": {"thread_id": str(uuid.uuid4())},
            "callbacks": callbacks,
        }
        config = thread  # a fork's config once, to run from the forked checkpoint
        payload: Any = self.app.input
        counts = {"restore": 0, "block": 0, "rerun": 0}
        first: tuple[str | None, str | None] = (None, None)
        failed_at: float | None = None
        outcome: Literal["completed", "blocked"] = "completed"
        for _ in range(MAX_RECOVERIES + 1):
            try:
                self.driver.invoke(payload, config)
                if self.graph.get_state(thread).next:
                    raise Stuck(f"{self.app.spec}: parked at an interrupt (not supported)")
                break
            except InjectedFailure:
                failed_at = failed_at or time.perf_counter()
                self._drain()
                config = thread
                latest = self.graph.get_state(thread)
                errored = [t for t in latest.tasks if _failed(t.error)]
                blamed = self.by_task.get(errored[0].id) if len(errored) == 1 else None
                if blamed is None:
                    raise Stuck(f"{self.app.spec}: LangGraph kept no single failed task") from None
                if first[1] is None:
                    first = (self.target.instance if self.target else None, blamed.name)
                self.trace.event("localize", instance=blamed.name)
                kind = self._decide(blamed)
                counts[kind] += 1
                if kind == "block":
                    self.trace.event("block", reason="no admissible checkpoint")
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
                if self.policy == "native":
                    also += [
                        self.by_task[t.id]
                        for t in latest.tasks
                        if t.error is None and t.id in self.by_task
                    ]
                    # Time travel: a copy of the latest checkpoint, without its pending writes.
                    forked = self.graph.update_state(latest.config, None, as_node="__copy__")
                    config = {**forked, "callbacks": callbacks}
                self._restart(blamed, "restored")
                for inst in also:
                    self._restart(inst, "idle")
                fields = {"also": [i.name for i in also]} if also else {}
                self.trace.event("restore", instance=blamed.name, boundary="entry", **fields)
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
        )

    def _decide(self, blamed: Instance) -> Literal["restore", "block", "rerun"]:
        if self.policy == "retry":
            return "rerun"
        if self.policy == "admissible":
            events = list(self.trace.events)
            found = certify(events, blamed.name, self.declared, self.app.policies)
            return "restore" if "entry" in found else "block"
        return "restore"  # resume and native restore the failed node's entry, admissible or not


def pilot(app: RecoveryApp, scratch: Path) -> tuple[list[str], list[FailurePoint]]:
    """A fault-free run: the node executions it made (the trace's instances) and a failure
    point before every declared-tool call of each."""
    names = sorted({n for n in app.factory(None).builder.nodes})
    run = AppRun(app, "none", None, scratch / "pilot.jsonl", scratch / "pilot.sqlite", names)
    run.run()
    points = []
    for e in run.trace.events:
        if e["ev"] == "effect":
            inst = run.instances[e["instance"]]
            calls = sum(
                1
                for x in run.trace.events[: run.trace.events.index(e) + 1]
                if x["ev"] == "effect" and x["instance"] == inst.name
            )
            points.append(FailurePoint(inst.name, calls, e["tool"]))
    instances = sorted(set(names) | set(run.instances))
    return instances, points
