"""The one curator: keep recorded traces in a corpus folder with their checker-written verdicts.

    python -m rctools.suite.publish OUT/summary.json corpora/dbos CELL...

keeps the chosen cells of a suite run. Every curator (this command, LangGraph's matrix corpus
`rctools.langgraph.publish` with its own rule of what a reader learns from, LangGraph's shapes
`rctools.langgraph.shapes`) decides only *which* traces to keep; `keep` replaces the folder's
traces with them and writes the folder's entries ({file: {status, meaning, judged_by, event,
properties}}) into its manifest, corpora/manifest.json, from the verdicts the run got
(`"judged_by": "resume-check"`: the checker wrote them, not a person), so tests/test_manifest.py
re-judges them.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from resumecheck import tracemanifest


def entry(
    status: str,
    event: int | None = None,
    properties: Sequence[str] = (),
    *,
    meaning: str | None = None,
    complete: bool | None = None,
) -> dict[str, Any]:
    """A trace's manifest entry from the checker's verdict on it: the status, and the event
    and the properties of a violation (or whether a conforming trace is complete)."""
    out: dict[str, Any] = {"status": status}
    if meaning is not None:
        out["meaning"] = meaning
    out["judged_by"] = "resume-check"
    if status == "violates":
        out["event"] = event
        out["properties"] = sorted(properties)
    elif complete is not None:
        out["complete"] = complete
    return out


def keep(folder: Path, traces: Mapping[str, tuple[Path, dict[str, Any]]]) -> int:
    """Replaces the traces of `folder` with `traces` (file name -> the recorded trace and its
    entry) and the folder's entries in its manifest; returns how many it keeps."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    for name, (source, _) in traces.items():
        shutil.copy(source, folder / name)
    tracemanifest.replace_folder(folder, {name: e for name, (_, e) in traces.items()})
    return len(traces)


def publish(summary: Path, folder: Path, chosen: list[str]) -> int:
    """The chosen cells of a suite run (all when none is named) that got a verdict."""
    document = json.loads(summary.read_text(encoding="utf-8"))
    verdicts = {t["path"]: t for t in document["traces"]}
    kept: dict[str, tuple[Path, dict[str, Any]]] = {}
    for cell in document["cells"]:
        if chosen and cell["cell"] not in chosen:
            continue
        verdict = verdicts.get(cell["trace"])
        if verdict is None or verdict["status"] not in ("conforms", "violates"):
            print(f"{cell['cell']}: not kept ({cell['verdict']})", file=sys.stderr)
            continue
        source = Path(cell["trace"])
        kept[_flat_name(source, summary.parent / "traces")] = (
            source,
            entry(
                verdict["status"],
                verdict.get("event_index"),
                verdict.get("properties") or (),
                meaning=cell["what"],
                complete=verdict.get("complete"),
            ),
        )
    return keep(folder, kept)


def _flat_name(trace: Path, traces: Path) -> str:
    """The trace's file name in the corpus folder: its path below the run's traces folder,
    folders joined by `-` (recovery's `admissible/wf3.jsonl` and `native/wf3.jsonl` are two
    traces; by file name alone the second replaced the first)."""
    try:
        return "-".join(trace.relative_to(traces).parts)
    except ValueError:
        return trace.name


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    n = publish(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
    print(f"{n} trace(s) kept in {sys.argv[2]}")
