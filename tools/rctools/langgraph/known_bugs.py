"""docs/findings.md's table of known LangGraph bugs, recorded where each lived.

Each app in a folder (tests/fixtures/known_bugs/lg<ISSUE>.py: a plain app that shows one
publicly reported bug) has an entry in the folder's `manifest.json`: the issue, the releases it
lives in and those it is fixed in, the `run langgraph --app` options and the one cell that shows
it, and the property that cell must break -- data beside the apps, not code in them. This
records that cell at every one of those releases (`--langgraph`), reads each verdict back from
the reports and writes the table between the page's markers -- every figure on the page is a
recorded run:

    python -m rctools.langgraph.known_bugs tests/fixtures/known_bugs docs/findings.md

A row is *shown* when the cell breaks the property at every affected release and conforms at
every fixed one; otherwise the page says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

BEGIN = "<!-- known-bugs:begin (python -m rctools.langgraph.known_bugs) -->"
END = "<!-- known-bugs:end -->"
KEYS = ("issue", "symptom", "affected", "fixed", "status", "options", "cell", "property")


@dataclass(frozen=True)
class KnownBug:
    app: Path
    issue: int
    symptom: str
    affected: tuple[str, ...]
    fixed: tuple[str, ...]
    status: str
    options: tuple[str, ...]
    cell: str
    property: str


MANIFEST = "manifest.json"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": r"^lg[0-9]+\.py$"},
    "additionalProperties": {
        "type": "object",
        "required": list(KEYS),
        "additionalProperties": False,
        "properties": {
            "issue": {"type": "integer", "minimum": 1},
            "symptom": {"type": "string"},
            "affected": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "fixed": {"type": "array", "items": {"type": "string"}},
            "status": {"type": "string"},
            "options": {"type": "array", "items": {"type": "string"}},
            "cell": {"type": "string"},
            "property": {"type": "string"},
        },
    },
}
"""One entry per app file: what the page shows of it and how its cell is recorded."""


def apps(folder: Path) -> list[KnownBug]:
    """The folder's known bugs, by issue; a manifest that does not match the apps (an app
    without its entry, an entry without its app) or lacks a field is refused, naming it."""
    path = folder / MANIFEST
    data = json.loads(path.read_text(encoding="utf-8"))
    try:
        jsonschema.validate(data, SCHEMA)
    except jsonschema.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ValueError(f"{path}: {where}: {error.message}") from None
    files = {p.name for p in folder.glob("lg*.py")}
    if stray := sorted(set(data) ^ files):
        raise ValueError(f"{path}: apps and entries differ: {', '.join(stray)}")
    bugs = [
        KnownBug(
            app=folder / name,
            issue=entry["issue"],
            symptom=entry["symptom"],
            affected=tuple(entry["affected"]),
            fixed=tuple(entry["fixed"]),
            status=entry["status"],
            options=tuple(entry["options"]),
            cell=entry["cell"],
            property=entry["property"],
        )
        for name, entry in data.items()
    ]
    return sorted(bugs, key=lambda b: b.issue)


def _cell_name(cell: dict[str, Any]) -> str:
    return f"{cell['scenario']}.{cell['fault']}.{cell['durability']}"


def record(bug: KnownBug, out: Path) -> dict[str, str]:
    """Release -> the cell's verdict there (`conforms`, `CO at event 31`, or what went wrong)."""
    versions = [*bug.affected, *bug.fixed]
    argv = [
        sys.executable, "-c", "from resumecheck.cli import main; main()",
        "run", "langgraph", "--app", f"{bug.app}:make_graph", *bug.options,
        "--cells", bug.cell, "--no-progress", "--format", "json",
        "--langgraph", ",".join(versions), "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    try:
        document = json.loads(done.stdout)
    except json.JSONDecodeError:
        return dict.fromkeys(versions, f"no report (exit {done.returncode})")
    reports = document.get("versions") or [{"langgraph": versions[0], "report": document}]
    verdicts = {}
    for entry in reports:
        cells = (entry.get("report") or {}).get("details", {}).get("cells", [])
        found = [c for c in cells if _cell_name(c) == bug.cell]
        verdicts[str(entry["langgraph"])] = (
            str(found[0]["tested"].get("verdict") or found[0]["tested"]["status"])
            if found
            else f"no cell {bug.cell} (exit {entry.get('exit')})"
        )
    return verdicts


def shown(bug: KnownBug, verdicts: dict[str, str]) -> bool:
    """The cell breaks the bug's property where it lives and conforms where it is fixed."""
    breaks = all(
        verdicts.get(v, "").split(" at event")[0].split(", ").count(bug.property) == 1
        for v in bug.affected
    )
    return breaks and all(verdicts.get(v) == "conforms" for v in bug.fixed)


def table(rows: list[tuple[KnownBug, dict[str, str]]], root: Path) -> str:
    head = [
        "| issue | symptom | app, cell | property | where it lives | where it is fixed | fixed in "
        "| shown |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines = []
    for bug, verdicts in rows:
        link = f"[#{bug.issue}](https://github.com/langchain-ai/langgraph/issues/{bug.issue})"
        app = bug.app.resolve().relative_to(root.resolve()) if root else bug.app
        lives = "; ".join(f"{v}: `{verdicts.get(v, '?')}`" for v in bug.affected)
        fixed = "; ".join(f"{v}: `{verdicts.get(v, '?')}`" for v in bug.fixed) or "-"
        lines.append(
            f"| {link} | {bug.symptom} | `{app}`, `{bug.cell}` | {bug.property} | {lives} "
            f"| {fixed} | {bug.status} | {'yes' if shown(bug, verdicts) else 'no'} |"
        )
    return "\n".join([*head, *lines])


def write(page: Path, generated: str) -> None:
    text = page.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(text[:start] + "\n" + generated + "\n" + text[end:], encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    folder, page = Path(argv[0]), Path(argv[1])
    rows = []
    with tempfile.TemporaryDirectory(prefix="known-bugs-") as tmp:
        for bug in apps(folder):
            print(f"#{bug.issue}: {', '.join([*bug.affected, *bug.fixed])}", file=sys.stderr)
            rows.append((bug, record(bug, Path(tmp) / f"lg{bug.issue}")))
    write(page, table(rows, page.resolve().parent.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
