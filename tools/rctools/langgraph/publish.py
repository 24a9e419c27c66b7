"""Keep a matrix run as a curated corpus with the checker's verdicts: `traces/langgraph/<backend>/`.

    python -m rctools.langgraph.publish OUT/summary.json traces/langgraph/sqlite

keeps, of the saver-under-test's traces, every fault-free cell (one per scenario and
durability), one cell of each kind of violation (scenario, durability and the properties it
breaks) and the first conforming SIGKILL cell of each killed scenario and durability, and
writes the folder's manifest.json from the verdicts the run got (`"judged_by":
"resume-check"`: they were written by the checker, not by hand), so the test suite re-judges
every kept trace and must get the same verdict. It also writes the folder's MATRIX.md, the
whole matrix's table (every cell, kept or not), which docs/langgraph.md shows.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

KILLS_KEPT = 1  # conforming SIGKILL cells kept per scenario and durability


def _kill_index(cell: dict[str, Any]) -> int:
    fault = cell["fault"]
    return int(fault.split("@", 1)[1]) if fault.startswith("kill@") else 0


def curate(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells worth keeping, in the matrix's order."""
    judged = [c for c in cells if c["tested"]["status"] in ("conforms", "violates")]
    keep: list[dict[str, Any]] = [c for c in judged if c["fault"] == "none"]
    kinds: set[tuple[str, str, tuple[str, ...]]] = set()
    kept_kills: dict[tuple[str, str], int] = {}
    for cell in sorted(judged, key=lambda c: (c["scenario"], c["durability"], _kill_index(c))):
        if cell["fault"] == "none":
            continue
        where = (cell["scenario"], cell["durability"])
        if cell["tested"]["status"] == "violates":
            kind = (*where, tuple(sorted(cell["tested"]["properties"])))
            if kind not in kinds:
                kinds.add(kind)
                keep.append(cell)
        elif kept_kills.get(where, 0) < KILLS_KEPT and cell["tested"]["killed_at"]:
            kept_kills[where] = kept_kills.get(where, 0) + 1
            keep.append(cell)
    order = {id(c): i for i, c in enumerate(cells)}
    return sorted(keep, key=lambda c: order[id(c)])


def entry(tested: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": tested["status"], "judged_by": "resume-check"}
    if tested["status"] == "violates":
        out["event"] = tested["event_index"]
        out["properties"] = sorted(tested["properties"])
    return out


def publish(summary: Path, folder: Path) -> int:
    document = json.loads(summary.read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    manifest: dict[str, dict[str, Any]] = {}
    for cell in document["cells"]:
        tested = cell["tested"]
        if tested["status"] not in ("conforms", "violates"):
            print(f"{Path(tested['trace']).name}: not kept ({tested['verdict']})", file=sys.stderr)
    for cell in curate(document["cells"]):
        source = Path(cell["tested"]["trace"])
        shutil.copy(source, folder / source.name)
        manifest[source.name] = entry(cell["tested"])
    (folder / "manifest.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    (folder / "MATRIX.md").write_text(markdown(document, len(manifest)), encoding="utf-8")
    return len(manifest)


def markdown(document: dict[str, Any], kept: int | None = None) -> str:
    """One row per scenario and durability: the fault-free verdict, then the SIGKILL cells."""
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in document["cells"]:
        rows.setdefault((cell["scenario"], cell["durability"]), []).append(cell)
    count = document["counts"]["cells"]
    lines = [
        f"Backend `{document['backend']}`: {count} cells"
        + (f", {kept} of them kept here with the checker's verdicts." if kept else "."),
        "",
        "| scenario | durability | no fault | SIGKILL cells conforming | broken after a SIGKILL |",
        "|---|---|---|---:|---|",
    ]
    for (scenario, mode), cells in sorted(rows.items()):
        clean = next((c for c in cells if c["fault"] == "none"), None)
        kills = [c for c in cells if c["fault"].startswith("kill")]
        ok = sum(c["tested"]["status"] == "conforms" for c in kills)
        bad = sorted({p for c in kills for p in c["tested"]["properties"]})
        unmatched = [c for c in kills if not c["tested"]["properties"]]
        if any(c["tested"]["status"] == "violates" for c in unmatched):
            bad.append("no action matches")
        lines.append(
            f"| {scenario} | {mode} | {clean['tested']['verdict'] if clean else '-'} | "
            f"{f'{ok}/{len(kills)}' if kills else '-'} | {', '.join(bad) or '-'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    count = publish(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{count} traces with the checker's verdicts in {sys.argv[2]}")
