"""The inspector's accuracy, turn by turn: what it said against a full diff of the sandbox.

Why from the trace: every boundary records, beside the inspector's classification (`changed`),
the digests of the whole merged file tree (a walk and a SHA-256 of every file, `tree.py`) and of
the process table (command lines and working directories of every live process), taken by the
runtime independently of the inspector's evidence (fanotify events, context switches). The
true net effect of a kind is then "the digest differs from the one its base showed": the
boundary of the last checkpoint that captured that kind, or the start, or the last restore.
Comparing both per turn gives the four counts of a classifier for each kind:

  miss        the inspector said "no effect", the diff says changed: a skipped checkpoint that
              should not have been (InspectorSound rejects such a trace; the dangerous count);
  false alarm it said changed, the diff says not: a needless image, never a wrong restore;
  hit, quiet  both agree.

For processes the table diff cannot see memory: the inspector also reports a process that was
woken since its image (it may hold other memory now), which the table diff counts as a false
alarm. Those are reported apart (`woken`), not as errors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rctools.sandbox import pages

KINDS = ("files", "procs")


@dataclass
class Counts:
    """Per kind: turns judged, and the classifier's hits, misses, false alarms and quiet turns."""

    turns: int = 0
    hit: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    miss: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    alarm: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    quiet: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    effect_free: int = 0  # turns whose true net effect is nothing, of either kind

    def add(self, other: Counts) -> None:
        self.turns += other.turns
        self.effect_free += other.effect_free
        for name in ("hit", "miss", "alarm", "quiet"):
            for kind in KINDS:
                getattr(self, name)[kind] += getattr(other, name)[kind]


def events(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [json.loads(line) for line in lines if line.strip()]


def judge_trace(trace: Iterable[dict[str, Any]]) -> Counts:
    """The inspector's classification at every boundary of one trace against the digests."""
    counts = Counts()
    base: dict[str, str] = {}
    seen: dict[str, str] = {}  # the last boundary's digests, for its checkpoint
    for event in trace:
        kind = event["ev"]
        if kind in ("start", "restore", "rollback", "fork"):
            base = {"files": event["files"], "procs": event["procs"]}
        elif kind == "boundary":
            seen = {"files": event["files"], "procs": event["procs"]}
            said = set(event["changed"])
            true = {k for k in KINDS if seen[k] != base[k]}
            counts.turns += 1
            counts.effect_free += not true
            for k in KINDS:
                bucket = ("hit" if k in true else "alarm") if k in said else None
                bucket = bucket or ("miss" if k in true else "quiet")
                getattr(counts, bucket)[k] += 1
        elif kind == "checkpoint":
            for k in event["capture"]:
                base[k] = seen[k]
    return counts


def study(traces: Iterable[Path]) -> Counts:
    total = Counts()
    for path in traces:
        total.add(judge_trace(events(path)))
    return total


@dataclass(frozen=True)
class PagesTurn:
    """One boundary of a run that took a process image every turn: did the inspector say the
    processes changed, and did the memory the image holds (criu's page images) change since
    the previous turn's image -- as the processes hold it (`changed`: `pages.memory`, the
    words the kernel rewrites on its own masked) and byte for byte (`raw`)."""

    turn: int
    said: bool
    pages: str | None  # digest of the turn's memory (None: no process to dump)
    changed: bool
    raw: bool


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pages_study(trace: list[dict[str, Any]], images: Path) -> list[PagesTurn]:
    """The inspector's process classification against a diff of the processes' memory, for a
    run whose every turn took a process image (`full`; its store's `images/` folder kept).

    This is the image diff the table diff cannot be: a server whose command line stays the same
    but whose memory changes is a change here. A turn whose memory changed while the inspector
    said "no process change" is a miss of memory: under effect-aware, that turn would have
    skipped its process image and a restore to it would bring back the older memory. A turn
    whose pages differ only in the words the kernel writes (`raw` but not `changed`) is no
    miss: the processes ran none of their own code (`pages.py` says why)."""
    found = []
    previous: tuple[str | None, str | None] = (None, None)
    for event in trace:
        if event["ev"] != "boundary":
            continue
        turn = event["turn"]
        folder = images / f"procs-{turn}"
        current: tuple[str | None, str | None] = (None, None)
        if any(folder.rglob("pstree.img")):
            raw = b"".join(p.read_bytes() for p in sorted(folder.rglob("pages-*.img")))
            current = (_digest(pages.memory(folder)), _digest(raw))
        said = "procs" in event["changed"]
        changed, raw_changed = (
            now != before for now, before in zip(current, previous, strict=True)
        )
        found.append(PagesTurn(turn, said, current[0], changed, raw_changed))
        previous = current
    return found
