"""From command-line paths to the trace files to judge, and the entries left out with why.

A directory may hold anything: FIFOs, sockets, dangling or looping symbolic links, links to
other folders, unreadable subfolders, the same file under two names. Each is either judged
once or named with the reason it was not, never silently dropped (docs/input-rules.md):

- below a directory, a trace is a file whose name ends in `.jsonl` or `.ndjson`, in any case;
- a symbolic link to a file is followed; a link to a directory is not (a link to `/` would
  walk the whole machine), nor is a dangling or looping one;
- a file reached twice (the same device and inode: overlapping arguments, links, hard links)
  is judged once, where it was first reached;
- a path named on the command line is a trace whatever its name; if it is not a regular file
  the reader says so in its verdict.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from resumecheck import escape
from resumecheck.errors import UsageError
from resumecheck.trace.reader import file_kind

TRACE_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class Skipped:
    """An entry below a directory that looked like it mattered but is not judged."""

    path: Path
    reason: str


@dataclass
class Inputs:
    """The files to judge, in order (arguments in the order given, a directory's traces
    sorted), and what was left out."""

    files: list[Path] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def is_trace_name(name: str) -> bool:
    return name.lower().endswith(TRACE_SUFFIXES)


def no_traces(paths: Sequence[Path]) -> UsageError:
    named = ", ".join(escape.path(path) for path in paths)
    return UsageError(f"no trace files (*.jsonl, *.ndjson) in {named}")


def expand(paths: Sequence[Path]) -> Inputs:
    """The trace files named by `paths`; raises UsageError for a path that does not exist."""
    found = Inputs()
    first: dict[tuple[int, int], Path] = {}

    def take(path: Path, info: os.stat_result | None) -> None:
        if info is not None:
            key = (info.st_dev, info.st_ino)
            if key in first:
                again = "reached again" if first[key] == path else f"the same file as {first[key]}"
                found.skipped.append(Skipped(path, f"{again}: judged once"))
                return
            first[key] = path
        found.files.append(path)

    for path in paths:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            if not os.path.lexists(path):
                raise UsageError(f"{escape.path(path)}: no such file or directory") from None
            info = None  # a dangling link: the reader reports it
        except OSError:
            info = None  # a link loop, a folder we may not search: the reader reports it
        if info is not None and stat.S_ISDIR(info.st_mode):
            traces, skipped = _walk(path, info)
            found.skipped += skipped
            for trace, trace_info in traces:
                take(trace, trace_info)
        else:
            take(path, info)
    return found


def _walk(
    root: Path, info: os.stat_result
) -> tuple[list[tuple[Path, os.stat_result]], list[Skipped]]:
    """The traces below `root`, each with its (followed) stat, and the entries left out; both
    sorted by path."""
    traces: list[tuple[Path, os.stat_result]] = []
    skipped: list[Skipped] = []
    folders = [root]
    visited = {(info.st_dev, info.st_ino)}
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            skipped.append(Skipped(folder, f"cannot list: {exc.strerror or exc}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            try:
                own = entry.stat(follow_symlinks=False)
            except OSError as exc:
                skipped.append(Skipped(path, f"cannot stat: {exc.strerror or exc}"))
                continue
            if stat.S_ISLNK(own.st_mode):
                target = _follow(path, skipped)
                if target is None:
                    continue
                if stat.S_ISDIR(target.st_mode):
                    why = "a symbolic link to a directory: not followed (name it to judge it)"
                    skipped.append(Skipped(path, why))
                    continue
            else:
                target = own
            if stat.S_ISDIR(target.st_mode):
                if (target.st_dev, target.st_ino) not in visited:
                    visited.add((target.st_dev, target.st_ino))
                    folders.append(path)
            elif not is_trace_name(entry.name):
                continue
            elif stat.S_ISREG(target.st_mode):
                traces.append((path, target))
            else:
                skipped.append(Skipped(path, f"not a regular file ({file_kind(target.st_mode)})"))
    traces.sort(key=lambda item: item[0])
    skipped.sort(key=lambda item: item.path)
    return traces, skipped


def _follow(link: Path, skipped: list[Skipped]) -> os.stat_result | None:
    """The stat of what `link` points to, or None (and the reason noted) when it leads nowhere."""
    try:
        return os.stat(link)
    except FileNotFoundError:
        skipped.append(Skipped(link, "a dangling symbolic link"))
    except OSError as exc:
        skipped.append(Skipped(link, f"a symbolic link that leads nowhere: {exc.strerror or exc}"))
    return None
