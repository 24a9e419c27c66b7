"""Keep chosen cells of a suite run as recorded traces with their checker-written verdicts:

    python -m rctools.suite.publish OUT/summary.json corpora/dbos CELL...

copies the cells' traces and writes the folder's entries ({file: {status, properties, event,
meaning, judged_by}}) into its manifest, corpora/manifest.json, from the verdicts the run got
(`"judged_by": "resume-check"`: the checker wrote them, not a person), so
tests/test_manifest.py re-judges them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from resumecheck import tracemanifest


def publish(summary: Path, folder: Path, chosen: list[str]) -> int:
    document = json.loads(summary.read_text(encoding="utf-8"))
    verdicts = {t["path"]: t for t in document["traces"]}
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    manifest: dict[str, dict[str, Any]] = {}
    for cell in document["cells"]:
        if chosen and cell["cell"] not in chosen:
            continue
        verdict = verdicts.get(cell["trace"])
        if verdict is None or verdict["status"] not in ("conforms", "violates"):
            print(f"{cell['cell']}: not kept ({cell['verdict']})", file=sys.stderr)
            continue
        source = Path(cell["trace"])
        shutil.copy(source, folder / source.name)
        entry: dict[str, Any] = {
            "status": verdict["status"],
            "meaning": cell["what"],
            "judged_by": "resume-check",
        }
        if verdict["status"] == "violates":
            entry["event"] = verdict["event_index"]
            entry["properties"] = sorted(verdict["properties"])
        elif "complete" in verdict:
            entry["complete"] = verdict["complete"]
        manifest[source.name] = entry
    tracemanifest.replace_folder(folder, manifest)
    return len(manifest)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    n = publish(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
    print(f"{n} trace(s) kept in {sys.argv[2]}")
