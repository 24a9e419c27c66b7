"""Apply the curation rule of `publish` to corpora already committed, without recording again.

    python -m rctools.langgraph.recurate corpora/langgraph/*/

Each folder is cut down to the traces `publish.curate` keeps of it; its manifest keeps its
entries for those (the checker's verdicts, never re-typed) and MATRIX.md its count of kept
traces. The cells are the folder's summary.json's (the whole recorded matrix) where it has
one, else the manifest's own traces (folders committed before summaries were). A folder
without MATRIX.md (`shapes/`, a `findings/` folder from a run with the reference) is not a
matrix corpus and is left as it is. The reference folder's corpus is the reference rule's, so
re-curating it changes nothing; another backend's is compared with the reference's summary.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from resumecheck import tracemanifest

from rctools.langgraph.matrix import REFERENCE
from rctools.langgraph.publish import curate, reference_verdicts, trace_name
from rctools.langgraph.tables import load, matrix_table, recount


def write_folder(folder: Path, manifest: Mapping[str, Any], matrix_md: str) -> None:
    """The folder's entries in its manifest (corpora/manifest.json for a corpus folder) and
    its MATRIX.md, for the traces left in it."""
    tracemanifest.replace_folder(folder, manifest)
    (folder / "MATRIX.md").write_text(matrix_md, encoding="utf-8")


def cell_of(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A cell as the curation reads it, from a committed trace's name and manifest entry."""
    parts = name.removesuffix(".jsonl").split(".")
    return {
        "scenario": parts[0],
        "fault": ".".join(parts[1:-1]),
        "durability": parts[-1],
        "tested": {
            "trace": name,
            "status": entry["status"],
            "properties": entry.get("properties", []),
            "killed_at": None,
        },
    }


def committed_cells(folder: Path) -> list[dict[str, Any]]:
    summary = folder / "summary.json"
    if summary.is_file():
        cells: list[dict[str, Any]] = load(summary)["details"]["cells"]
        return cells
    manifest = tracemanifest.folder_entries(folder)
    return [cell_of(name, entry) for name, entry in sorted(manifest.items())]


def recurate(folder: Path, reference: Path) -> tuple[int, int]:
    """Cuts `folder` down to what the rule keeps; returns the traces before and after."""
    manifest: dict[str, Any] = tracemanifest.folder_entries(folder)
    summary = folder / "summary.json"
    is_reference = folder.name == REFERENCE
    verdicts = None if is_reference else reference_verdicts(load(reference))
    kept = {trace_name(c) for c in curate(committed_cells(folder), verdicts)}
    for name in sorted(set(manifest) - kept):
        (folder / name).unlink()
    lost = sorted(kept - set(manifest))
    if lost:
        print(f"{folder}: kept by the rule, never committed: {', '.join(lost)}", file=sys.stderr)
    entries = {name: entry for name, entry in manifest.items() if name in kept}
    table = (folder / "MATRIX.md").read_text(encoding="utf-8")
    if summary.is_file():
        table = matrix_table(load(summary)["details"], len(entries))
    write_folder(folder, entries, recount(table, len(entries)))
    return len(manifest), len(entries)


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    folders = [Path(a) for a in argv]
    reference = next((f for f in folders if f.name == REFERENCE), None)
    if reference is None:
        reference = folders[0].parent / REFERENCE
    for folder in folders:
        if not (folder / "MATRIX.md").is_file():
            print(f"{folder}: not a matrix corpus, left as it is")
            continue
        before, after = recurate(folder, reference / "summary.json")
        print(f"{folder}: {before} -> {after} traces")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
