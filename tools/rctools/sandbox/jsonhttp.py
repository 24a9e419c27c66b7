"""The JSON side of the two chat endpoints a sandbox's agent talks to: one handler base.

The stand-in model (`standin.py`, a server of its own) and the in-sandbox endpoint
(`proxy.py`, the host's turn boundary) both answer OpenAI-style requests with a JSON body and
print nothing per request (a bench of 16 sandboxes would print thousands of lines; the trace is
the record), so how a JSON answer is framed is written once here.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet handler whose answers are JSON objects."""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: see the module's docstring."""

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
