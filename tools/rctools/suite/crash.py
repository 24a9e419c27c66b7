"""SIGKILL of a real child process at a named point.

This is the child's side (`KillPoints`, `tell_and_stop`); the parent's is `child.run_worker`.
The child calls `points.hit(label)` at every place a kill may land (step boundaries, inside a
step, around the store's acknowledgement). The cell names one point as `label#n` (the n-th time
the child reaches `label`); there the child tells the parent through a pipe and stops (every
thread at once, `tell_and_stop`), and the parent sends SIGKILL. The kill is real and external,
and it lands at the same place every time: cells are deterministic.

A child whose state lives in processes of its own that must die with it (the sandbox agent's
sandbox: its PID 1, and the whole PID namespace with it) names them with its point (`first`):
the parent SIGKILLs those first, then the child, so they die as one.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from resumecheck.waiting import poll

KILL_ENV = "RC_KILL_AT"
FD_ENV = "RC_KILL_FD"


# libc through `PyDLL`: a call that keeps the GIL (`os.write` lets it go while it writes)
_LIBC = ctypes.PyDLL(None, use_errno=True)
_LIBC.write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
_LIBC.write.restype = ctypes.c_ssize_t


def kill_message(
    point: str, told: dict[str, Any] | None = None, first: Iterable[int] = ()
) -> bytes:
    """The one line a child sends at its kill point: `label#n`; where the child knows more at
    that instant than the point's name (LangGraph's: the saver call it cut, the writes in
    flight), a tab and that as a JSON object (`WorkerReport.told`); where processes must die
    before it (`KillPoints.first`), a tab and their PIDs as a JSON list (after `null` when
    nothing was told). JSON has no raw tab, so the tabs split the line."""
    pids = list(first)
    fields = [point]
    if told is not None or pids:
        fields.append(json.dumps(told, default=str))
    if pids:
        fields.append(json.dumps(pids))
    return ("\t".join(fields) + "\n").encode()


@dataclass(frozen=True)
class KillMessage:
    """`kill_message`'s line back: the point, what the child told with it, and the processes
    the parent kills before the child."""

    point: str
    told: dict[str, Any] | None = None
    first: list[int] = field(default_factory=list)


def parse_kill_message(line: str) -> KillMessage:
    """`kill_message`'s line (without its newline) back."""
    point, *rest = line.split("\t")
    told = json.loads(rest[0]) if rest else None
    first = [int(pid) for pid in json.loads(rest[1])] if len(rest) > 1 else []
    return KillMessage(point, told, first)


def kill_first(pids: Iterable[int]) -> None:
    """SIGKILLs `pids`, those already gone left out: the processes a child named to die
    before it (`KillPoints.first`)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def tell_and_stop(fd: int, message: bytes) -> NoReturn:
    """Tells the parent through `fd` that this process is at its kill point, and stops every
    thread of it there (SIGSTOP), for the parent's SIGKILL.

    Threads that only blocked the one at the point ran on until the kill arrived: LangGraph
    writes in background threads, so on a loaded machine the next checkpoint could be stored
    after the point, and the same cell ended differently from run to run. Here no other Python
    thread runs after the point: the message is written while this thread keeps the GIL, and
    `os.kill` keeps it too, so the process is stopped before any other thread could take it."""
    view = message
    while view:
        sent = _LIBC.write(fd, view, len(view))
        if sent < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        view = view[sent:]
    os.kill(os.getpid(), signal.SIGSTOP)
    while True:  # a SIGCONT without the SIGKILL: wait for it all the same
        time.sleep(60)


class KillPoints:
    """The child side: counts labels, stops at the chosen one until the parent kills it.

    The one kill mechanism of every suite. A runtime whose kills land where its worker
    cannot call `hit` itself extends it -- LangGraph's `rctools.langgraph.killpoints.KillSwitch`
    reaches points inside a saver's call (its SQL statements, psycopg and redis round trips,
    a seeded instant), holds a kill while its recorder holds events, and tells more with the
    point -- while counting (`reached`), choosing (`chosen`) and stopping (`stop`) stay
    these, so every suite's kill is told and received the same way (`child.Running`).
    A child that holds processes which must die with it names them in `first` (the sandbox
    agent: its sandbox's PID 1)."""

    def __init__(
        self,
        at: str | None = None,
        fd: int | None = None,
        first: Callable[[], Iterable[int]] | None = None,
    ) -> None:
        """`at`: `label#n`, by default `$RC_KILL_AT`; `fd`: the pipe to the parent, by
        default `$RC_KILL_FD` (`child.run_worker` sets both); `first`: asked at the point,
        the PIDs of the processes to be killed before this one (by default none)."""
        if at is None:
            at = os.environ.get(KILL_ENV) or None
        if fd is None and os.environ.get(FD_ENV):
            fd = int(os.environ[FD_ENV])
        self.label: str | None = None
        self.occurrence = 0
        if at:
            label, _, nth = at.partition("#")
            self.label, self.occurrence = label, int(nth or 1)
        self.first: Callable[[], Iterable[int]] = first or tuple
        self.fd = fd
        self.seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def reached(self, label: str) -> int:
        """Counts `label`: the how-many-th time this process reached it."""
        with self._lock:
            nth = self.seen[label] = self.seen.get(label, 0) + 1
        return nth

    def chosen(self, label: str, nth: int) -> bool:
        """Whether the `nth` time at `label` is the cell's kill point."""
        return label == self.label and nth == self.occurrence

    def hit(self, label: str) -> None:
        nth = self.reached(label)
        if self.chosen(label, nth):
            self.stop(f"{label}#{nth}")

    def stop(self, point: str, told: dict[str, Any] | None = None) -> NoReturn:
        """Tells the parent that this process stands at `point` (and `told`, what it knows
        there, and `first`, what must die before it) and stops for its SIGKILL; with no parent
        to kill it, kills those and then itself."""
        first = list(self.first())
        if self.fd is None:
            kill_first(first)
            os.kill(os.getpid(), signal.SIGKILL)
            raise AssertionError("SIGKILL returned")  # never reached
        tell_and_stop(self.fd, kill_message(point, told, first))


def barrier(
    folder: Path, proc: str, count: int, timeout: float = 30.0, *, required: bool = True
) -> None:
    """Blocks until `count` processes of a phase reached this point (concurrent resumers that
    really overlap, every time: a cell stays deterministic). Past `timeout` a TimeoutError, or,
    where the overlap is only sought (`required=False`), the caller goes on alone."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / proc).touch()
    met = poll(lambda: len(list(folder.iterdir())) >= count, timeout=timeout, every=0.005)
    if not met and required:
        raise TimeoutError(f"barrier {folder}: {len(list(folder.iterdir()))}/{count}")
