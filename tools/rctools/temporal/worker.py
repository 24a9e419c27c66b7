"""One process of a Temporal cell: `python -m rctools.temporal.worker JOB.json`.

The recorder is the application itself, never a patch of Temporal: each activity is an ordinary
`@activity.defn` whose body writes `schedule`, `task_start`, the effect and `task_end` + `step`
(its result and the next checkpoint exist in memory); once the server has recorded the
activity's completion -- the workflow code receives its result in a new workflow task -- the
workflow writes `put_writes` + `put` with the digest read back from the server's history. A
`workflow.wait_condition` on the workflow's inbox is the wait-for-input task; a signal (or an
update) carrying the answer is the answer; a reset (ResetWorkflowExecution) is a fork. Every
`load` is what the history holds (history.py), read under the trace's cross-process lock.

The workflow code runs unsandboxed so that it can write the trace; it writes only when it is
not replaying (`workflow.unsafe.is_replaying()`), i.e. when it really runs a step for the first
time in this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from datetime import timedelta
from typing import Any

from resumecheck.waiting import apoll
from temporalio import activity, workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import ResetReapplyExcludeType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.common import RetryPolicy, WorkflowIDConflictPolicy
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    UnsandboxedWorkflowRunner,
    Worker,
)

from rctools.suite import worker as rcworker
from rctools.suite.stored import ck
from rctools.suite.trace import load as trace_load
from rctools.temporal.history import PLANS, RunView, node, read

TASK_QUEUE = "resume-check"
# A killed worker's activity is retried once its start-to-close timeout expires (what Temporal
# documents for a worker that vanished); long enough that a live activity of a few ms on a
# loaded machine is never timed out and retried while it runs.
ACTIVITY_TIMEOUT = timedelta(seconds=6)
# A killed worker's workflow task is given to another worker after this.
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=4)
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), backoff_coefficient=1.0)

REC: Recorder | None = None  # the process's recorder, read by the workflow and activities


class Recorder(rcworker.Worker):
    """The trace, the kill points and what this process made and has not yet seen recorded."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(job)
        self.wf: str = job["wf"]
        self.client: Client | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.current: str | None = None  # the checkpoint this process's run is at
        self.unacked: dict[tuple[str, int], str] = {}  # (run id, k) -> checkpoint made here
        self.started: set[str] = set()  # tasks this process started (a wait's task_start)
        self.at_end: set[str] = set()  # runs whose end this process's workflow code ran
        self.answering = asyncio.Lock()  # a send and its logging, as one move in this process
        self.refused: list[str] = []  # answers the server refused (the workflow had ended)

    async def view(self, run_id: str | None = None) -> RunView:
        """The run (the latest run of the workflow id when not given) from its history."""
        assert self.client is not None
        if run_id is None:  # the current run (a history names the first run of a reset)
            run_id = (await self.client.get_workflow_handle(self.wf).describe()).run_id
        handle = self.client.get_workflow_handle(self.wf, run_id=run_id)
        history = await handle.fetch_history()
        view = read(self.wf, run_id, list(history.events))
        if view.base_run is not None:
            view.source = await self.view(view.base_run)
        return view

    async def load(self, run_id: str | None = None, asked: int | None = None) -> RunView:
        """A `load` of what the history holds, read and logged as one move."""
        with self.trace.shared():
            try:
                view = await self.view(run_id)
            except Exception as exc:  # no such workflow yet: an empty thread
                if "not found" not in str(exc).lower():
                    raise
                self.trace.event("load", **trace_load(self.wf))
                return RunView(self.wf, "", plan=self.job["workflow"])
            fields = view.load_fields(asked)
            self.trace.event(
                "load",
                thread=self.wf,
                asked=None if asked is None else view.ckid(asked),
                **fields,
            )
        self.current = fields["checkpoint"]
        return view

    async def sync(self, run_id: str, parent: str) -> None:
        """A process that takes up a task of a run at a checkpoint its own run is not at got
        that state from the server (the workflow task's history, the activity's input): it
        loads it."""
        if self.current != parent:
            await self.load(run_id)

    async def observe(self, run_id: str) -> RunView:
        """Logs `put_writes` + `put` for each checkpoint this process made that the history now
        records (the server acknowledged it), then reaches `<node>.saved` for each."""
        saved: list[str] = []
        with self.trace.shared():
            view = await self.view(run_id)
            for k in range(1, view.count() + 1):
                made = self.unacked.get((run_id, k))
                if made is None or made != view.ckid(k):
                    continue
                del self.unacked[(run_id, k)]
                self.stored(self.wf, view.ckid(k - 1), view.task(k), made, view.digest(k))
                saved.append(node(PLANS[view.plan][k - 1]))
        for name in saved:
            self.kill.hit(f"{name}.saved")
        return view

    def from_workflow(self, coro: Any) -> Any:
        """Runs a recorder coroutine on the process's event loop from the workflow's thread
        (the workflow code waits for it; the loop is free meanwhile)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)


def rec() -> Recorder:
    assert REC is not None
    return REC


# ------------------------------------------------------------------ workflow and activities


@workflow.defn(name="resume-check", sandboxed=False)
class Flow:
    """Runs a plan: activities in order, waits that take the oldest unconsumed answer."""

    def __init__(self) -> None:
        self.inbox: list[dict[str, Any]] = []
        self.taken = 0

    @workflow.signal
    def answer(self, message: dict[str, Any]) -> None:
        self.inbox.append(message)

    @workflow.update
    def answer_update(self, message: dict[str, Any]) -> str:
        self.inbox.append(message)
        return "accepted"

    @workflow.run
    async def run(self, plan: str) -> list[Any]:
        run_id = workflow.info().run_id
        results: list[Any] = []
        ops = PLANS[plan]
        for k, op in enumerate(ops, start=1):
            if op[0] == "act":
                results.append(
                    await workflow.execute_activity(
                        op[1],
                        k,
                        start_to_close_timeout=ACTIVITY_TIMEOUT,
                        retry_policy=RETRY,
                    )
                )
                if not workflow.unsafe.is_replaying():
                    rec().from_workflow(rec().observe(run_id))
                continue
            task = None
            if not workflow.unsafe.is_replaying():
                task = rec().from_workflow(begin_wait(run_id, k))
            await workflow.wait_condition(lambda: len(self.inbox) > self.taken)
            message = self.inbox[self.taken]
            self.taken += 1
            results.append(message["value"])
            if not workflow.unsafe.is_replaying():
                rec().from_workflow(end_wait(run_id, k, task, message))
        if not workflow.unsafe.is_replaying():
            rec().from_workflow(end_run(run_id, len(ops)))
        return results


async def begin_wait(run_id: str, k: int) -> str:
    """The wait task starts: schedule + task_start on the checkpoint before it."""
    r = rec()
    view = await r.observe(run_id)
    parent = view.ckid(k - 1)
    await r.sync(run_id, parent)
    task = view.task(k)
    name = node(PLANS[view.plan][k - 1])
    r.start(r.wf, parent, task, name)
    r.started.add(task)
    r.kill.hit("wait.start")
    return task


async def end_wait(run_id: str, k: int, task: str | None, message: dict[str, Any]) -> None:
    """The wait took an answer: task_end with what it received, step to the next checkpoint
    (in memory: the server records it when this workflow task completes)."""
    r = rec()
    view = await r.view(run_id)
    parent = view.ckid(k - 1)
    task = view.task(k)
    name = node(PLANS[view.plan][k - 1])
    if task not in r.started:  # this process took the wait up after a crash, the answer in
        await r.sync(run_id, parent)
        r.start(r.wf, parent, task, name)
    # what this wait received, whichever wait its sender meant (`message["interrupt"]`)
    resumed = [{"interrupt": task, "value": message["value"]}]
    async with r.answering:  # a sender in this process has logged its answer first
        r.ev("task_end", thread=r.wf, task=task, outcome="ok", resumed=resumed)
    made = ck(view.prefix, k, r.proc)
    r.ev("step", thread=r.wf, checkpoint=made, parent=parent)
    r.current = made
    r.unacked[(run_id, k)] = made
    r.kill.hit("wait.consumed")


async def end_run(run_id: str, n: int) -> None:
    r = rec()
    view = await r.observe(run_id)
    await r.sync(run_id, view.ckid(n))  # the workflow task came with the whole history
    r.ev("schedule", thread=r.wf, checkpoint=view.ckid(n), tasks=[])
    r.at_end.add(run_id)
    r.kill.hit("workflow.returning")


def make_activity(name: str, kind: str) -> Any:
    @activity.defn(name=name)
    async def body(k: int) -> str:
        r = rec()
        info = activity.info()
        view = await r.observe(info.workflow_run_id)
        parent = view.ckid(k - 1)
        await r.sync(info.workflow_run_id, parent)
        task = view.task(k)
        r.start(r.wf, parent, task, name)
        r.kill.hit(f"{name}.start")
        r.effects.fire(r.wf, task, name, kind)
        r.kill.hit(f"{name}.effect")
        r.ev("task_end", thread=r.wf, task=task, outcome="ok")
        made = ck(view.prefix, k, r.proc)
        r.ev("step", thread=r.wf, checkpoint=made, parent=parent)
        r.current = made
        r.unacked[(info.workflow_run_id, k)] = made
        return f"{name}-done/{r.proc}"

    return body


class _Returned(ActivityInboundInterceptor):
    """`<name>.saving`: the activity function returned, the worker has not yet reported its
    completion to the server (the SDK reports it after the interceptor returns)."""

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await self.next.execute_activity(input)
        rec().kill.hit(f"{activity.info().activity_type}.saving")
        return result


class KillAfterReturn(Interceptor):
    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Returned(next)


def activities() -> list[Any]:
    seen: dict[str, str] = {}
    for ops in PLANS.values():
        for op in ops:
            if op[0] == "act":
                seen.setdefault(op[1], op[2])
    return [make_activity(name, kind) for name, kind in seen.items()]


# ------------------------------------------------------------------ the roles of a process


async def parked(
    r: Recorder, other_than: str | None = None, timeout: float = 40
) -> tuple[str, str]:
    """Waits until the latest run waits for an answer; returns the wait's task and checkpoint."""

    async def seen() -> tuple[str, str] | None:
        try:
            view = await r.view()
        except Exception:  # the run is not there yet
            return None
        k = view.parked()
        if k is None or view.task(k) == other_than:
            return None
        return view.task(k), view.ckid(k - 1)

    found = await apoll(seen, timeout=timeout, every=0.05)
    if found is None:
        raise SystemExit(f"{r.wf} never waited for an answer")
    return found


async def send(r: Recorder, value: str, seen: tuple[str, str], how: str) -> None:
    """An answer to the wait the sender saw (`seen`): a signal, or an update with an id.

    A signal is logged once the server took it (`resume` + `put_writes`, under the trace's
    lock and the process's own, so that no wait logs receiving it first); a signal the server
    refuses (the workflow has ended) was never written, and is noted in the result only. An
    update is accepted by the workflow code itself, so it is logged as DBOS's `send` is:
    `resume` before the call, `put_writes` once it returned."""
    from temporalio.service import RPCError

    assert r.client is not None
    interrupt, at = seen
    message = {"value": value, "interrupt": interrupt, "against": at, "by": r.proc}
    handle = r.client.get_workflow_handle(r.wf)
    if how == "update":
        update_id = f"answer-{interrupt}"
        before = await r.view()
        if any(a.update_id == update_id for a in before.answers):
            # the server answers a repeated update id with the first call's outcome and writes
            # nothing: this click wrote no answer
            await handle.execute_update(Flow.answer_update, message, id=update_id)
            r.refused.append(f"{value}: update {update_id} deduplicated by the server")
            return
        r.ev("resume", thread=r.wf, checkpoint=at, interrupt=interrupt, value=value)
        r.kill.hit("answer.before-send")
        await handle.execute_update(Flow.answer_update, message, id=update_id)
        r.acked("put_writes", thread=r.wf, checkpoint=at, task=None, kind="resume")
        r.kill.hit("answer.sent")
        return
    r.kill.hit("answer.before-send")
    async with r.answering:
        with r.trace.shared():
            try:
                await handle.signal(Flow.answer, message)
            except RPCError as exc:
                r.refused.append(f"{value}: {exc}")
                return
            r.trace.event("resume", thread=r.wf, checkpoint=at, interrupt=interrupt, value=value)
            r.trace.event("put_writes", thread=r.wf, checkpoint=at, task=None, kind="resume")
    r.kill.hit("answer.sent")


async def answer_all(r: Recorder) -> None:
    seen: tuple[str, str] | None = None
    for a in r.job.get("answers", []):
        if a.get("remember"):
            view = await r.view()
            seen = (view.task(a["remember"]), view.ckid(view.count()))
        elif not (a.get("again") and seen):
            seen = await parked(r, other_than=seen[0] if seen else None)
        await send(r, a["value"], seen, a.get("how", "signal"))


async def reset(r: Recorder, j: int, exclude_signals: bool) -> str:
    """ResetWorkflowExecution to the workflow task after operation j: a new run of the same
    workflow id with the history up to there, then operation j+1 onward again."""
    assert r.client is not None
    source = await r.load(asked=j)
    request = ResetWorkflowExecutionRequest(
        namespace="default",
        workflow_execution=WorkflowExecution(workflow_id=r.wf, run_id=source.run_id),
        reason=f"resume-check fork at {j}",
        workflow_task_finish_event_id=source.reset_point(j),
        request_id=f"{r.wf}-{r.proc}",
        reset_reapply_exclude_types=(
            [ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL] if exclude_signals else []
        ),
    )
    with r.trace.shared():
        response = await r.client.workflow_service.reset_workflow_execution(request)
        view = await r.view(response.run_id)
        copy = view.ckid(j)
        r.trace.event("fork", thread=r.wf, parent=source.ckid(j), checkpoint=copy)
        r.trace.event("put", checkpoint=copy, digest=view.digest(j))
    r.current = copy
    return response.run_id


def make_worker(r: Recorder) -> Worker:
    assert r.client is not None
    return Worker(
        r.client,
        task_queue=TASK_QUEUE,
        workflows=[Flow],
        activities=activities(),
        interceptors=[KillAfterReturn()],
        workflow_runner=UnsandboxedWorkflowRunner(),
        max_cached_workflows=0,  # every workflow task replays the history: no sticky queue
        identity=r.proc,
    )


async def start_flow(r: Recorder, **options: Any) -> WorkflowHandle[Any, Any]:
    """The caller starts the job's workflow under the cell's workflow id."""
    assert r.client is not None
    return await r.client.start_workflow(
        Flow.run,
        r.job["workflow"],
        id=r.wf,
        task_queue=TASK_QUEUE,
        task_timeout=WORKFLOW_TASK_TIMEOUT,
        **options,
    )


async def amain(r: Recorder) -> Any:
    global REC
    REC, job = r, r.job
    r.loop = asyncio.get_running_loop()
    r.client = await Client.connect(job["address"], identity=r.proc)
    role, wf = job["role"], job["wf"]
    run_id: str | None = None
    handle: WorkflowHandle[Any, Any] | None = None
    if role == "run":
        r.ev("load", **trace_load(wf))
        r.ev("step", thread=wf, checkpoint=ck(wf, 0), parent=None)
        handle = await start_flow(r)
        run_id = handle.result_run_id
        view = await r.view(run_id)
        r.acked("put", checkpoint=ck(wf, 0), digest=view.digest(0))
        r.current = ck(wf, 0)
        if (job.get("kill_at") or "").startswith("wait.waiting"):
            async with make_worker(r):
                await parked(r)  # the history shows the workflow waiting
                r.kill.hit("wait.waiting")
    elif role == "rerun":
        # the caller starts the same workflow id again; Temporal returns the running one
        await r.load()
        handle = await start_flow(r, id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING)
    elif role in ("recover", "answer", "result"):
        if role == "answer" and not any(a.get("remember") for a in job.get("answers", [])):
            await parked(r)  # a request handler is called once the workflow waits
        await r.load()
    elif role == "fork":
        run_id = await reset(r, job["fork_at"], job.get("exclude_signals", False))
    else:
        raise SystemExit(f"unknown role {role}")
    if handle is None:
        handle = r.client.get_workflow_handle(wf, run_id=run_id)
    # a request handler (`answer`) and a reader (`result`) run no worker
    worker = make_worker(r) if role not in ("answer", "result") else None
    async with worker if worker is not None else contextlib.nullcontext():
        await answer_all(r)
        result = await handle.result(follow_runs=True)
        r.kill.hit("returned")
        ended = await r.observe((await r.view()).run_id)
        if ended.run_id not in r.at_end:
            # the result came from a run another process finished: this one observed the end
            await r.load(ended.run_id)
    r.ev("finish", outcome="done")
    return {"result": result, "refused": r.refused} if r.refused else result


class TemporalWorker(Recorder):
    """One process: a client of the cell's dev server, the job's role, a worker where the role
    runs one."""

    def run(self) -> Any:
        return asyncio.run(amain(self))

    def close(self) -> None:
        # The SDK's native threads can abort the interpreter's shutdown (SIGABRT after the work
        # is done): every trace line is already written with os.write, so leave at once.
        os._exit(0)


main = TemporalWorker.main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
