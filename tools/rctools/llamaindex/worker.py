"""One process of a LlamaIndex Workflows cell: `python -m rctools.llamaindex.worker JOB.json`.

LlamaIndex Workflows keeps a run's durable state where the application puts it: the docs show
`ctx.to_dict()` stored in a database and `Workflow.run(ctx=Context.from_dict(workflow, data))`
to resume it. The application here is that pattern, done at every step boundary: it streams the
run's internal events and, when a step has finished (`StepStateChanged` not running), stores
`handler.ctx.to_dict()` as a row of a SQLite table before the next step may start (each step
waits for the previous boundary's row: sync durability). The recorder never patches LlamaIndex;
the stored snapshots are the ground truth:

- a stored snapshot is a checkpoint `<run>#<row id>`; it schedules the steps it holds work for
  (an event queued or in progress for them: what `from_dict` hands back to the runtime);
- a step invocation is a task `<checkpoint>:<step>`; its body logs `task_start` as its first line
  and fires one effect (a ledger line and an `effect` event);
- `ctx.wait_for_event(HumanResponseEvent, waiter_event=InputRequiredEvent(...))` parks the step:
  the snapshot stored then holds the waiter, and it is the parked task's interrupt write on the
  checkpoint it ran from; `ctx.send_event(HumanResponseEvent(...))` on the restored context is the
  answer, delivered when the step runs again (the docs: the step replays from its top);
- a run started from an older snapshot under a new run id is a fork.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import sys
from typing import Any

from rctools.suite.trace import load as trace_load
from rctools.suite.worker import Worker

# graph name -> steps in order; the step that waits for a human answer
GRAPHS: dict[str, list[str]] = {
    "linear": ["reserve", "charge", "mail", "ship"],
    "approval": ["quote", "approve", "book"],
    "approval-early": ["quote", "approve", "book"],
}
WAITS = {"approval": "approve", "approval-early": "approve"}
# graphs whose waiting step fires its effect before it waits, the pattern the docs warn about
# ("make any preceding work safe to repeat"); in the others it fires after the answer
EARLY = {"approval-early"}


def nodes(graph: str) -> list[str]:
    return list(GRAPHS[graph])


def content(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint holds: the state and the work per step (not the clock fields)."""
    return {"state": snapshot.get("state"), "workers": snapshot.get("workers")}


def digest(snapshot: dict[str, Any]) -> str:
    body = json.dumps(content(snapshot), sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def value_digest(value: str) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


def pending_steps(snapshot: dict[str, Any]) -> list[str]:
    """The steps a snapshot gives work to: an event queued or in progress for them."""
    workers = snapshot.get("workers") or {}
    return sorted(name for name, w in workers.items() if w.get("queue") or w.get("in_progress"))


def waiting_steps(snapshot: dict[str, Any]) -> list[str]:
    workers = snapshot.get("workers") or {}
    return sorted(name for name, w in workers.items() if w.get("collected_waiters"))


class Store:
    """The application's snapshot table: one row per stored `ctx.to_dict()`."""

    def __init__(self, db: str) -> None:
        self.db = db
        con = sqlite3.connect(db, timeout=30)
        with con:
            con.execute(
                "create table if not exists snapshots (id integer primary key autoincrement,"
                " run text, parked integer, ctx text)"
            )
        con.close()

    def save(self, run: str, snapshot: dict[str, Any], parked: bool) -> int:
        con = sqlite3.connect(self.db, timeout=30)
        try:
            with con:
                cur = con.execute(
                    "insert into snapshots (run, parked, ctx) values (?, ?, ?)",
                    (run, int(parked), json.dumps(snapshot)),
                )
            return int(cur.lastrowid or 0)
        finally:
            con.close()

    def rows(self, run: str) -> list[tuple[int, bool, dict[str, Any]]]:
        con = sqlite3.connect(self.db, timeout=30)
        try:
            got = con.execute(
                "select id, parked, ctx from snapshots where run = ? order by id", (run,)
            ).fetchall()
        finally:
            con.close()
        return [(r[0], bool(r[1]), json.loads(r[2])) for r in got]


class LlamaIndexWorker(Worker):
    """One process: the workflow class built from the graph, then the job's role (run,
    recover, fork or answer) from the snapshot the docs restore from."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(job)
        self.thread, self.graph, self.role = job["run"], job["graph"], job["role"]
        self.store = Store(job["db"])
        # a fork stores its rows under a run id of its own; its chain stays the source's thread
        self.run_id = f"{self.thread}/fork-{self.proc}" if self.role == "fork" else self.thread
        self.steps = GRAPHS[self.graph]
        self.waits = WAITS.get(self.graph)
        # the checkpoint the process runs from; steps started; snapshots stored (the loaded one
        # counts: step k starts only once k+1 boundaries are stored); the answer the waiting
        # step received; the task of each step; whether concurrent resumers met after an effect
        self.ck: str | None = None
        self.started = 0
        self.saved = 0
        self.answered: dict[str, Any] | None = None
        self.tasks: dict[str, str] = {}
        self.overlapped = False
        self.boundary = asyncio.Condition()  # a snapshot stored: the next step may start
        self.workflow = self.build()

    def ck_of(self, rid: int) -> str:
        return f"{self.thread}#{rid}"

    @staticmethod
    def checkpoints(rows: list[tuple[int, bool, dict[str, Any]]]) -> list[tuple[int, dict]]:
        return [(rid, snap) for rid, parked, snap in rows if not parked]

    def load_event(
        self, rows: list[tuple[int, bool, dict[str, Any]]], asked: str | None, ev: str = "load"
    ) -> None:
        cks = self.checkpoints(rows)
        later: list[tuple[int, bool, dict[str, Any]]] = []
        if asked is not None:
            index = next(i for i, (rid, _) in enumerate(cks) if self.ck_of(rid) == asked)
            later = [r for r in rows if r[0] > cks[index][0]]
            cks = cks[: index + 1]
        else:
            later = rows[-1:] if rows and rows[-1][1] else []
        rid, snap = cks[-1]
        ck = self.ck_of(rid)
        writes: list[dict[str, Any]] = []
        if later and later[0][1] and self.waits:  # the row after it: its task parked
            parked = f"{ck}:{self.waits}"
            writes = [{"task": parked, "kind": "interrupt", "interrupt": parked}]
        elif later:  # the row after it: its tasks' results, stored
            writes = [{"task": f"{ck}:{n}", "kind": "ok"} for n in pending_steps(snap)]
        self.trace.event(
            ev,
            thread=self.thread,
            asked=asked,
            checkpoint=ck,
            parent=self.ck_of(cks[-2][0]) if len(cks) > 1 else None,
            digest=digest(snap),
            writes=writes,
            answers=[],
        )
        self.ck = ck

    def fire(self, task: str, name: str) -> None:
        self.effects.fire(self.thread, task, name)
        self.kill.hit(f"{name}.effect")
        if self.job.get("barrier") and self.role == "recover" and not self.overlapped:
            # concurrent resumers: both fired their first effect before either stores, so the
            # overlap is the same every run (as in the Burr suite)
            self.overlapped = True
            self.meet("barrier-effect")

    def make_step(self, name: str, index: int) -> Any:
        from workflows import Context
        from workflows.events import HumanResponseEvent, InputRequiredEvent, StopEvent

        from rctools.llamaindex.events import TO

        worker, steps = self, self.steps

        async def body(self: Any, ctx: Context, ev: Any) -> Any:
            async with worker.boundary:  # the previous boundary's snapshot is stored first
                await worker.boundary.wait_for(lambda: worker.saved > worker.started)
                worker.started += 1
            task = f"{worker.ck}:{name}"
            worker.tasks[name] = task
            worker.trace.event("task_start", thread=worker.thread, task=task, node=name, path=name)
            worker.kill.hit(f"{name}.start")
            early = name != worker.waits or worker.graph in EARLY
            if early:
                worker.fire(task, name)
            if name == worker.waits:
                answer = await ctx.wait_for_event(
                    HumanResponseEvent,
                    waiter_event=InputRequiredEvent(prefix=f"approve {name}?"),
                    waiter_id=name,
                    timeout=60,
                )
                worker.answered = {
                    "interrupt": task,
                    "value": value_digest(str(answer.response)),
                }
            if not early:
                worker.fire(task, name)
            if index == len(steps) - 1:
                return StopEvent(result=name)
            return TO[steps[index + 1]]()

        body.__name__ = name
        body.__qualname__ = f"RecordedWorkflow.{name}"  # a method of the class below
        return body

    def build(self) -> Any:
        """The workflow: one step per node of the graph, each passing its own event on."""
        from workflows import Context, Workflow, step
        from workflows.events import StartEvent, StopEvent

        from rctools.llamaindex.events import TO

        steps = self.steps
        namespace: dict[str, Any] = {}
        for i, name in enumerate(steps):
            fn = self.make_step(name, i)
            fn.__annotations__ = {
                "ctx": Context,
                "ev": StartEvent if i == 0 else TO[name],
                "return": StopEvent if i == len(steps) - 1 else TO[steps[i + 1]],
            }
            namespace[name] = step(fn)
        return type("RecordedWorkflow", (Workflow,), namespace)(timeout=90)

    def send(self, handler: Any) -> None:
        """The answer to the waiting step: written in memory, delivered by send_event."""
        from workflows.events import HumanResponseEvent

        value = self.job["value"]
        interrupt = f"{self.ck}:{self.waits}"
        self.answer(self.thread, self.ck, interrupt, value_digest(value))
        handler.ctx.send_event(HumanResponseEvent(response=value))

    async def stored_boundary(self) -> None:
        async with self.boundary:
            self.saved += 1
            self.boundary.notify_all()

    async def boundary_reached(self, handler: Any, name: str) -> None:
        """A step finished: its result and the next checkpoint are one stored snapshot."""
        answer = self.answered if name == self.waits else None
        if name == self.waits:
            self.answered = None

        def save() -> tuple[str, str, list[str]]:
            snap = handler.ctx.to_dict()
            self.ck = self.ck_of(self.store.save(self.run_id, snap, False))
            return self.ck, digest(snap), pending_steps(snap)

        self.complete(self.thread, self.tasks[name], name, self.ck, answer, save)
        await self.stored_boundary()

    def run(self) -> Any:
        return asyncio.run(self.play())

    async def play(self) -> Any:
        from workflows import Context
        from workflows.events import InputRequiredEvent, StepState, StepStateChanged

        trace, thread, role, waits = self.trace, self.thread, self.role, self.waits
        # start: a fresh run, or the snapshot the docs restore from
        answering = False
        with trace.shared():
            rows = self.store.rows(thread)
            if role == "run" and not rows:
                trace.event("load", **trace_load(thread))
                restored = None
            elif (role == "answer" and not rows[-1][1] and not pending_steps(rows[-1][2])) or (
                role == "recover" and rows[-1][1]
            ):
                # an answer with nothing waiting, or a restart of a run that waits for its
                # answer: the application only reads what is stored
                self.load_event(rows, None, ev="read")
                return {"result": "waiting for its answer" if rows[-1][1] else "nothing waiting"}
            else:
                asked = None
                if role == "fork":
                    cks = self.checkpoints(rows)
                    asked = self.ck_of(cks[self.job.get("from", -1)][0])
                self.load_event(rows, asked)
                restored = next(
                    s for rid, s in self.checkpoints(rows) if self.ck_of(rid) == self.ck
                )
                if role != "fork" and rows[-1][1]:
                    restored = rows[-1][2]  # the parked snapshot holds the waiter
                    answering = role == "answer"
        self.loaded()

        if restored is None:
            handler = self.workflow.run()
        else:
            await self.stored_boundary()
            ctx = Context.from_dict(self.workflow, restored)
            if role == "fork":
                copy = f"{thread}#fork-{self.proc}"
                trace.event("fork", thread=thread, parent=self.ck, checkpoint=copy)
                with trace.shared():
                    self.store.save(self.run_id, restored, False)
                    trace.event("put", checkpoint=copy, digest=digest(restored))
                    self.schedule(thread, copy, pending_steps(restored))
                self.ck = copy
            handler = self.workflow.run(ctx=ctx)
            if answering:
                self.send(handler)

        first = restored is None
        outcome = "done"
        result: Any = None
        try:
            async for ev in handler.stream_events(expose_internal=True):
                if first and isinstance(ev, StepStateChanged):
                    # the run's first snapshot: the start event queued for the first step
                    first = False
                    snap = handler.ctx.to_dict()
                    with trace.shared():
                        ck = self.ck_of(self.store.save(self.run_id, snap, False))
                        trace.event("step", thread=thread, checkpoint=ck, parent=None)
                        trace.event("put", checkpoint=ck, digest=digest(snap))
                        self.schedule(thread, ck, pending_steps(snap))
                    self.ck = ck
                    await self.stored_boundary()
                if isinstance(ev, InputRequiredEvent):
                    self.started -= 1  # the parked step starts again when answered
                    self.park(
                        thread,
                        self.tasks[waits],
                        waits,
                        lambda: self.ck,
                        lambda: self.store.save(self.run_id, handler.ctx.to_dict(), True),
                    )
                    if self.job.get("value") is not None and role != "answer":
                        self.send(handler)  # the waiting process answers itself
                        continue
                    outcome = "parked"
                    await handler.cancel_run()
                    break
                if (
                    isinstance(ev, StepStateChanged)
                    and ev.step_state == StepState.NOT_RUNNING
                    and ev.output_event_name is not None
                    and ev.output_event_name != "None"
                ):
                    await self.boundary_reached(handler, ev.name)
            if outcome == "done":
                result = await handler
                self.kill.hit("returned")
        except Exception as exc:  # a refusal of the runtime is a result, not a crash
            result = self.refusal(exc)
            outcome = ""
        if outcome:
            trace.event("finish", outcome=outcome)
        return {"result": str(result)}


main = LlamaIndexWorker.main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
