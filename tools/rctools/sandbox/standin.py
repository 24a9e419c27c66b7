"""The model endpoint's stand-in: OpenAI's `POST /v1/chat/completions`, deterministic, seeded.

Why a stand-in and not a model: the only fake the project allows is the LLM. Everything an
agent sees of it is real HTTP and the real wire format -- `messages` in, a `chat.completion`
with `tool_calls` (one `shell` function call per command) or a final `content` out -- so an
agent written against the OpenAI API runs against it unchanged (base URL from
`OPENAI_BASE_URL`).

What it answers is the script (`workloads.py`) of the workload the model's name asks for
(`standin/<workload>`; the host routes each request so): the request's turn is the number of
assistant messages it holds; the answer to turn t calls the commands of turn t+1, and the
answer to the last turn is the final message (which says whether the last command exited 0:
the agent's tests passing, in the code-repair workload). A response depends only on the
request (its id is a digest of it), so a re-run conversation gets the same answer. The delay
per call is `latency` seconds times a factor in [0.5, 1.5) drawn from a generator seeded with
the request, so calls differ and runs repeat.

`GET /stats` counts the calls answered (the tests' evidence that a fast-forward made none).

    python -m rctools.sandbox.standin --workload code-repair --latency 0.05 --port-file F
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import click
from resumecheck.waiting import poll

from rctools.sandbox.jsonhttp import JSONHandler
from rctools.sandbox.tree import digest
from rctools.sandbox.workloads import WORKLOADS, Workload

TOOL = "shell"
MODEL = "resume-check-standin"


class ChatError(ValueError):
    """A request the chat API would refuse (HTTP 400): the message says why."""


def turn_of(messages: list[dict[str, Any]]) -> int:
    """A conversation's turn: how many answers of the model it already holds."""
    return sum(1 for m in messages if m.get("role") == "assistant")


def answer(workload: Workload, body: dict[str, Any]) -> dict[str, Any]:
    """The `chat.completion` the script gives to `body`."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ChatError("'messages' must be a non-empty list")
    names = [t.get("function", {}).get("name") for t in body.get("tools") or []]
    if TOOL not in names:
        raise ChatError(f"the request offers no '{TOOL}' function tool")
    turn = turn_of(messages)
    request_id = digest(messages).removeprefix("sha256:")[:24]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if turn < len(workload.turns):
        message["tool_calls"] = [
            {
                "id": f"call_{turn + 1}_{index}",
                "type": "function",
                "function": {"name": TOOL, "arguments": json.dumps({"command": command})},
            }
            for index, command in enumerate(workload.turns[turn], start=1)
        ]
        reason = "tool_calls"
    else:
        last = messages[-1].get("content") or ""
        passed = str(last).startswith("exit=0")
        message["content"] = f"{workload.name}: done" + ("" if passed else " (last command failed)")
        reason = "stop"
    prompt = sum(len(json.dumps(m)) for m in messages) // 4
    completion = len(json.dumps(message)) // 4
    return {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model") or MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


class StandIn(ThreadingHTTPServer):
    """The HTTP server; `calls` counts the completions answered."""

    daemon_threads = True

    def __init__(self, workloads: dict[str, Workload], latency: float, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.workloads, self.latency = workloads, latency
        self.calls = 0
        self.lock = threading.Lock()

    def workload(self, model: str) -> Workload:
        """The script a model name asks for: `standin/<workload>`, or the server's only one."""
        name = model.removeprefix("standin/")
        if name in self.workloads:
            return self.workloads[name]
        if len(self.workloads) == 1:
            return next(iter(self.workloads.values()))
        raise ChatError(f"unknown model {model!r}; this stand-in serves standin/<workload>")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(JSONHandler):
    server: StandIn

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/stats":
            self._send(200, {"calls": self.server.calls})
        else:
            self._send(404, {"error": {"message": f"no such path {self.path}"}})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no such path {self.path}"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            response = answer(self.server.workload(str(body.get("model", ""))), body)
        except (ChatError, json.JSONDecodeError, AttributeError, TypeError) as exc:
            self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
            return
        seed = random.Random(response["id"])
        time.sleep(self.server.latency * (0.5 + seed.random()))
        with self.server.lock:
            self.server.calls += 1
        self._send(200, response)


@contextlib.contextmanager
def serving(latency: float) -> Iterator[str]:
    """A stand-in process for the block (every workload); yields its base URL. A process of
    its own, as a model endpoint is: it outlives the SIGKILLs of the runs that call it."""
    with tempfile.TemporaryDirectory(prefix="rc-standin-") as folder:
        port_file = Path(folder) / "url"
        argv = [sys.executable, "-m", "rctools.sandbox.standin", "--latency", str(latency)]
        proc = subprocess.Popen(
            [*argv, "--port-file", str(port_file)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            if not poll(
                lambda: port_file.exists() or proc.poll() is not None, timeout=60, every=0.02
            ):
                raise RuntimeError("the model stand-in did not start within 60 s")
            if not port_file.exists():
                raise RuntimeError(f"the model stand-in failed: {proc.communicate()[1][-300:]}")
            yield port_file.read_text(encoding="utf-8")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]}, help=__doc__.splitlines()[0]
)
@click.option("--workload", "workloads", multiple=True, type=click.Choice(sorted(WORKLOADS)))
@click.option("--latency", type=float, default=0.02, show_default=True, help="seconds per call")
@click.option("--port", type=int, default=0, help="0: any free port")
@click.option("--port-file", type=click.Path(path_type=Path), help="write the base URL here")
def main(workloads: tuple[str, ...], latency: float, port: int, port_file: Path | None) -> None:
    """Serves until killed; the base URL goes to --port-file (written whole) and stdout."""
    chosen = {name: WORKLOADS[name] for name in workloads or sorted(WORKLOADS)}
    server = StandIn(chosen, latency, port)
    if port_file:
        tmp = port_file.with_name(port_file.name + ".tmp")
        tmp.write_text(server.url, encoding="utf-8")
        tmp.rename(port_file)
    print(server.url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
