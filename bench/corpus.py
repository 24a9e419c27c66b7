"""A generated trace and the verdict it was generated to get: what the bench's generators
(bench/simulate.py, bench/tracegen.py) hand the benchmarks, and the manifest they write beside
the traces (the format of traces/core/manifest.json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Expected:
    """What the checker must say about a trace: the status, for a violation the 1-based index
    of the first bad event and the properties it breaks, for a conforming trace whether it
    reached an end."""

    status: str
    event: int | None = None
    properties: tuple[str, ...] = ()
    complete: bool | None = None

    def manifest(self, meaning: str) -> dict[str, Any]:
        """The entry traces/<area>/manifest.json would have for this trace."""
        entry: dict[str, Any] = {"meaning": meaning, "status": self.status}
        if self.status == "violates":
            entry |= {"event": self.event, "properties": list(self.properties)}
        if self.complete is not None:
            entry["complete"] = self.complete
        return entry


@dataclass(frozen=True)
class Trace:
    """One generated trace and the verdict it was generated to get."""

    name: str
    header: dict[str, Any]
    events: list[dict[str, Any]]
    expected: Expected

    @property
    def file(self) -> str:
        return f"{self.name}.jsonl"

    def write(self, folder: Path) -> Path:
        """Writes the trace as JSON Lines (header first) to `folder/<name>.jsonl`."""
        path = folder / self.file
        lines = [json.dumps(self.header)] + [json.dumps(e) for e in self.events]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def write_manifest(folder: Path, traces: Sequence[Trace]) -> Path:
    """`folder/manifest.json`: each trace's expected verdict, as traces/core keeps them."""
    path = folder / "manifest.json"
    entries = {t.file: t.expected.manifest(t.header["scenario"]) for t in traces}
    path.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


CORPORA = ("tracegen", "sim")
"""The generated corpora a benchmark can time (`--corpus`)."""


def generated(kind: str, count: int, seed: int) -> list[Trace]:
    """The first `count` traces of a generated corpus: "tracegen" (bench/tracegen.py, a
    simulator of the reference runtime written in Python) or "sim" (TLC simulating the
    contract's reference runtime, bench/simulate.py). Imported here, not above: both
    generators import this module."""
    if kind == "sim":
        import simulate

        return simulate.corpus(count, seed)
    import tracegen

    return [tracegen.generate(i, seed) for i in range(count)]
