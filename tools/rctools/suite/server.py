"""A server process a suite starts, SIGKILLs and stops: what the Restate and Temporal suites'
servers (and the backends' servers in `rctools.services`) do alike, written once.

Why: a crash matrix kills the runtime's server as well as its workers, so a server is a real
process of its own, with its output in a log file, on a loopback port chosen free; killing it
must wait until it is gone (the next start reuses its data and port), and a clean stop falls
back to SIGKILL when the server does not end.
"""

from __future__ import annotations

import signal
import socket
import subprocess
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A loopback port that nobody listens on right now (the server binds it a moment later;
    a lost race shows up as a failed start)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spawn(argv: list[str], log: Path, *, append: bool, **popen: Any) -> subprocess.Popen[bytes]:
    """Starts `argv` with stdin closed and its output (both streams) in `log`, appended to or
    written anew."""
    with log.open("ab" if append else "wb") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **popen
        )


def kill(proc: subprocess.Popen[bytes] | None, timeout: float | None = None) -> None:
    """SIGKILL, as a crash of the machine would; waits until it is gone."""
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=timeout)


def stop(
    proc: subprocess.Popen[bytes] | None, timeout: float, kill_timeout: float | None = None
) -> None:
    """SIGTERM (the server's own clean shutdown), SIGKILL if it has not ended in `timeout` s."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill(proc, kill_timeout)
