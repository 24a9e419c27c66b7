"""The chat endpoint as the agent in a sandbox sees it: an HTTP listener inside its network.

Why inside: the sandbox has a network namespace of its own (its servers' sockets must not meet
another sandbox's), so the agent's `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1` must reach the
host's coordinator from within that namespace. A socket belongs to the namespace it was
created in, whatever thread later serves it: a short-lived thread of the host process enters
the sandbox's network namespace (`setns`, which acts on the calling thread only), creates and
binds the listening socket on the sandbox's loopback, and ends; the host's HTTP server then
accepts on it from its own threads. No relay process runs in the sandbox, so nothing of the
endpoint enters the sandbox's process table or its images.

Each `POST /v1/chat/completions` is handed to `on_request(body)`, which returns the status and
the JSON to answer (the host's turn boundary, `host.py`). Requests are served one at a time:
an agent waits for its answer before its next turn.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import socket
import threading
from collections.abc import Callable
from http.server import HTTPServer
from typing import Any

from rctools.sandbox.jsonhttp import JSONHandler

CLONE_NEWNET = 0x40000000
PORT = 8000

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]

Handler = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def socket_in(netns: str, port: int) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:`port` of the network namespace `netns` (a path
    such as /proc/PID/ns/net)."""
    made: list[socket.socket] = []
    failed: list[BaseException] = []

    def enter() -> None:
        fd = os.open(netns, os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns({netns}) refused")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen(8)
            made.append(sock)
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)
        finally:
            os.close(fd)

    thread = threading.Thread(target=enter)  # this thread alone enters; it ends right after
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return made[0]


class Endpoint(HTTPServer):
    """The listener in one sandbox, served from a daemon thread of the host."""

    def __init__(self, netns: str, on_request: Handler, port: int = PORT) -> None:
        super().__init__(("127.0.0.1", port), _Handler, bind_and_activate=False)
        self.socket = socket_in(netns, port)
        self.on_request = on_request
        self.url = f"http://127.0.0.1:{port}/v1"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Handler(JSONHandler):
    server: Endpoint

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            status, payload = 404, {"error": {"message": f"no such path {self.path}"}}
        else:
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            except json.JSONDecodeError as exc:
                status, payload = 400, {"error": {"message": f"not JSON: {exc}"}}
            else:
                status, payload = self.server.on_request(body)
        self._send(status, payload)
