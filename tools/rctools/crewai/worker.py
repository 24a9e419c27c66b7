"""One process of a CrewAI Flows cell: `python -m rctools.crewai.worker JOB.json`.

The recorder is the application plus a `SQLiteFlowPersistence` subclass (every method calls
CrewAI's own), never a patch of CrewAI. The `flow_states` table is the ground truth:

- a row saved by `save_state` after method M completed is a checkpoint `<flow>#<row id>`; it
  schedules the methods that listen to M (the flow's own `@listen` table, the same one the class
  is built from), logged when the row is saved so that a crash before the next method starts
  cannot hide it;
- the state before the first method (the flow's default state: code, never saved by CrewAI) is
  `<flow>#init`, made by the first process;
- a method is a task `<checkpoint>:<method>`; its body logs `task_start` as its first line and
  fires one effect (a ledger line and an `effect` event);
- `@human_feedback` whose provider raises `HumanFeedbackPending` parks the method: the row and
  the `pending_feedback` row `save_pending_feedback` writes in one transaction are the task's
  interrupt write on the checkpoint it ran from; `Flow.from_pending(...).resume(value)` is the
  answer, delivered when the method completes (its completion row is the next checkpoint).

Resuming is what CrewAI's docs say: `kickoff(inputs={"id": ...})` resumes (deprecated, still the
documented resume), `kickoff(restore_from_state_id=...)` forks, `from_pending(...).resume(...)`
answers a pending review.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from rctools.suite.crash import KillPoints, barrier
from rctools.suite.effects import Effects
from rctools.suite.trace import TraceWriter
from rctools.suite.trace import load as trace_load

# graph name -> [(method, the method it listens to or None for @start, parks for review)]
GRAPHS: dict[str, list[tuple[str, str | None, bool]]] = {
    "linear": [
        ("reserve", None, False),
        ("charge", "reserve", False),
        ("mail", "charge", False),
        ("ship", "mail", False),
    ],
    "approval": [("quote", None, False), ("approve", "quote", True), ("book", "approve", False)],
}


def nodes(graph: str) -> list[str]:
    return [m for m, _, _ in GRAPHS[graph]]


def listeners(graph: str, method: str | None) -> list[str]:
    """The methods CrewAI runs after `method` completed (None: the start methods)."""
    return [m for m, after, _ in GRAPHS[graph] if after == method]


def digest(state: dict[str, Any]) -> str:
    """A checkpoint's content: the state without its id (a fork copy gets a new id)."""
    body = {k: v for k, v in state.items() if k != "id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


D0 = digest({"done": [], "made_by": "init"})  # the flow's default state


def value_digest(value: str) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


class Store:
    """Reads `flow_states` and `pending_feedback` as they are (the recorder's ground truth)."""

    def __init__(self, db: str, flow: str) -> None:
        self.db, self.flow = db, flow

    def _rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        con = sqlite3.connect(self.db, timeout=30)
        try:
            return list(con.execute(sql, args))
        except sqlite3.OperationalError:  # the tables do not exist yet
            return []
        finally:
            con.close()

    def states(self, flow: str | None = None) -> list[tuple[int, str, dict[str, Any]]]:
        rows = self._rows(
            "select id, method_name, state_json from flow_states where flow_uuid = ? order by id",
            flow or self.flow,
        )
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def pending(self, flow: str | None = None) -> bool:
        return bool(
            self._rows("select 1 from pending_feedback where flow_uuid = ?", flow or self.flow)
        )


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    os.environ["OTEL_SDK_DISABLED"] = "true"
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    from crewai.flow.async_feedback import HumanFeedbackPending, HumanFeedbackProvider
    from crewai.flow.flow import Flow, listen, start
    from crewai.flow.human_feedback import human_feedback
    from crewai.flow.persistence import SQLiteFlowPersistence, persist
    from pydantic import BaseModel

    trace = TraceWriter(Path(job["trace"]), job["proc"])
    kill = KillPoints()
    flow_id, proc, db, graph, role = job["flow"], job["proc"], job["db"], job["graph"], job["role"]
    store = Store(db, flow_id)
    init = f"{flow_id}#init"
    effects = Effects(job, trace)
    parks = {m for m, _, p in GRAPHS[graph] if p}
    # the checkpoint this process runs from, the task it runs, what it already scheduled
    cur: dict[str, Any] = {"ck": None, "task": None, "scheduled": set()}

    def ck_of(row_id: int | None) -> str:
        return init if row_id is None else f"{flow_id}#{row_id}"

    def checkpoints(rows: list[tuple[int, str, dict[str, Any]]]) -> list[tuple[int, str, dict]]:
        """The rows that are checkpoints. The first row of a parked method is the state it saved
        with its review (`save_pending_feedback`): the parked task's write, not a checkpoint; a
        row of the same method right after it is its completion once answered."""
        out, previous = [], None
        for rid, method, state in rows:
            if not (method in parks and previous != method):
                out.append((rid, method, state))
            previous = method
        return out

    def schedule(ck: str, methods: list[str]) -> None:
        trace.event(
            "schedule",
            thread=flow_id,
            checkpoint=ck,
            tasks=[{"task": f"{ck}:{m}", "node": m, "path": m} for m in methods],
        )
        cur["scheduled"].add(ck)

    def log_load(asked_fork: bool = False) -> None:
        """The process starts its run on what the store holds for the flow (read under the
        trace's cross-process lock, so no acknowledgement slips between read and log)."""
        rows = checkpoints(store.states())
        if not rows:
            ck, parent, dig = (None, None, None) if role == "run" else (init, None, D0)
        else:
            rid, _, state = rows[-1]
            ck, dig = ck_of(rid), digest(state)
            parent = ck_of(rows[-2][0]) if len(rows) > 1 else init
        writes: list[dict[str, Any]] = []
        if ck is not None and store.pending():
            method = listeners(graph, rows[-1][1] if rows else None)[0]
            writes = [
                {"task": f"{ck}:{method}", "kind": "interrupt", "interrupt": f"{ck}:{method}"}
            ]
        trace.event(
            "load", **trace_load(flow_id, checkpoint=ck, parent=parent, digest=dig, writes=writes)
        )
        if ck is None:
            trace.event("step", thread=flow_id, checkpoint=init, parent=None)
            trace.event("put", checkpoint=init, digest=D0)
            ck = init
            schedule(init, listeners(graph, None))
        cur["ck"] = ck
        if asked_fork:
            copy = f"{flow_id}#fork-{proc}"
            trace.event("fork", thread=flow_id, parent=ck, checkpoint=copy)
            cur["ck"] = copy

    class Recording(SQLiteFlowPersistence):
        """CrewAI's SQLite persistence; each call logs what it did to the store."""

        def load_state(self, flow_uuid: str) -> dict[str, Any] | None:
            with trace.shared():
                state = super().load_state(flow_uuid)
                if flow_uuid == flow_id:
                    log_load(asked_fork=role == "fork")
            kill.hit("loaded")
            if job.get("barrier"):
                barrier(Path(db).parent / "barrier-load", proc, job["barrier"])
            return state

        def save_state(self, flow_uuid: str, method_name: str, state_data: Any) -> None:
            task, parent = cur["task"], cur["ck"]
            answer = cur.pop("answer", None)
            if answer is None:
                trace.event("task_end", thread=flow_id, task=task, outcome="ok")
            else:
                trace.event("task_end", thread=flow_id, task=task, outcome="ok", resumed=[answer])
            kill.hit(f"{method_name}.saving")
            with trace.shared():
                super().save_state(flow_uuid, method_name, state_data)
                rid, _, state = store.states(flow_uuid)[-1]
                made = f"{flow_id}#{rid}"
                trace.event("step", thread=flow_id, checkpoint=made, parent=parent)
                if answer is not None:
                    # CrewAI keeps no answer of its own: the completion row saved after
                    # resume() is where the review's answer became durable
                    trace.event(
                        "put_writes",
                        thread=flow_id,
                        checkpoint=parent,
                        task=None,
                        kind="resume",
                    )
                trace.event("put_writes", thread=flow_id, checkpoint=parent, task=task, kind="ok")
                trace.event("put", checkpoint=made, digest=digest(state))
                cur["ck"] = made
                schedule(made, listeners(graph, method_name))
            kill.hit(f"{method_name}.saved")

        def save_pending_feedback(self, flow_uuid: str, context: Any, state_data: Any) -> None:
            task = cur["task"]
            trace.event("task_end", thread=flow_id, task=task, outcome="interrupt", interrupt=task)
            kill.hit(f"{context.method_name}.parking")
            with trace.shared():
                super().save_pending_feedback(flow_uuid, context, state_data)
                trace.event(
                    "put_writes",
                    thread=flow_id,
                    checkpoint=cur["ck"],
                    task=task,
                    kind="interrupt",
                    interrupt=task,
                )
            kill.hit(f"{context.method_name}.parked")

        def load_pending_feedback(self, flow_uuid: str) -> Any:
            with trace.shared():
                loaded = super().load_pending_feedback(flow_uuid)
                if loaded is None:  # nothing to answer: a read of what the store holds
                    rows = checkpoints(store.states())
                    rid, _, state = rows[-1]
                    trace.event(
                        "read",
                        thread=flow_id,
                        asked=None,
                        checkpoint=ck_of(rid),
                        parent=ck_of(rows[-2][0]) if len(rows) > 1 else init,
                        digest=digest(state),
                        writes=[],
                        answers=[],
                    )
                else:
                    log_load()
            kill.hit("loaded")
            if job.get("barrier"):
                barrier(Path(db).parent / "barrier-load", proc, job["barrier"])
            return loaded

        def clear_pending_feedback(self, flow_uuid: str) -> None:
            kill.hit("clearing")
            super().clear_pending_feedback(flow_uuid)

    class Ask(HumanFeedbackProvider):
        """An asynchronous reviewer (a mail, a ticket): the flow parks until an answer."""

        def request_feedback(self, context: Any, flow: Any) -> str:
            raise HumanFeedbackPending(context=context)

    def body(name: str) -> Any:
        def run(self: Any) -> str:
            ck = cur["ck"]
            task = f"{ck}:{name}"
            if ck not in cur["scheduled"]:  # the routing this run chose from its checkpoint
                schedule(ck, [name])
            cur["task"] = task
            trace.event("task_start", thread=flow_id, task=task, node=name, path=name)
            kill.hit(f"{name}.start")
            effects.fire(flow_id, task, name)
            kill.hit(f"{name}.effect")
            self.state.done = [*self.state.done, name]
            self.state.made_by = proc
            return name

        run.__name__ = name
        return run

    class State(BaseModel):
        id: str = ""
        done: list[str] = []
        made_by: str = "init"

    persistence = Recording(db)
    namespace: dict[str, Any] = {}
    for name, after, review in GRAPHS[graph]:
        fn = body(name)
        if review:
            fn = human_feedback(message=f"approve {name}?", provider=Ask())(fn)
        fn = start()(fn) if after is None else listen(after)(fn)
        namespace[name] = fn
    flow_class = persist(persistence)(type("RecordedFlow", (Flow[State],), namespace))

    result: Any
    try:
        if role == "answer":
            flow = flow_class.from_pending(flow_id, persistence)
            value = job["value"]
            parked = cur["ck"]
            method = next(iter(parks))
            interrupt = f"{parked}:{method}"
            trace.event(
                "resume",
                thread=flow_id,
                checkpoint=parked,
                interrupt=interrupt,
                value=value_digest(value),
            )
            kill.hit("answered")
            if job.get("barrier"):
                barrier(Path(db).parent / "barrier-answer", proc, job["barrier"])
            cur["answer"] = {"interrupt": interrupt, "value": value_digest(value)}
            cur["task"] = interrupt
            trace.event("task_start", thread=flow_id, task=interrupt, node=method, path=method)
            outcome = flow.resume(value)
        else:
            flow = flow_class(persistence=persistence)
            if role == "fork":
                outcome = flow.kickoff(restore_from_state_id=flow_id)
            else:
                outcome = flow.kickoff(inputs={"id": flow_id})
        parked_now = isinstance(outcome, HumanFeedbackPending)
        result = {"done": flow.state.done, "parked": parked_now, "state_id": flow.state.id}
    except Exception as exc:  # a refusal of the runtime is a result, not a crash
        result = {"raised": f"{type(exc).__name__}: {exc}"}
        parked_now = None
    if parked_now is not None:
        kill.hit("returned")
        trace.event("finish", outcome="parked" if parked_now else "done")
    Path(job["result"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
