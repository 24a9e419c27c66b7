"""One process of a DBOS cell: `python -m rctools.dbos.worker JOB.json`.

The recorder is the application itself, never a patch of DBOS: each step is an ordinary
`@DBOS.step()` whose body writes `schedule`, `task_start`, the effect and `task_end` + `step`
(its result and the next checkpoint exist in memory); after DBOS has recorded the step's output
the workflow writes `put_writes` + `put` with the digest read back from the system tables. A
`DBOS.recv` is the wait-for-input task, a `DBOS.send` the answer, `DBOS.fork_workflow` a fork.
Every `load` is what the system tables hold when the process starts (tables.py).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from resumecheck.waiting import poll

from rctools.dbos.tables import forks_of, snapshot
from rctools.suite.stored import ck
from rctools.suite.trace import load as trace_load
from rctools.suite.worker import Worker
from rctools.suite.workflows import Op, spelled

# workflow -> its operations in order: ("step", name, effect kind) or ("recv", topic)
WORKFLOWS: dict[str, list[Op]] = spelled("step", "recv")


def nodes(workflow: str) -> list[str]:
    return [op[1] if op[0] == "step" else f"recv:{op[1]}" for op in WORKFLOWS[workflow]]


class Recorder(Worker):
    """The trace, the kill points, the effects and what this process has seen of the
    workflows (DBOS's own calls, not a class of its, drive the process: see `main`)."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(job)
        self.db = Path(job["db"])
        self.ran: set[str] = set()  # tasks whose body ran in this process
        self.made0: set[str] = set()  # workflows whose first checkpoint this process made
        self.roots: dict[str, str] = {job["wf"]: job["wf"]}
        self.known = threading.Condition()
        self.waiting = threading.Event()  # a recv of this process is about to wait
        self.at_end: set[str] = set()  # workflows this process ran to their end

    def thread(self, wf: str) -> str:
        """The thread of a workflow: its own id, or for a fork its source's thread (known
        once the fork is logged, so no event of a fork's run precedes the fork)."""
        with self.known:
            self.known.wait_for(lambda: wf in self.roots, timeout=30)
            return self.roots[wf]

    def load(self, wf: str, asked: int | None = None, *, ev: str = "load") -> Any:
        with self.trace.shared():
            snap = snapshot(self.db, wf)
            fields = snap.load_fields(asked)
            self.trace.event(
                ev,
                thread=self.roots.get(wf, wf),
                asked=None if asked is None else snap.ckid(asked),
                **fields,
            )
        return snap


def build(rec: Recorder) -> dict[str, Any]:
    """Registers the workflows with DBOS; returns name -> workflow function."""
    from dbos import DBOS

    steps: dict[str, Any] = {}

    def make_step(name: str, kind: str) -> Any:
        @DBOS.step(name=name)
        def body(k: int) -> str:
            wf = DBOS.workflow_id
            assert wf is not None
            th = rec.thread(wf)
            cur, task = snapshot(rec.db, wf).ckid(k - 1), f"{wf}:{k}"
            rec.start(th, cur, task, name)
            rec.kill.hit(f"{name}.start")
            rec.effects.fire(th, task, name, kind)
            rec.kill.hit(f"{name}.effect")
            rec.ev("task_end", thread=th, task=task, outcome="ok")
            rec.ev("step", thread=th, checkpoint=ck(wf, k, rec.job["proc"]), parent=cur)
            rec.ran.add(task)
            return f"{name}-done/{rec.job['proc']}"

        return body

    flows: dict[str, Any] = {}
    for wname, ops in WORKFLOWS.items():
        for op in ops:
            if op[0] == "step" and op[1] not in steps:
                steps[op[1]] = make_step(op[1], op[2])

        def make_flow(ops: list[tuple[str, ...]], wname: str) -> Any:
            @DBOS.workflow(name=wname)
            def flow(order: str) -> list[Any]:
                wf = DBOS.workflow_id
                assert wf is not None
                th = rec.thread(wf)
                if wf in rec.made0:
                    snap = snapshot(rec.db, wf)
                    rec.made0.discard(wf)
                    rec.acked("put", checkpoint=snap.ckid(0), digest=snap.digest(0))
                results: list[Any] = []
                for k, op in enumerate(ops, start=1):
                    task = f"{wf}:{k}"
                    if op[0] == "step":
                        results.append(steps[op[1]](k))
                        if task in rec.ran:
                            rec.ran.discard(task)
                            rec.kill.hit(f"{op[1]}.recorded")
                            snap = snapshot(rec.db, wf)
                            rec.acked(
                                "put_writes",
                                thread=th,
                                checkpoint=snap.ckid(k - 1),
                                task=task,
                                kind="ok",
                            )
                            rec.acked("put", checkpoint=snap.ckid(k), digest=snap.digest(k))
                        continue
                    topic = op[1]
                    node = f"recv:{topic}"
                    before = snapshot(rec.db, wf)
                    replay = before.count() >= k
                    if not replay:
                        rec.start(th, before.ckid(k - 1), task, node)
                        rec.waiting.set()
                        rec.kill.hit("recv.start")
                    msg = DBOS.recv(topic, timeout_seconds=rec.job.get("recv_timeout", 40))
                    rec.waiting.clear()
                    value = msg.get("answer") if isinstance(msg, dict) else msg
                    results.append(value)
                    if not replay:
                        with rec.trace.shared():
                            snap = snapshot(rec.db, wf)
                            resumed = [{"interrupt": task, "value": value}]
                            rec.ev(
                                "task_end",
                                thread=th,
                                task=task,
                                outcome="ok",
                                resumed=resumed if msg is not None else [],
                            )
                            rec.ev(
                                "step", thread=th, checkpoint=snap.ckid(k), parent=snap.ckid(k - 1)
                            )
                            rec.stored(th, snap.ckid(k - 1), task, snap.ckid(k), snap.digest(k))
                        rec.kill.hit("recv.recorded")
                last = snapshot(rec.db, wf).ckid(len(ops))
                rec.ev("schedule", thread=th, checkpoint=last, tasks=[])
                rec.at_end.add(wf)
                rec.kill.hit("workflow.returning")
                return results

            return flow

        flows[wname] = make_flow(ops, wname)
    return flows


def parked(
    rec: Recorder, wf: str, other_than: str | None = None, timeout: float = 30.0
) -> tuple[str, str]:
    """Waits until the workflow waits in a recv (its timeout row is in the tables); returns
    the interrupt (the recv's task) and the checkpoint it waits at."""

    def seen() -> tuple[str, str] | None:
        snap = snapshot(rec.db, wf)
        k = snap.parked()
        if k is None or f"{wf}:{k}" == other_than:
            return None
        return f"{wf}:{k}", snap.ckid(k - 1)

    found = poll(seen, timeout=timeout, every=0.02)
    if found is None:
        raise SystemExit(f"{wf} never waited in recv")
    return found


def answer(rec: Recorder, wf: str, topic: str, value: str, seen: tuple[str, str]) -> None:
    """DBOS.send of an answer to the recv the sender saw waiting (`seen`)."""
    from dbos import DBOS

    interrupt, at = seen
    rec.ev("resume", thread=rec.roots.get(wf, wf), checkpoint=at, interrupt=interrupt, value=value)
    rec.kill.hit("answer.before-send")
    DBOS.send(wf, {"answer": value, "against": at, "interrupt": interrupt}, topic)
    rec.acked("put_writes", thread=rec.roots.get(wf, wf), checkpoint=at, task=None, kind="resume")
    rec.kill.hit("answer.sent")


class DbosWorker(Recorder):
    """One process: DBOS configured on the cell's SQLite file, the workflows registered, then
    the job's role played through DBOS's documented calls."""

    def run(self) -> Any:
        from dbos import DBOS, SetWorkflowID

        job = self.job
        DBOS(
            config={
                "name": "resume-check-dbos",
                "system_database_url": f"sqlite:///{job['db']}",
                "log_level": "ERROR",
                # a request handler is another application instance: it recovers nothing
                "executor_id": job.get(
                    "executor", "handler" if job["role"] == "answer" else "local"
                ),
                "notification_listener_polling_interval_sec": 0.05,
            }
        )
        flows = build(self)
        wf, role = job["wf"], job["role"]
        result: Any = None
        answers = job.get("answers", [])

        def answer_all(target: str = wf) -> None:
            """Each answer goes to the recv the sender sees waiting; `again` re-sends to the
            one the previous answer saw (a second click on the same button)."""
            seen: tuple[str, str] | None = None
            for a in answers:
                if a.get("remember"):
                    # the recv the user saw earlier, answered now against what the process holds
                    snap = snapshot(self.db, target)
                    seen = (f"{target}:{a['remember']}", snap.ckid(snap.count()))
                elif not (a.get("again") and seen):
                    seen = parked(self, target, other_than=seen[0] if seen else None)
                answer(self, target, a["topic"], a["value"], seen)

        if role == "run":
            self.ev("load", **trace_load(wf))
            self.ev("step", thread=wf, checkpoint=ck(wf, 0), parent=None)
            self.made0.add(wf)
            DBOS.launch()
            self.kill.hit("launched")
            with SetWorkflowID(wf):
                handle = DBOS.start_workflow(flows[job["workflow"]], job.get("order", "o-1"))
            if (job.get("kill_at") or "").startswith("recv.waiting"):
                parked(self, wf)  # DBOS has recorded the recv's timeout: it waits
                self.kill.hit("recv.waiting")
            answer_all()
            result = handle.get_result()
        elif role in ("recover", "rerun"):
            # recover: restart the application; DBOS.launch() recovers its pending workflows.
            # rerun: call the workflow again with the same id (another executor, no recovery).
            self.load(wf)
            DBOS.launch()
            if role == "rerun":
                with SetWorkflowID(wf):
                    handle = DBOS.start_workflow(flows[job["workflow"]], job.get("order", "o-1"))
            else:
                handle = DBOS.retrieve_workflow(wf)
            answer_all()
            result = handle.get_result()
        elif role == "recover-forks":
            # restart after a fork's process was killed: DBOS.launch() recovers the fork
            fork = forks_of(self.db, wf)[-1]
            self.roots[fork] = wf
            job["fork_id"] = fork
            self.load(fork)
            DBOS.launch()
            result = DBOS.retrieve_workflow(fork).get_result()
        elif role == "answer":
            # a request handler that answers, then returns: it loaded the latest checkpoint
            # a request handler: it answers, then waits for the workflow's result
            if not any(a.get("remember") for a in answers):
                parked(self, wf)  # the handler is called once the workflow waits
            self.load(wf)
            DBOS.launch()
            answer_all()
            result = DBOS.retrieve_workflow(wf).get_result()
        elif role == "fork":
            j = job["fork_at"]
            snap = self.load(wf, j)
            DBOS.launch()
            start_step = snap.tasks[j][0] if j < snap.count() else snap.tasks[-1][0] + 1
            handle = DBOS.fork_workflow(wf, start_step)
            new = handle.workflow_id
            job["fork_id"] = new
            fsnap = snapshot(self.db, new)
            with self.known:
                self.ev("fork", thread=wf, parent=snap.ckid(j), checkpoint=fsnap.ckid(j))
                self.acked("put", checkpoint=fsnap.ckid(j), digest=fsnap.digest(j))
                self.roots[new] = wf
                self.known.notify_all()
            answer_all(new)
            result = handle.get_result()
            result = {"fork": new, "result": result}
        else:
            raise SystemExit(f"unknown role {role}")
        self.kill.hit("returned")
        ended = job.get("fork_id", wf)
        if ended not in self.at_end:
            # The invocation returned a result another process computed (get_result polls the
            # workflow's row): this process observed the final checkpoint, it did not make it.
            self.load(ended)
        self.ev("finish", outcome="done")
        return result

    def close(self) -> None:
        from dbos import DBOS

        DBOS.destroy(destroy_registry=True)


main = DbosWorker.main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
