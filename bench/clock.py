"""What the bench scripts time a piece of work with: wall seconds beside the CPU-seconds of
this process and the children it waited for (TLC's JVMs, a cell's workers), one way in every
script so that their figures compare."""

from __future__ import annotations

import resource
import time
from collections.abc import Callable


def cpu_seconds() -> float:
    """User and system CPU-seconds so far of this process and of its children waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU-seconds) of `work()`."""
    wall, cpu = time.monotonic(), cpu_seconds()
    work()
    return time.monotonic() - wall, cpu_seconds() - cpu
