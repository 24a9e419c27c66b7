"""Progress on stderr that suits where stderr goes: a terminal or a CI log.

On a terminal one status line is rewritten in place (`\\r`), at most ten times a second; work
whose size is known (`count`: cells recorded of a matrix) is a bar with the count, the time
spent and the time left, drawn by rich. Anywhere else (a log file, a CI job) a `\\r` would pile
up as garbage, so the status is written as a plain line, at most once every PLAIN_INTERVAL
seconds and only when it changed: a short run prints nothing, a long one leaves a heartbeat in
the log. Every command uses this one helper, so `--progress/--no-progress` means the same
everywhere.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as Bar

from resumecheck.tlc import printed

TTY_INTERVAL = 0.1
PLAIN_INTERVAL = 10.0

progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr (default: on; rewritten in place on a terminal, a plain line "
    f"every {PLAIN_INTERVAL:g} s elsewhere).",
)


class Progress:
    """A status line (`update`) and lines that stay (`note`), both on stderr."""

    def __init__(
        self,
        enabled: bool | None = None,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.enabled = enabled is not False
        self._stream = stream
        self.tty = self.stream.isatty()
        self._clock = clock
        self._shown_at = clock() if not self.tty else float("-inf")
        self._shown = ""
        self._on_screen = False
        self._bar: tuple[Bar, TaskID] | None = None

    @property
    def stream(self) -> TextIO:
        # Looked up on use, so a test runner that swaps sys.stderr sees the output.
        return self._stream or sys.stderr

    def update(self, text: str) -> None:
        """The current status; shown when the interval has passed (and, off a terminal, only
        when it changed since the last line)."""
        if not self.enabled:
            return
        if self._bar is not None:
            bar, task = self._bar
            bar.update(task, description=text[:60])
            return
        now = self._clock()
        if self.tty:
            if now - self._shown_at >= TTY_INTERVAL:
                self._write(f"\r\033[K{text[:160]}")
                self._on_screen = True
                self._shown_at = now
        elif now - self._shown_at >= PLAIN_INTERVAL and text != self._shown:
            self._write(f"{text}\n")
            self._shown, self._shown_at = text, now

    def count(self, done: int, total: int, what: str) -> None:
        """`done` of `total` units of work, the last of them `what`: a bar with the count and
        the time left on a terminal, a plain `done/total what` line elsewhere."""
        if not self.enabled:
            return
        if not self.tty:
            self.update(f"{done}/{total} {what}")
            return
        if self._bar is None:
            self.clear()
            bar = Bar(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            bar.start()
            self._bar = (bar, bar.add_task(what[:60], total=total))
        bar, task = self._bar
        bar.update(task, completed=done, total=total, description=what[:60])

    def note(self, text: str) -> None:
        """A line worth keeping in any log: a phase starts, a count is known."""
        if self.enabled:
            self.clear()
            self._write(f"{text}\n")

    def clear(self) -> None:
        """Removes the status line (or bar) from a terminal before anything else is written."""
        if self._bar is not None:
            self._bar[0].stop()
            self._bar = None
        if self._on_screen:
            self._write("\r\033[K")
            self._on_screen = False

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class TLCProgress:
    """Reads TLC's printed lines during trace validation and keeps a Progress up to date.

    TLC validates all traces of a batch breadth-first, so the deepest matched event grows
    steadily through the run, and fully matched traces arrive near its end.
    """

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.deepest = 0
        self.accepted = 0

    def __call__(self, line: str) -> None:
        # A line as TLC writes it: an acceptance's summary may go on over further lines.
        kind = printed.tag(line)
        if kind == "rc-accepted":
            self.accepted += 1
        elif kind == "rc-progress":
            record = printed.decode(line)  # a progress tuple is short: always one line
            if not isinstance(record, printed.Progress):
                return
            self.deepest = max(self.deepest, record.matched)
        else:
            return
        self.progress.update(
            f"checking: matched up to event {self.deepest}; {self.accepted} trace(s) fully matched"
        )
