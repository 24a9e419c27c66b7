"""Temporary folders that a killed run cannot leave behind for good.

Every temporary folder of a resume-check process lives in one run folder,
`$TMPDIR/resume-check-<uid>/run-<pid>-<random>/`, removed when the process exits. A process
killed with SIGKILL runs no clean-up of its own, so the next run does it: on start it removes
every sibling run folder whose owner is gone.

"Gone" is decided by a lock, not by the pid alone: each run holds an exclusive `flock` on its
`lock` file for as long as it lives, and the kernel releases it however the process dies. A pid
can be reused by an unrelated process, and a run in another PID namespace that shares the
temporary folder has a pid that means nothing here; a lock means the same to both. The pid in
the name is for people, and decides only for a folder that has no lock yet (its run is
creating it, or was killed doing so).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from resumecheck.errors import ResumeCheckError

_LOCK = "lock"
_guard = threading.Lock()
_run: tuple[int, Path, int] | None = None  # (owner pid, run folder, lock descriptor)


def user_folder() -> Path:
    """`$TMPDIR/resume-check-<uid>`, private to this user; refused if anyone else could write
    to it (a shared /tmp lets others create the name first)."""
    base = Path(tempfile.gettempdir()) / f"resume-check-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        base.mkdir(mode=0o700)
    info = os.lstat(base)
    if (
        not stat.S_ISDIR(info.st_mode)
        or info.st_uid != os.getuid()
        or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        raise ResumeCheckError(
            f"{base} is not a folder only this user can write to; remove it or set TMPDIR"
        )
    return base


def run_folder() -> Path:
    """This process's run folder, created (and dead runs' folders removed) on first use, and
    again if $TMPDIR changed or something removed it (a temporary-file cleaner)."""
    global _run
    with _guard:
        base = user_folder()
        if _run is None or _run[0] != os.getpid() or _run[1].parent != base or not _run[1].is_dir():
            remove_dead_runs(base)
            folder = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=base))
            # Locked before it gets its name, so no other run ever sees the lock free.
            staging = folder / f"{_LOCK}.new"
            fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            staging.rename(folder / _LOCK)
            _run = (os.getpid(), folder, fd)
            atexit.register(_remove_own, os.getpid(), folder)
        return _run[1]


def mkdtemp(prefix: str) -> Path:
    """A fresh folder in this process's run folder."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=run_folder()))


def clean_up() -> None:
    """At start: removes the run folders of dead runs, if there is a user folder to look in
    (an unsafe one is reported when a temporary folder is needed, not here)."""
    with contextlib.suppress(OSError, ResumeCheckError):
        remove_dead_runs(user_folder())


def remove_dead_runs(base: Path) -> None:
    """Removes the run folders in `base` whose process is gone."""
    for folder in base.glob("run-*"):
        if folder.is_dir() and not folder.is_symlink() and not _alive(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(folder: Path) -> bool:
    try:
        fd = os.open(folder / _LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return _pid_alive(folder.name.split("-")[1])
    except OSError:
        return True  # not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the lock if we just took it
    return False


def _pid_alive(text: str) -> bool:
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        return True  # not a name we made, or a process we may not signal: leave it
    return True


def _remove_own(pid: int, folder: Path) -> None:
    """At exit; a forked child that exits normally must not remove its parent's folder."""
    if os.getpid() == pid:
        shutil.rmtree(folder, ignore_errors=True)
