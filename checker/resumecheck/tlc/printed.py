"""What the trace-validation modules print for resume-check, decoded once into typed records.

`spec/TraceValidation.tla` (and each `Trace<Area>.tla`'s `TraceExpected`) print one TLA+ tuple
per line: `<<"rc-progress", t, n>>`, `<<"rc-violation", t, i, S>>`, `<<"rc-tolerated", t, i,
S>>`, `<<"rc-accepted", t, summary>>`, `<<"rc-expected", t, moves>>`. Judging, the progress
line and explaining each read them; they read records from here, so the tuples' layout is
known in one place. Any other line (TLC's own, a spec author's Print) decodes to None.
(The progress line used to look for `<<"rc-accepted"`, and missed every acceptance TLC printed
over several lines, as it does a long summary.)

`rc-progress` lines are the most numerous (one each time a behaviour matches a trace further
than any before) and are read while TLC runs, for the progress line: they are matched by a
regular expression; the others go through the TLA+ value grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from resumecheck.tlc.values import Value, parse_value, plain

# TLC prints a long value over several lines, `<< "rc-accepted",\n   3, ...`: a space may follow
# the opening brackets.
_OPENING = re.compile(r'<<\s*"(rc-[a-z]+)"')
_PROGRESS = re.compile(r'<<"rc-progress", (\d+), (\d+)>>\s*')


@dataclass(frozen=True)
class Progress:
    """A behaviour matched the first `matched` events of trace `trace` (numbered from 1)."""

    trace: int
    matched: int


@dataclass(frozen=True)
class Broken:
    """Event `event` of `trace` matched an action, and the state it led to breaks
    `properties`: cut there (`tolerated` False), or tolerated and gone on from."""

    trace: int
    event: int
    properties: frozenset[str]
    tolerated: bool


@dataclass(frozen=True)
class Accepted:
    """Every event of `trace` matched with every property kept; `summary` is what the
    contract's `Summary` says the behaviour showed."""

    trace: int
    summary: dict[str, Any]


@dataclass(frozen=True)
class Expected:
    """The moves (partial events, TLC values) the contract allows after `trace`'s prefix."""

    trace: int
    moves: frozenset[Value]


Record = Progress | Broken | Accepted | Expected


def tag(line: str) -> str | None:
    """`rc-progress`, `rc-accepted`, ...: which tuple a line opens, read from its opening alone
    (a line as TLC writes it may be the first of a value printed over several)."""
    opening = _OPENING.match(line)
    return opening[1] if opening else None


def decode(line: str) -> Record | None:
    """The record a whole printed value holds, or None for a line that is not one of
    resume-check's."""
    if tag(line) is None:
        return None
    fast = _PROGRESS.fullmatch(line)
    if fast:
        return Progress(int(fast[1]), int(fast[2]))
    value = parse_value(line)
    if not (isinstance(value, tuple) and value and isinstance(value[0], str)):
        return None
    name, *args = value
    if name == "rc-progress" and len(args) == 2:
        return Progress(int(args[0]), int(args[1]))
    if name in ("rc-violation", "rc-tolerated") and len(args) == 3:
        names = frozenset(str(p) for p in args[2])
        return Broken(int(args[0]), int(args[1]), names, tolerated=name == "rc-tolerated")
    if name == "rc-accepted" and len(args) == 2:
        return Accepted(int(args[0]), plain(args[1]))
    if name == "rc-expected" and len(args) == 2:
        return Expected(int(args[0]), frozenset(args[1]))
    return None


def records(lines: list[str]) -> list[Record]:
    """Every record among `lines`, in order."""
    return [r for r in map(decode, lines) if r is not None]
