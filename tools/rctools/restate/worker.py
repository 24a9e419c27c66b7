"""One service (deployment) process of a Restate cell: `python -m rctools.restate.worker JOB`.

It serves the SDK's ASGI app with hypercorn on the cell's loopback port; restate-server
invokes its handlers. The recorder is the application itself, never a patch of Restate: each
`ctx.run` body writes `schedule`, `task_start`, the effect, `task_end` + `step`; once
`ctx.run` returned (the SDK returns only after the server journaled the result) the handler
writes `put_writes` + `put` with the digest read back from the journal. Waiting for a durable
promise (`ctx.promise(name).value()`) is the wait-for-input task; its answer is the `approve`
handler's `resolve`, sent by the cell's driver.

Every invocation of the handler is an *attempt*: the first in this process is named after the
process (`w1`), later ones `w1.2`, `w1.3` (the server retries an invocation on the same process
after it was itself restarted). An attempt starts with a `load` of what the journal holds
(journal.py) and replays what is stored: the SDK hands back a stored result without running
the body, so only bodies that really run write events.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import hypercorn.asyncio
import hypercorn.config
import restate
from restate import RunOptions, Workflow, WorkflowContext, WorkflowSharedContext
from resumecheck.waiting import apoll, poll

from rctools.restate.journal import snapshot
from rctools.restate.server import query
from rctools.suite.crash import KillPoints
from rctools.suite.effects import Effects
from rctools.suite.stored import ck
from rctools.suite.trace import TraceWriter
from rctools.suite.trace import load as trace_load
from rctools.suite.workflows import BOOK, QUOTE, Op, spelled

# workflow -> its operations in order: ("run", name, effect kind) or ("promise", name); and
# `awakeable`, Restate's own: the approval as an awakeable instead of a durable promise
_SHARED = spelled("run", "promise", second="approval-2")
WORKFLOWS: dict[str, list[Op]] = {
    "linear": _SHARED["linear"],
    "approval": _SHARED["approval"],
    "awakeable": [("run", *QUOTE), ("awakeable", "approval"), ("run", *BOOK)],
    "two-approvals": _SHARED["two-approvals"],
}
VISIBLE_TIMEOUT = 20.0


def nodes(workflow: str) -> list[str]:
    return [op[1] if op[0] == "run" else f"{op[0]}:{op[1]}" for op in WORKFLOWS[workflow]]


class Abandoned(Exception):
    """The server this attempt talked to was killed: the attempt is gone, it records nothing
    more (the driver logged its crash) and stops."""


class Pauses:
    """Where the driver kills the *server*: at the chosen label the attempt tells the driver
    (a file), waits until the server was killed and restarted, then abandons itself."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.label = job.get("pause_at")
        self.folder = Path(job["control"])
        self.seen: dict[str, int] = {}

    def hit(self, label: str, attempt: Attempt) -> None:
        self.seen[label] = self.seen.get(label, 0) + 1
        if label != self.label or self.seen[label] != 1:
            return
        (self.folder / "paused").write_text(attempt.name)
        poll((self.folder / "go").exists, timeout=math.inf, every=0.02)
        raise Abandoned(label)


class Attempt:
    """One invocation of the workflow handler in this process: its trace writer, where it
    is on the chain, and the promise result it still has to acknowledge."""

    def __init__(self, proc: Process, name: str, invocation: str) -> None:
        self.proc, self.name, self.invocation = proc, name, invocation
        self.key = proc.job["key"]
        self.trace = TraceWriter(Path(proc.job["trace"]), name)
        self.effects = Effects(proc.job, self.trace)
        self.ran: set[int] = set()
        self.deferred: tuple[int, str] | None = None  # (task index, its checkpoint's parent)
        with self.trace.shared():
            snap = self.snap()
            if not snap.started():
                # the first attempt: the input the server stored is the chain's first checkpoint
                self.ev("load", **trace_load(self.key))
                self.ev("step", thread=self.key, checkpoint=ck(self.key, 0), parent=None)
                self.ev("put", checkpoint=ck(self.key, 0), digest=snap.digest(0))
                self.loaded = 0
            else:
                self.loaded = snap.count()
                self.ev("load", thread=self.key, asked=None, **snap.load_fields())
            self.cur = snap.ckid(self.loaded)

    def dead(self) -> bool:
        return (Path(self.proc.job["control"]) / f"dead-{self.name}").exists()

    def ev(self, ev: str, **fields: Any) -> None:
        if self.dead():
            raise Abandoned(ev)
        self.trace.event(ev, **fields)

    def start(self, task: str, node: str) -> None:
        """The attempt's checkpoint schedules the one task `task`, a run of `node`; it starts."""
        tasks = [{"task": task, "node": node, "path": node}]
        self.ev("schedule", thread=self.key, checkpoint=self.cur, tasks=tasks)
        self.ev("task_start", thread=self.key, task=task, node=node, path=node)

    def snap(self) -> Any:
        return snapshot(
            self.proc.job["admin"], self.key, self.invocation, Path(self.proc.job["control"])
        )

    def hit(self, label: str) -> None:
        self.proc.kill.hit(label)
        self.proc.pauses.hit(label, self)

    def _visible(self, k: int) -> Any:
        """Waits until the journal holds task k's command (the SDK sends a `ctx.run` command
        before it runs the body): a kill inside the body then always finds it journaled."""
        seen: list[Any] = []

        def journaled() -> bool:
            seen.append(self.snap())
            return len(seen[-1].tasks) >= k

        poll(journaled, timeout=VISIBLE_TIMEOUT, every=0.02)
        return seen[-1]

    def flush(self) -> None:
        """The consumed promise's result is stored once the journal has a later command: the
        acknowledgement of its task's write and of the checkpoint after it."""
        if self.deferred is None:
            return
        k, parent = self.deferred
        with self.trace.shared():
            snap = self.snap()
            task = f"{self.key}:{k}"
            self.ev("put_writes", thread=self.key, checkpoint=parent, task=task, kind="ok")
            self.ev("put", checkpoint=snap.ckid(k), digest=snap.digest(k))
        self.deferred = None

    def body(self, k: int, name: str, kind: str) -> str:
        """The body of `ctx.run(name)` (runs in the SDK's executor thread)."""
        self._visible(k)
        self.flush()
        task = f"{self.key}:{k}"
        self.start(task, name)
        self.hit(f"{name}.start")
        if self.dead():
            raise Abandoned(name)
        self.effects.fire(self.key, task, name, kind)
        self.hit(f"{name}.effect")
        self.ev("task_end", thread=self.key, task=task, outcome="ok")
        self.ev("step", thread=self.key, checkpoint=ck(self.key, k, self.name), parent=self.cur)
        self.ran.add(k)
        return f"{name}-done/{self.name}"

    def after_run(self, k: int, name: str) -> None:
        """`ctx.run` returned: if this attempt ran the body, the journal now holds its result."""
        if k not in self.ran:
            return  # replayed from the journal: the load already put us past it
        with self.trace.shared():
            snap = self.snap()
            task = f"{self.key}:{k}"
            self.ev("put_writes", thread=self.key, checkpoint=self.cur, task=task, kind="ok")
            self.ev("put", checkpoint=snap.ckid(k), digest=snap.digest(k))
            self.cur = snap.ckid(k)
        self.hit(f"{name}.recorded")

    def before_promise(self, k: int, name: str, kind: str = "promise") -> bool:
        """Starts the wait for promise (or awakeable) `name` (task k) unless it is replayed;
        returns whether this attempt records it."""
        if k <= self.loaded:
            return False
        self.flush()
        node = f"{kind}:{name}"
        self.start(f"{self.key}:{k}", node)
        return True

    def after_promise(self, k: int, value: Any, kind: str = "promise") -> None:
        """The wait returned the answer (runs in a thread: the trace lock the answering
        request handler holds until it logged its answer must not block the event loop)."""
        task = f"{self.key}:{k}"
        with self.trace.shared():
            self.ev(
                "task_end",
                thread=self.key,
                task=task,
                outcome="ok",
                resumed=[{"interrupt": task, "value": value}],
            )
            (Path(self.proc.job["control"]) / f"consumed-{k}").write_text(self.name)
            made = ck(self.key, k, f"{kind}:{self.name}")
            self.ev("step", thread=self.key, checkpoint=made, parent=self.cur)
        self.deferred = (k, self.cur)
        self.cur = made
        self.hit("promise.consumed")

    async def settle(self) -> None:
        """Waits (without blocking the event loop, which serves `approve`) until every answer
        sent to this workflow has completed: a kill point after the answer then never kills
        the answer's own invocation, which Restate would retry and refuse."""
        sql = (
            "select count(*) as n from sys_invocation where target_handler_name = 'approve' "
            f"and target_service_key = '{self.key}' and status != 'completed'"
        )

        async def settled() -> bool:
            rows = await asyncio.to_thread(query, self.proc.job["admin"], sql)
            return bool(rows) and int(rows[0]["n"]) == 0

        await apoll(settled, timeout=VISIBLE_TIMEOUT, every=0.02)

    def returning(self) -> None:
        self.flush()
        self.ev("schedule", thread=self.key, checkpoint=self.cur, tasks=[])
        self.hit("workflow.returning")
        self.ev("finish", outcome="done")


class Process:
    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.kill = KillPoints()
        self.pauses = Pauses(job)
        self._attempts = 0
        self._lock = threading.Lock()

    def attempt(self, invocation: str) -> Attempt:
        with self._lock:
            self._attempts += 1
            n = self._attempts
        name = self.job["proc"] if n == 1 else f"{self.job['proc']}.{n}"
        return Attempt(self, name, invocation)


def build(proc: Process) -> Any:
    """The Restate workflow `order`: `run` (the workflow) and `approve` (its answer)."""
    wf = Workflow("order")
    ops = WORKFLOWS[proc.job["workflow"]]

    @wf.main()
    async def run(ctx: WorkflowContext, order: str) -> list[Any]:
        # every recorder call that may wait for the trace lock runs off the event loop, which
        # must keep serving `approve` while a request handler holds that lock
        att = await asyncio.to_thread(proc.attempt, ctx.request().id)
        results: list[Any] = []
        for k, op in enumerate(ops, start=1):
            if op[0] == "run":
                name, kind = op[1], op[2]
                options: RunOptions[str] = RunOptions()
                results.append(await ctx.run_typed(name, att.body, options, k, name, kind))
                await asyncio.to_thread(att.after_run, k, name)
                continue
            records = await asyncio.to_thread(att.before_promise, k, op[1], op[0])
            if op[0] == "awakeable":
                # the id is the same in every attempt; the request handler reads it here
                aid, future = ctx.awakeable(type_hint=str)
                (Path(proc.job["control"]) / f"awakeable-{op[1]}").write_text(f"{k} {aid}")
                value = await future
            else:
                value = await ctx.promise(op[1], type_hint=str).value()
            if records:
                await att.settle()
                await asyncio.to_thread(att.after_promise, k, value, op[0])
            results.append(value)
        await asyncio.to_thread(att.returning)
        return results

    @wf.handler()
    async def approve(ctx: WorkflowSharedContext, answer: dict[str, str]) -> None:
        await ctx.promise(answer["promise"], type_hint=str).resolve(answer["value"])

    return restate.app([wf])


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))

    # the cell's end: nothing of this process is in flight that the trace would need
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    proc = Process(job)
    app = build(proc)
    config = hypercorn.config.Config()
    config.bind = [f"127.0.0.1:{job['port']}"]
    config.loglevel = "WARNING"
    config.accesslog = None
    asyncio.run(hypercorn.asyncio.serve(app, config))  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
