"""The shared progress helper: `\\r` updates on a terminal, periodic plain lines elsewhere."""

from __future__ import annotations

import io
import re

from resumecheck.progress import PLAIN_INTERVAL, TTY_INTERVAL, Progress, TLCProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_plain_line_at_most_every_interval() -> None:
    clock, log = Clock(), io.StringIO()
    shown = Progress(stream=log, clock=clock)
    shown.update("recorded 1/9")  # a short run prints nothing
    clock.now += PLAIN_INTERVAL
    shown.update("recorded 5/9")
    shown.update("recorded 6/9")  # within the interval: dropped
    clock.now += PLAIN_INTERVAL
    shown.update("recorded 6/9")
    shown.update("recorded 6/9")
    clock.now += PLAIN_INTERVAL
    shown.update("recorded 6/9")  # unchanged since the last line: dropped
    shown.note("judging 9 traces")
    shown.clear()
    assert log.getvalue() == "recorded 5/9\nrecorded 6/9\njudging 9 traces\n"
    assert "\r" not in log.getvalue()


def test_on_a_terminal_the_status_line_is_rewritten_in_place() -> None:
    clock, screen = Clock(), Terminal()
    shown = Progress(stream=screen, clock=clock)
    shown.update("a")
    shown.update("b")  # within TTY_INTERVAL: dropped
    clock.now += 2 * TTY_INTERVAL
    shown.update("c")
    shown.note("done")
    assert screen.getvalue() == "\r\033[Ka\r\033[Kc\r\033[Kdone\n"


def test_counted_work_is_a_bar_with_count_and_time_left_on_a_terminal() -> None:
    clock, screen = Clock(), Terminal()
    shown = Progress(stream=screen, clock=clock)
    shown.count(3, 12, "recorded chain.kill-put")
    shown.update("judging")  # while the bar is up: its label, not a line under it
    shown.count(4, 12, "recorded chain.kill-end")
    shown.note("judging 12 traces")  # takes the bar down first
    text = screen.getvalue()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # rich's colours and cursor moves
    # the label, the count, the time spent and the time left (unknown at first, then known)
    assert re.search(
        r"recorded chain\.kill-end \S* +4/12 \d+:\d\d:\d\d left \d+:\d\d:\d\d", plain
    ), plain
    assert plain.endswith("judging 12 traces\n"), plain


def test_counted_work_off_a_terminal_is_a_plain_count_line() -> None:
    clock, log = Clock(), io.StringIO()
    shown = Progress(stream=log, clock=clock)
    clock.now += PLAIN_INTERVAL
    shown.count(5, 9, "recorded fork.kill-end")
    shown.count(6, 9, "recorded fork.kill-put")  # within the interval: dropped
    assert log.getvalue() == "5/9 recorded fork.kill-end\n"


def test_no_progress_prints_nothing() -> None:
    clock, screen = Clock(), Terminal()
    shown = Progress(False, stream=screen, clock=clock)
    shown.update("a")
    shown.count(1, 2, "c")
    shown.note("b")
    shown.clear()
    assert screen.getvalue() == ""


def test_tlc_progress_counts_matched_events_and_accepted_traces() -> None:
    clock, screen = Clock(), Terminal()
    watch = TLCProgress(Progress(stream=screen, clock=clock))
    for line in [
        '<<"rc-progress", 1, 4>>',
        '<<"rc-progress", 2, 7>>',
        '<<"rc-accepted", 1, [a |-> 1]>>',
    ]:
        watch(line)
        clock.now += 2 * TTY_INTERVAL
    watch("@!@!@STARTMSG 2185:0 @!@!@")
    assert screen.getvalue().rsplit("\r\033[K", 1)[-1] == (
        "checking: matched up to event 7; 1 trace(s) fully matched"
    )
