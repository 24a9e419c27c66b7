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
from pathlib import Path
from typing import Any

from rctools.suite.crash import KillPoints, barrier
from rctools.suite.effects import Effects
from rctools.suite.trace import TraceWriter
from rctools.suite.trace import load as trace_load

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


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    return asyncio.run(run_job(job))


async def run_job(job: dict[str, Any]) -> int:
    from workflows import Context, Workflow, step
    from workflows.events import (
        HumanResponseEvent,
        InputRequiredEvent,
        StartEvent,
        StepState,
        StepStateChanged,
        StopEvent,
    )

    from rctools.llamaindex.events import TO

    trace = TraceWriter(Path(job["trace"]), job["proc"])
    kill = KillPoints()
    thread, proc, graph, role = job["run"], job["proc"], job["graph"], job["role"]
    store = Store(job["db"])
    # a fork stores its rows under a run id of its own; its chain stays the source's thread
    run_id = f"{thread}/fork-{proc}" if role == "fork" else thread
    effects = Effects(job, trace)
    steps = GRAPHS[graph]
    waits = WAITS.get(graph)
    # the checkpoint the process runs from; steps started; snapshots stored (the loaded one
    # counts: step k starts only once k+1 boundaries are stored)
    cur: dict[str, Any] = {"ck": None, "started": 0, "saved": 0, "answer": None, "tasks": {}}
    boundary = asyncio.Condition()

    def ck_of(rid: int) -> str:
        return f"{thread}#{rid}"

    def schedule(ck: str, names: list[str]) -> None:
        trace.event(
            "schedule",
            thread=thread,
            checkpoint=ck,
            tasks=[{"task": f"{ck}:{n}", "node": n, "path": n} for n in names],
        )

    def checkpoints(rows: list[tuple[int, bool, dict[str, Any]]]) -> list[tuple[int, dict]]:
        return [(rid, snap) for rid, parked, snap in rows if not parked]

    def load_event(
        rows: list[tuple[int, bool, dict[str, Any]]], asked: str | None, ev: str = "load"
    ) -> None:
        cks = checkpoints(rows)
        later: list[tuple[int, bool, dict[str, Any]]] = []
        if asked is not None:
            index = next(i for i, (rid, _) in enumerate(cks) if ck_of(rid) == asked)
            later = [r for r in rows if r[0] > cks[index][0]]
            cks = cks[: index + 1]
        else:
            later = rows[-1:] if rows and rows[-1][1] else []
        rid, snap = cks[-1]
        ck = ck_of(rid)
        writes: list[dict[str, Any]] = []
        if later and later[0][1] and waits:  # the row after it: its task parked
            writes = [{"task": f"{ck}:{waits}", "kind": "interrupt", "interrupt": f"{ck}:{waits}"}]
        elif later:  # the row after it: its tasks' results, stored
            writes = [{"task": f"{ck}:{n}", "kind": "ok"} for n in pending_steps(snap)]
        trace.event(
            ev,
            thread=thread,
            asked=asked,
            checkpoint=ck,
            parent=ck_of(cks[-2][0]) if len(cks) > 1 else None,
            digest=digest(snap),
            writes=writes,
            answers=[],
        )
        cur["ck"] = ck

    def fire(task: str, name: str) -> None:
        effects.fire(thread, task, name)
        kill.hit(f"{name}.effect")
        if job.get("barrier") and role == "recover" and not cur.get("overlapped"):
            # concurrent resumers: both fired their first effect before either stores, so the
            # overlap is the same every run (as in the Burr suite)
            cur["overlapped"] = True
            barrier(Path(job["db"]).parent / "barrier-effect", proc, job["barrier"])

    def make_step(name: str, index: int) -> Any:
        async def body(self: Any, ctx: Context, ev: Any) -> Any:
            async with boundary:  # the previous boundary's snapshot is stored first
                await boundary.wait_for(lambda: cur["saved"] > cur["started"])
                cur["started"] += 1
            ck = cur["ck"]
            task = f"{ck}:{name}"
            cur["tasks"][name] = task
            trace.event("task_start", thread=thread, task=task, node=name, path=name)
            kill.hit(f"{name}.start")
            early = name != waits or graph in EARLY
            if early:
                fire(task, name)
            if name == waits:
                answer = await ctx.wait_for_event(
                    HumanResponseEvent,
                    waiter_event=InputRequiredEvent(prefix=f"approve {name}?"),
                    waiter_id=name,
                    timeout=60,
                )
                cur["answer"] = {
                    "interrupt": task,
                    "value": value_digest(str(answer.response)),
                }
            if not early:
                fire(task, name)
            if index == len(steps) - 1:
                return StopEvent(result=name)
            return TO[steps[index + 1]]()

        body.__name__ = name
        body.__qualname__ = f"RecordedWorkflow.{name}"  # a method of the class below
        return body

    namespace: dict[str, Any] = {}
    for i, name in enumerate(steps):
        fn = make_step(name, i)
        fn.__annotations__ = {
            "ctx": Context,
            "ev": StartEvent if i == 0 else TO[name],
            "return": StopEvent if i == len(steps) - 1 else TO[steps[i + 1]],
        }
        namespace[name] = step(fn)
    workflow_class = type("RecordedWorkflow", (Workflow,), namespace)
    workflow = workflow_class(timeout=90)

    # start: a fresh run, or the snapshot the docs restore from
    answering = False
    with trace.shared():
        rows = store.rows(thread)
        if role == "run" and not rows:
            trace.event("load", **trace_load(thread))
            restored = None
        elif (role == "answer" and not rows[-1][1] and not pending_steps(rows[-1][2])) or (
            role == "recover" and rows[-1][1]
        ):
            # an answer with nothing waiting, or a restart of a run that waits for its answer:
            # the application only reads what is stored
            load_event(rows, None, ev="read")
            said = "waiting for its answer" if rows[-1][1] else "nothing waiting"
            Path(job["result"]).write_text(json.dumps({"result": said}), encoding="utf-8")
            return 0
        else:
            asked = None
            if role == "fork":
                cks = checkpoints(rows)
                asked = ck_of(cks[job.get("from", -1)][0])
            load_event(rows, asked)
            restored = next(s for rid, s in checkpoints(rows) if ck_of(rid) == cur["ck"])
            if role != "fork" and rows[-1][1]:
                restored = rows[-1][2]  # the parked snapshot holds the waiter
                answering = role == "answer"
    kill.hit("loaded")
    if job.get("barrier"):
        barrier(Path(job["db"]).parent / "barrier-load", proc, job["barrier"])

    def answer(handler: Any) -> None:
        """The answer to the waiting step: written in memory, delivered by send_event."""
        value = job["value"]
        interrupt = f"{cur['ck']}:{waits}"
        trace.event(
            "resume",
            thread=thread,
            checkpoint=cur["ck"],
            interrupt=interrupt,
            value=value_digest(value),
        )
        kill.hit("answered")
        if job.get("barrier"):
            # concurrent answerers: both answers are written before either is delivered, so
            # the overlap, and the verdict, is the same every run
            barrier(Path(job["db"]).parent / "barrier-answer", proc, job["barrier"])
        handler.ctx.send_event(HumanResponseEvent(response=value))

    async def stored_boundary() -> None:
        async with boundary:
            cur["saved"] += 1
            boundary.notify_all()

    async def boundary_reached(name: str) -> None:
        """A step finished: its result and the next checkpoint are one stored snapshot."""
        task = cur["tasks"][name]
        answer = cur.pop("answer", None) if name == waits else None
        if answer is None:
            trace.event("task_end", thread=thread, task=task, outcome="ok")
        else:
            trace.event("task_end", thread=thread, task=task, outcome="ok", resumed=[answer])
        kill.hit(f"{name}.saving")
        snap = handler.ctx.to_dict()
        with trace.shared():
            rid = store.save(run_id, snap, False)
            ck, parent = ck_of(rid), cur["ck"]
            trace.event("step", thread=thread, checkpoint=ck, parent=parent)
            if answer is not None:
                # the answer became durable in this snapshot (LlamaIndex stores none of its own)
                trace.event(
                    "put_writes", thread=thread, checkpoint=parent, task=None, kind="resume"
                )
            trace.event("put_writes", thread=thread, checkpoint=parent, task=task, kind="ok")
            trace.event("put", checkpoint=ck, digest=digest(snap))
            schedule(ck, pending_steps(snap))
        cur["ck"] = ck
        kill.hit(f"{name}.saved")
        await stored_boundary()

    if restored is None:
        handler = workflow.run()
    else:
        await stored_boundary()
        ctx = Context.from_dict(workflow, restored)
        if role == "fork":
            copy = f"{thread}#fork-{proc}"
            trace.event("fork", thread=thread, parent=cur["ck"], checkpoint=copy)
            with trace.shared():
                store.save(run_id, restored, False)
                trace.event("put", checkpoint=copy, digest=digest(restored))
                schedule(copy, pending_steps(restored))
            cur["ck"] = copy
        handler = workflow.run(ctx=ctx)
        if answering:
            answer(handler)

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
                    rid = store.save(run_id, snap, False)
                    ck = ck_of(rid)
                    trace.event("step", thread=thread, checkpoint=ck, parent=None)
                    trace.event("put", checkpoint=ck, digest=digest(snap))
                    schedule(ck, pending_steps(snap))
                cur["ck"] = ck
                await stored_boundary()
            if isinstance(ev, InputRequiredEvent):
                task = cur["tasks"][waits]
                trace.event(
                    "task_end", thread=thread, task=task, outcome="interrupt", interrupt=task
                )
                cur["started"] -= 1  # the parked step starts again when answered
                kill.hit(f"{waits}.parking")
                snap = handler.ctx.to_dict()
                with trace.shared():
                    store.save(run_id, snap, True)
                    trace.event(
                        "put_writes",
                        thread=thread,
                        checkpoint=cur["ck"],
                        task=task,
                        kind="interrupt",
                        interrupt=task,
                    )
                kill.hit(f"{waits}.parked")
                if job.get("value") is not None and role != "answer":
                    answer(handler)  # the waiting process answers itself
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
                await boundary_reached(ev.name)
        if outcome == "done":
            result = await handler
            kill.hit("returned")
    except Exception as exc:  # a refusal of the runtime is a result, not a crash
        result = {"raised": f"{type(exc).__name__}: {exc}"}
        outcome = ""
    if outcome:
        trace.event("finish", outcome=outcome)
    Path(job["result"]).write_text(json.dumps({"result": str(result)}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
