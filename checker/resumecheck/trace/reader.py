"""Read JSON Lines traces without trusting them (the rules: docs/input-rules.md).

A trace is written by a process that may be killed at any instant, so its last line may be cut
short; that is a fact about the recording, not an error in it, but it is never hidden: the cut
line is reported and the verdict says the trace is incomplete. Anything else that is not one
strict JSON object per line makes the trace invalid. Reading never raises for bad content and
never blocks or reads without bound: only regular files are opened, and no more than the size
limit is read. It returns what was read and what was wrong, so each trace is reported alone.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumecheck.trace.prefix import is_object_prefix

MAX_BYTES = 256 << 20
MAX_LINE_BYTES = 1 << 20
MAX_EVENTS = 1_000_000
BOM = codecs.BOM_UTF8


@dataclass(frozen=True)
class Limits:
    """How much of one trace is read; raised with --max-bytes and --max-line-bytes."""

    max_bytes: int = MAX_BYTES
    max_line_bytes: int = MAX_LINE_BYTES
    max_events: int = MAX_EVENTS


@dataclass
class RawTrace:
    """A trace file as read: its header, its complete events, and what went wrong."""

    path: Path
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # 1-based line number of each event
    raw: list[str] = field(default_factory=list)  # the text of each event line
    truncation: str | None = None  # why the last line was not judged, if it was cut short
    problem: str | None = None  # why the trace is invalid, if it is


def read_trace(path: Path, limits: Limits | None = None) -> RawTrace:
    """Reads `path`; a cut-off last line is left out and noted, other damage makes it invalid."""
    limits = limits or Limits()
    trace = RawTrace(path=path)
    data, problem = _read_bounded(path, limits.max_bytes)
    if problem is not None:
        trace.problem = problem
        return trace
    data = data.removeprefix(BOM)
    if not data.strip():
        trace.problem = "empty file: a trace needs a header line"
        return trace
    complete = data.endswith(b"\n")
    chunks = data.split(b"\n")
    if complete:
        chunks.pop()
    for number, chunk in enumerate(chunks, start=1):
        chunk = chunk.removesuffix(b"\r")
        if not chunk.strip():
            continue
        if len(chunk) > limits.max_line_bytes:
            trace.problem = (
                f"line {number} is {len(chunk)} bytes, over the limit of "
                f"{limits.max_line_bytes} bytes per line (raise it with --max-line-bytes)"
            )
            return trace
        parsed, text, why = _parse_line(chunk)
        if why is not None:
            if number == len(chunks) and not complete and _is_cut(chunk):
                trace.truncation = (
                    f"line {number} is incomplete ({len(chunk)} bytes, no newline): the writer "
                    "was probably killed; it was not judged, only the complete lines before it"
                )
                break
            trace.problem = f"line {number}: {why}"
            return trace
        if trace.header is None:
            trace.header = parsed
            continue
        if len(trace.events) >= limits.max_events:
            trace.problem = f"more than {limits.max_events} events"
            return trace
        trace.events.append(parsed)
        trace.lines.append(number)
        trace.raw.append(text)
    if trace.header is None:
        trace.problem = "no complete header line"
    return trace


def _read_bounded(path: Path, max_bytes: int) -> tuple[bytes, None] | tuple[None, str]:
    """The bytes of `path` if it is a regular file of at most `max_bytes`, else why not.

    The type is checked before opening (opening a FIFO blocks until a writer comes, opening a
    device may have side effects) and again on the open descriptor, which is opened
    non-blocking, so a file swapped for a FIFO in between cannot hang the read either.
    """
    try:
        before = os.stat(path)
    except OSError as exc:
        return None, f"cannot read: {_why(path, exc)}"
    if not stat.S_ISREG(before.st_mode):
        return None, f"not a regular file ({file_kind(before.st_mode)}); only files are read"
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            return None, "the file changed while it was opened; not read"
        if now.st_size > max_bytes:
            return None, _too_big(f"{now.st_size} bytes", max_bytes)
        data = _read_at_most(fd, now.st_size, max_bytes)
    except BlockingIOError:  # a "regular" file of the kernel's that waits for data (/proc/kmsg)
        return None, "cannot read: it has no data without waiting"
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return None, _too_big("larger", max_bytes)
    return data, None


def _read_at_most(fd: int, size: int, max_bytes: int) -> bytes:
    """At most `max_bytes` + 1 bytes: the file's size in one read when it says it, more in
    small reads when it grows (or, as /proc files do, says 0)."""
    chunks: list[bytes] = []
    total = 0
    while total <= max_bytes:
        chunk = os.read(fd, max(size + 1 - total, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "an unknown kind of file"


def _why(path: Path, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError) and os.path.lexists(path):
        return "a dangling symbolic link"
    return exc.strerror or str(exc)


def _too_big(size: str, limit: int) -> str:
    return f"{size}, over the limit of {limit} bytes per trace (raise it with --max-bytes)"


def _is_cut(chunk: bytes) -> bool:
    """A last line is cut short, not damaged, when it is the beginning of a JSON object: all
    a killed writer can leave (a multi-byte character may be cut too)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(chunk, final=False)
    except UnicodeDecodeError:
        return False
    return is_object_prefix(text)


class _DuplicateKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct: parsers disagree on which duplicate wins, so a
    trace with one means different things to different readers."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"duplicate key {key!r} in an object")
            seen.add(key)
    return value


def _parse_line(chunk: bytes) -> tuple[dict[str, Any], str, None] | tuple[None, str, str]:
    """The object on a line and the line's text (decoded once: a batch has 10^5 lines), or
    why it is not one."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return None, "", "not UTF-8 text"
    try:
        value = _decode(text)
    except _DuplicateKey as exc:
        return None, text, str(exc)
    except RecursionError:
        return None, text, "not JSON (nested too deeply)"
    except ValueError as exc:  # JSONDecodeError, and ints longer than Python converts
        return None, text, f"not JSON ({exc})"
    if not isinstance(value, dict):
        return None, text, "not a JSON object"
    return value, text, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# One decoder for every line (json.loads with options builds a new one per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_object)
_SCAN = _DECODER.scan_once


def _decode(text: str) -> Any:
    """`_DECODER.decode(text)`: a line that is one object and nothing else straight from the
    decoder's scanner (`decode` adds two regex searches and two calls per line, a fifth of
    reading a batch), anything else -- white space around it, damage -- through `decode`
    itself, which gives the same value and the same errors."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    if end == len(text):
        return value
    return _DECODER.decode(text)
