"""Keep a matrix run as a curated corpus with the checker's verdicts: corpora/langgraph/<backend>.

    python -m rctools.langgraph.publish OUT/summary.json corpora/langgraph/sqlite
    python -m rctools.langgraph.publish OUT/summary.json corpora/langgraph/postgres \
        [--reference corpora/langgraph/sqlite/summary.json]

What a reader learns from decides what is kept. The reference saver (LangGraph's own SQLite
saver, `matrix.REFERENCE`) keeps every violating cell (LangGraph's runtime findings), every
fault-free cell (one per scenario and durability) and the first conforming SIGKILL cell of each
killed scenario (KILLS_KEPT): about 70 traces, where the matrix is hundreds. Another backend
keeps only what the reference's corpus does not already show (`curate`): its *saver findings*
-- each cell whose trace violates with another verdict than the reference's trace of the same
cell -- and one fault-free cell per scenario (the first of PREFERRED_DURABILITY recorded) as a
conforming example of that backend; the runtime findings and fault-free copies it shares with
the reference are left in `out/record/<backend>/`. The reference's verdicts are the cells' own
reference side when the run had one, else the reference backend's summary (`--reference`; by
default `corpora/langgraph/sqlite/summary.json` beside the folder, which `make record-langgraph`
publishes first). Exit codes: 0 published; 2 no reference to compare with (nothing written).

It keeps the traces with the one curator, `rctools.suite.publish.keep`, which writes the folder's
entries of corpora/manifest.json from the verdicts the run got (`"judged_by": "resume-check"`:
written by the checker, not by hand), so the test suite re-judges every kept trace and must get
the same verdict; then the folder's summary.json (the run's summary without the
verdicts' full text: every cell's row and the matrix in `details`, every trace named by its
file name; only the manifest's traces are committed) that the tables are generated from; and
MATRIX.md, the whole matrix's table (`rctools.langgraph.tables`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from rctools.langgraph.matrix import DURABILITIES, REFERENCE
from rctools.langgraph.tables import matrix_table
from rctools.suite.publish import entry, keep

KILLS_KEPT = 1  # conforming SIGKILL cells kept per scenario, on the reference
PREFERRED_DURABILITY = DURABILITIES  # which fault-free cell of a scenario another backend keeps
SUMMARY_FIELDS = ("tool", "version", "command", "suite", "runtime", "declared", "findings")
DETAILS_FIELDS = ("backend", "reference", "counts")

# A verdict as the curation compares it: the status and the properties first broken (the event
# index moves with a store's timing; what is broken is the finding).
CellVerdict = tuple[str, tuple[str, ...]]


class NoReference(Exception):
    """A backend other than the reference, recorded without the reference and given no
    reference summary: its saver findings cannot be told from LangGraph's (exit code 2)."""


def verdict_of(side: Mapping[str, Any]) -> CellVerdict:
    return side["status"], tuple(sorted(side.get("properties") or ()))


def trace_name(cell: Mapping[str, Any]) -> str:
    """A cell's trace file name: `scenario.fault.durability.jsonl`, the same for the same cell
    on every backend, so it keys one backend's cells to the reference's."""
    return Path(cell["tested"]["trace"]).name


def reference_verdicts(document: Mapping[str, Any]) -> dict[str, CellVerdict]:
    """The reference backend's verdict of each of its cells, by trace name (its summary)."""
    return {trace_name(c): verdict_of(c["tested"]) for c in document["details"]["cells"]}


def _kill_index(cell: dict[str, Any]) -> int:
    fault = cell["fault"]
    return int(fault.split("@", 1)[1]) if fault.startswith("kill@") else 0


def _judged(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in cells if c["tested"]["status"] in ("conforms", "violates")]


def _in_order(keep: list[dict[str, Any]], cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = {id(c): i for i, c in enumerate(cells)}
    return sorted(keep, key=lambda c: order[id(c)])


def curate_reference(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reference's corpus: every violating cell, every fault-free cell and KILLS_KEPT
    conforming SIGKILL cells per killed scenario, in the matrix's order."""
    judged = _judged(cells)
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
    return _in_order(keep, cells)


def is_saver_finding(cell: Mapping[str, Any], reference: CellVerdict | None) -> bool:
    """The matrix attributed the cell to the saver (a run with the reference: a property or
    runner check no reference run of the scenario shows), or the tested trace violates and
    not as the reference's trace of the cell does (or the reference has no such cell). A cell
    the saver passes where the reference fails is no finding against the saver: a race went
    the other way."""
    if cell.get("finding") == "saver":
        return True
    mine = verdict_of(cell["tested"])
    return mine[0] == "violates" and mine != reference


def curate(
    cells: list[dict[str, Any]], reference: Mapping[str, CellVerdict] | None = None
) -> list[dict[str, Any]]:
    """The cells worth keeping, in the matrix's order: the reference's corpus when `reference`
    is None (the backend is the reference), else the saver findings against the reference's
    verdicts (by trace name; a cell's own reference side wins) and one fault-free cell per
    scenario."""
    if reference is None:
        return curate_reference(cells)
    judged = _judged(cells)
    keep = []
    for cell in judged:
        own = cell.get("reference")
        theirs = verdict_of(own) if own else reference.get(trace_name(cell))
        if is_saver_finding(cell, theirs):
            keep.append(cell)
    for scenario in dict.fromkeys(c["scenario"] for c in judged):
        clean = {
            c["durability"]: c for c in judged if (c["scenario"], c["fault"]) == (scenario, "none")
        }
        first = next((clean[d] for d in PREFERRED_DURABILITY if d in clean), None)
        if first is not None and all(first is not c for c in keep):
            keep.append(first)
    return _in_order(keep, cells)


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


def reference_for(document: Mapping[str, Any], given: Path | None) -> dict[str, CellVerdict] | None:
    """The reference's verdicts `curate` compares a backend with: None for the reference
    itself; else the `given` reference summary's, or, when the run recorded the reference
    beside every cell, an empty map (each cell's own reference side is used)."""
    details = document["details"]
    if details["backend"] == REFERENCE:
        return None
    if given is not None and given.is_file():
        return reference_verdicts(json.loads(given.read_text(encoding="utf-8")))
    if all(c.get("reference") for c in details["cells"]):
        return {}
    raise NoReference(
        f"{details['backend']} was recorded without the reference ({REFERENCE}) and there is "
        f"no reference summary at {given}: give --reference, the reference's summary.json"
    )


def publish(summary: Path, folder: Path, reference: Path | None = None) -> int:
    document = json.loads(summary.read_text(encoding="utf-8"))
    matrix = document["details"]
    verdicts = reference_for(document, reference)
    for cell in matrix["cells"]:
        tested = cell["tested"]
        if tested["status"] not in ("conforms", "violates"):
            print(f"{Path(tested['trace']).name}: not kept ({tested['verdict']})", file=sys.stderr)
    kept: dict[str, tuple[Path, dict[str, Any]]] = {}
    for cell in curate(matrix["cells"], verdicts):
        tested = cell["tested"]
        source = Path(tested["trace"])
        kept[source.name] = (
            source,
            entry(tested["status"], tested.get("event_index"), tested.get("properties") or ()),
        )
    count = keep(folder, kept)
    (folder / "summary.json").write_text(
        json.dumps(compact(document), indent=1) + "\n", encoding="utf-8"
    )
    (folder / "MATRIX.md").write_text(matrix_table(matrix, count), encoding="utf-8")
    return count


PROG = "python -m rctools.langgraph.publish"


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=__doc__.split("\n\n")[0]
    + "\n\nSUMMARY: the run's summary.json. FOLDER: corpora/langgraph/<backend>.",
)
@click.argument("summary", type=click.Path(path_type=Path))
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--reference",
    type=click.Path(path_type=Path),
    help="the reference backend's summary.json (default: FOLDER/../sqlite/summary.json)",
)
@click.pass_context
def cli(ctx: click.Context, summary: Path, folder: Path, reference: Path | None) -> None:
    """Exit code 2 (nothing written) when there is no reference to compare with; through
    `ctx.exit`, so that `main` gets it back as the shell does."""
    reference = reference or folder.parent / REFERENCE / "summary.json"
    try:
        count = publish(summary, folder, reference)
    except NoReference as problem:
        print(f"publish: {problem}", file=sys.stderr)
        ctx.exit(2)
    print(f"{count} traces with the checker's verdicts in {folder}")


def main(argv: list[str]) -> int:
    """`cli` for a caller in Python (the tests): its exit code returned, not raised; a usage
    error is shown and exits 2, as on the command line."""
    try:
        code: int | None = cli.main(args=argv, prog_name=PROG, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        raise SystemExit(exc.exit_code) from None
    return code or 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
