"""The matrix tables of docs/langgraph.md and of each `corpora/langgraph/<backend>/MATRIX.md`,
generated from the matrix in each run's `summary.json` (its `details`), never typed.

    python -m rctools.langgraph.tables corpora/langgraph/*/summary.json          # print them
    python -m rctools.langgraph.tables --write docs/langgraph.md corpora/langgraph/*/summary.json

In a Markdown file, a generated table sits between `<!-- table: NAME -->` and
`<!-- end table -->`; `--write` replaces each such block with the table NAME names:
`overview` (one row per backend) or `matrix BACKEND` (one row per scenario and durability).
`tests/test_langgraph_tables.py` checks that the committed docs equal this script's output for
the committed summaries.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from resumecheck import tracemanifest

TIMES = "\u00d7"  # the multiplication sign the docs use in "CV x3"
HEADER = re.compile(r"Backend `(?P<backend>[^`]+)`: (?P<cells>\d+) cells[,.]")
BLOCK = re.compile(r"(<!-- table: (?P<name>[^>]+?) -->\n)(?P<body>.*?)(<!-- end table -->)", re.S)


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def matrix_of(path: Path) -> dict[str, Any]:
    """The matrix a `run langgraph` summary holds in `details`."""
    details: dict[str, Any] = load(path)["details"]
    return details


def _kept(summary: Path) -> int | None:
    """How many of the run's traces its folder's manifest keeps (None: the folder has none)."""
    entries = tracemanifest.folder_entries(summary.parent)
    return len(entries) if entries else None


def header(backend: str, cells: int, kept: int | None) -> str:
    """A matrix table's first line: the backend, its cells and how many traces are kept."""
    return f"Backend `{backend}`: {cells} cells" + (
        f", {kept} of them kept here with the checker's verdicts." if kept else "."
    )


def recount(table: str, kept: int) -> str:
    """`table` (a MATRIX.md) with its first line counting `kept` traces: the one line a
    folder committed without its summary.json can have regenerated."""
    first, rest = table.split("\n", 1)
    match = HEADER.match(first)
    if match is None:
        raise ValueError(f"not a matrix table's first line: {first!r}")
    return f"{header(match['backend'], int(match['cells']), kept)}\n{rest}"


def matrix_table(document: dict[str, Any], kept: int | None = None) -> str:
    """One row per scenario and durability: the fault-free verdict, then the SIGKILL cells
    (`document`: the matrix, a summary's `details`)."""
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in document["cells"]:
        rows.setdefault((cell["scenario"], cell["durability"]), []).append(cell)
    count = document["counts"]["cells"]
    lines = [
        header(document["backend"], count, kept),
        "",
        "| scenario | durability | no fault | SIGKILL cells conforming | broken after a SIGKILL |",
        "|---|---|---|---:|---|",
    ]
    for (scenario, mode), cells in sorted(rows.items()):
        clean = next((c for c in cells if c["fault"] == "none"), None)
        kills = [c for c in cells if c["fault"] != "none"]
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


def overview_table(summaries: list[Path]) -> str:
    """One row per backend: cells, verdicts, properties broken, traces kept."""
    lines = [
        "| backend | cells | conform | violate | could not run | properties broken | kept |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for path in summaries:
        document = matrix_of(path)
        statuses = Counter(c["tested"]["status"] for c in document["cells"])
        props = Counter(p for c in document["cells"] for p in c["tested"]["properties"])
        broken = ", ".join(f"{p} {TIMES}{n}" for p, n in sorted(props.items())) or "-"
        other = len(document["cells"]) - statuses["conforms"] - statuses["violates"]
        kept = _kept(path)
        lines.append(
            f"| {document['backend']} | {len(document['cells'])} | {statuses['conforms']} | "
            f"{statuses['violates']} | {other} | {broken} | {'-' if kept is None else kept} |"
        )
    return "\n".join(lines) + "\n"


def tables(summaries: list[Path]) -> dict[str, str]:
    """Every table the summaries give, by block name."""
    found = {"overview": overview_table(summaries)}
    for path in summaries:
        document = matrix_of(path)
        found[f"matrix {document['backend']}"] = matrix_table(document, _kept(path))
    return found


def fill(text: str, generated: dict[str, str]) -> str:
    """`text` with every table block replaced by its generated table; a block whose name
    no summary gives is an error (a table would silently go stale)."""

    def one(match: re.Match[str]) -> str:
        name = match["name"].strip()
        if name not in generated:
            raise KeyError(f"no summary gives the table {name!r}")
        return f"{match[1]}{generated[name]}{match[4]}"

    return BLOCK.sub(one, text)


def main(argv: list[str]) -> int:
    write = None
    if argv[:1] == ["--write"]:
        write, argv = Path(argv[1]), argv[2:]
    if not argv:
        raise SystemExit(__doc__)
    generated = tables([Path(a) for a in argv])
    if write is None:
        for name, table in generated.items():
            print(f"<!-- table: {name} -->\n{table}<!-- end table -->\n")
        return 0
    write.write_text(fill(write.read_text(encoding="utf-8"), generated), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
