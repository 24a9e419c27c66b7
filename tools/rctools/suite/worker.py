"""What every runtime suite's worker process shares: `python -m rctools.<suite>.worker JOB.json`
is one process of a cell, a small class on `Worker` (the module's `main = TheWorker.main`).

A worker gets its job (a JSON file the cell wrote), logs to the cell's one trace, reaches named
kill points, fires its effects into the cell's ledger and writes what it returned to
`job["result"]`. The moves a recorder logs around a runtime's store are the same in every suite
that snapshots at step boundaries (a task's completion and the next checkpoint as one stored row;
a step parked for an answer; an answer sent), so they are written here once, in the order the
contract reads them, and a suite's worker keeps only what its runtime does differently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rctools.suite.crash import KillPoints, barrier
from rctools.suite.effects import Effects
from rctools.suite.trace import TraceWriter


class Worker:
    """One process of a cell. A subclass sets up its runtime in `__init__` (an error there is
    the harness's: the process fails) and runs it in `run()`, whose return value is the
    process's result (a refusal of the runtime included: see `refusal`)."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.proc: str = job["proc"]
        self.trace = TraceWriter(Path(job["trace"]), self.proc)
        self.kill = KillPoints()
        self.effects = Effects(job, self.trace)

    def run(self) -> Any:
        """Plays the job's role on the runtime; returns the process's result."""
        raise NotImplementedError

    @classmethod
    def main(cls, job_path: str) -> int:
        """Runs the job at `job_path` and writes its result: a worker module's `main`, called by
        `python -m rctools.<suite>.worker JOB.json` and by the suite's fork server."""
        job = json.loads(Path(job_path).read_text(encoding="utf-8"))
        worker = cls(job)
        result = worker.run()
        Path(job["result"]).write_text(json.dumps(result), encoding="utf-8")
        worker.close()
        return 0

    def close(self) -> None:
        """After the result is written: what the runtime needs to end the process cleanly."""

    @staticmethod
    def refusal(exc: Exception) -> dict[str, str]:
        """A refusal of the runtime (it raised) as the process's result, not a crash: the trace
        shows what led to it."""
        return {"raised": f"{type(exc).__name__}: {exc}"}

    def returned(self, outcome: str = "done") -> None:
        """The runtime's call returned: the kill point after it, then the trace's end."""
        self.kill.hit("returned")
        self.trace.event("finish", outcome=outcome)

    def ev(self, ev: str, **fields: Any) -> None:
        self.trace.event(ev, **fields)

    def acked(self, ev: str, **fields: Any) -> None:
        """An acknowledgement: logged under the cross-process lock loads are read under."""
        with self.trace.shared():
            self.trace.event(ev, **fields)

    def meet(self, name: str) -> None:
        """Waits until every process of the phase (`job["barrier"]` of them) is here, in the
        folder `name` beside the store: concurrent processes that really overlap, every run."""
        if self.job.get("barrier"):
            barrier(Path(self.job["db"]).parent / name, self.proc, self.job["barrier"])

    def loaded(self) -> None:
        """The process has read its starting point: the kill point, then the load barrier."""
        self.kill.hit("loaded")
        self.meet("barrier-load")

    def schedule(self, thread: str, checkpoint: str | None, nodes: Iterable[str]) -> None:
        """Checkpoint `checkpoint` schedules one task `<checkpoint>:<node>` per node."""
        self.trace.event(
            "schedule",
            thread=thread,
            checkpoint=checkpoint,
            tasks=[{"task": f"{checkpoint}:{n}", "node": n, "path": n} for n in nodes],
        )

    def stored(
        self, thread: str, parent: str | None, task: str | None, checkpoint: str, digest: str
    ) -> None:
        """The store holds task `task`'s result on `parent` and the checkpoint `checkpoint` it
        made (logged under the shared lock, with the read that saw them)."""
        self.trace.event("put_writes", thread=thread, checkpoint=parent, task=task, kind="ok")
        self.trace.event("put", checkpoint=checkpoint, digest=digest)

    def start(self, thread: str, checkpoint: str | None, task: str, node: str) -> None:
        """Checkpoint `checkpoint` schedules the one task `task`, a run of `node`, which starts
        (a runtime that picks its next step itself, one at a time)."""
        self.trace.event(
            "schedule",
            thread=thread,
            checkpoint=checkpoint,
            tasks=[{"task": task, "node": node, "path": node}],
        )
        self.trace.event("task_start", thread=thread, task=task, node=node, path=node)

    def answer(self, thread: str, checkpoint: str | None, interrupt: str, value: str) -> None:
        """An answer to a parked step, sent (logged as `value`, a digest); concurrent answerers
        all send before any is delivered, so the overlap is the same every run."""
        self.trace.event(
            "resume", thread=thread, checkpoint=checkpoint, interrupt=interrupt, value=value
        )
        self.kill.hit("answered")
        self.meet("barrier-answer")

    def park(
        self,
        thread: str,
        task: str,
        node: str,
        checkpoint: Callable[[], str],
        save: Callable[[], Any],
    ) -> None:
        """Task `task` of `node` asked and parks: its interrupt write is what `save()` stores on
        `checkpoint()` (read when the write is logged), acknowledged under the shared lock."""
        self.trace.event("task_end", thread=thread, task=task, outcome="interrupt", interrupt=task)
        self.kill.hit(f"{node}.parking")
        with self.trace.shared():
            save()
            self.trace.event(
                "put_writes",
                thread=thread,
                checkpoint=checkpoint(),
                task=task,
                kind="interrupt",
                interrupt=task,
            )
        self.kill.hit(f"{node}.parked")

    def complete(
        self,
        thread: str,
        task: str,
        node: str,
        parent: str | None,
        answer: dict[str, Any] | None,
        save: Callable[[], tuple[str, str, list[str]]],
    ) -> str:
        """Task `task` of `node` completed on `parent`: its result and the next checkpoint are
        one stored row (`save()` stores it and says the checkpoint, its digest and the nodes it
        schedules). An answer the task received became durable in that row (the runtime keeps
        none of its own). Returns the new checkpoint, once past the kill point after the save."""
        if answer is None:
            self.trace.event("task_end", thread=thread, task=task, outcome="ok")
        else:
            self.trace.event("task_end", thread=thread, task=task, outcome="ok", resumed=[answer])
        self.kill.hit(f"{node}.saving")
        with self.trace.shared():
            made, digest, nodes = save()
            self.trace.event("step", thread=thread, checkpoint=made, parent=parent)
            if answer is not None:
                self.trace.event(
                    "put_writes", thread=thread, checkpoint=parent, task=None, kind="resume"
                )
            self.stored(thread, parent, task, made, digest)
            self.schedule(thread, made, nodes)
        self.kill.hit(f"{node}.saved")
        return made
