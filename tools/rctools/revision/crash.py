"""Recovery interrupted by a real crash: the runtime process is killed with SIGKILL.

A child process runs the workload with the revision after the run, under the suite
framework's child harness (`suite.child.run_worker`), and is SIGKILLed at its crash point, a
kill point of the framework's (`suite.crash.KillPoints`): `after-revision`, right after the
revision is accepted (before any plan), or `in-recovery`, inside the first model call of the
recovery. What survives is what was durable: the SQLite checkpoints, the input record and the
committed attempts (a state file replaced atomically after every commit, plan and revision)
and the trace so far (appended event by event). The parent records the crash, and a second
process restarts from the durable state, replans and finishes.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rctools.revision.injection import Injection
from rctools.revision.recorder import Recorder
from rctools.revision.runtime import Attempt, RevisionRuntime
from rctools.revision.workloads import WORKLOADS, Workload
from rctools.suite.child import run_worker
from rctools.suite.crash import KillPoints
from rctools.suite.reports import WorkerReport
from rctools.suite.trace import TraceWriter

CRASH_POINTS = ("after-revision", "in-recovery")


def crash_points(policy: str) -> tuple[str, ...]:
    """`stale` never recovers, so it has no recovery to crash in."""
    return CRASH_POINTS if policy != "stale" else ("after-revision",)


class SyncedRecorder(Recorder):
    """Appends each event to the trace as it happens, through the suites' one writer (a line
    per `os.write`, which a SIGKILL cannot undo), so a killed process leaves a valid prefix."""

    def __init__(self, head: dict[str, Any], path: Path) -> None:
        super().__init__(head)
        if not path.exists():
            first = TraceWriter(path)
            first.header(head)
            first.close()
        self.lines = TraceWriter.continuing(path)

    def __call__(self, ev: str, **fields: Any) -> None:
        self.lines.event(ev, **fields)


def _attempt(a: dict[str, Any]) -> Attempt:
    reads = {(p, v) for p, v in a["reads"]}
    return Attempt(**{**a, "parents": tuple(a["parents"]), "reads": reads})


class DurableRuntime(RevisionRuntime):
    """The runtime with its commits made durable, and its crash points (`CRASH_POINTS`) kill
    points of the framework's: the one the cell chose (`$RC_KILL_AT`) is where it is killed."""

    def __init__(self, workload: Workload, policy: str, folder: Path, *, restart: bool) -> None:
        super().__init__(
            workload, policy, Injection("after", None, workload.revision), folder / "db.sqlite"
        )
        self.folder = folder
        self.kill = KillPoints()
        self.record = SyncedRecorder(self.record.head, folder / "trace.jsonl")
        self.model.on_call = self._on_call
        self.thread = ""
        self.generation = 0
        if restart:
            self._load()

    # What is durable, and loading it back in a new process.
    def _persist(self) -> None:
        state = {
            "values": self.inputs.values,
            "versions": self.inputs.versions,
            "fired": self.fired,
            "generation": self.generation,
            "thread": self.thread,
            "cur": {n: {**asdict(a), "reads": sorted(a.reads)} for n, a in self.cur.items()},
            # an irreversible effect out is durable: a restarted process must not send it again
            "sent": {n: {**asdict(a), "reads": sorted(a.reads)} for n, a in self.sent.items()},
        }
        temp = self.folder / "state.json.tmp"
        with temp.open("w", encoding="utf-8") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, self.folder / "state.json")

    def _load(self) -> None:
        state = json.loads((self.folder / "state.json").read_text(encoding="utf-8"))
        self.inputs.values, self.inputs.versions = state["values"], state["versions"]
        self.fired = state["fired"]
        self.thread = state["thread"]
        self.generation = state["generation"] + 1
        self.id_prefix = f"r{self.generation}-a"  # ids of the killed process may be in use
        for name, a in state["cur"].items():
            self.cur[name] = _attempt(a)
        for name, a in state.get("sent", {}).items():
            self.sent[name] = (
                self.cur[name] if self.cur.get(name, None) == _attempt(a) else _attempt(a)
            )

    def _new_thread(self) -> dict[str, Any]:
        config = super()._new_thread()
        self.thread = config["configurable"]["thread_id"]
        return config

    def _commit(self, attempt: Attempt) -> None:
        super()._commit(attempt)
        self._persist()

    def _replan(self, at: str | None) -> None:
        super()._replan(at)
        self._persist()

    def _inject(self, point: str, node: str | None) -> bool:
        fired = super()._inject(point, node)
        if fired:
            self._persist()
            self.kill.hit("after-revision")
        return fired

    def _on_call(self) -> None:
        if self.fired:
            self.kill.hit("in-recovery")

    def resume_after_crash(self) -> None:
        self.record("restart")
        self.run({"configurable": {"thread_id": self.thread}})


def record_crash(workload: Workload, policy: str, crash: str, out: Path) -> Path:
    """Runs, kills and restarts; returns the trace. Raises if the child did not die by SIGKILL
    at its crash point, or the restart did not finish."""
    folder = out / f"{workload.name}-{policy}-crash-{crash}"
    folder.mkdir(parents=True, exist_ok=False)
    first = _child(workload, policy, folder, "first", kill_at=f"{crash}#1")
    if first.exit != "killed":
        raise RuntimeError(f"the run was not killed ({first.returncode}): {first.error}")
    harness = TraceWriter.continuing(folder / "trace.jsonl")  # DagRevision names no process
    harness.event("crash")
    harness.close()
    second = _child(workload, policy, folder, "restart")
    if second.exit != "returned":
        raise RuntimeError(f"the restart failed ({second.returncode}): {second.error}")
    trace = out / f"{folder.name}.jsonl"
    os.replace(folder / "trace.jsonl", trace)
    return trace


def _child(
    workload: Workload, policy: str, folder: Path, mode: str, kill_at: str | None = None
) -> WorkerReport:
    job = folder / f"job-{mode}.json"
    spec = {"workload": workload.name, "policy": policy, "folder": str(folder), "mode": mode}
    job.write_text(json.dumps(spec), encoding="utf-8")
    return run_worker(
        "rctools.revision.crash", job, proc="-", role=mode, kill_at=kill_at, timeout=120
    )


def main(job: str) -> int:
    spec = json.loads(Path(job).read_text(encoding="utf-8"))
    workload, folder = WORKLOADS[spec["workload"]], Path(spec["folder"])
    runtime = DurableRuntime(workload, spec["policy"], folder, restart=spec["mode"] != "first")
    if spec["mode"] == "first":
        runtime.run()
    else:
        runtime.resume_after_crash()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
