"""A workflow's history on the Temporal server as ground truth: what a load returns, as
ResumeCore sees it.

A workflow id is a thread; each of its runs is a branch (the run a reset makes is a fork). The
checkpoints of a run are named `<run>@<k>`: `@0` is its `WorkflowExecutionStarted` event, `@k`
the state after its k-th recorded operation -- an activity whose `ActivityTaskCompleted` is in
the history, or a wait for an answer that a completed workflow task consumed (the answer being
a `WorkflowExecutionSignaled` or an accepted update before it). `<run>` is the workflow id for
the first run, `<id>~<run id prefix>` for a run made by a reset. A checkpoint made by an
operation is `<run>@<k>/<proc>`, `<proc>` being the `identity` the history names for the worker
that completed it (each process of a cell has its name as its identity), so a checkpoint a
killed process made in memory and the one a later process made again are two checkpoints, as
they are for the contract. A digest hashes the recorded results, never the ids, so the prefix a
reset copies digests like its source.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.converter import default as default_converter

from rctools.suite.stored import StoredRun
from rctools.suite.workflows import spelled

# the plan of each workflow: ("act", activity name, effect kind) or ("wait", topic)
PLANS: dict[str, list[tuple[str, ...]]] = spelled("act", "wait")


def node(op: tuple[str, ...]) -> str:
    return op[1] if op[0] == "act" else f"wait:{op[1]}"


def nodes(plan: str) -> list[str]:
    return [node(op) for op in PLANS[plan]]


@dataclass
class Op:
    """A recorded operation: its result as the history holds it and who completed it."""

    kind: str  # "act" or "wait"
    name: str
    value: Any
    maker: str
    event_id: int  # the event that recorded it


@dataclass
class Answer:
    """A signal or accepted update carrying an answer: {value, interrupt, against, by}."""

    message: dict[str, Any]
    event_id: int
    consumed: bool = False
    update_id: str | None = None  # an update's id (the server deduplicates by it)


@dataclass
class RunView(StoredRun):
    """One run of a workflow, read from its history."""

    wf: str
    run_id: str
    plan: str
    ops: list[Op] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    closed: bool = False
    wft_done: list[tuple[int, int]] = field(default_factory=list)  # (event id, ops recorded)
    started_after: int = 0  # ops recorded when the last workflow task completed
    base_run: str | None = None  # the run a reset copied this one from
    fork_point: int = 0  # how many recorded operations the reset copied
    source: RunView | None = None
    exists: bool = True  # a history is read of a run the server has

    @property
    def prefix(self) -> str:
        return self.wf if self.base_run is None else f"{self.wf}~{self.run_id[:8]}"

    def count(self) -> int:
        return len(self.ops)

    def maker(self, k: int) -> str:
        return self.ops[k - 1].maker

    def digest(self, k: int) -> str:
        body = [[op.kind, op.name, op.value] for op in self.ops[:k]]
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]

    def parked(self) -> int | None:
        """The index of the wait this run is parked at: the workflow code reached it (a
        workflow task completed after the operation before it) and no answer is unconsumed."""
        k = self.count()
        plan = PLANS[self.plan]
        if self.closed or k >= len(plan) or plan[k][0] != "wait":
            return None
        if self.started_after < k or any(not a.consumed for a in self.answers):
            return None
        return k + 1

    def reset_point(self, j: int) -> int:
        """The event id of the first completed workflow task after operation j was recorded
        (j = 0: the first one): resetting to it runs operation j+1 onward again."""
        for event_id, recorded in self.wft_done:
            if recorded >= j:
                return event_id
        raise ValueError(f"{self.wf}: no workflow task completed after operation {j}")

    def answers_at(self, k: int) -> list[dict[str, Any]]:
        """The signals and updates sent against checkpoint k (an answer names the checkpoint
        it saw)."""
        return [
            {"interrupt": a.message["interrupt"], "value": a.message["value"]}
            for a in self.answers
            if a.message.get("against") == self.ckid(k)
        ]


def _value(payloads: Any) -> Any:
    # a Payloads message (activity results, signal input) or a repeated Payload (update args)
    items = list(getattr(payloads, "payloads", payloads) or [])
    if not items:
        return None
    return default_converter().payload_converter.from_payload(items[0])


def read(wf: str, run_id: str, events: list[HistoryEvent]) -> RunView:
    """Walks a run's events in order into a RunView (the source of a reset is read by the
    caller, `views.py`, and attached as `source`)."""
    view = RunView(wf, run_id, plan="")
    scheduled: dict[int, str] = {}
    last_worker = ""

    def consume(event_id: int) -> None:
        """The workflow code has seen everything up to here: a wait it stands at takes the
        oldest unconsumed answer (the order the workflow's inbox has them in)."""
        plan = PLANS[view.plan]
        while view.count() < len(plan) and plan[view.count()][0] == "wait":
            free = [a for a in view.answers if not a.consumed]
            if not free:
                break
            free[0].consumed = True
            _, topic = plan[view.count()]
            view.ops.append(Op("wait", topic, free[0].message["value"], last_worker, event_id))

    for e in events:
        t = e.event_type
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            view.plan = _value(e.workflow_execution_started_event_attributes.input)
        elif t == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[e.event_id] = e.activity_task_scheduled_event_attributes.activity_type.name
        elif t == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            a = e.activity_task_completed_event_attributes
            view.ops.append(
                Op("act", scheduled[a.scheduled_event_id], _value(a.result), a.identity, e.event_id)
            )
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            a = e.workflow_execution_signaled_event_attributes
            view.answers.append(Answer(_value(a.input), e.event_id))
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            # written with the workflow task that accepted it, after its completed event
            a = e.workflow_execution_update_accepted_event_attributes
            view.answers.append(
                Answer(
                    _value(a.accepted_request.input.args),
                    e.event_id,
                    update_id=a.accepted_request.meta.update_id,
                )
            )
            consume(e.event_id)
            view.started_after = view.count()
        elif t == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            last_worker = e.workflow_task_completed_event_attributes.identity
            consume(e.event_id)
            view.wft_done.append((e.event_id, view.count()))
            view.started_after = view.count()
        elif t == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            a = e.workflow_task_failed_event_attributes
            if a.cause == WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW:
                view.base_run = a.base_run_id
                view.fork_point = view.count()
                view.wft_done = []
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            view.closed = True
    return view
