"""Process images: criu dumps of a sandbox's process trees, or (the baseline) their command lines.

`criu` (the default) dumps every process tree of the sandbox -- each child of its PID 1 with its
descendants -- with criu 4.1 run *inside* the sandbox's namespaces, so criu sees one PID, mount
and network namespace, the same it restores into: memory, open files, listening sockets, the
process's PID all come back, and a server's in-memory state with them. The sandbox is frozen
(SIGSTOP) when the dump is taken; criu records that and restores the processes stopped, and the
restore thaws them, so a restored sandbox resumes from the boundary's instant.

`respawn` keeps only each process's command line and working directory and starts it again:
what a process held only in memory is lost (the contract shows it when a re-run command prints
something else). It is kept as the baseline criu is measured against.

What the contract sees of a process image is the digest of its process table (command lines
and working directories); the memory a criu image holds is judged by what re-run commands print
after a restore.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from rctools.sandbox.criu import Criu, CriuUnavailable, ensure
from rctools.sandbox.namespace import Process, Sandbox

MODES = ("criu", "respawn")
CRIU_FLAGS = ("--shell-job", "-v2")


class ProcessImageError(RuntimeError):
    """criu could not dump or restore the sandbox's processes; the message has its log tail."""


@dataclass(frozen=True)
class Dumped:
    """What a dump wrote: the roots dumped (PIDs inside the sandbox) and the bytes on disk."""

    roots: list[int]
    bytes: int


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class CriuImager:
    """Dumps and restores a sandbox's process trees with criu, inside its namespaces."""

    mode = "criu"

    def __init__(self, criu: Criu | None = None) -> None:
        self._criu = criu

    @property
    def criu(self) -> Criu:
        if self._criu is None:
            self._criu = ensure()
        return self._criu

    def _run(self, sandbox: Sandbox, folder: Path, *args: str) -> None:
        log = folder / f"{args[0]}.log"
        proc = subprocess.run(
            # In a session of its own inside the sandbox: restored processes join criu's
            # session (--shell-job), and a later dump refuses a session outside the sandbox.
            sandbox.enter("setsid", "--wait", *self.criu.argv(*args, *CRIU_FLAGS, "-o", str(log))),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
            errors = [line for line in text.splitlines() if "Error" in line][-3:]
            raise ProcessImageError(
                f"criu {args[0]} failed ({proc.returncode}): "
                + " | ".join(errors or proc.stderr.strip().splitlines()[-3:])
            )

    def dump(self, sandbox: Sandbox, folder: Path) -> Dumped:
        """Dumps every process tree of the (frozen) sandbox into `folder`/<root>/; the
        processes keep running (stopped, as they were)."""
        roots = [Sandbox.inner_pid(pid) for pid in sandbox.roots()]
        for root in roots:
            images = folder / str(root)
            images.mkdir()
            self._run(
                sandbox, images, "dump", "-t", str(root), "-D", str(images), "--leave-running"
            )
        return Dumped(roots, _size(folder))

    def restore(
        self, sandbox: Sandbox, folder: Path, table: list[Process], roots: list[int]
    ) -> None:
        """Restores the trees dumped into `folder` into a fresh sandbox, then thaws them."""
        for root in roots:
            images = folder / str(root)
            self._run(sandbox, images, "restore", "-D", str(images), "--restore-detached")
        Sandbox.thaw(sandbox.pids())


class RespawnImager:
    """The baseline: no dump; a restore starts each process again from its command line."""

    mode = "respawn"

    def dump(self, sandbox: Sandbox, folder: Path) -> Dumped:
        return Dumped([], 0)

    def restore(
        self, sandbox: Sandbox, folder: Path, table: list[Process], roots: list[int]
    ) -> None:
        for process in table:
            sandbox.spawn(process)


Imager = CriuImager | RespawnImager


def imager(mode: str) -> Imager:
    return CriuImager() if mode == "criu" else RespawnImager()


def available() -> str | None:
    """Why criu cannot be used here, or None."""
    try:
        ensure()
    except CriuUnavailable as exc:
        return str(exc)
    return None
