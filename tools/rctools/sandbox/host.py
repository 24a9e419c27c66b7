"""The host-side runtime: an unmodified agent in a sandbox, checkpointed between it and its model.

Run by the recorder as `python -m rctools.sandbox.host RUN_DIR --agent CMD --model URL ...`,
once fresh and, after each SIGKILL, once more with `--resume`. It starts the sandbox, opens the
chat endpoint inside the sandbox's network (`proxy.py`), and starts the agent command inside the
sandbox (its mount, PID and network namespaces, its working directory the workspace) with
`OPENAI_BASE_URL` pointing there. The agent is a guest of the sandbox, not its state: its
process is left out of the process table and the images, and a crash restarts it instead.

A request to the endpoint is the turn boundary. The request of turn t holds the results of the
commands the response to turn t-1 called (the `tool` messages after the last assistant
message); the host records them as the turn's commands (`cmd_start`/`cmd_end`, the output's
digest), then does what the scripted agent does at a boundary (`Agent._boundary`): freezes the
sandbox, inspects its effects, takes and publishes the checkpoint per policy while forwarding the
request to the model endpoint, caches the response durably, and answers the agent only once the
turn's restore point is published (completion gating). Its latency, request to answer, goes to
`turns.jsonl` of the run folder.

After a crash the host restores the sandbox from the restore head (turn h), writes the
conversation of turn h's request to `$AGENT_TRANSCRIPT` and restarts the agent, which continues
from it and so re-sends that request. **How a re-sent request is recognised**: its turn (the
number of assistant messages) is h and its messages equal, as a digest, the ones recorded for
turn h; the host then answers with the cached response (fast-forward: no model call) or, if none
was cached before the crash, calls the model. A request of turn h whose messages differ, or of
any turn other than h or h+1, is refused (HTTP 409) and ends the run with that reason: an agent
that restarts from its task instead of its transcript would run turns 1..h again on the
restored sandbox, and no checkpointing can make that right.

The model's answer to the task (turn 0's request) is cached as response 0 without a `response`
event: SandboxCR names response 0 the task, which the agent holds from the start.

Crash points, as for the scripted agent: `command` (turn t's commands ran, the request arrived,
nothing of it recorded), `checkpoint` and `response`.
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import subprocess
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import click

from rctools.sandbox.agent import Agent, Run, resume_options, run_options, slots_option
from rctools.sandbox.inspector import Inspector
from rctools.sandbox.namespace import COMMAND_ENV, table_digest
from rctools.sandbox.proxy import Endpoint
from rctools.sandbox.standin import turn_of
from rctools.sandbox.store import write_atomic
from rctools.sandbox.tree import digest

MODEL_TIMEOUT = 300.0


class Refused(RuntimeError):
    """A request the host cannot place in the run (HTTP 409); the run ends with this reason."""


class Host(Agent):
    """The coordinator of one sandbox; the turn loop is the agent's, driven by its requests."""

    def __init__(self, run: Run, agent: str, model: str) -> None:
        super().__init__(run, 0.0)
        self.agent, self.model = agent, urllib.parse.urlsplit(model)
        self.transcript = run.run_dir / "transcript.json"
        self.agent_log = run.run_dir / "agent.log"
        self.turns_log = run.run_dir / "turns.jsonl"
        self.lock = threading.Lock()  # one request at a time
        self.body: dict[str, Any] = {}  # the request being answered
        self.refused: str | None = None  # why a request was refused or failed: the run ends
        self.finished = False

    # --- start and restore --------------------------------------------------------------------

    def fresh(self) -> None:
        self._start_sandbox()
        self.inspector = Inspector({}, table_digest([]), self._watch())
        self.store.publish(0, 0, 0)
        files, procs = self._observe()
        self.trace.event("start", files=files, procs=procs)
        self.transcript.unlink(missing_ok=True)

    def resume(self) -> None:
        """Back to the restore head; the agent will continue from that turn's conversation."""
        super().resume()
        known = self._conversation(self.sent)
        if known is None:
            self.transcript.unlink(missing_ok=True)  # the head is the start: the task again
        else:
            write_atomic(self.transcript, known)

    def _conversation(self, turn: int) -> list[dict[str, Any]] | None:
        path = self.store.conversation / f"{turn}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    # --- the agent ----------------------------------------------------------------------------

    def run(self) -> None:
        endpoint = Endpoint(f"/proc/{self.sandbox.init_pid}/ns/net", self.on_request)
        env = {
            **COMMAND_ENV,
            "HOME": str(self.sandbox.mountpoint),
            "OPENAI_BASE_URL": endpoint.url,
            "OPENAI_API_KEY": "standin",
            "AGENT_TRANSCRIPT": str(self.transcript),
        }
        where = shlex.quote(str(self.sandbox.mountpoint))
        # A session of its own inside the sandbox, as every command has (criu refuses a
        # process whose session leader is outside the sandbox).
        argv = self.sandbox.enter(
            "setsid", "--wait", "/bin/sh", "-c", f"cd {where} || exit 125\nexec {self.agent}"
        )
        with self.agent_log.open("a") as log:
            agent = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env
            )
            self.sandbox.guests = {agent.pid}
            code = agent.wait()
        endpoint.shutdown()
        self.sandbox.kill()
        if self.refused:
            raise SystemExit(f"the host could not answer the agent: {self.refused}")
        if code != 0 or not self.finished:
            tail = " | ".join(self.agent_log.read_text(errors="replace").splitlines()[-3:])
            state = "" if self.finished else " before the model's final answer"
            raise SystemExit(f"the agent exited with {code}{state}: {tail}")

    def on_request(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            arrived = time.perf_counter()
            try:
                response, cached = self._turn(body)
            except Refused as exc:
                self.refused = str(exc)
                return 409, {"error": {"message": str(exc), "type": "resume_check_refused"}}
            except Exception as exc:  # the model endpoint, a job: the run fails with the cause
                self.refused = f"{type(exc).__name__}: {exc}"
                return 502, {"error": {"message": self.refused, "type": "resume_check_failed"}}
            with self.turns_log.open("a") as fh:
                seconds = time.perf_counter() - arrived
                line = {"turn": self.sent, "seconds": round(seconds, 6), "cached": cached}
                fh.write(json.dumps(line) + "\n")
            message = response["choices"][0]["message"]
            self.finished = not message.get("tool_calls")
            return 200, response

    def _turn(self, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The request's place in the run, and the answer released to it (cached or not)."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Refused("a request without messages")
        if body.get("stream"):
            raise Refused("streamed responses are not supported: the host caches whole answers")
        turn, known = turn_of(messages), self._conversation(self.sent)
        self.body = body
        if turn == self.sent:
            return self._again(turn, messages, known)
        if turn == self.sent + 1 and known is not None:
            self._results(turn, messages, known)
            return self._boundary(turn), False
        raise Refused(f"a request of turn {turn} while the run is at turn {self.sent}")

    def _again(
        self, turn: int, messages: list[dict[str, Any]], known: list[dict[str, Any]] | None
    ) -> tuple[dict[str, Any], bool]:
        """The task (turn 0 of a fresh run), or the re-sent request of the restored turn."""
        if known is None:
            if turn != 0:
                raise Refused(f"no conversation was recorded for turn {turn}")
            self.store.record_results(0, messages)
        elif digest(messages) != digest(known):
            raise Refused(f"turn {turn} re-sent with other messages than were recorded")
        cached = self.store.cached_response(turn)
        response = cached if cached is not None else self._ask(turn)
        self.trace.event("release", turn=turn)
        return response, cached is not None

    def _results(
        self, turn: int, messages: list[dict[str, Any]], known: list[dict[str, Any]]
    ) -> None:
        """Records turn `turn`'s commands from the tool results its request carries."""
        if digest(messages[: len(known)]) != digest(known):
            raise Refused(f"the request of turn {turn} does not continue the conversation")
        calls = messages[len(known)].get("tool_calls") or []
        results = {m.get("tool_call_id"): m for m in messages[len(known) + 1 :]}
        expected = len(self.workload.turns[turn - 1]) if turn <= len(self.workload.turns) else 0
        if len(calls) != expected or any(call.get("id") not in results for call in calls):
            raise Refused(
                f"turn {turn}: the agent answered {len(results)} of {expected} tool calls"
            )
        self.crash_point(turn, "command")
        for index, call in enumerate(calls, start=1):
            command = json.loads(call["function"]["arguments"]).get("command", "")
            output = str(results[call["id"]].get("content") or "")
            self.trace.event("cmd_start", turn=turn, cmd=index, command=command)
            self.trace.event("cmd_end", turn=turn, cmd=index, out=digest({"output": output}))
        self.store.record_results(turn, messages)
        self.sent = turn

    def _call_model(self, turn: int) -> dict[str, Any]:
        """The boundary's model call (overlapping the checkpoint job): forwarded, cached."""
        return self._ask(turn)

    def _ask(self, turn: int) -> dict[str, Any]:
        response = self._forward(self.body)
        self.store.cache_response(turn, response)
        if turn > 0:
            self.trace.event("response", turn=turn)
        return response

    def _forward(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request, as the agent sent it, to the model endpoint -- routed to this run's
        workload by the model's name, as a model router would (whatever model the agent
        names, the stand-in must answer with this run's script)."""
        body = {**body, "model": f"standin/{self.workload.name}"}
        conn = http.client.HTTPConnection(
            self.model.hostname, self.model.port, timeout=MODEL_TIMEOUT
        )
        try:
            conn.request(
                "POST",
                self.model.path.rstrip("/") + "/chat/completions",
                json.dumps(body),
                {"Content-Type": "application/json"},
            )
            reply = conn.getresponse()
            data = reply.read()
        finally:
            conn.close()
        if reply.status != 200:
            raise RuntimeError(f"the model endpoint answered {reply.status}: {data[:300]!r}")
        return json.loads(data)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@run_options
@click.option("--agent", required=True, help="the agent's command line, run in the workspace")
@click.option("--model", required=True, help="the model endpoint's base URL (…/v1)")
@resume_options
@slots_option
def main(
    run_dir: Path,
    workload: str,
    policy: str,
    agent: str,
    model: str,
    resume: bool,
    processes: str,
    inspector: str,
    slots: Path | None,
) -> None:
    """Exit code 0 when the agent got its final answer and ended; a crash point (`$RC_KILL_AT`)
    ends it by SIGKILL; anything else is a message and exit code 1."""
    host = Host(Run.named(run_dir, workload, policy, processes, inspector, slots), agent, model)
    if resume:
        host.resume()
    else:
        host.fresh()
    host.run()
    os._exit(0)  # the endpoint's daemon threads hold nothing to flush


if __name__ == "__main__":
    main()
