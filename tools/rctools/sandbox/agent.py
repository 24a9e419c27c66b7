"""The agent process: replays a workload's turns in a sandbox under a checkpoint policy.

Run by the recorder as `python -m rctools.sandbox.agent RUN_DIR --workload W --policy P ...`,
once fresh and, after each SIGKILL, once more with `--resume`. It is the runtime under test:
it runs the tool commands, inspects each turn's effects, takes and publishes checkpoints, gates
the model's response on its turn's checkpoint, and on resume restores the sandbox from the
restore head, cuts the conversation there, fast-forwards over a cached response and re-issues
the turn that was in flight. Every move is an event of the trace (`trace.jsonl` in RUN_DIR).

A crash point (`--crash TURN:POINT`) makes this process SIGKILL the sandbox's PID 1 and then
itself, at one of three instants of turn TURN:
  command     the turn's first command ran, its result was not yet recorded (in flight);
  checkpoint  the checkpoint job copied its data but did not finish (or, for a skipped
              checkpoint, before the restore point was published);
  response    the restore point is published and the model's response cached, not released.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from rctools.sandbox.inspector import Inspector
from rctools.sandbox.namespace import Process, Sandbox, table_digest
from rctools.sandbox.policies import POLICIES, Policy
from rctools.sandbox.store import Store
from rctools.sandbox.tree import Manifest, manifest, tree_digest
from rctools.sandbox.workloads import WORKLOADS, Workload

CRASH_POINTS = ("command", "checkpoint", "response")


class TraceWriter:
    """Appends events to the trace; one line per event, flushed at once so a SIGKILL loses
    nothing that was emitted. Threads (checkpoint job, model call) share it."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        with path.open(encoding="utf-8") as fh:
            self._seq = sum(1 for _ in fh) - 1
        self._fh = path.open("a", encoding="utf-8")

    def emit(self, ev: str, **fields: Any) -> None:
        with self._lock:
            self._seq += 1
            event = {"ev": ev, "seq": self._seq, "ts": round(time.time(), 6), **fields}
            self._fh.write(json.dumps(event) + "\n")
            self._fh.flush()


class Agent:
    def __init__(
        self,
        run_dir: Path,
        workload: Workload,
        policy: Policy,
        latency: float,
        crash: tuple[int, str] | None,
    ) -> None:
        self.workload, self.policy, self.latency, self.crash_at = workload, policy, latency, crash
        self.base = run_dir / "base"
        self.upper, self.work = run_dir / "upper", run_dir / "work"
        self.store = Store(run_dir / "store")
        self.trace = TraceWriter(run_dir / "trace.jsonl")
        self.sandbox = Sandbox(self.base, self.upper, self.work, run_dir / "mnt")
        self.pid_file = run_dir / "sandbox.pid"
        self.base_manifest: Manifest = manifest(self.base)
        self.latest = {"files": 0, "procs": 0}
        self.inspector = Inspector({}, table_digest([]))
        self.sent = 0

    # --- faults -------------------------------------------------------------------------------

    def maybe_crash(self, turn: int, point: str) -> None:
        if self.crash_at == (turn, point):
            os.kill(self.sandbox.init_pid, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)

    # --- start and restore --------------------------------------------------------------------

    def _start_sandbox(self) -> None:
        self.sandbox.start()
        self.pid_file.write_text(str(self.sandbox.init_pid))

    def fresh(self) -> None:
        self._start_sandbox()
        self.store.publish(0, 0, 0)
        self.store.cache_response(0, self.workload.response(0))
        files, procs = self._observe()
        self.trace.emit("start", files=files, procs=procs)

    def resume(self) -> None:
        head = self.store.head()
        if head is None:
            raise SystemExit("nothing to resume: no restore head")
        turn = head["turn"]
        self.store.drop_after(turn)
        self.store.restore_upper(head["files_at"], self.upper)
        shutil.rmtree(self.work, ignore_errors=True)
        history = self.store.cut_conversation(turn)
        self.store.drop_responses_after(turn)
        self._start_sandbox()
        table = self.store.procs_at(head["procs_at"])
        for process in table:
            self.sandbox.spawn(process)
        self._await_processes(table)
        files, procs = self._observe()
        self.trace.emit("restore", turn=turn, files=files, procs=procs, history=history)
        self.inspector = Inspector(self.store.upper_at(head["files_at"]), table_digest(table))
        self.latest = {"files": head["files_at"], "procs": head["procs_at"]}
        self.sent = history

    def _await_processes(self, table: list[Process], timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        want = table_digest(table)
        while table_digest(self.sandbox.processes()) != want and time.monotonic() < deadline:
            time.sleep(0.01)

    def _observe(self) -> tuple[str, str]:
        """The sandbox as it is: digests of the merged workspace and of the process table."""
        return tree_digest(manifest(self.sandbox.view)), table_digest(self.sandbox.processes())

    # --- the turn loop ------------------------------------------------------------------------

    def run(self) -> None:
        response = self._response(self.sent)
        self.trace.emit("release", turn=self.sent)
        for turn in range(self.sent + 1, len(self.workload.turns) + 1):
            self._commands(turn, response["commands"])
            response = self._boundary(turn)
        self.sandbox.kill()

    def _response(self, turn: int) -> dict[str, Any]:
        """The model's response to `turn`: from the cache (fast-forward), or a model call."""
        cached = self.store.cached_response(turn)
        if cached is not None:
            return cached
        return self._call_model(turn)

    def _call_model(self, turn: int) -> dict[str, Any]:
        time.sleep(self.latency)  # the model stand-in: a recorded response after a delay
        response = self.workload.response(turn)
        self.store.cache_response(turn, response)
        self.trace.emit("response", turn=turn)
        return response

    def _commands(self, turn: int, commands: list[str]) -> None:
        results = []
        for index, command in enumerate(commands, start=1):
            self.trace.emit("cmd_start", turn=turn, cmd=index, command=command)
            result = self.sandbox.run(command)
            if index == 1:
                self.maybe_crash(turn, "command")
            self.trace.emit("cmd_end", turn=turn, cmd=index, out=result.digest, exit=result.exit)
            results.append({"command": command, "exit": result.exit, "output": result.output})
        self.store.record_results(turn, results)

    def _boundary(self, turn: int) -> dict[str, Any]:
        frozen = self.sandbox.freeze()  # one instant: nothing in the sandbox moves meanwhile
        upper = manifest(self.upper, upper=True)
        table = self.sandbox.processes()
        files, procs = self._observe()
        changed = self.inspector.classify(upper, table)
        self.trace.emit("boundary", turn=turn, files=files, procs=procs, changed=sorted(changed))
        capture = self.policy.capture(changed)
        self.trace.emit("checkpoint", turn=turn, capture=sorted(capture))
        previous = (self.latest["files"], self.inspector.last_upper)
        self.inspector.took(capture, upper, table)
        for kind in capture:
            self.latest[kind] = turn
        model: dict[str, Any] = {}
        call = threading.Thread(target=lambda: model.update(self._call_model(turn)))
        call.start()
        job = threading.Thread(
            target=self._job, args=(turn, capture, upper, table, previous, frozen)
        )
        job.start()
        job.join()
        call.join()
        self.maybe_crash(turn, "response")
        self.trace.emit("release", turn=turn)
        return model

    def _job(
        self,
        turn: int,
        capture: set[str],
        upper: Manifest,
        table: list[Process],
        previous: tuple[int, Manifest],
        frozen: list[int],
    ) -> None:
        """The checkpoint job: writes the images, then publishes the turn's restore point.

        The sandbox stays frozen until the files are copied, so the file image is the
        boundary's instant; the crash point "checkpoint" falls before the job is done."""
        crash = functools.partial(self.maybe_crash, turn, "checkpoint")
        written: dict[str, str] = {}
        size = 0
        try:
            if "files" in capture:
                delta = previous if self.policy.file_images == "delta" else None
                image = self.store.write_files_image(
                    turn, self.upper, upper, delta, self.base_manifest, before_done=crash
                )
                written["files"], size = image.digest, size + image.bytes
        finally:
            Sandbox.thaw(frozen)
        if "files" not in capture:
            crash()
        if "procs" in capture:
            image = self.store.write_procs_image(turn, table)
            written["procs"], size = image.digest, size + image.bytes
        if capture:
            self.trace.emit(
                "job_done",
                turn=turn,
                files=written.get("files"),
                procs=written.get("procs"),
                bytes=size,
            )
        self.store.publish(turn, self.latest["files"], self.latest["procs"])
        self.trace.emit(
            "publish", turn=turn, files_at=self.latest["files"], procs_at=self.latest["procs"]
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    parser.add_argument("--policy", choices=sorted(POLICIES), required=True)
    parser.add_argument("--latency", type=float, default=0.05, help="model call, seconds")
    parser.add_argument("--crash", help="TURN:POINT, POINT one of " + ", ".join(CRASH_POINTS))
    parser.add_argument("--resume", action="store_true", help="restore from the restore head")
    args = parser.parse_args(argv)
    crash = None
    if args.crash:
        turn, point = args.crash.split(":")
        crash = (int(turn), point)
    agent = Agent(
        args.run_dir, WORKLOADS[args.workload], POLICIES[args.policy], args.latency, crash
    )
    if args.resume:
        agent.resume()
    else:
        agent.fresh()
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
