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
from pathlib import Path
from typing import Any

from rctools.suite.crash import KillPoints, barrier
from rctools.suite.effects import Effects
from rctools.suite.trace import TraceWriter
from rctools.suite.trace import load as trace_load

GRAPHS = {"linear": ["reserve", "charge", "mail", "ship"], "loop": ["plan", "work", "report"]}
LOOPS = 3  # how often the loop graph's work action runs


def digest(state: dict[str, Any]) -> str:
    body = {k: v for k, v in state.items() if not k.startswith("__")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    from burr.core import ApplicationBuilder, State, action, default, expr
    from burr.core.persistence import SQLitePersister
    from burr.lifecycle import PreRunStepHook

    trace = TraceWriter(Path(job["trace"]), job["proc"])
    kill = KillPoints()
    app_id, proc, db = job["app"], job["proc"], job["db"]
    init = f"{app_id}#init"
    effects = Effects(job, trace)
    cur: dict[str, Any] = {}  # the checkpoint this process runs from, the task it runs

    def ckid(seq: int | None, maker: str | None) -> str:
        return init if seq is None else f"{app_id}#{seq}/{maker}"

    def row(seq: int) -> tuple[str, dict[str, Any]] | None:
        con = sqlite3.connect(db, timeout=30)
        try:
            r = con.execute(
                "select position, state from burr_state where app_id = ? and sequence_id = ?",
                (app_id, seq),
            ).fetchone()
        finally:
            con.close()
        return None if r is None else (r[0], json.loads(r[1]))

    class Recording(SQLitePersister):
        def load(self, partition_key: Any, app_id_: Any, sequence_id: Any = None, **kw: Any) -> Any:
            with trace.shared():
                data = super().load(partition_key, app_id_, sequence_id, **kw)
                if data is None and job["role"] == "run":
                    trace.event("load", **trace_load(app_id))
                    trace.event("step", thread=app_id, checkpoint=init, parent=None)
                    trace.event("put", checkpoint=init, digest=digest(job["default_state"]))
                    cur["ck"] = init
                elif data is None:
                    cur["ck"] = init
                    trace.event(
                        "load",
                        **trace_load(app_id, checkpoint=init, digest=digest(job["default_state"])),
                    )
                else:
                    seq = data["sequence_id"]
                    state = data["state"].get_all()
                    me = ckid(seq, state.get("made_by"))
                    prev = row(seq - 1) if seq > 0 else None
                    parent = ckid(seq - 1, prev[1].get("made_by")) if prev else init
                    cur["ck"] = me
                    trace.event(
                        "load",
                        **trace_load(app_id, checkpoint=me, parent=parent, digest=digest(state)),
                    )
            kill.hit("loaded")
            if job.get("barrier"):
                barrier(Path(job["db"]).parent / "barrier", proc, job["barrier"])
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
            task, parent = cur["task"], cur["ck"]
            me = ckid(sequence_id, proc)
            if status == "completed":
                trace.event("task_end", thread=app_id, task=task, outcome="ok")
                trace.event("step", thread=app_id, checkpoint=me, parent=parent)
            else:
                trace.event("task_end", thread=app_id, task=task, outcome="error")
            kill.hit(f"{position}.saving")
            super().save(partition_key, app_id_, sequence_id, position, state, status, **kw)
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
                    cur["ck"] = me
            kill.hit(f"{position}.saved")

    class Schedule(PreRunStepHook):
        def pre_run_step(self, *, action: Any, sequence_id: int, **kw: Any) -> None:
            task = f"{app_id}:{sequence_id}"
            cur["task"] = task
            trace.event(
                "schedule",
                thread=app_id,
                checkpoint=cur["ck"],
                tasks=[{"task": task, "node": action.name, "path": action.name}],
            )
            trace.event("task_start", thread=app_id, task=task, node=action.name, path=action.name)
            kill.hit(f"{action.name}.start")

    def make(name: str) -> Any:
        @action(reads=["done", "loops"], writes=["done", "made_by", "loops"])
        def run(state: State) -> State:
            effects.fire(app_id, cur["task"], name)
            kill.hit(f"{name}.effect")
            if job.get("barrier") and not cur.get("overlapped"):
                # both resumers fired their first effect before either saves: one schedule,
                # the same every time
                cur["overlapped"] = True
                barrier(Path(job["db"]).parent / "barrier-effect", proc, job["barrier"])
            loops = state["loops"] + (1 if name == "work" else 0)
            return state.update(done=[*state["done"], name], made_by=proc, loops=loops)

        return run

    actions = GRAPHS[job["graph"]]
    if job["graph"] == "linear":
        transitions = [(a, b, default) for a, b in itertools.pairwise(actions)]
    else:
        transitions = [
            ("plan", "work", default),
            ("work", "work", expr(f"loops < {LOOPS}")),
            ("work", "report", default),
        ]

    persister = Recording(db_path=db, table_name="burr_state", connect_kwargs={"timeout": 30})
    persister.initialize()
    builder = (
        ApplicationBuilder()
        .with_actions(**{n: make(n) for n in actions})
        .with_transitions(*transitions)
        .initialize_from(
            persister,
            resume_at_next_action=True,
            default_state=job["default_state"],
            default_entrypoint=actions[0],
        )
        .with_state_persister(persister)
        .with_identifiers(app_id=app_id)
        .with_hooks(Schedule())
    )
    app = builder.build()
    try:
        if app.get_next_action() is None:
            result: Any = app.state.get_all().get("done")
        else:
            _, _, state = app.run(halt_after=[actions[-1]])
            result = state["done"]
    except Exception as exc:
        result = {"raised": f"{type(exc).__name__}: {exc}"}
    else:
        trace.event("schedule", thread=app_id, checkpoint=cur["ck"], tasks=[])
        kill.hit("returned")
        trace.event("finish", outcome="done")
    Path(job["result"]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
