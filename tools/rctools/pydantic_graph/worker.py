"""One process of a pydantic-graph cell: `python -m rctools.pydantic_graph.worker JOB.json`.

The recorder is a `FileStatePersistence` subclass (the analogue of a saver): every method calls
the runtime's own implementation and logs what it did; the file it writes is the ground truth a
`load` and a `put` report. A snapshot (state + the node to run next) is a checkpoint and
schedules one task, the run of its node; `record_run` marking it `success` is the task's stored
result; the next `snapshot_node` makes the next checkpoint. Resuming is what the docs say:
`Graph.iter_from_persistence`, whose `load_next` returns the first snapshot with status
`created`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rctools.suite.trace import load as trace_load
from rctools.suite.worker import Worker


def read_snapshots(path: Path) -> list[dict[str, Any]]:
    try:
        return json.loads(path.read_bytes() or b"[]")
    except FileNotFoundError:
        return []


def digest(entry: dict[str, Any]) -> str:
    body = {"state": entry.get("state"), "node": entry.get("node", entry.get("result"))}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


class PydanticGraphWorker(Worker):
    """One process: the graph on the recording persistence, from `initialize` (the first
    process) or from whatever `iter_from_persistence` finds to resume."""

    def __init__(self, job: dict[str, Any]) -> None:
        super().__init__(job)
        warnings.filterwarnings("ignore", module="pydantic_graph")
        warnings.filterwarnings("ignore", message=".*pydantic_graph.*")
        self.store = Path(job["store"])
        self.run_id = job["run"]
        self.current: dict[str, str] = {}  # the task being run

    def entry_of(self, sid: str) -> tuple[int, dict[str, Any]]:
        snaps = read_snapshots(self.store)
        for i, s in enumerate(snaps):
            if s["id"] == sid:
                return i, s
        raise LookupError(sid)

    def parent_of(self, sid: str) -> str | None:
        i, _ = self.entry_of(sid)
        return read_snapshots(self.store)[i - 1]["id"] if i > 0 else None

    def recording(self) -> Any:
        """pydantic-graph's file persistence; each call logs what it did to the store."""
        from pydantic_graph.persistence.file import FileStatePersistence

        trace, kill, run_id, current = self.trace, self.kill, self.run_id, self.current
        acked = self.acked
        entry_of, parent_of = self.entry_of, self.parent_of

        @dataclass
        class Recording(FileStatePersistence):
            last: str | None = field(default=None)

            async def snapshot_node(self, state: Any, next_node: Any) -> None:
                sid = next_node.get_snapshot_id()
                trace.event("step", thread=run_id, checkpoint=sid, parent=self.last)
                if self.last is not None:
                    kill.hit(f"{current['node']}.recorded")
                await super().snapshot_node(state, next_node)
                with trace.shared():
                    trace.event("put", checkpoint=sid, digest=digest(entry_of(sid)[1]))
                if self.last is not None:
                    kill.hit(f"{current['node']}.snapshotted")
                self.last = sid

            async def snapshot_node_if_new(
                self, snapshot_id: str, state: Any, next_node: Any
            ) -> None:
                raise AssertionError("not used by iter_from_persistence")

            async def snapshot_end(self, state: Any, end: Any) -> None:
                sid = end.get_snapshot_id()
                trace.event("step", thread=run_id, checkpoint=sid, parent=self.last)
                kill.hit(f"{current['node']}.recorded")
                await super().snapshot_end(state, end)
                with trace.shared():
                    trace.event("put", checkpoint=sid, digest=digest(entry_of(sid)[1]))
                trace.event("schedule", thread=run_id, checkpoint=sid, tasks=[])
                kill.hit(f"{current['node']}.snapshotted")
                self.last = sid

            @asynccontextmanager
            async def record_run(self, snapshot_id: str) -> AsyncIterator[None]:
                _, entry = entry_of(snapshot_id)
                node = entry["node"]["node_id"]
                task = f"{snapshot_id}#run"
                trace.event(
                    "schedule",
                    thread=run_id,
                    checkpoint=snapshot_id,
                    tasks=[{"task": task, "node": node, "path": node}],
                )
                current.update(task=task, node=node)
                outcome = "ok"
                try:
                    async with super().record_run(snapshot_id):
                        trace.event("task_start", thread=run_id, task=task, node=node, path=node)
                        kill.hit(f"{node}.start")
                        try:
                            yield
                        except Exception:
                            outcome = "error"
                            trace.event("task_end", thread=run_id, task=task, outcome="error")
                            raise
                        trace.event("task_end", thread=run_id, task=task, outcome="ok")
                finally:
                    acked(
                        "put_writes", thread=run_id, checkpoint=snapshot_id, task=task, kind=outcome
                    )

            async def load_next(self) -> Any:
                with trace.shared():
                    snap = await super().load_next()
                    if snap is None:
                        fields: dict[str, Any] = {
                            "checkpoint": None,
                            "parent": None,
                            "digest": None,
                        }
                        # Nothing to run because another process took the snapshot (it is
                        # pending or running there): pydantic-graph's exclusion at work.
                        held = [
                            s
                            for s in await super().load_all()
                            if getattr(s, "status", None) in ("pending", "running")
                        ]
                        if held:
                            fields["refused"] = True
                    else:
                        fields = {
                            "checkpoint": snap.id,
                            "parent": parent_of(snap.id),
                            "digest": digest(entry_of(snap.id)[1]),
                        }
                        self.last = snap.id
                    trace.event("load", thread=run_id, asked=None, writes=[], answers=[], **fields)
                return snap

        return Recording(self.store)

    def hook(self, name: str) -> None:
        """Node `name` runs: its effect, then the kill point after it."""
        self.effects.fire(self.run_id, self.current["task"], name, name.lower())
        self.kill.hit(f"{name}.effect")

    def run(self) -> Any:
        from rctools.pydantic_graph import graphs

        graphs.HOOK[0] = self.hook
        graph, first_node = graphs.GRAPHS[self.job["graph"]]
        persistence = self.recording()
        persistence.set_graph_types(graph)

        async def go() -> Any:
            if self.job["role"] == "run":
                self.trace.event("load", **trace_load(self.run_id))
                await graph.initialize(first_node(), persistence, state=graphs.State())
                self.kill.hit("initialized")
            async with graph.iter_from_persistence(persistence) as run:
                async for _ in run:
                    pass
                return run.result.output if run.result else None

        try:
            result: Any = asyncio.run(go())
        except Exception as exc:  # the runtime refused to resume: the trace shows why
            return self.refusal(exc)
        self.returned()
        return result


main = PydanticGraphWorker.main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
