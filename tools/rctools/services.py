"""Private PostgreSQL, redis, MariaDB and DynamoDB (moto) servers on loopback for the backends.

Why this exists: the server-backed savers must be judged against real servers, and `make
test` must work on a fresh Debian 12 machine with nothing running. So this module can install
the Debian packages when they are missing -- only when asked to (`up --install`, the test
fixture, or $RESUME_CHECK_INSTALL_SERVICES=1 for `resume-check run langgraph`), since changing a
machine's packages is not something a checker should do on its own -- keeps each server's files
in a project-local folder (`.services/`, gitignored) and binds to 127.0.0.1 on a free port, so
it never meets a system server or another checkout's servers.

MariaDB (Debian's `mariadb-server`) runs like PostgreSQL: its own datadir from
`mariadb-install-db`, its own socket and a port on 127.0.0.1, a database and a user of ours.
DynamoDB is `moto` in server mode (a PyPI package, the `dynamodb` extra: Debian has none), run
with this interpreter as a subprocess on 127.0.0.1; it keeps its tables in memory, so like
redis every start begins empty.

`up` is idempotent: a server that is already running (even one left behind by a killed run) is
reused, a stale pid file or a half-finished `initdb` is cleaned up. `down` stops what is
running.

    python -m rctools.services up      # start (or reuse) all four; prints the env lines
    python -m rctools.services up --install   # the same, apt-get installing what is missing
    python -m rctools.services env     # RESUME_CHECK_PG_URL=... RESUME_CHECK_REDIS_URL=...
                                       # RESUME_CHECK_MYSQL_URL=... RESUME_CHECK_DYNAMODB_URL=...
    python -m rctools.services status
    python -m rctools.services down
    python -m rctools.services reset   # down, then delete .services/ (a fresh cluster next time)

Only the standard library and the package's own dependencies (click, and tenacity under the
checker's wait helper) are used, so this runs before any extra is installed (moto is started
with this interpreter, so it must be installed into it: `pip install -e '.[dynamodb]'`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import click
from filelock import FileLock
from resumecheck.waiting import poll

from rctools.suite import server as process
from rctools.suite.server import free_port

PG_URL_VAR = "RESUME_CHECK_PG_URL"
REDIS_URL_VAR = "RESUME_CHECK_REDIS_URL"
DIR_VAR = "RESUME_CHECK_SERVICES_DIR"
MYSQL_URL_VAR = "RESUME_CHECK_MYSQL_URL"
DYNAMODB_URL_VAR = "RESUME_CHECK_DYNAMODB_URL"
INSTALL_VAR = "RESUME_CHECK_INSTALL_SERVICES"
PG_DATABASE = "resume_check"
MYSQL_DATABASE = "resume_check"
# The MariaDB account the savers use; a private loopback server, so the password is no secret.
MYSQL_USER = "resume_check"
MYSQL_PASSWORD = "resume_check"
APT_PACKAGES = ("postgresql", "redis-server", "mariadb-server")
NAMES = ("postgres", "redis", "mysql", "dynamodb")
# What `up()` starts when not told: the servers callers written before MariaDB and moto expect
# (`resume-check run langgraph` starts them for the postgres and redis backends), so they need
# neither mariadb-server nor moto. The CLI and the test fixture ask for all of NAMES.
DEFAULT_UP = ("postgres", "redis")
# The Debian package of each server that has one (moto comes from PyPI, the `dynamodb` extra).
PACKAGE_OF = {"postgres": "postgresql", "redis": "redis-server", "mysql": "mariadb-server"}
URL_VARS = {
    "postgres": PG_URL_VAR,
    "redis": REDIS_URL_VAR,
    "mysql": MYSQL_URL_VAR,
    "dynamodb": DYNAMODB_URL_VAR,
}
# A unix socket path longer than this does not fit into sockaddr_un (108 bytes with the name).
SOCKET_DIR_MAX = 80
# redis-server's numbered databases (its default is 16); the Valkey backends use one per cell.
REDIS_DATABASES = 1024
READY_TIMEOUT = 30.0


class ServiceError(Exception):
    """A server could not be installed, started or stopped; the message says why."""


@dataclass
class Started:
    """What `up` did: the URLs of the running servers and which of them this call started."""

    env: dict[str, str]
    started: list[str] = field(default_factory=list)


def services_dir() -> Path:
    """`$RESUME_CHECK_SERVICES_DIR`, else `.services/` at the repository root (or the cwd when
    this module is installed outside a checkout)."""
    if os.environ.get(DIR_VAR):
        return Path(os.environ[DIR_VAR]).resolve()
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").exists():
        root = Path.cwd()
    if not _reachable_by_others(root):
        # A checkout under a private folder (e.g. /root): the postgres user could not reach
        # its data there, so the servers live in a folder of their own for this checkout.
        digest = hashlib.sha256(str(root).encode()).hexdigest()[:12]
        return Path("/var/tmp") / f"resume-check-services-{digest}"
    return root / ".services"


def _reachable_by_others(folder: Path) -> bool:
    """Whether every folder from / down to `folder` lets other users through (o+x)."""
    return all(
        part.stat().st_mode & stat.S_IXOTH for part in [folder, *folder.parents] if part.exists()
    )


# --------------------------------------------------------------------------- helpers


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def _alive(pid: int, needle: str) -> bool:
    """Whether `pid` is a live process whose command line contains `needle`: a pid file can
    outlive its server and the pid be reused by an unrelated process, which we must not
    mistake for the server (nor signal)."""
    return pid > 0 and needle in _cmdline(pid)


def _read_int(path: Path, line: int = 0) -> int | None:
    try:
        return int(path.read_text().splitlines()[line].strip())
    except (OSError, ValueError, IndexError):
        return None


def _run(argv: list[str], *, user: str | None = None, timeout: float = 120) -> str:
    """Runs a helper program; a failure becomes a ServiceError carrying its output."""
    kwargs = {}
    if user is not None and os.geteuid() == 0 and user != "root":
        kwargs = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
            **kwargs,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"{argv[0]}: {exc}") from None
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        raise ServiceError(f"{' '.join(argv)} failed ({proc.returncode}):\n{output}")
    return proc.stdout


def _socket_dir(home: Path, tag: str) -> Path:
    """`<home>/run`: unix sockets must have short paths, so a deep checkout gets a
    per-checkout folder in /tmp instead."""
    local = home / "run"
    if len(str(local)) <= SOCKET_DIR_MAX:
        return local
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:12]
    return Path("/tmp") / f"resume-check-{tag}-{digest}"


def _own(path: Path, user: str) -> None:
    """Makes `path`; under root, hands it to `user`: PostgreSQL and MariaDB will not run as
    root, so their server programs run as the packages' users and own their folders."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _locked(folder: Path) -> FileLock:
    """Serialises concurrent `up`/`down` calls on one checkout (two test sessions, make -j)."""
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(folder / "lock")


def _wait(check: object, what: str, timeout: float = READY_TIMEOUT) -> None:
    if not poll(check, timeout=timeout, every=0.05):  # type: ignore[arg-type]
        raise ServiceError(f"{what} did not become ready within {timeout:.0f} s")


# --------------------------------------------------------------------------- packages


def _pg_bindir() -> Path | None:
    """The newest Debian PostgreSQL server binaries (postgresql-15 on Debian 12)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1].parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).resolve().parent if on_path else None


def _redis_server() -> str | None:
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )


def install_allowed() -> bool:
    """Whether $RESUME_CHECK_INSTALL_SERVICES=1 lets `up` install missing Debian packages."""
    return os.environ.get(INSTALL_VAR, "") == "1"


def _mariadb_bin(name: str) -> str | None:
    """A MariaDB program (`mariadbd` lives in /usr/sbin, not on every PATH)."""
    for candidate in (shutil.which(name), f"/usr/sbin/{name}", f"/usr/bin/{name}"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def _missing_packages(names: tuple[str, ...] | list[str] = NAMES) -> list[str]:
    """The Debian packages of the named servers that are not installed."""
    found = {
        "postgresql": _pg_bindir() is not None,
        "redis-server": _redis_server() is not None,
        "mariadb-server": _mariadb_bin("mariadbd") is not None
        and _mariadb_bin("mariadb-install-db") is not None,
    }
    wanted = {PACKAGE_OF[name] for name in names if name in PACKAGE_OF}
    return [package for package in APT_PACKAGES if package in wanted and not found[package]]


def ensure_installed(install: bool, names: tuple[str, ...] | list[str] = NAMES) -> None:
    """Installs the Debian packages of the named servers that are missing when `install`
    (needs root and apt-get); otherwise says which command would, and how to let resume-check
    run it."""
    missing = _missing_packages(names)
    if not missing:
        return
    apt = f"apt-get update && apt-get install -y {' '.join(missing)}"
    if not install:
        raise ServiceError(
            f"{', '.join(missing)} missing; install with `{apt}` (as root), "
            f"or let resume-check do it: `python -m rctools.services up --install`, or set "
            f"{INSTALL_VAR}=1; or point {PG_URL_VAR} / {REDIS_URL_VAR} / {MYSQL_URL_VAR} at "
            f"running servers"
        )
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ServiceError(f"{', '.join(missing)} missing; install with `{apt}` (as root)")
    print(f"services: installing {' '.join(missing)} with apt-get", file=sys.stderr)
    # policy-rc.d 101: the packages' postinst must not start the system-wide servers (we only
    # want the programs; a system MariaDB on 3306 would be a server nobody asked for).
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        with _no_service_starts():
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ServiceError(f"{' '.join(argv)} failed:\n{(proc.stdout + proc.stderr)[-2000:]}")
    if _missing_packages(names):
        raise ServiceError(f"apt-get installed {missing} but the servers are still missing")


@contextlib.contextmanager
def _no_service_starts() -> Iterator[None]:
    """A `policy-rc.d` that forbids invoke-rc.d to start services while apt-get runs, unless
    the machine already has one of its own (then that one's policy stands)."""
    policy = Path("/usr/sbin/policy-rc.d")
    if policy.exists() or not policy.parent.is_dir():
        yield
        return
    try:
        policy.write_text("#!/bin/sh\n# resume-check: no service starts during apt-get\nexit 101\n")
        policy.chmod(0o755)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        policy.unlink(missing_ok=True)


# --------------------------------------------------------------------------- PostgreSQL


class _InitializedServer:
    """A database server (PostgreSQL, MariaDB) with a data folder `<dir>/<name>/data` that is
    initialized once (`marker` is written when that finished) and that will not run as root:
    under root its programs run as `user`, the one its Debian package made, else as us."""

    def __init__(self, folder: Path, name: str, log: str, package_user: str) -> None:
        self.home = folder / name
        self.data = self.home / "data"
        self.log = self.home / log
        self.marker = self.home / "initialized"
        self.user = package_user if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name

    def _fresh(self, *owned: Path) -> bool:
        """Whether the data folder must be initialized: not once the marker says an init
        finished; else the half-finished one a killed run left is thrown away, each of
        `owned` is made the user's (in order), and the user must be able to write the last
        one -- a private parent folder would stop the init later with a less clear error."""
        if self.marker.exists():
            return False
        shutil.rmtree(self.data, ignore_errors=True)
        for path in owned:
            _own(path, self.user)
        try:
            _run(["test", "-w", str(owned[-1])], user=self.user)
        except ServiceError:
            raise ServiceError(
                f"the {self.user} user cannot write {owned[-1]} (a parent folder is private); "
                f"point {DIR_VAR} at a folder it can reach, e.g. /var/tmp/resume-check"
            ) from None
        return True


class Postgres(_InitializedServer):
    """One private cluster: data in `<dir>/pg/data`, trust auth, 127.0.0.1 only.

    PostgreSQL refuses to run as root, so under root every server program runs as the
    `postgres` user (created by the Debian package) and owns the cluster folder."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, "pg", "postgres.log", "postgres")

    @property
    def socket_dir(self) -> Path:
        return _socket_dir(self.home, "pg")

    def _bin(self, name: str) -> str:
        bindir = _pg_bindir()
        if bindir is None:
            raise ServiceError("PostgreSQL server binaries not found (apt-get install postgresql)")
        return str(bindir / name)

    def pid(self) -> int | None:
        """The postmaster's pid if it is really running (postmaster.pid can be stale)."""
        pid = _read_int(self.data / "postmaster.pid")
        return pid if pid is not None and _alive(pid, str(self.data)) else None

    def port(self) -> int | None:
        return _read_int(self.data / "postmaster.pid", 3)

    def url(self, port: int) -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/{PG_DATABASE}"

    def _ready(self, port: int) -> bool:
        try:
            _run(
                [self._bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-t", "1"],
                timeout=5,
            )
        except ServiceError:
            return False
        return True

    def _initdb(self) -> None:
        """A fresh cluster; a folder without the marker is a half-finished one from a killed
        run and is thrown away first."""
        if not self._fresh(self.home):
            return
        print(f"services: initdb {self.data}", file=sys.stderr)
        _run(
            [
                self._bin("initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-instructions",
            ],
            user=self.user,
        )
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# resume-check: private test cluster, loopback only\n")
            conf.write("listen_addresses = '127.0.0.1'\n")
            conf.write(f"unix_socket_directories = '{self.socket_dir}'\n")
        self.marker.write_text("ok\n")

    def up(self) -> tuple[str, bool]:
        """(url, started_now)."""
        self._initdb()
        if self.pid() is not None:
            # A server that is still starting has not written its port yet.
            _wait(lambda: self.port() is not None, "PostgreSQL (already running)")
            port = self.port() or 0
            _wait(lambda: self._ready(port), "PostgreSQL (already running)")
            return self.url(port), False
        (self.data / "postmaster.pid").unlink(missing_ok=True)
        _own(self.socket_dir, self.user)
        last: ServiceError | None = None
        for _ in range(3):
            port = free_port()
            try:
                _run(
                    [
                        self._bin("pg_ctl"),
                        "-D",
                        str(self.data),
                        "-l",
                        str(self.log),
                        "-o",
                        f"-p {port}",
                        "-w",
                        "-t",
                        str(int(READY_TIMEOUT)),
                        "start",
                    ],
                    user=self.user,
                )
            except ServiceError as exc:
                last = exc
                continue
            self._create_database(port)
            return self.url(port), True
        raise ServiceError(f"PostgreSQL did not start; see {self.log}\n{last}")

    def _create_database(self, port: int) -> None:
        psql = [self._bin("psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        exists = _run([*psql, "-tAc", f"SELECT 1 FROM pg_database WHERE datname='{PG_DATABASE}'"])
        if exists.strip() != "1":
            _run([*psql, "-qc", f"CREATE DATABASE {PG_DATABASE}"])

    def down(self) -> bool:
        if self.pid() is None:
            return False
        _run(
            [self._bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"], user=self.user
        )
        return True


# --------------------------------------------------------------------------- redis


class _PortServer:
    """A server whose pid and port we keep in files of its own folder `<dir>/<NAME>` (with its
    log): redis and moto alike. `pid` is the pid only while that process still runs the server
    on that port, as its command line shows (`_marks`)."""

    NAME: ClassVar[str]

    def __init__(self, folder: Path) -> None:
        self.home = folder / self.NAME
        self.pidfile = self.home / f"{self.NAME}.pid"
        self.portfile = self.home / "port"
        self.log = self.home / f"{self.NAME}.log"

    def _marks(self, port: int) -> tuple[str, ...]:
        """What the server's command line contains, checked in this order."""
        raise NotImplementedError

    def pid(self) -> int | None:
        pid, port = _read_int(self.pidfile), _read_int(self.portfile)
        if pid is None or port is None:
            return None
        return pid if all(_alive(pid, mark) for mark in self._marks(port)) else None

    def port(self) -> int | None:
        return _read_int(self.portfile)


class Redis(_PortServer):
    """One redis-server on 127.0.0.1, daemonized, pid file and log in `<dir>/redis`.

    Snapshots are off (`save ""`): this is a scratch server, every start begins empty, and the
    backends give each matrix cell its own key prefix while it runs."""

    NAME = "redis"

    def _marks(self, port: int) -> tuple[str, ...]:
        return f":{port}", "redis"

    @staticmethod
    def _command(port: int, command: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(command)
            return sock.recv(64)

    def _ready(self, port: int) -> bool:
        try:
            return self._command(port, b"PING\r\n").startswith(b"+PONG")
        except OSError:
            return False

    def url(self, port: int) -> str:
        return f"redis://127.0.0.1:{port}/0"

    def up(self) -> tuple[str, bool]:
        port = _read_int(self.portfile)
        if self.pid() is not None and port is not None:
            _wait(lambda: self._ready(port), "redis (already running)")
            return self.url(port), False
        server = _redis_server()
        if server is None:
            raise ServiceError("redis-server not found (apt-get install redis-server)")
        self.home.mkdir(parents=True, exist_ok=True)
        self.pidfile.unlink(missing_ok=True)
        last: ServiceError | None = None
        for _ in range(3):
            port = free_port()
            self.portfile.write_text(f"{port}\n")
            try:
                _run(
                    [
                        server,
                        "--bind",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--daemonize",
                        "yes",
                        "--pidfile",
                        str(self.pidfile),
                        "--logfile",
                        str(self.log),
                        "--dir",
                        str(self.home),
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        # The Valkey savers have no key prefix: each matrix cell gets a
                        # numbered database of its own (rctools.langgraph.backends).
                        "--databases",
                        str(REDIS_DATABASES),
                    ]
                )
                _wait(lambda: self.pid() is not None and self._ready(port), "redis", 10)  # noqa: B023
            except ServiceError as exc:
                last = exc
                continue
            return self.url(port), True
        raise ServiceError(f"redis did not start; see {self.log}\n{last}")

    def down(self) -> bool:
        pid, port = self.pid(), _read_int(self.portfile)
        if pid is None or port is None:
            return False
        with contextlib.suppress(OSError):
            self._command(port, b"SHUTDOWN NOSAVE\r\n")
        poll(lambda: self.pid() is None, timeout=10, every=0.05)
        if self.pid() is not None:
            os.kill(pid, signal.SIGKILL)
        self.pidfile.unlink(missing_ok=True)
        return True


# --------------------------------------------------------------------------- detached servers


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Starts a server that does not daemonize itself, detached from us (its own session, no
    terminal, output to `log`), so it outlives the `up` call like pg_ctl's and redis' do."""
    return process.spawn(argv, log, append=True, cwd="/", start_new_session=True)


def _stop(pid: int, alive: object, what: str, timeout: float = 20) -> None:
    """SIGTERM (both servers shut down cleanly on it), SIGKILL if it is still there later."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    poll(lambda: not alive(), timeout=timeout, every=0.05)  # type: ignore[operator]
    if alive():  # type: ignore[operator]
        print(f"services: {what} ignored SIGTERM; killing it", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _reap(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child we spawned has already exited (a failed start)."""
    return proc.poll() is not None


def _start_detached(
    what: str,
    program: str,
    portfile: Path,
    log: Path,
    spawn: Callable[[int], subprocess.Popen[bytes]],
    ready: Callable[[int], bool],
) -> int:
    """Starts a detached server on a free port (written to `portfile` first), up to three
    times: a port taken between choosing and binding, or a start that hangs or exits, is tried
    again on another. Returns the port it answers on."""
    last = ""
    for _ in range(3):
        port = free_port()
        portfile.write_text(f"{port}\n")
        proc = spawn(port)
        try:
            _wait(lambda: _reap(proc) or ready(port), what)  # noqa: B023
        except ServiceError as exc:
            last = str(exc)
            _stop(proc.pid, lambda: not _reap(proc), what)  # noqa: B023
            continue
        if _reap(proc):
            last = f"{program} exited with {proc.returncode}"
            continue
        return port
    tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
    raise ServiceError(f"{what} did not start ({last}); see {log}\n{tail}")


# --------------------------------------------------------------------------- MariaDB


class MariaDB(_InitializedServer):
    """One private MariaDB: datadir `<dir>/mysql/data` from mariadb-install-db, 127.0.0.1 on a
    free port, a unix socket of its own, database `resume_check` and user `resume_check`.

    Like PostgreSQL it will not run as root: under root the server is told `--user=mysql`
    (the Debian package's user), which owns the datadir. `--no-defaults` keeps the machine's
    /etc/mysql configuration (port 3306, the system datadir) out of it."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, "mysql", "mariadb.log", "mysql")
        self.pidfile = self.home / "mariadbd.pid"
        self.portfile = self.home / "port"

    @property
    def socket(self) -> Path:
        return _socket_dir(self.home, "mysql") / "mysqld.sock"

    def _bin(self, name: str) -> str:
        found = _mariadb_bin(name)
        if found is None:
            raise ServiceError(f"MariaDB's {name} not found (apt-get install mariadb-server)")
        return found

    def pid(self) -> int | None:
        pid = _read_int(self.pidfile)
        return pid if pid is not None and _alive(pid, str(self.data)) else None

    def port(self) -> int | None:
        return _read_int(self.portfile)

    def url(self, port: int) -> str:
        return f"mysql://{MYSQL_USER}:{MYSQL_PASSWORD}@127.0.0.1:{port}/{MYSQL_DATABASE}"

    def _client(self, sql: str) -> str:
        """Runs SQL as the server's root over its unix socket (root has no password: the
        datadir was made with the old 'normal' root authentication)."""
        return _run(
            [
                self._bin("mariadb"),
                "--no-defaults",
                f"--socket={self.socket}",
                "-uroot",
                "--batch",
                "--skip-column-names",
                "-e",
                sql,
            ],
            timeout=30,
        )

    def _ready(self) -> bool:
        try:
            return self._client("SELECT 1").strip() == "1"
        except ServiceError:
            return False

    def _install_db(self) -> None:
        """A fresh datadir; a folder without the marker is a half-finished one."""
        if not self._fresh(self.home, self.data):
            return
        print(f"services: mariadb-install-db {self.data}", file=sys.stderr)
        _run(
            [
                self._bin("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={self.data}",
                f"--user={self.user}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ],
            timeout=180,
        )
        self.marker.write_text("ok\n")

    def up(self) -> tuple[str, bool]:
        self._install_db()
        port = self.port()
        if self.pid() is not None and port is not None:
            _wait(self._ready, "MariaDB (already running)")
            return self.url(port), False
        self.pidfile.unlink(missing_ok=True)
        _own(self.socket.parent, self.user)
        self.socket.unlink(missing_ok=True)

        def spawn(port: int) -> subprocess.Popen[bytes]:
            return _spawn(
                [
                    self._bin("mariadbd"),
                    "--no-defaults",
                    f"--datadir={self.data}",
                    f"--user={self.user}",
                    "--bind-address=127.0.0.1",
                    f"--port={port}",
                    f"--socket={self.socket}",
                    f"--pid-file={self.pidfile}",
                    f"--log-error={self.log}",
                    "--skip-name-resolve",
                    "--innodb-buffer-pool-size=64M",
                    "--performance-schema=OFF",
                ],
                self.home / "mariadbd.out",
            )

        def ready(port: int) -> bool:
            return self.pid() is not None and self._ready()

        port = _start_detached("MariaDB", "mariadbd", self.portfile, self.log, spawn, ready)
        self._create_database()
        return self.url(port), True

    def _create_database(self) -> None:
        # The user may create databases: each matrix cell gets one of its own.
        self._client(
            f"CREATE DATABASE IF NOT EXISTS {MYSQL_DATABASE}; "
            f"CREATE USER IF NOT EXISTS '{MYSQL_USER}'@'127.0.0.1' "
            f"IDENTIFIED BY '{MYSQL_PASSWORD}'; "
            f"GRANT ALL PRIVILEGES ON *.* TO '{MYSQL_USER}'@'127.0.0.1'; "
            "FLUSH PRIVILEGES;"
        )

    def down(self) -> bool:
        pid = self.pid()
        if pid is None:
            return False
        _stop(pid, lambda: self.pid() is not None, "MariaDB", timeout=60)
        return True


# --------------------------------------------------------------------------- DynamoDB (moto)


def _moto_available() -> bool:
    return importlib.util.find_spec("moto") is not None and (
        importlib.util.find_spec("moto.server") is not None
    )


class Moto(_PortServer):
    """moto's server mode as DynamoDB on 127.0.0.1: `python -m moto.server` with this very
    interpreter, pid and port in `<dir>/moto`. Tables live in its memory only."""

    NAME = "moto"

    def _marks(self, port: int) -> tuple[str, ...]:
        return "moto.server", f" {port}"

    def url(self, port: int) -> str:
        return f"http://127.0.0.1:{port}"

    @staticmethod
    def _ready(port: int) -> bool:
        """moto answers DynamoDB's ListTables (any region, any fake key)."""
        request = (
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.0\r\n"
            b"X-Amz-Target: DynamoDB_20120810.ListTables\r\n"
            b"Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/dynamodb/"
            b"aws4_request, SignedHeaders=host, Signature=0\r\n"
            b"Content-Length: 2\r\nConnection: close\r\n\r\n{}"
        )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.sendall(request)
                return sock.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def up(self) -> tuple[str, bool]:
        port = self.port()
        if self.pid() is not None and port is not None:
            _wait(lambda: self._ready(port), "moto (already running)")
            return self.url(port), False
        if not _moto_available():
            raise ServiceError(
                f"moto is not installed in {sys.executable}; install the DynamoDB backend's "
                "extra: pip install -e '.[dynamodb]' (or 'moto[server,dynamodb]')"
            )
        self.home.mkdir(parents=True, exist_ok=True)

        def spawn(port: int) -> subprocess.Popen[bytes]:
            proc = _spawn(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                self.log,
            )
            self.pidfile.write_text(f"{proc.pid}\n")
            return proc

        port = _start_detached("moto", "moto", self.portfile, self.log, spawn, self._ready)
        return self.url(port), True

    def down(self) -> bool:
        pid = self.pid()
        if pid is None:
            return False
        _stop(pid, lambda: self.pid() is not None, "moto")
        self.pidfile.unlink(missing_ok=True)
        return True


# --------------------------------------------------------------------------- API


Server = Postgres | Redis | MariaDB | Moto


def _servers(folder: Path) -> dict[str, Server]:
    return {
        "postgres": Postgres(folder),
        "redis": Redis(folder),
        "mysql": MariaDB(folder),
        "dynamodb": Moto(folder),
    }


def up(
    folder: Path | None = None,
    *,
    install: bool | None = None,
    names: list[str] | None = None,
) -> Started:
    """Starts (or reuses) the named servers (default DEFAULT_UP: PostgreSQL and redis). Missing
    packages are installed only with `install` (default: $RESUME_CHECK_INSTALL_SERVICES=1);
    else the error names the apt-get command."""
    folder = folder or services_dir()
    names = list(DEFAULT_UP) if names is None else names
    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        raise ServiceError(f"unknown server(s) {', '.join(unknown)}: use {', '.join(NAMES)}")
    ensure_installed(install_allowed() if install is None else install, names)
    result = Started(env={})
    with _locked(folder):
        for name, server in _servers(folder).items():
            if name not in names:
                continue
            url, started = server.up()
            result.env[URL_VARS[name]] = url
            if started:
                result.started.append(name)
    return result


def down(names: list[str] | None = None, folder: Path | None = None) -> list[str]:
    """Stops the named servers (default all); returns those that were running."""
    folder = folder or services_dir()
    stopped = []
    with _locked(folder):
        for name, server in _servers(folder).items():
            if (names is None or name in names) and server.down():
                stopped.append(name)
    return stopped


def env(folder: Path | None = None) -> dict[str, str]:
    """The URLs of the servers that are running now."""
    folder = folder or services_dir()
    urls = {}
    for name, server in _servers(folder).items():
        port = server.port()
        if server.pid() is not None and port is not None:
            urls[URL_VARS[name]] = server.url(port)
    return urls


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Private PostgreSQL, redis, MariaDB and moto (DynamoDB) servers on 127.0.0.1 "
    "for resume-check tests.",
)
@click.argument("action", type=click.Choice(["up", "down", "env", "status", "reset"]))
@click.option(
    "--install",
    is_flag=True,
    help=f"up: apt-get install {' '.join(APT_PACKAGES)} when missing (as root)",
)
@click.pass_context
def main(ctx: click.Context, action: str, install: bool) -> None:
    """`up` and `env` print nothing but the env lines on stdout (`make record-langgraph` exports
    them), the rest goes to stderr. Exit codes: 1 `env` while a server is not running, 2 a
    ServiceError (a server missing or not starting, say)."""
    folder = services_dir()
    try:
        if action == "up":
            result = up(folder, install=install or None, names=list(NAMES))
            for name in NAMES:
                verb = "started" if name in result.started else "reused"
                print(f"services: {name} {verb}", file=sys.stderr)
            urls = result.env
        elif action in ("down", "reset"):
            stopped = down(folder=folder)
            print(f"services: stopped {', '.join(stopped) or 'nothing'}", file=sys.stderr)
            if action == "reset":
                shutil.rmtree(folder, ignore_errors=True)
                print(f"services: removed {folder}", file=sys.stderr)
            return
        else:
            urls = env(folder)
            if action == "env" and len(urls) < len(NAMES):
                print("services: not running; start them with `make services-up`", file=sys.stderr)
                ctx.exit(1)
    except ServiceError as exc:
        print(f"services: {exc}", file=sys.stderr)
        ctx.exit(2)
    if action == "status":
        for name, var in URL_VARS.items():
            print(f"{name}: {urls.get(var, 'not running')}")
        return
    for var, url in urls.items():
        print(f"{var}={url}")


if __name__ == "__main__":
    main(prog_name="python -m rctools.services")
