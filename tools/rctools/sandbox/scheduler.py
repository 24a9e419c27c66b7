"""The host's checkpoint scheduler: a budget of concurrent checkpoint jobs shared by all sandboxes.

Why: co-located sandboxes reach their turn boundaries at about the same time (their agents wait
on the same kind of model call), so their checkpoint jobs -- file copies, criu dumps -- would all
compete for the same disk and the same two cores at once. The scheduler admits at most N jobs
at a time on the host; the others queue. A job that skips (nothing to capture) takes no slot.

The slots are N lock files in one folder (`fcntl.flock`), so the budget holds across processes
-- every agent process of every sandbox -- and a slot is freed by the kernel when its holder is
killed (a SIGKILL in the middle of a job never leaks one). Each job's time in the queue and
with its slot is measured and returned, for the trace and the bench.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

POLL = 0.002


@dataclass
class Held:
    """What one job spent: seconds waiting for a slot, seconds holding it."""

    queued: float = 0.0
    seconds: float = 0.0


@dataclass
class Scheduler:
    """`folder` holds the slot files; None: no budget (every job runs at once)."""

    folder: Path | None
    last: Held = field(default_factory=Held)

    @classmethod
    def unlimited(cls) -> Scheduler:
        return cls(None)

    @classmethod
    def at(cls, folder: Path) -> Scheduler:
        return cls(folder)

    @staticmethod
    def prepare(folder: Path, slots: int) -> Path:
        """Creates a scheduler folder with `slots` slots (the budget of the host)."""
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("slot-*"):
            old.unlink()
        for index in range(slots):
            (folder / f"slot-{index}").touch()
        return folder

    @contextlib.contextmanager
    def slot(self, turn: int, needed: bool) -> Iterator[Held]:
        """Holds one slot for the block (none for a skipped checkpoint)."""
        held = Held()
        self.last = held
        if self.folder is None or not needed:
            started = time.perf_counter()
            yield held
            held.seconds = time.perf_counter() - started
            return
        slots = sorted(self.folder.glob("slot-*"))
        if not slots:
            raise RuntimeError(f"{self.folder}: a scheduler folder without slots")
        asked = time.perf_counter()
        fd = _acquire(slots)
        started = time.perf_counter()
        held.queued = started - asked
        try:
            yield held
        finally:
            held.seconds = time.perf_counter() - started
            os.close(fd)  # releases the lock


def _acquire(slots: list[Path]) -> int:
    """Takes the first free slot, polling: flock has no "any of these" wait."""
    while True:
        for path in slots:
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        time.sleep(POLL)
