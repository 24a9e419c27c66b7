"""The user who revises: a separate process that sends revisions at random (seeded) instants.

It runs apart from the runtime (`python -m rctools.revision.sender`) and talks JSON lines over
its stdin and stdout, so its revisions land whenever they land -- while attempts read, while
they call the model, between an attempt's end and its commit, after the run has finished. For
each run the runtime sends the run's seed, the revisions the workload allows (path and kind),
the current versions and how many accepted revisions to send; the sender draws the instants
(uniform over `span` seconds) and the revisions from the seed, sends each against the version
it last heard of, and waits for the runtime's answer (accepted, and the new versions) before
the next. Now and then it sends one against an old version it remembers -- a user editing an
out-of-date view -- which the runtime must refuse. A cancel is sent only for a path whose
revision it sent and has not cancelled yet.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _serve_run(run: dict[str, Any], inp: IO[str], out: IO[str]) -> None:
    rng = random.Random(run["seed"])
    menu = [tuple(m) for m in run["menu"]]
    view: dict[str, int] = dict(run["versions"])
    controls: dict[str, dict[str, Any]] = run["controls"]
    undo: dict[str, int] = {}
    start = time.monotonic()
    instants = sorted(rng.uniform(0, run["span"]) for _ in range(run["count"]))
    for instant in instants:
        time.sleep(max(0.0, start + instant - time.monotonic()))
        old = [p for p, kind in menu if kind != "control" and view[p] > 0]
        if old and rng.random() < run["stale_share"]:
            p = rng.choice(old)
            kind = "replace" if (p, "replace") in menu else "append"
            answer = _ask(inp, out, {"path": p, "kind": kind, "base": view[p] - 1})
            if answer["accepted"]:
                raise RuntimeError(f"a revision of {p} against an old version was accepted")
        choices = [(p, k) for p, k in menu if k != "cancel" or undo.get(p, 0) > 0]
        p, kind = rng.choice(choices)
        revision: dict[str, Any] = {"path": p, "kind": kind, "base": view[p]}
        if kind == "control":
            others = [v for v in controls[p]["values"] if v != controls[p]["value"]]
            revision["value"] = rng.choice(others)
        answer = _ask(inp, out, revision)
        if not answer["accepted"] and answer.get("late"):
            continue  # too late for an irreversible effect out: refused, nothing changed
        if not answer["accepted"]:
            raise RuntimeError(f"a revision against the current version was refused: {revision}")
        view.update(answer["versions"])
        if kind == "control":
            controls[p]["value"] = revision["value"]
        elif kind == "cancel":
            undo[p] -= 1
        else:
            undo[p] = undo.get(p, 0) + 1
    _send(out, {"done": run["run"]})


def _ask(inp: IO[str], out: IO[str], revision: dict[str, Any]) -> dict[str, Any]:
    _send(out, {"revise": revision})
    line = inp.readline()
    if not line:
        raise SystemExit(0)
    return json.loads(line)["ack"]


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("quit"):
            return
        _serve_run(message, sys.stdin, sys.stdout)


class RevisionSender:
    """The runtime's end of the pipe to one sender process (kept for many runs)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rctools.revision.sender"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.errors: list[BaseException] = []

    def serve(
        self,
        run: dict[str, Any],
        on_revision: Callable[[dict[str, Any]], dict[str, Any]],
        on_done: Callable[[], None],
    ) -> threading.Thread:
        """Starts `run` in the sender; a thread hands each revision to `on_revision` (which
        answers with the ack) and calls `on_done` when the sender has sent them all."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        stdin, stdout = self.proc.stdin, self.proc.stdout

        def listen() -> None:
            try:
                for line in stdout:
                    message = json.loads(line)
                    if "done" in message:
                        break
                    _send(stdin, {"ack": on_revision(message["revise"])})
                else:
                    raise RuntimeError("the revision sender exited")
            except BaseException as exc:  # handed to the runtime, which raises
                self.errors.append(exc)
            finally:
                on_done()

        thread = threading.Thread(target=listen, name="revisions", daemon=True)
        _send(stdin, run)
        thread.start()
        return thread

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                _send(self.proc.stdin, {"quit": True})
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> RevisionSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    main()
