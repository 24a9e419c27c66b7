"""How `run langgraph` ends: the suite framework's one finish step (`suite.command.finish`),
fed with the matrix's own verdicts and attribution; the matrix for people (text) and for CI
(JUnit, one testcase per cell); the exit code.

summary.json has the shape of every suite's (one row per cell, on the saver under test), and
`details` holds the matrix (`matrix.to_json`: the reference's sides, whose fault each break is,
the runner checks). Rendering only: every decision (verdicts, whose fault) was made before, in
`matrix` and `attribution`.
"""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path
from xml.etree import ElementTree as ET

from resumecheck import junit, texttable
from resumecheck.errors import CONFORMS, ENVIRONMENT, VIOLATES
from resumecheck.progress import Progress
from resumecheck.report import Invocation
from resumecheck.verdict import Verdict

from rctools.langgraph.coverage import render as render_coverage
from rctools.langgraph.matrix import (
    RACE,
    REFERENCE,
    Cell,
    CellKey,
    Matrix,
    describe,
    describe_checks,
    saver_coverage,
    to_json,
)
from rctools.langgraph.record import GUARANTEES
from rctools.suite import reports
from rctools.suite.command import finish

# Findings that make the run answer "no": the saver under test broke something.
SAVER_KINDS = ("saver", "saver-error", "unattributed")


def matrix_exit_code(matrix: Matrix, strict: bool = False) -> int:
    """1 on any saver finding (--strict: or a runtime finding), even when some cells could not
    run; else 3 when some could not run or be judged (the answer is incomplete); else 0."""
    if any(matrix.findings(k) for k in SAVER_KINDS) or (strict and matrix.findings("runtime")):
        return VIOLATES
    return ENVIRONMENT if matrix.findings("failed") else CONFORMS


def finish_matrix(
    matrix: Matrix,
    invocation: Invocation,
    fmt: str,
    out: Path,
    progress: Progress,
    *,
    strict: bool,
    modes: tuple[str, ...],
    profile: tuple[str, str] | None = None,
) -> int:
    """summary.json, the report in `fmt` and the exit code, by the framework's finish step: a
    row per cell for the trace on the saver under test, the reference's verdicts beside, and
    the matrix in `details`."""
    traces = out / "traces"
    rows: list[reports.CellReport] = []
    verdicts: dict[str, Verdict] = {}
    for cell in matrix.cells:
        side = cell.tested
        trace = Path(os.path.relpath(side.run.trace, traces)).as_posix()
        notes: dict[str, object] = {"finding": cell.finding}
        if cell.checks:
            notes["checks"] = list(cell.checks)
        if cell.inconclusive:
            notes["inconclusive"] = list(cell.inconclusive)
        if cell.unrepeated:
            notes["unrepeated"] = list(cell.unrepeated)
        problem = side.run.failure or (None if side.verdict else "not judged")
        rows.append(
            reports.CellReport(
                reports.Cell(cell.key.slug, cell.key.scenario, fault_words(cell.key)),
                trace,
                problem=problem,
                notes=notes,
            )
        )
        if side.verdict is not None:
            verdicts[trace] = side.verdict
    result = reports.SuiteResult(
        rows,
        verdicts,
        matrix_exit_code(matrix, strict),
        render_text(matrix, out, profile),
        junit_report(matrix, invocation, strict),
        others=[r.verdict for c in matrix.cells for r in c.references if r.verdict],
        details={
            **to_json(matrix),
            **({"profile": {"name": profile[0], "left_out": profile[1]}} if profile else {}),
        },
        labels=finding_labels(matrix),
    )
    return finish(
        "langgraph",
        invocation,
        fmt,
        out,
        result,
        progress=progress,
        runtime={"name": "langgraph", "version": version("langgraph")},
        declared={
            "durability": ",".join(modes),
            "effects_default": GUARANTEES["effects"]["default"],
            "fencing": GUARANTEES["fencing"],
            "docs": "docs/langgraph.md",
        },
    )


def fault_words(key: CellKey) -> str:
    """A cell's fault and durability for people: `SIGKILL at put_writes A exit #2,
    durability sync` (the 2nd time the cell reached that kill point)."""
    point = key.kill_point
    if key.fault == "none":
        what = "no fault"
    elif key.fault == RACE:
        what = "processes at once, their saver calls not serialized"
    elif point is not None:
        what = f"SIGKILL at {point.label} #{point.occurrence}"
    else:
        what = f"SIGKILL at the {key.kill_at}th kill point"
    return f"{what}, durability {key.durability}"


# A cell's finding, as the HTML page heads its trace (htmlreport orders by the first word).
FINDING_WORDS = {
    "saver": "saver finding",
    "saver-error": "saver finding (RUNS)",
    "runtime": "runtime finding: LangGraph itself (the reference breaks it too, or the saver "
    "answered every load as the contract requires)",
    "inconclusive": "inconclusive: no reference run died at the same logical instant, or the "
    "saver under test did not break it again when the cell ran again",
    "unattributed": "unattributed: no reference run to tell",
    "failed": "could not run",
    "conforms": "conforms",
}


def finding_labels(matrix: Matrix) -> dict[str, str]:
    """Every judged trace's path -> whose finding it is: a tested run's cell finding with
    the checks that make it the saver's, a reference run's cell."""
    labels: dict[str, str] = {}
    for cell in matrix.cells:
        if cell.tested.verdict is not None:
            words = FINDING_WORDS.get(cell.finding, cell.finding)
            if cell.finding in ("saver", "saver-error") and cell.checks:
                words += f": {describe_checks(cell.checks)}"
            labels[str(cell.tested.verdict.path)] = f"{words} ({cell.key.slug})"
        for side in cell.references:
            if side.verdict is not None:
                labels[str(side.verdict.path)] = f"reference run ({REFERENCE}) of {cell.key.slug}"
    return labels


def _why(cell: Cell) -> str:
    if cell.checks:
        return describe_checks(cell.checks)
    if cell.inconclusive or cell.unrepeated:
        return describe_checks((*cell.inconclusive, *cell.unrepeated))
    return describe(cell.tested)


def _reference_words(matrix: Matrix) -> str:
    """What the cells were compared with: said as it was, not as it is by default."""
    if any(cell.reference for cell in matrix.cells):
        return f"reference: {REFERENCE}"
    if matrix.cells and all(cell.is_reference for cell in matrix.cells):
        return "LangGraph's own saver: the reference itself"
    return "no reference run"


def render_text(matrix: Matrix, out: Path, profile: tuple[str, str] | None = None) -> str:
    """A row per scenario and durability, the findings with their trace files, then the
    saver calls the cells reached (`coverage.render`)."""
    lines = [f"LangGraph conformance matrix: {matrix.backend} ({_reference_words(matrix)})"]
    if profile is not None:
        lines.append(f"profile {profile[0]}; left out: {profile[1]}")
    lines.append("")
    rows: dict[tuple[str, str], list[Cell]] = {}
    for cell in matrix.cells:
        rows.setdefault((cell.key.scenario, cell.key.durability), []).append(cell)
    table: list[tuple[str, str, str, str]] = []
    for (scenario, mode), cells in rows.items():
        clean = next((c for c in cells if c.key.fault == "none"), None)
        kills = [c for c in cells if c.key.fault not in ("none", RACE)]
        first = describe(clean.tested) if clean else "-"
        race = next((c for c in cells if c.key.fault == RACE), None)
        if race is not None:  # the same scenario with saver calls not serialized
            first = f"{first}; race: {describe(race.tested)}"
        after = (
            f"{sum(c.finding == 'conforms' for c in kills)}/{len(kills)} conform" if kills else "-"
        )
        table.append((scenario, mode, first, after))
    columns = ["scenario", "durability", "no fault", "SIGKILL at each point"]
    lines.append(texttable.render(columns, table))
    for kind, title in (
        ("saver", f"Saver findings: {matrix.backend} breaks what no reference run breaks"),
        (
            "saver-error",
            f"Saver errors (RUNS): {matrix.backend} raised where the reference did not",
        ),
        (
            "runtime",
            "Runtime findings: LangGraph itself (the reference saver breaks it too, or the "
            "saver answered every load as the contract requires)",
        ),
        (
            "inconclusive",
            "Inconclusive: no reference run of the cell died at the same logical instant "
            "(what the store held at the kill differs), so none measures it, or the saver "
            "under test did not break it again when the cell ran again (a race it lost once), "
            "or the trace cannot order what a concurrent process loaded (a store check in exit "
            "durability); not a saver finding",
        ),
        ("unattributed", "Findings not attributed (run without --no-reference to tell)"),
        ("failed", "Cells that could not run or be judged"),
    ):
        found = matrix.findings(kind)
        if not found:
            continue
        lines += ["", f"{title} ({len(found)}):"]
        for cell in found:
            also = ""
            if kind == "saver":
                also = f" (tested: {describe(cell.tested)})"
            elif kind == "runtime" and cell.reference_elsewhere:
                also = f" (the reference breaks it at {cell.reference_elsewhere})"
            elif kind == "runtime" and cell.reference is not None:
                also = f" (reference: {describe(cell.reference)})"
            elif kind == "inconclusive" and cell.unrepeated:
                again = ", ".join(str(r.run.trace) for r in cell.retested)
                also = f" (not broken again when the cell ran again: {again})"
            elif kind == "inconclusive" and cell.tested.run.effect:
                also = f" (the store held {cell.tested.run.effect} of the call cut)"
            lines.append(
                f"  {cell.key.scenario} {cell.key.fault} {cell.key.durability}: "
                f"{_why(cell)}{also}  {cell.tested.run.trace}"
            )
    lines += ["", *render_coverage(*saver_coverage(matrix))]
    counts = {
        kind: len(matrix.findings(kind))
        for kind in (*SAVER_KINDS, "conforms", "runtime", "inconclusive")
    }
    failed = matrix.findings("failed")
    lines += [
        "",
        f"{len(matrix.cells)} cells: {counts['conforms']} conform, {counts['saver']} saver "
        "finding(s), "
        + (f"{counts['saver-error']} saver error(s), " if counts["saver-error"] else "")
        + f"{counts['runtime']} runtime finding(s), "
        + (f"{counts['inconclusive']} inconclusive, " if counts["inconclusive"] else "")
        + (f"{counts['unattributed']} unattributed, " if counts["unattributed"] else "")
        + f"{len(failed)} could not run; summary in {out / 'summary.json'}",
    ]
    return "\n".join(lines) + "\n"


def junit_report(matrix: Matrix, run: Invocation, strict: bool = False) -> ET.Element:
    """One testsuite per scenario, one testcase per cell: `time` the cell's recording on the
    saver under test, `timestamp` when it started, `file` its trace. A saver finding is a
    failure named by its checks, a cell that could not run an error; a runtime finding passes
    (it is LangGraph's) unless --strict, and says so in system-out."""
    suites = junit.testsuites(run)
    by_scenario: dict[str, list[Cell]] = {}
    for cell in matrix.cells:
        by_scenario.setdefault(cell.key.scenario, []).append(cell)
    for scenario, cells in by_scenario.items():
        fails = [c for c in cells if _fails(c, strict)]
        suite = junit.testsuite(
            suites,
            f"langgraph {matrix.backend} {scenario}",
            run,
            tests=len(cells),
            failures=len(fails),
            errors=sum(c.finding == "failed" for c in cells),
            seconds=sum(c.tested.seconds for c in cells),
        )
        for cell in cells:
            side = cell.tested
            case = ET.SubElement(
                suite,
                "testcase",
                classname=junit.line(f"langgraph.{matrix.backend}.{scenario}"),
                name=junit.line(cell.key.slug),
                file=junit.line(str(side.run.trace)),
                time=f"{side.seconds:.3f}",
            )
            if side.started is not None:
                case.set("timestamp", side.started.isoformat(timespec="seconds"))
            if cell.finding == "failed":
                reason = junit.line(describe(side))
                ET.SubElement(case, "error", type="failed", message=reason).text = reason
            elif _fails(cell, strict):
                kind = ",".join(cell.checks or cell.runtime) or cell.finding
                element = ET.SubElement(
                    case, "failure", type=junit.line(kind), message=junit.line(_why(cell))
                )
                element.text = junit.text(_detail(cell))
            elif cell.finding == "runtime":
                out = ET.SubElement(case, "system-out")
                out.text = junit.text(f"runtime finding (LangGraph itself): {_detail(cell)}")
            elif cell.finding == "inconclusive":
                reason = junit.line(f"inconclusive: {_why(cell)}")
                ET.SubElement(case, "skipped", type="inconclusive", message=reason)
    return suites


def _fails(cell: Cell, strict: bool) -> bool:
    return cell.finding in SAVER_KINDS or (strict and cell.finding == "runtime")


def _detail(cell: Cell) -> str:
    lines = [f"{cell.finding}: {_why(cell)}", f"tested: {describe(cell.tested)}"]
    for number, side in enumerate(cell.references):
        lines.append(f"reference run {number + 1}: {describe(side)}  {side.run.trace}")
    return "\n".join(lines)
