"""One Restate cell, driven step by step: service processes started and SIGKILLed, the
workflow submitted, answers sent, restate-server SIGKILLed and restarted on its data.

Unlike the phased suites, the processes under test are long-running servers: restate-server,
and the service (deployment) process it invokes. The driver is the cell's client: it submits
the workflow through the ingress, sends each answer as a request handler would (its own
process name in the trace, `h1`, ...), and logs every `crash` once the killed process is gone.
A crash of restate-server ends the attempts it was driving: the driver logs their `crash` too
and marks them dead, so that nothing they do later reaches the trace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumecheck.waiting import poll

from rctools.restate.journal import SERVICE, snapshot
from rctools.restate.server import Server
from rctools.suite.crash import FD_ENV, KILL_ENV
from rctools.suite.reports import WorkerReport
from rctools.suite.server import free_port
from rctools.suite.trace import TraceWriter

WAIT = 60.0


class CellFailed(Exception):
    """The runtime did not get through the cell (a timeout, an unexpected response)."""


@dataclass
class Service:
    """A service process; `killed` is set once the harness SIGKILLed it at its kill point."""

    proc: str
    popen: subprocess.Popen[bytes]
    stderr: Path
    started: float
    killed: threading.Event = field(default_factory=threading.Event)
    point: str | None = None
    died: int | None = None  # its exit status, had it ended before the cell stopped it

    def report(self) -> WorkerReport:
        seconds = round(time.monotonic() - self.started, 3)
        if self.killed.is_set():
            return WorkerReport(
                self.proc, "serve", "killed", self.popen.returncode, self.point, seconds=seconds
            )
        if self.died not in (None, 0):
            tail = self.stderr.read_text(errors="replace").strip().splitlines()[-3:]
            return WorkerReport(
                self.proc,
                "serve",
                "error",
                self.died,
                error=" | ".join(tail),
                seconds=seconds,
            )
        return WorkerReport(self.proc, "serve", "returned", 0, seconds=seconds)


class Driver:
    def __init__(self, work: Path, data: Path, trace: Path, key: str, workflow: str) -> None:
        self.work, self.trace, self.key, self.workflow = work, trace, key, workflow
        self.control = work / "control"
        self.control.mkdir(parents=True, exist_ok=True)
        self.server = Server(data)
        self.port = free_port()
        self.services: list[Service] = []
        self.answerers: list[str] = []
        self.registered = False
        self.notes: dict[str, Any] = {"answers": []}

    # ------------------------------------------------------------------ processes

    def job(self, proc: str, **extra: Any) -> Path:
        job = {
            "proc": proc,
            "trace": str(self.trace),
            "effects": str(self.work / "effects.jsonl"),
            "admin": self.server.admin,
            "key": self.key,
            "workflow": self.workflow,
            "port": self.port,
            "control": str(self.control),
            **extra,
        }
        path = self.work / f"job-{proc}.json"
        path.write_text(json.dumps(job), encoding="utf-8")
        return path

    def serve(self, proc: str, kill_at: str | None = None, pause_at: str | None = None) -> None:
        """Starts a service process on the cell's port (registered with the server once)."""
        job = self.job(proc, pause_at=pause_at)
        read_fd, write_fd = os.pipe()
        env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
        env[FD_ENV] = str(write_fd)
        if kill_at:
            env[KILL_ENV] = kill_at
        stderr = self.work / f"{proc}.stderr"
        with stderr.open("wb") as err:
            popen = subprocess.Popen(
                [sys.executable, "-m", "rctools.restate.worker", str(job)],
                env=env,
                pass_fds=(write_fd,),
                stdout=subprocess.DEVNULL,
                stderr=err,
                stdin=subprocess.DEVNULL,
            )
        os.close(write_fd)
        service = Service(proc, popen, stderr, time.monotonic())
        self.services.append(service)

        def listen() -> None:
            with os.fdopen(read_fd, "rb") as pipe:
                line = pipe.readline()
            if line:
                service.point = line.decode().strip()
                popen.send_signal(signal.SIGKILL)
                popen.wait()
                self.log_crashes(proc)
                service.killed.set()

        threading.Thread(target=listen, daemon=True).start()
        if not self.registered:
            self.server.register(f"http://127.0.0.1:{self.port}")
            self.registered = True

    def service(self, proc: str) -> Service:
        return next(s for s in self.services if s.proc == proc)

    def wait_killed(self, proc: str) -> None:
        if not self.service(proc).killed.wait(WAIT):
            raise CellFailed(f"{proc} never reached its kill point")

    def kill(self, proc: str) -> None:
        """SIGKILL of a service process from outside (it waits for a promise)."""
        service = self.service(proc)
        service.popen.send_signal(signal.SIGKILL)
        service.popen.wait()
        service.point = "promise.waiting"
        self.log_crashes(proc)
        service.killed.set()

    def live_attempts(self, prefix: str | None = None) -> list[str]:
        """The attempts (trace procs of service processes) that started and did not end."""
        last: dict[str, str] = {}
        for line in self.trace.read_text(encoding="utf-8").splitlines()[1:]:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            last[str(event["proc"])] = event["ev"]
        names = {s.proc for s in self.services}
        return [
            p
            for p, ev in last.items()
            if ev not in ("finish", "crash")
            and p.split(".")[0] in names
            and (prefix is None or p.split(".")[0] == prefix)
        ]

    def log_crashes(self, prefix: str | None = None) -> None:
        for name in self.live_attempts(prefix):
            (self.control / f"dead-{name}").touch()
            writer = TraceWriter(self.trace, name)
            with writer.shared():
                writer.event("crash")
            writer.close()

    def kill_server(self, when: str) -> None:
        """SIGKILL restate-server when a service attempt paused at its pause point (`paused`),
        while the workflow waits for a promise (`parked`) or after it completed (`done`);
        then restart it on the same data and ports."""
        paused = self.control / "paused"
        if when == "paused":
            self._until(paused.exists, "the pause point")
        elif when == "parked":
            self.parked()
        elif when == "done":
            self.output()
        self.server.kill()
        self.notes["server_kills"] = self.notes.get("server_kills", 0) + 1
        self.log_crashes()
        self.server.start()
        (self.control / "go").touch()

    # ------------------------------------------------------------------ the client

    def submit(self) -> None:
        status, body = self.server.call(f"/{SERVICE}/{self.key}/run/send", "o-1")
        if status not in (200, 202):
            raise CellFailed(f"submit: {status} {body}")

    def submit_twice(self) -> None:
        """Two clients submit the same workflow id at once."""
        out: list[tuple[int, Any]] = []

        def one() -> None:
            out.append(self.server.call(f"/{SERVICE}/{self.key}/run/send", "o-1"))

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.notes["submits"] = sorted(status for status, _ in out)

    def resubmit(self) -> None:
        status, body = self.server.call(f"/{SERVICE}/{self.key}/run", "o-1")
        self.notes["resubmit"] = [status, body]

    def _until(self, check: Any, what: str) -> Any:
        found = poll(check, timeout=WAIT, every=0.05)
        if not found:
            raise CellFailed(f"timed out waiting for {what}")
        return found

    def parked(self, other_than: int | None = None) -> tuple[int, str]:
        """Waits until the workflow waits for a promise; its task index and checkpoint."""

        def check() -> tuple[int, str] | None:
            snap = snapshot(self.server.admin, self.key, notes=self.control)
            k = snap.parked()
            for noted in self.control.glob("awakeable-*"):
                # an awakeable waited for and not yet resolved: nothing of it is journaled
                kk = int(noted.read_text().split()[0])
                if kk == snap.count() + 1 == len(snap.tasks) + 1:
                    k = kk
            return (k, snap.ckid(k - 1)) if k is not None and k != other_than else None

        found: tuple[int, str] = self._until(check, "the workflow to wait for a promise")
        return found

    def answer(
        self, proc: str, value: str, promise: str = "approval", *, again: bool = False
    ) -> None:
        """A request handler: loads what the journal holds, resolves the promise; the answer
        is logged (`resume`, then its acknowledgement) only when Restate accepted it -- a
        resolve Restate refuses (409: already completed) stores nothing."""
        writer = TraceWriter(self.trace, proc)
        self.answerers.append(proc)
        if again and self.workflow == "awakeable":
            k = int((self.control / f"awakeable-{promise}").read_text().split()[0])
            snap = snapshot(self.server.admin, self.key, notes=self.control)
            seen = (k, snap.ckid(k - 1))
        elif again:
            snap = snapshot(self.server.admin, self.key, notes=self.control)
            k = next(
                i + 1 for i, t in enumerate(snap.tasks) if t.kind == "promise" and t.name == promise
            )
            seen = (k, snap.ckid(k - 1))
        else:
            seen = self.parked()
        # One move under the trace lock: the workflow, which takes the lock before it logs
        # the answer it received, cannot log it before this handler logged sending it.
        with writer.shared():
            snap = snapshot(self.server.admin, self.key, notes=self.control)
            loaded = snap.load_fields()
            writer.event("load", thread=self.key, asked=None, **loaded)
            if again:
                # a second click answers the same wait, against what the handler holds now
                seen = (seen[0], loaded["checkpoint"])
            noted = self.control / f"awakeable-{promise}"
            if self.workflow == "awakeable":
                # an awakeable is resolved through the ingress: no service has to run
                aid = noted.read_text().split()[1]
                status, _ = self.server.call(f"/restate/awakeables/{aid}/resolve", value)
            else:
                status, _ = self.server.call(
                    f"/{SERVICE}/{self.key}/approve", {"promise": promise, "value": value}
                )
            self.notes["answers"].append({"proc": proc, "value": value, "status": status})
            if status in (200, 202):
                k, at = seen
                writer.event(
                    "resume",
                    thread=self.key,
                    checkpoint=at,
                    interrupt=f"{self.key}:{k}",
                    value=value,
                )
                writer.event("put_writes", thread=self.key, checkpoint=at, task=None, kind="resume")
        writer.close()

    def output(self) -> Any:
        """Waits for the workflow's result (the ingress's attach)."""

        def attached() -> tuple[Any] | None:
            try:
                status, body = self.server.call(
                    f"/restate/workflow/{SERVICE}/{self.key}/attach", timeout=WAIT
                )
            except OSError:
                return None
            return (body,) if status == 200 else None

        found = poll(attached, timeout=WAIT, every=0.1)
        if found is None:
            raise CellFailed("the workflow never completed")
        return found[0]

    def close_answerers(self) -> None:
        """Each request handler saw the workflow end: a load of the final checkpoint."""
        for proc in self.answerers:
            writer = TraceWriter(self.trace, proc)
            with writer.shared():
                snap = snapshot(self.server.admin, self.key, notes=self.control)
                writer.event("load", thread=self.key, asked=None, **snap.load_fields())
                writer.event("finish", outcome="done")
            writer.close()

    def stop(self) -> list[WorkerReport]:
        for s in self.services:
            s.died = s.popen.poll()
            if s.died is None:
                s.popen.terminate()
        for s in self.services:
            try:
                s.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                s.popen.kill()
                s.popen.wait()
        self.server.stop()
        return [s.report() for s in self.services]
