"""Keep a matrix run as recorded traces with known verdicts: `traces/langgraph/<backend>/`.

    python -m rctools.langgraph.publish OUT/summary.json traces/langgraph/sqlite

copies the saver-under-test's traces and writes the folder's manifest.json from the verdicts
the run got, so the test suite re-judges every recorded trace and must get the same verdict.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any


def publish(summary: Path, folder: Path) -> int:
    document = json.loads(summary.read_text(encoding="utf-8"))
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jsonl"):
        old.unlink()
    manifest: dict[str, dict[str, Any]] = {}
    for cell in document["cells"]:
        tested = cell["tested"]
        source = Path(tested["trace"])
        if tested["status"] not in ("conforms", "violates"):
            raise SystemExit(f"{source}: {tested['status']}; only judged cells are kept")
        shutil.copy(source, folder / source.name)
        entry: dict[str, Any] = {"status": tested["status"]}
        if tested["status"] == "violates":
            entry["event"] = tested["event_index"]
            entry["properties"] = sorted(tested["properties"])
        manifest[source.name] = entry
    (folder / "manifest.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return len(manifest)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    count = publish(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{count} traces with their verdicts in {sys.argv[2]}")
