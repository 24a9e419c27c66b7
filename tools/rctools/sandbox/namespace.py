"""A sandbox: its own mount, PID and network namespace, its workspace an overlay mount.

The overlay's lower layer is the base image (read-only), its upper layer holds every change made
since -- so what changed is a directory listing away, and a deletion is a whiteout. Tool
commands run inside the namespaces through `nsenter`; a background process they leave behind is
re-parented to the sandbox's PID 1 (`init.py`), so the live processes are exactly the processes
of that PID namespace, and one SIGKILL of PID 1 kills them all.

Every sandbox mounts its workspace at the same path, `WORKSPACE`, inside its own mount
namespace (the host sees an empty folder there): a process restored by criu into another
sandbox -- after a crash, a rollback or a fork -- finds its working directory and files where
they were. Fresh sandboxes hand out PIDs from `FIRST_PID` on, so the PIDs a restore must
recreate never collide with the few helpers (mount, criu) a new sandbox starts first.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from resumecheck.waiting import poll

from rctools.sandbox.tree import digest

# What a tool command sees: no host environment leaks in, so a command's output depends only on
# the sandbox.
COMMAND_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}


WORKSPACE = Path("/run/resume-check-sandbox/workspace")
FIRST_PID = 300


class SandboxError(RuntimeError):
    """The sandbox could not be set up (no privileges for namespaces or overlayfs, ...)."""


@dataclass(frozen=True)
class CommandResult:
    exit: int
    output: str

    @property
    def digest(self) -> str:
        return digest({"exit": self.exit, "output": self.output})


@dataclass(frozen=True)
class Process:
    """A live process as a restore can recreate it: its command line and working directory."""

    argv: tuple[str, ...]
    cwd: str

    def to_json(self) -> dict[str, object]:
        return {"argv": list(self.argv), "cwd": self.cwd}


def table_digest(processes: list[Process]) -> str:
    return digest(sorted([list(p.argv), p.cwd] for p in processes))


class Sandbox:
    """One running sandbox over the layers `lower` (read-only) and `upper` (its changes)."""

    def __init__(self, lower: Path, upper: Path, work: Path, mountpoint: Path = WORKSPACE) -> None:
        self.lower, self.upper, self.work, self.mountpoint = lower, upper, work, mountpoint
        self._unshare: subprocess.Popen[str] | None = None
        self.init_pid = 0
        # Host PIDs whose processes (and descendants) are not the sandbox's state: the agent a
        # host-side runtime started inside it (`host.py`), restarted after a crash, never dumped.
        self.guests: set[int] = set()
        # The processes that were running (not blocked) when the last freeze stopped them.
        self.running: set[int] = set()

    def start(self, *, restoring: bool = False) -> None:
        """Starts PID 1; `restoring`: PIDs are not moved up, the restored ones are above."""
        for folder in (self.upper, self.work, self.mountpoint):
            folder.mkdir(parents=True, exist_ok=True)
        argv = [
            "unshare",
            "--mount",
            "--pid",
            "--net",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
            sys.executable,
            "-m",
            "rctools.sandbox.init",
            *(str(p) for p in (self.lower, self.upper, self.work, self.mountpoint)),
            str(0 if restoring else FIRST_PID),
        ]
        self._unshare = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self._unshare.stdout is not None
        if self._unshare.stdout.readline().strip() != "ready":
            self._unshare.wait(timeout=10)
            assert self._unshare.stderr is not None
            raise SandboxError(
                "the sandbox did not start (namespaces and overlayfs need root): "
                + self._unshare.stderr.read().strip()
            )
        self.init_pid = _child_of(self._unshare.pid)
        self._pidns = os.readlink(f"/proc/{self.init_pid}/ns/pid")

    @property
    def view(self) -> Path:
        """The merged workspace as the sandbox sees it, readable from the host."""
        return Path(f"/proc/{self.init_pid}/root") / self.mountpoint.relative_to("/")

    def enter(self, *argv: str) -> list[str]:
        """A command line that runs `argv` inside the sandbox's namespaces."""
        return ["nsenter", f"--target={self.init_pid}", "--mount", "--pid", "--net", "--", *argv]

    def _shell(self, script: str, cwd: str = ".") -> list[str]:
        """A shell inside the namespaces, in `cwd` of the workspace, leading a session of its
        own (a process it leaves behind must not belong to a session outside the sandbox, or
        criu cannot dump it). nsenter's own --wd opens the directory before it enters the
        mount namespace: the host's, not the overlay."""
        where = shlex.quote(str(self.mountpoint / cwd))
        return self.enter("setsid", "--wait", "/bin/sh", "-c", f"cd {where} || exit 125\n{script}")

    def run(self, command: str, timeout: float = 60) -> CommandResult:
        """Runs a tool command in the workspace and waits for it (not for what it backgrounds)."""
        proc = subprocess.run(
            self._shell(command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**COMMAND_ENV, "HOME": str(self.mountpoint)},
            timeout=timeout,
            check=False,
        )
        return CommandResult(proc.returncode, proc.stdout.decode("utf-8", "replace"))

    def pids(self) -> list[int]:
        """The live processes of the sandbox (PID 1, the reaper, and guests excluded), as host
        PIDs."""
        found: dict[int, int] = {}  # pid -> parent
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == self.init_pid:
                continue
            try:
                if os.readlink(f"/proc/{name}/ns/pid") != self._pidns:
                    continue
                with open(f"/proc/{name}/stat", encoding="utf-8") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # it exited while we looked
            if fields[0] not in ("Z", "X"):
                found[int(name)] = int(fields[1])
        return sorted(pid for pid in found if not self._guest(pid, found))

    def _guest(self, pid: int, parents: dict[int, int]) -> bool:
        """A guest or a descendant of one (a command the agent is running)."""
        while pid in parents:
            pid = parents[pid]
            if pid in self.guests:
                return True
        return pid in self.guests

    def roots(self) -> list[int]:
        """The sandbox's process trees: the PIDs whose parent is PID 1, as host PIDs."""
        found = []
        for pid in self.pids():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
                if int(stat.rsplit(")", 1)[1].split()[1]) == self.init_pid:
                    found.append(pid)
        return found

    @staticmethod
    def inner_pid(pid: int) -> int:
        """A host PID as the sandbox's PID namespace numbers it."""
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
        raise SandboxError(f"process {pid} has no NSpid line")

    def processes(self) -> list[Process]:
        table = []
        for pid in self.pids():
            try:
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                cwd = os.readlink(f"/proc/{pid}/cwd")
            except OSError:
                continue
            argv = tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1])
            table.append(Process(argv, self._relative(cwd)))
        return sorted(table, key=lambda p: (p.argv, p.cwd))

    def _relative(self, cwd: str) -> str:
        path = Path(cwd)
        if path.is_relative_to(self.mountpoint):
            return str(path.relative_to(self.mountpoint))
        return str(path)

    def spawn(self, process: Process) -> None:
        """Starts a process again from its command line, in the background, like the command
        that first started it (the re-spawn restore of process images)."""
        subprocess.run(
            [*self._shell('"$@" </dev/null >/dev/null 2>&1 &', process.cwd), "sh", *process.argv],
            env={**COMMAND_ENV, "HOME": str(self.mountpoint)},
            check=True,
            timeout=30,
        )

    def freeze(self) -> list[int]:
        """Stops every process so a checkpoint copies one instant; returns what to thaw.

        Which of them were running rather than blocked (state R just before the stop) is kept
        in `running`: such a process is in the middle of work -- the tail of a request it
        answered -- that it finishes after the thaw, changing its memory without a wake-up its
        context switches could show (the inspector counts it as changed)."""
        stopped = []
        self.running = set()
        for pid in self.pids():
            try:
                if _state(pid) == "R":
                    self.running.add(pid)
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            except ProcessLookupError:
                pass
        # SIGSTOP is asynchronous: wait until they stopped
        poll(lambda: all(map(_stopped, stopped)), timeout=2.0, every=0.001)
        return stopped

    def wakeups(self) -> dict[int, tuple[int, int]]:
        """Each live process's voluntary and involuntary context switches: a process that
        was woken (a request arrived, a timer fired) may have changed what it holds in memory;
        one that stayed blocked was not. A SIGSTOP/SIGCONT cycle of a blocked process costs it
        exactly two voluntary switches (the stop, and going back to sleep)."""
        found = {}
        for pid in self.pids():
            with contextlib.suppress(OSError, ValueError, KeyError):
                lines = Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines()
                fields = dict(line.split(":\t", 1) for line in lines if "ctxt_switches" in line)
                found[pid] = (
                    int(fields["voluntary_ctxt_switches"]),
                    int(fields["nonvoluntary_ctxt_switches"]),
                )
        return found

    @staticmethod
    def thaw(pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL of the sandbox's PID 1: every process in it dies, the mount goes with them."""
        if self.init_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.init_pid, signal.SIGKILL)
        if self._unshare is not None:
            self._unshare.wait(timeout=30)
            self._unshare = None


def _state(pid: int) -> str:
    """The process's state letter (R running, S/D blocked, T stopped, ...); X if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return "X"
    return stat.rsplit(")", 1)[1].split()[0]


def _stopped(pid: int) -> bool:
    """Stopped (T, t) or gone."""
    return _state(pid) in ("T", "t", "Z", "X")


def _child_of(pid: int, timeout: float = 5.0) -> int:
    children = poll(
        lambda: Path(f"/proc/{pid}/task/{pid}/children").read_text().split(),
        timeout=timeout,
        every=0.005,
    )
    if not children:
        raise SandboxError(f"unshare ({pid}) started no sandbox process")
    return int(children[0])
