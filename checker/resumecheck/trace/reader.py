"""Read JSON Lines traces without trusting them.

A trace is written by a process that may be killed at any instant, so its last line may be cut
short; that is a fact about the recording, not an error in it. Anything else that is not one
JSON object per line makes the trace invalid. Reading never raises for bad content: it returns
what was read and what was wrong, so the caller can report each trace on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_LINE_BYTES = 1 << 20
MAX_EVENTS = 1_000_000


@dataclass
class RawTrace:
    """A trace file as read: its header, its complete events, and what went wrong."""

    path: Path
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # 1-based line number of each event
    raw: list[str] = field(default_factory=list)  # the text of each event line
    truncated: str | None = None  # why the last line was dropped, if it was
    problem: str | None = None  # why the trace is invalid, if it is


def read_trace(path: Path) -> RawTrace:
    """Reads `path`; a cut-off last line is dropped and noted, other damage makes it invalid."""
    trace = RawTrace(path=path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        trace.problem = f"cannot read: {exc.strerror or exc}"
        return trace
    if not data.strip():
        trace.problem = "empty file: a trace needs a header line"
        return trace
    ends_with_newline = data.endswith(b"\n")
    chunks = data.split(b"\n")
    if ends_with_newline:
        chunks.pop()
    last = len(chunks)
    for number, chunk in enumerate(chunks, start=1):
        if not chunk.strip():
            continue
        parsed, why = _parse_line(chunk)
        if why is not None:
            if number == last and not ends_with_newline:
                trace.truncated = (
                    f"line {number} is incomplete ({len(chunk)} bytes, no newline): "
                    "the writer was probably killed; the complete lines before it are judged"
                )
                break
            trace.problem = f"line {number}: {why}"
            return trace
        if trace.header is None:
            trace.header = parsed
            continue
        if len(trace.events) >= MAX_EVENTS:
            trace.problem = f"more than {MAX_EVENTS} events"
            return trace
        trace.events.append(parsed)
        trace.lines.append(number)
        trace.raw.append(chunk.decode("utf-8"))
    if trace.header is None:
        trace.problem = "no complete header line"
    return trace


def _parse_line(chunk: bytes) -> tuple[dict[str, Any], None] | tuple[None, str]:
    if len(chunk) > MAX_LINE_BYTES:
        return None, f"line longer than {MAX_LINE_BYTES} bytes"
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    return value, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def trace_files(paths: list[Path]) -> list[Path]:
    """Expands directories into the trace files below them (*.jsonl, *.ndjson), sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    p for p in path.rglob("*") if p.suffix in (".jsonl", ".ndjson") and p.is_file()
                )
            )
        else:
            found.append(path)
    return found
