"""One process of a Burr cell: `python -m rctools.burr.worker JOB.json`.

The recorder is a `SQLitePersister` subclass (the saver analogue) plus a pre-step hook, never a
patch of Burr. A persisted row (app id, sequence id, position = the action just run) is a
checkpoint; it schedules the action Burr's transitions choose next. The action's `save` is its
stored result and the next checkpoint in one insert. Burr never persists the initial state: it
is the application's `default_state` (code), so the first process makes it as `<app>#init` and a
recovery whose persister returns nothing starts from it again. Resuming is what the docs say:
`initialize_from(persister, resume_at_next_action=True, ...)`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import sys
from typing import Any

from rctools.suite.trace import load as trace_load
from rctools.suite.worker import Worker

GRAPHS = {"linear": ["reserve", "charge", "mail", "ship"], "loop": ["plan", "work", "report"]}
LOOPS = 3  # how often the loop graph's work action runs


def digest(state: dict[str, Any]) -> str:
    body = {k: v for k, v in state.items() if not k.startswith("__")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


class BurrWorker(Worker):
    """One process: the application built on the recording persister, then run to its last
    action from wherever `initialize_from` resumes it."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(job)
        self.app_id, self.db = job["app"], job["db"]
        self.init = f"{self.app_id}#init"
        self.actions = GRAPHS[job["graph"]]
        # the checkpoint this process runs from, the task it runs; whether concurrent resumers
        # met after their first effect
        self.ck: str | None = None
        self.task: str | None = None
        self.overlapped = False
        self.app = self.build()

    def ckid(self, seq: int | None, maker: str | None) -> str:
        return self.init if seq is None else f"{self.app_id}#{seq}/{maker}"

    def row(self, seq: int) -> tuple[str, dict[str, Any]] | None:
        con = sqlite3.connect(self.db, timeout=30)
        try:
            r = con.execute(
                "select position, state from burr_state where app_id = ? and sequence_id = ?",
                (self.app_id, seq),
            ).fetchone()
        finally:
            con.close()
        return None if r is None else (r[0], json.loads(r[1]))

    def log_load(self, data: Any) -> None:
        """What the persister returned: nothing (a first run makes the initial checkpoint, a
        recovery starts from it again) or a saved row, its parent the row before it."""
        app_id, trace, job = self.app_id, self.trace, self.job
        if data is None and job["role"] == "run":
            trace.event("load", **trace_load(app_id))
            trace.event("step", thread=app_id, checkpoint=self.init, parent=None)
            trace.event("put", checkpoint=self.init, digest=digest(job["default_state"]))
            self.ck = self.init
        elif data is None:
            self.ck = self.init
            trace.event(
                "load",
                **trace_load(app_id, checkpoint=self.init, digest=digest(job["default_state"])),
            )
        else:
            seq = data["sequence_id"]
            state = data["state"].get_all()
            me = self.ckid(seq, state.get("made_by"))
            prev = self.row(seq - 1) if seq > 0 else None
            parent = self.ckid(seq - 1, prev[1].get("made_by")) if prev else self.init
            self.ck = me
            trace.event(
                "load", **trace_load(app_id, checkpoint=me, parent=parent, digest=digest(state))
            )

    def saved(self, sequence_id: int, position: str, state: Any, status: str, store: Any) -> None:
        """Burr saves an action's result and the next checkpoint as one row (`store()`)."""
        app_id, trace = self.app_id, self.trace
        task, parent = self.task, self.ck
        me = self.ckid(sequence_id, self.proc)
        if status == "completed":
            trace.event("task_end", thread=app_id, task=task, outcome="ok")
            trace.event("step", thread=app_id, checkpoint=me, parent=parent)
        else:
            trace.event("task_end", thread=app_id, task=task, outcome="error")
        self.kill.hit(f"{position}.saving")
        store()
        with trace.shared():
            trace.event(
                "put_writes",
                thread=app_id,
                checkpoint=parent,
                task=task,
                kind="ok" if status == "completed" else "error",
            )
            if status == "completed":
                trace.event("put", checkpoint=me, digest=digest(state.get_all()))
                self.ck = me
        self.kill.hit(f"{position}.saved")

    def scheduled(self, name: str, sequence_id: int) -> None:
        """Burr is about to run action `name`: the one task its transitions chose."""
        task = f"{self.app_id}:{sequence_id}"
        self.task = task
        self.start(self.app_id, self.ck, task, name)
        self.kill.hit(f"{name}.start")

    def make(self, name: str) -> Any:
        from burr.core import State, action

        worker = self

        @action(reads=["done", "loops"], writes=["done", "made_by", "loops"])
        def run(state: State) -> State:
            worker.effects.fire(worker.app_id, worker.task, name)
            worker.kill.hit(f"{name}.effect")
            if not worker.overlapped and worker.job.get("barrier"):
                # both resumers fired their first effect before either saves: one schedule,
                # the same every time
                worker.overlapped = True
                worker.meet("barrier-effect")
            loops = state["loops"] + (1 if name == "work" else 0)
            return state.update(done=[*state["done"], name], made_by=worker.proc, loops=loops)

        return run

    def build(self) -> Any:
        from burr.core import ApplicationBuilder, default, expr
        from burr.core.persistence import SQLitePersister
        from burr.lifecycle import PreRunStepHook

        worker, trace = self, self.trace

        class Recording(SQLitePersister):
            def load(
                self, partition_key: Any, app_id_: Any, sequence_id: Any = None, **kw: Any
            ) -> Any:
                with trace.shared():
                    data = super().load(partition_key, app_id_, sequence_id, **kw)
                    worker.log_load(data)
                worker.kill.hit("loaded")
                worker.meet("barrier")
                return data

            def save(
                self,
                partition_key: Any,
                app_id_: str,
                sequence_id: int,
                position: str,
                state: Any,
                status: str,
                **kw: Any,
            ) -> None:
                def store() -> None:
                    super(Recording, self).save(
                        partition_key, app_id_, sequence_id, position, state, status, **kw
                    )

                worker.saved(sequence_id, position, state, status, store)

        class Schedule(PreRunStepHook):
            def pre_run_step(self, *, action: Any, sequence_id: int, **kw: Any) -> None:
                worker.scheduled(action.name, sequence_id)

        actions = self.actions
        if self.job["graph"] == "linear":
            transitions = [(a, b, default) for a, b in itertools.pairwise(actions)]
        else:
            transitions = [
                ("plan", "work", default),
                ("work", "work", expr(f"loops < {LOOPS}")),
                ("work", "report", default),
            ]
        persister = Recording(
            db_path=self.db, table_name="burr_state", connect_kwargs={"timeout": 30}
        )
        persister.initialize()
        builder = (
            ApplicationBuilder()
            .with_actions(**{n: self.make(n) for n in actions})
            .with_transitions(*transitions)
            .initialize_from(
                persister,
                resume_at_next_action=True,
                default_state=self.job["default_state"],
                default_entrypoint=actions[0],
            )
            .with_state_persister(persister)
            .with_identifiers(app_id=self.app_id)
            .with_hooks(Schedule())
        )
        return builder.build()

    def run(self) -> Any:
        app = self.app
        try:
            if app.get_next_action() is None:
                result: Any = app.state.get_all().get("done")
            else:
                _, _, state = app.run(halt_after=[self.actions[-1]])
                result = state["done"]
        except Exception as exc:
            return self.refusal(exc)
        self.trace.event("schedule", thread=self.app_id, checkpoint=self.ck, tasks=[])
        self.returned()
        return result


main = BurrWorker.main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
