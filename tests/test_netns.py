"""rctools.netns: a run moved into its private network namespace reaches loopback only.

The Restate suite relies on it to keep restate-server's own call to GitHub from leaving the
machine. Checked in a child process (the namespace is the process's for good), as root.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root")

CHILD = """
import socket, threading
from rctools.netns import enter_private_loopback, outside_reachable
assert enter_private_loopback() is None
assert [name for _, name in socket.if_nameindex()] == ["lo"]
assert not outside_reachable(), "still a route out"
server = socket.create_server(("127.0.0.1", 0))
def answer():
    conn, _ = server.accept()
    conn.sendall(conn.recv(16).upper())
    conn.close()
threading.Thread(target=answer).start()
with socket.create_connection(server.getsockname(), timeout=5) as client:
    client.sendall(b"ping")
    assert client.recv(16) == b"PING"
print("isolated")
"""


def test_a_private_namespace_reaches_loopback_and_nothing_else() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "isolated"
