"""Keep a matrix run as a curated corpus with the checker's verdicts: `traces/langgraph/<backend>/`.

    python -m rctools.langgraph.publish OUT/summary.json traces/langgraph/sqlite

keeps, of the saver-under-test's traces, every violating cell, every fault-free cell (one per
scenario and durability) and the first few conforming SIGKILL cells of each killed scenario
(KILLS_KEPT, spread over its durabilities): about 50 per backend that a reader can go through,
where the whole matrix is hundreds. It writes the folder's manifest.json from the verdicts the
run got (`"judged_by": "resume-check"`: written by the checker, not by hand), so the test suite
re-judges every kept trace and must get the same verdict; the folder's summary.json (the run's
summary without the verdicts' full text: every cell's row and the matrix in `details`, every
trace named by its file name) that the tables are generated from; and MATRIX.md, the whole
matrix's table (`rctools.langgraph.tables`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from rctools.langgraph.tables import matrix_table

KILLS_KEPT = 1  # conforming SIGKILL cells kept per scenario
SUMMARY_FIELDS = ("tool", "version", "command", "suite", "runtime", "declared", "findings")
DETAILS_FIELDS = ("backend", "reference", "counts")


def _kill_index(cell: dict[str, Any]) -> int:
    fault = cell["fault"]
    return int(fault.split("@", 1)[1]) if fault.startswith("kill@") else 0


def curate(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cells worth keeping, in the matrix's order."""
    judged = [c for c in cells if c["tested"]["status"] in ("conforms", "violates")]
    keep = [c for c in judged if c["fault"] == "none" or c["tested"]["status"] == "violates"]
    by_scenario: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for cell in judged:
        tested = cell["tested"]
        if cell["fault"] != "none" and tested["status"] == "conforms" and tested["killed_at"]:
            modes = by_scenario.setdefault(cell["scenario"], {})
            modes.setdefault(cell["durability"], []).append(cell)
    for modes in by_scenario.values():
        # round-robin over the durabilities, lowest kill point first: each durability gets
        # one before any gets a second
        queues = [sorted(cells, key=_kill_index) for _, cells in sorted(modes.items())]
        taken = 0
        while taken < KILLS_KEPT and any(queues):
            for queue in queues:
                if queue and taken < KILLS_KEPT:
                    keep.append(queue.pop(0))
                    taken += 1
    order = {id(c): i for i, c in enumerate(cells)}
    return sorted(keep, key=lambda c: order[id(c)])


def entry(tested: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"status": tested["status"], "judged_by": "resume-check"}
    if tested["status"] == "violates":
        out["event"] = tested["event_index"]
        out["properties"] = sorted(tested["properties"])
    return out


def compact(document: dict[str, Any]) -> dict[str, Any]:
    """The summary kept beside the corpus: the rows and the matrix's cells with each trace
    named by its file name (the run's folder is not kept), without the verdicts' full text."""
    cells = []
    for cell in document["details"]["cells"]:
        sides = {}
        for name in ("tested", "reference"):
            side = cell.get(name)
            if side is not None:
                side = {k: v for k, v in side.items() if k not in ("started", "seconds")}
                side["trace"] = Path(side["trace"]).name
            sides[name] = side
        cells.append({**cell, **sides, "again": []})
    rows = [{**row, "trace": Path(row["trace"]).name} for row in document["cells"]]
    details = {k: document["details"][k] for k in DETAILS_FIELDS}
    kept = {k: document[k] for k in SUMMARY_FIELDS if k in document}
    return {**kept, "cells": rows, "details": {**details, "cells": cells}}


def publish(summary: Path, folder: Path) -> int:
    document = json.loads(summary.read_text(encoding="utf-8"))
    matrix = document["details"]
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    manifest: dict[str, dict[str, Any]] = {}
    for cell in matrix["cells"]:
        tested = cell["tested"]
        if tested["status"] not in ("conforms", "violates"):
            print(f"{Path(tested['trace']).name}: not kept ({tested['verdict']})", file=sys.stderr)
    for cell in curate(matrix["cells"]):
        source = Path(cell["tested"]["trace"])
        shutil.copy(source, folder / source.name)
        manifest[source.name] = entry(cell["tested"])
    (folder / "manifest.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    (folder / "summary.json").write_text(
        json.dumps(compact(document), indent=1) + "\n", encoding="utf-8"
    )
    (folder / "MATRIX.md").write_text(matrix_table(matrix, len(manifest)), encoding="utf-8")
    return len(manifest)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    count = publish(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{count} traces with the checker's verdicts in {sys.argv[2]}")
