"""A private restate-server on loopback: installed from the npm registry on demand, started
with its data in `.services/restate/`, killed and restarted on the same data, stopped at the end.

Why this exists: Restate's durability claim is the server's (its journal is what a retry
replays), so a cell must run a real server and be able to SIGKILL it. The npm package
`@restatedev/restate-server` carries the binary in a per-platform optional dependency, so
`npm install` by package name is the whole install; nothing is fetched at run time.

Every port is a free loopback port (ingress, admin, node-to-node); the server listens on TCP
only, telemetry off, the web UI off, one partition. restate-server 1.7 also asks GitHub for
its latest release when it starts (the `check-latest-release` task; no setting turns it off),
which is why the suite runs in a loopback-only network namespace (`matrix.RestateSuite.prepare`,
rctools.netns).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumecheck.waiting import poll

from rctools.services import ServiceError, _locked, services_dir
from rctools.suite import server
from rctools.suite.server import free_port

PACKAGE = "@restatedev/restate-server"
VERSION = "1.7.12"
READY_TIMEOUT = 60.0

# Fast retries: a retried invocation reaches the restarted service within a second instead of
# after the default exponential backoff (500 ms doubling up to 1 min); the policy is Restate's
# own configuration, not a change of its semantics.
CONFIG = """\
disable-telemetry = true
default-num-partitions = 1
log-filter = "warn"
log-format = "compact"
log-disable-ansi-codes = true
auto-provision = true

[default-retry-policy]
type = "exponential"
initial-interval = "100ms"
exponentiation-factor = 1.5
max-interval = "1s"
max-attempts = 1000

[admin]
bind-address = "127.0.0.1:{admin}"
disable-web-ui = true

[ingress]
bind-address = "127.0.0.1:{ingress}"
"""


def install_dir() -> Path:
    return services_dir() / "restate"


def binary() -> Path:
    """The restate-server binary, installed with npm into `.services/restate/` if missing."""
    folder = install_dir()
    with _locked(folder):  # cells recorded at once (--jobs) install it once
        return _install(folder)


def _found(folder: Path) -> Path | None:
    """The binary of this platform's optional dependency (`restate-server-linux-x64`, ...)."""
    stamp = folder / "node_modules/@restatedev/restate-server/package.json"
    if not stamp.exists() or json.loads(stamp.read_text())["version"] != VERSION:
        return None
    return next(
        iter(folder.glob("node_modules/@restatedev/restate-server-*/bin/restate-server")), None
    )


def _install(folder: Path) -> Path:
    found = _found(folder)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise ServiceError(
            f"restate-server is installed from the npm package {PACKAGE}; npm is missing "
            "(apt-get install npm)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(folder),
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            f"{PACKAGE}@{VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    found = _found(folder)
    if done.returncode != 0 or found is None:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        raise ServiceError(
            f"npm install {PACKAGE}@{VERSION} failed (or brought no binary for this platform): "
            + " | ".join(tail)
        )
    return found


def _http(method: str, url: str, body: Any = None, *, timeout: float = 30.0) -> tuple[int, Any]:
    """One JSON request; returns (status, decoded body). Connection errors raise OSError."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    text = raw.decode(errors="replace")
    try:
        return status, json.loads(text) if text else None
    except json.JSONDecodeError:
        return status, text


def query(admin: str, sql: str) -> list[dict[str, Any]]:
    """Restate's SQL introspection (the admin API's /query over sys_journal & co.)."""
    answers: list[tuple[int, Any]] = []

    def served() -> bool:
        answers.append(_http("POST", f"{admin}/query", {"query": sql}))
        return answers[-1][0] < 500

    # a restarted server answers /health before its partition serves queries (500)
    poll(served, timeout=READY_TIMEOUT / 4, every=0.1)
    status, body = answers[-1]
    if status != 200 or not isinstance(body, dict):
        raise ServiceError(f"restate query failed: {status} {body}")
    rows: list[dict[str, Any]] = body.get("rows", [])
    return rows


def call(ingress: str, path: str, body: Any = None, *, timeout: float = 60.0) -> tuple[int, Any]:
    """An ingress request (`/<service>/<key>/<handler>`, `/restate/workflow/...`)."""
    method = "GET" if body is None and path.startswith("/restate/") else "POST"
    return _http(method, f"{ingress}{path}", body, timeout=timeout)


@dataclass
class Server:
    """One restate-server for one cell: its ports and data directory survive a kill."""

    data: Path
    admin_port: int = field(default_factory=free_port)
    ingress_port: int = field(default_factory=free_port)
    node_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def admin(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"

    @property
    def ingress(self) -> str:
        return f"http://127.0.0.1:{self.ingress_port}"

    def start(self) -> None:
        """Starts (or restarts, on the same data and ports) and waits until it serves."""
        self.data.mkdir(parents=True, exist_ok=True)
        config = self.data / "restate.toml"
        config.write_text(CONFIG.format(admin=self.admin_port, ingress=self.ingress_port))
        env = {
            k: v for k, v in os.environ.items() if not k.startswith("RESTATE_") and k != "RUST_LOG"
        }
        env.update({"RESTATE_LISTEN_MODE": "tcp", "DO_NOT_TRACK": "1"})
        self.proc = server.spawn(
            [
                str(binary()),
                "--no-logo",
                "--config-file",
                str(config),
                "--base-dir",
                str(self.data / "base"),
                "--node-name",
                "n1",
                "--bind-address",
                f"127.0.0.1:{self.node_port}",
                "--advertised-address",
                f"http://127.0.0.1:{self.node_port}/",
            ],
            self.data / "server.log",
            append=True,
            env=env,
            cwd=self.data,
        )
        if not poll(self._up, timeout=READY_TIMEOUT, every=0.05):
            raise ServiceError(
                f"restate-server not ready within {READY_TIMEOUT:.0f} s: {self._tail()}"
            )

    def _up(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise ServiceError(f"restate-server exited ({self.proc.returncode}): {self._tail()}")
        return self._ready()

    def _ready(self) -> bool:
        try:
            admin, _ = _http("GET", f"{self.admin}/health", timeout=2)
            ingress, _ = _http("GET", f"{self.ingress}/restate/health", timeout=2)
        except OSError:
            return False
        return admin == 200 and ingress == 200

    def _tail(self) -> str:
        log = self.data / "server.log"
        lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
        return " | ".join(lines[-5:])

    def kill(self) -> None:
        """SIGKILL: whatever the server had not written to its data directory is lost."""
        server.kill(self.proc)

    def stop(self) -> None:
        server.stop(self.proc, timeout=20)

    def register(self, uri: str) -> None:
        """Registers the service deployment at `uri` (the server discovers its handlers)."""
        answers: list[tuple[int, Any]] = []

        def registered() -> bool:
            try:
                answers.append(_http("POST", f"{self.admin}/deployments", {"uri": uri}))
            except OSError as exc:
                answers.append((0, str(exc)))
            return answers[-1][0] in (200, 201)

        if not poll(registered, timeout=READY_TIMEOUT, every=0.1):
            status, body = answers[-1]
            raise ServiceError(f"registering {uri} failed: {status} {body}")

    def query(self, sql: str) -> list[dict[str, Any]]:
        return query(self.admin, sql)

    def call(self, path: str, body: Any = None, *, timeout: float = 60.0) -> tuple[int, Any]:
        return call(self.ingress, path, body, timeout=timeout)
