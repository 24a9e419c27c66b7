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
from collections.abc import Iterable
from typing import Any

from rctools.suite.trace import load as trace_load
from rctools.suite.worker import Worker

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


class CrewAIWorker(Worker):
    """One process: the flow class built on the recording persistence, then the job's role
    (run, recover, fork or answer) played through CrewAI's documented calls."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(job)
        os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
        os.environ["OTEL_SDK_DISABLED"] = "true"
        os.environ["CREWAI_TRACING_ENABLED"] = "false"
        self.flow_id, self.db, self.graph = job["flow"], job["db"], job["graph"]
        self.role = job["role"]
        self.store = Store(self.db, self.flow_id)
        self.init = f"{self.flow_id}#init"
        self.parks = {m for m, _, p in GRAPHS[self.graph] if p}
        # the checkpoint this process runs from, the task it runs, what it already scheduled,
        # the answer the running task received
        self.ck: str | None = None
        self.task: str | None = None
        self.scheduled: set[str | None] = set()
        self.answered: dict[str, Any] | None = None
        self.persistence = self.recording()
        self.flow_class = self.flow()

    def ck_of(self, row_id: int | None) -> str:
        return self.init if row_id is None else f"{self.flow_id}#{row_id}"

    def checkpoints(
        self, rows: list[tuple[int, str, dict[str, Any]]]
    ) -> list[tuple[int, str, dict]]:
        """The rows that are checkpoints. The first row of a parked method is the state it saved
        with its review (`save_pending_feedback`): the parked task's write, not a checkpoint; a
        row of the same method right after it is its completion once answered."""
        out, previous = [], None
        for rid, method, state in rows:
            if not (method in self.parks and previous != method):
                out.append((rid, method, state))
            previous = method
        return out

    def schedule(self, thread: str, checkpoint: str | None, nodes: Iterable[str]) -> None:
        super().schedule(thread, checkpoint, nodes)
        self.scheduled.add(checkpoint)

    def log_load(self, asked_fork: bool = False) -> None:
        """The process starts its run on what the store holds for the flow (read under the
        trace's cross-process lock, so no acknowledgement slips between read and log)."""
        flow_id, graph = self.flow_id, self.graph
        rows = self.checkpoints(self.store.states())
        if not rows:
            ck, parent, dig = (None, None, None) if self.role == "run" else (self.init, None, D0)
        else:
            rid, _, state = rows[-1]
            ck, dig = self.ck_of(rid), digest(state)
            parent = self.ck_of(rows[-2][0]) if len(rows) > 1 else self.init
        writes: list[dict[str, Any]] = []
        if ck is not None and self.store.pending():
            method = listeners(graph, rows[-1][1] if rows else None)[0]
            writes = [
                {"task": f"{ck}:{method}", "kind": "interrupt", "interrupt": f"{ck}:{method}"}
            ]
        self.trace.event(
            "load", **trace_load(flow_id, checkpoint=ck, parent=parent, digest=dig, writes=writes)
        )
        if ck is None:
            self.trace.event("step", thread=flow_id, checkpoint=self.init, parent=None)
            self.trace.event("put", checkpoint=self.init, digest=D0)
            ck = self.init
            self.schedule(flow_id, self.init, listeners(graph, None))
        self.ck = ck
        if asked_fork:
            copy = f"{flow_id}#fork-{self.proc}"
            self.trace.event("fork", thread=flow_id, parent=ck, checkpoint=copy)
            self.ck = copy

    def recording(self) -> Any:
        """CrewAI's SQLite persistence; each call logs what it did to the store."""
        from crewai.flow.persistence import SQLiteFlowPersistence

        worker, flow_id, trace = self, self.flow_id, self.trace

        class Recording(SQLiteFlowPersistence):
            def load_state(self, flow_uuid: str) -> dict[str, Any] | None:
                with trace.shared():
                    state = super().load_state(flow_uuid)
                    if flow_uuid == flow_id:
                        worker.log_load(asked_fork=worker.role == "fork")
                worker.loaded()
                return state

            def save_state(self, flow_uuid: str, method_name: str, state_data: Any) -> None:
                answer, worker.answered = worker.answered, None

                def save() -> tuple[str, str, list[str]]:
                    super(Recording, self).save_state(flow_uuid, method_name, state_data)
                    rid, _, state = worker.store.states(flow_uuid)[-1]
                    # the new checkpoint, before its listeners are scheduled
                    worker.ck = f"{flow_id}#{rid}"
                    return worker.ck, digest(state), listeners(worker.graph, method_name)

                worker.complete(flow_id, worker.task, method_name, worker.ck, answer, save)

            def save_pending_feedback(self, flow_uuid: str, context: Any, state_data: Any) -> None:
                worker.park(
                    flow_id,
                    worker.task,
                    context.method_name,
                    lambda: worker.ck,
                    lambda: super(Recording, self).save_pending_feedback(
                        flow_uuid, context, state_data
                    ),
                )

            def load_pending_feedback(self, flow_uuid: str) -> Any:
                with trace.shared():
                    loaded = super().load_pending_feedback(flow_uuid)
                    if loaded is None:  # nothing to answer: a read of what the store holds
                        rows = worker.checkpoints(worker.store.states())
                        rid, _, state = rows[-1]
                        trace.event(
                            "read",
                            thread=flow_id,
                            asked=None,
                            checkpoint=worker.ck_of(rid),
                            parent=worker.ck_of(rows[-2][0]) if len(rows) > 1 else worker.init,
                            digest=digest(state),
                            writes=[],
                            answers=[],
                        )
                    else:
                        worker.log_load()
                worker.loaded()
                return loaded

            def clear_pending_feedback(self, flow_uuid: str) -> None:
                worker.kill.hit("clearing")
                super().clear_pending_feedback(flow_uuid)

        return Recording(self.db)

    def body(self, name: str) -> Any:
        """Method `name` of the flow: logs its start, fires its effect, records who ran it."""
        worker = self

        def run(self: Any) -> str:
            ck = worker.ck
            task = f"{ck}:{name}"
            if ck not in worker.scheduled:  # the routing this run chose from its checkpoint
                worker.schedule(worker.flow_id, ck, [name])
            worker.task = task
            worker.trace.event("task_start", thread=worker.flow_id, task=task, node=name, path=name)
            worker.kill.hit(f"{name}.start")
            worker.effects.fire(worker.flow_id, task, name)
            worker.kill.hit(f"{name}.effect")
            self.state.done = [*self.state.done, name]
            self.state.made_by = worker.proc
            return name

        run.__name__ = name
        return run

    def flow(self) -> Any:
        """The flow class: the graph's methods, `@start`/`@listen` as in GRAPHS, the review
        parked by an asynchronous provider, `@persist` on the recording persistence."""
        from crewai.flow.async_feedback import HumanFeedbackPending, HumanFeedbackProvider
        from crewai.flow.flow import Flow, listen, start
        from crewai.flow.human_feedback import human_feedback
        from crewai.flow.persistence import persist
        from pydantic import BaseModel

        class Ask(HumanFeedbackProvider):
            """An asynchronous reviewer (a mail, a ticket): the flow parks until an answer."""

            def request_feedback(self, context: Any, flow: Any) -> str:
                raise HumanFeedbackPending(context=context)

        class State(BaseModel):
            id: str = ""
            done: list[str] = []
            made_by: str = "init"

        namespace: dict[str, Any] = {}
        for name, after, review in GRAPHS[self.graph]:
            fn = self.body(name)
            if review:
                fn = human_feedback(message=f"approve {name}?", provider=Ask())(fn)
            fn = start()(fn) if after is None else listen(after)(fn)
            namespace[name] = fn
        return persist(self.persistence)(type("RecordedFlow", (Flow[State],), namespace))

    def run(self) -> Any:
        from crewai.flow.async_feedback import HumanFeedbackPending

        flow_id = self.flow_id
        try:
            if self.role == "answer":
                flow = self.flow_class.from_pending(flow_id, self.persistence)
                value = self.job["value"]
                parked = self.ck
                method = next(iter(self.parks))
                interrupt = f"{parked}:{method}"
                self.answer(flow_id, parked, interrupt, value_digest(value))
                self.answered = {"interrupt": interrupt, "value": value_digest(value)}
                self.task = interrupt
                self.trace.event(
                    "task_start", thread=flow_id, task=interrupt, node=method, path=method
                )
                outcome = flow.resume(value)
            else:
                flow = self.flow_class(persistence=self.persistence)
                if self.role == "fork":
                    outcome = flow.kickoff(restore_from_state_id=flow_id)
                else:
                    outcome = flow.kickoff(inputs={"id": flow_id})
            parked_now = isinstance(outcome, HumanFeedbackPending)
            result = {"done": flow.state.done, "parked": parked_now, "state_id": flow.state.id}
        except Exception as exc:  # a refusal of the runtime is a result, not a crash
            return self.refusal(exc)
        self.returned("parked" if parked_now else "done")
        return result


main = CrewAIWorker.main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
