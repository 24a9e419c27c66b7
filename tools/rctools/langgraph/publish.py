"""Keep a matrix run as recorded traces with known verdicts: `traces/langgraph/<backend>/`.

    python -m rctools.langgraph.publish OUT/summary.json traces/langgraph/sqlite

copies the saver-under-test's traces and writes the folder's manifest.json from the verdicts
the run got, so the test suite re-judges every recorded trace and must get the same verdict;
it also writes the folder's MATRIX.md, the table docs/langgraph.md shows.
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
            print(f"{source.name}: not kept ({tested['verdict']})", file=sys.stderr)
            continue
        shutil.copy(source, folder / source.name)
        entry: dict[str, Any] = {"status": tested["status"]}
        if tested["status"] == "violates":
            entry["event"] = tested["event_index"]
            entry["properties"] = sorted(tested["properties"])
        manifest[source.name] = entry
    (folder / "manifest.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    (folder / "MATRIX.md").write_text(markdown(document), encoding="utf-8")
    return len(manifest)


def markdown(document: dict[str, Any]) -> str:
    """One row per scenario and durability: the fault-free verdict, then the SIGKILL cells."""
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in document["cells"]:
        rows.setdefault((cell["scenario"], cell["durability"]), []).append(cell)
    lines = [
        f"Backend `{document['backend']}`: {document['counts']['cells']} cells.",
        "",
        "| scenario | durability | no fault | SIGKILL cells conforming | broken after a SIGKILL |",
        "|---|---|---|---:|---|",
    ]
    for (scenario, mode), cells in sorted(rows.items()):
        clean = next((c for c in cells if c["fault"] == "none"), None)
        kills = [c for c in cells if c["fault"] != "none"]
        ok = sum(c["tested"]["status"] == "conforms" for c in kills)
        bad = sorted({p for c in kills for p in c["tested"]["properties"]})
        lines.append(
            f"| {scenario} | {mode} | {clean['tested']['verdict'] if clean else '-'} | "
            f"{f'{ok}/{len(kills)}' if kills else '-'} | {', '.join(bad) or '-'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    count = publish(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{count} traces with their verdicts in {sys.argv[2]}")
