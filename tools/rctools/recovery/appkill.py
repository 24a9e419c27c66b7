"""`run recovery --app --kill`: the failure is a SIGKILL of the process running the graph, not a
tool raising.

The cell's graph runs in a child process (`python -m rctools.recovery.appkill JOB`, under the
suite framework's child harness `suite.child.run_worker`), which records as the in-process run
does and, at the failure point (before the K-th declared tool call of an instance), writes
`fail` and reaches the framework's kill point `KILL_POINT` (`suite.crash.KillPoints`), where the
harness SIGKILLs it: every thread of it dies mid-step, siblings included. What survives is what
a real restart has: LangGraph's SQLite checkpoints and the writes of the tasks that finished,
the trace (one `os.write` per event), and a side log the child appended as it went (`SideLog`:
which task ran which instance, the state keys each commit wrote, the arguments of every effect
that can be undone, the irreversible intents' results for the ledger). The suite's own process
then recovers from those: it rebuilds the run's bookkeeping (AppRun in mode "recover"),
localizes the failure to the instance the trace says failed, rolls back with it the siblings
that died mid-run, and the policy decides as after a raised failure -- `resume` and `admissible`
restart LangGraph on the thread the killed process used.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import sys
import uuid
from pathlib import Path
from typing import Any

from rctools.recovery.engine import RunResult, Stuck
from rctools.suite.child import run_worker

KILL_SECONDS = 120.0
KILL_POINT = "failure"  # the one kill point of the child: its failure point


class SideLog:
    """Records the killed process leaves for its successor, one `os.write` per JSON line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, **fields: Any) -> None:
        os.write(self._fd, (json.dumps({"kind": kind, **fields}) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)

    @staticmethod
    def pack(value: Any) -> str:
        """An effect's arguments or result, as the successor will need them back."""
        return base64.b64encode(pickle.dumps(value)).decode()

    @staticmethod
    def unpack(text: str) -> Any:
        return pickle.loads(base64.b64decode(text))

    @staticmethod
    def read(path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]


def run_killed(
    app: Any, policy: str, point: Any, trace: Path, db: Path, instances: list[str]
) -> RunResult:
    """One cell: the child runs the graph until its SIGKILL, then this process recovers."""
    from rctools.recovery.appengine import AppRun

    thread = str(uuid.uuid4())
    job = db.with_suffix(".job.json")
    job.parent.mkdir(parents=True, exist_ok=True)
    job.write_text(
        json.dumps(
            {
                "spec": app.spec,
                "tools": str(app.tools_file),
                "input": app.input,
                "answer": list(app.answer),
                "policy": policy,
                "point": [point.instance, point.call, point.tool],
                "trace": str(trace),
                "db": str(db),
                "instances": instances,
                "thread": thread,
            }
        ),
        encoding="utf-8",
    )
    child = run_worker(
        "rctools.recovery.appkill",
        job,
        proc="-",
        role="kill",
        kill_at=f"{KILL_POINT}#1",
        timeout=KILL_SECONDS,
    )
    if child.exit != "killed":
        raise Stuck(
            f"{app.spec}: the process running the graph was not killed before {point.name} "
            f"(exit {child.returncode}) {(child.error or '').split(' | ')[-1]}"
        )
    return AppRun(app, policy, point, trace, db, instances, mode="recover", thread=thread).run()


def main(job_path: str) -> int:
    """The child: loads the app as the suite did and runs it until the kill."""
    from rctools.recovery.app import load_app
    from rctools.recovery.appengine import AppRun, FailurePoint

    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    app = load_app(job["spec"], Path(job["tools"]), job["input"], tuple(job["answer"]))
    point = FailurePoint(*job["point"])
    trace, db = Path(job["trace"]), Path(job["db"])
    run = AppRun(
        app, job["policy"], point, trace, db, job["instances"], mode="kill", thread=job["thread"]
    )
    run.run()  # returns only when the failure point was never reached
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
