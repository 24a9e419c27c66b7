"""Verdicts for people (text), for programs (json) and for CI dashboards (junit).

Every command renders through here, so `check`, `spec` and each `run <suite>` share one JSON
envelope (docs/report.schema.json) and one JUnit shape, and a tool failure (no Java, no spec
files) still yields a valid document that says what went wrong. Every file name and every
string a trace supplied goes through `resumecheck.escape`, so no name or event can add a line,
a field or an element of its own to a report.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from resumecheck import __version__, escape, junit
from resumecheck.errors import CONFORMS, ENVIRONMENT, INVALID_INPUT, VIOLATES, ResumeCheckError
from resumecheck.inputs import Skipped
from resumecheck.speccheck import Row
from resumecheck.verdict import Status, Verdict, Witness

FORMATS = ("text", "json", "junit")


@dataclass
class Invocation:
    """What a report says about the run itself: which command, when it started, how long."""

    command: str
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    _clock: float = field(default_factory=time.monotonic)
    # `check --require-complete`: a conforming trace that is not complete fails.
    require_complete: bool = False
    # Entries below the directories given that were not judged, and why.
    skipped: Sequence[Skipped] = ()

    @property
    def seconds(self) -> float:
        return round(time.monotonic() - self._clock, 3)

    def envelope(self, exit_code: int) -> dict[str, Any]:
        """The fields every JSON document opens with."""
        return {
            "tool": "resume-check",
            "version": __version__,
            "command": self.command,
            "started": self.started.isoformat(timespec="seconds"),
            "seconds": self.seconds,
            "exit_code": exit_code,
        }


def exit_code(verdicts: Sequence[Verdict], *, require_complete: bool = False) -> int:
    """3: TLC could not judge some trace; 2: some input is invalid; 1: some trace violates its
    contract (or, with `require_complete`, a conforming trace stops before an end or was cut
    short); 0: all conform. The worst wins, so a CI step never reads "fine" past a failure."""
    statuses = {v.status for v in verdicts}
    if Status.ERROR in statuses:
        return ENVIRONMENT
    if Status.INVALID in statuses:
        return INVALID_INPUT
    if Status.VIOLATES in statuses:
        return VIOLATES
    return VIOLATES if require_complete and any(v.complete is False for v in verdicts) else CONFORMS


def counts_line(verdicts: Sequence[Verdict]) -> str:
    counts = Counter(v.status.value for v in verdicts)
    cut = sum(v.truncated for v in verdicts if v.status is Status.CONFORMS)
    parts = [f"{counts[s.value]} {s.value}" for s in Status if counts[s.value]]
    if cut:
        parts[0] += f" ({cut} truncated)"
    return f"{len(verdicts)} trace(s): " + ", ".join(parts)


def spec_files(verdicts: Sequence[Verdict]) -> dict[str, list[Path]]:
    """Contract -> the files TLC judged its traces with, for the report's footer and field."""
    found: dict[str, list[Path]] = {}
    for v in verdicts:
        if v.contract and v.spec_files:
            found.setdefault(v.contract, list(v.spec_files))
    return dict(sorted(found.items()))


def spec_files_text(files: Sequence[Path]) -> str:
    """`files` grouped by folder, in the order TLC found them: an override folder shows first
    with just the modules it replaced."""
    groups: dict[Path, list[str]] = {}
    for file in files:
        groups.setdefault(file.parent, []).append(file.name)
    return "; ".join(f"{', '.join(names)} from {folder}" for folder, names in groups.items())


def render_text(verdicts: Sequence[Verdict], run: Invocation) -> str:
    lines: list[str] = []
    for v in verdicts:
        lines.extend(_text_one(v, run))
    for contract, files in spec_files(verdicts).items():
        lines.append(f"spec {contract}: {spec_files_text(files)}")
    lines.append(counts_line(verdicts))
    return "\n".join(lines) + "\n"


def _summary_value(value: Any) -> str:
    """A summary field for a person: a list of records as `[a=1 b=2; ...]`, never a Python
    repr, whatever record the contract's summary holds."""
    if isinstance(value, list):
        items = [
            " ".join(f"{k}={x}" for k, x in item.items()) if isinstance(item, dict) else str(item)
            for item in value
        ]
        return "[" + "; ".join(items) + "]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _text_one(v: Verdict, run: Invocation) -> list[str]:
    """The report lines of one verdict, each escaped: one line of text is one report line."""
    return [escape.text(line) for line in _lines_of(v, run)]


def _lines_of(v: Verdict, run: Invocation) -> list[str]:
    out: list[str] = []
    name = escape.path(v.path)
    if v.status is Status.CONFORMS:
        met = ", ".join(f"{k}: {_summary_value(val)}" for k, val in v.summary.items())
        if v.truncated:
            status = "conforms (truncated)"
        else:
            status = "conforms" if v.complete is not False else "conforms (incomplete)"
        out.append(
            f"{name}: {status} to {v.contract} ({v.events} events)"
            + (f"; met {met}" if met else "")
        )
    elif v.status is Status.VIOLATES:
        what = ", ".join(v.properties) if v.properties else "no action matches"
        out.append(f"{name}: violates {v.contract}: {what}")
        out.append(f"  at event {v.event_index} (line {v.line}): {v.event}")
        out.append(f"  the {v.matched} event(s) before it match the contract; {v.reason}")
        if not v.properties and v.expected is not None:
            if v.expected:
                out.append("  a correct runtime's next move would have been one of:")
                out.extend(f"    {json.dumps(move)}" for move in v.expected)
            else:
                out.append("  and the reference runtime has no move from that state either")
        for prop in v.properties:
            text = v.descriptions.get(prop, "")
            if text:
                out.extend(
                    textwrap.wrap(text, width=96, initial_indent="  ", subsequent_indent="      ")
                )
    else:
        out.append(f"{name}: {v.status.value}: {v.reason}")
    if v.tolerated:
        broke = ", ".join(f"{p} at event {i}" for p, i in v.tolerated.items())
        out.append(f"  tolerated (--tolerate), broken but set aside: {broke}")
    if v.truncation is not None:
        fails = run.require_complete and v.status is Status.CONFORMS
        out.append(f"  note: {v.truncation}" + ("; --require-complete: fails" if fails else ""))
    if v.witness is not None:
        out.append(
            "  witness (a behaviour of the contract matching the trace, hidden state too):"
            if v.status is Status.CONFORMS
            else "  witness (the behaviour that matches the events before the bad one, then the "
            "state the bad event leads to):"
        )
        out.extend(_witness_lines(v.witness))
    return out


def _witness_lines(witness: Witness | str) -> list[str]:
    """Each step's changed variables, then the ids legend; or why there is no witness."""
    if isinstance(witness, str):
        return [f"    {witness}"]
    out: list[str] = []
    for step in witness.steps:
        head = (
            "initial state"
            if not step.after_event
            else f"after event {step.after_event}: {step.event}"
        )
        out.append(f"    {head}")
        for name, value in step.changed.items():
            out.append(f"      {name} = {' '.join(value.split())}")
    legend = "; ".join(
        f"{ns} " + ", ".join(f"{n}={name!r}" for n, name in table.items())
        for ns, table in witness.ids.items()
    )
    out.append(f"    ids: {legend}")
    return out


def verdicts_json(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The verdict part of a JSON document: per-trace verdicts, counts, the spec files used."""
    counts = Counter(v.status.value for v in verdicts)
    return {
        "summary": {s.value: counts[s.value] for s in Status},
        "traces": [v.to_json() for v in verdicts],
        "spec_files": {
            contract: [str(p) for p in files] for contract, files in spec_files(verdicts).items()
        },
    }


def render_json(verdicts: Sequence[Verdict], run: Invocation) -> str:
    code = exit_code(verdicts, require_complete=run.require_complete)
    document = run.envelope(code) | verdicts_json(verdicts)
    if run.skipped:
        document["skipped"] = [{"path": str(s.path), "reason": s.reason} for s in run.skipped]
    return dump_json(document)


def dump_json(document: dict[str, Any]) -> str:
    return json.dumps(escape.json_safe(document), indent=2) + "\n"


def render_junit(verdicts: Sequence[Verdict], run: Invocation) -> str:
    """`junit_report` as the document's text."""
    return junit.to_xml(junit_report(verdicts, run))


def junit_report(verdicts: Sequence[Verdict], run: Invocation) -> ET.Element:
    """One testsuite per contract, one testcase per trace (`file` is the trace): the JUnit of
    `check`, and of every `run SUITE` whose cells are its traces.

    TLC judges all traces of a contract in one run, so a testcase's `time` is its share of that
    run and the testsuite's `time` the whole of it.
    """
    suites = junit.testsuites(run)
    by_contract: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_contract.setdefault(junit.line(v.contract or "unknown"), []).append(v)
    for contract, members in by_contract.items():
        suite = junit.testsuite(
            suites,
            contract,
            run,
            tests=len(members),
            failures=sum(_fails(v, run) for v in members),
            errors=sum(v.status in (Status.INVALID, Status.ERROR) for v in members),
            seconds=sum(v.seconds for v in members),
        )
        for v in members:
            path = junit.line(str(v.path))
            case = junit.testcase(suite, contract, path, v.seconds, file=path)
            if v.status is Status.VIOLATES:
                failure = ET.SubElement(
                    case,
                    "failure",
                    type=",".join(v.properties) or "unmatched",
                    message=junit.line(v.reason),
                )
                failure.text = junit.text("\n".join(_text_one(v, run)))
            elif v.status is not Status.CONFORMS:
                error = ET.SubElement(
                    case, "error", type=v.status.value, message=junit.line(v.reason)
                )
                error.text = junit.line(v.reason)
            elif run.require_complete and v.complete is False:
                note = junit.line(v.truncation or "the trace stops before an end")
                ET.SubElement(case, "failure", type="incomplete", message=note).text = note
            elif v.truncation is not None:
                ET.SubElement(case, "system-out").text = junit.line(v.truncation)
    return suites


def _fails(v: Verdict, run: Invocation) -> bool:
    return v.status is Status.VIOLATES or (run.require_complete and v.complete is False)


Renderer = Callable[[Sequence[Verdict], Invocation], str]
RENDERERS: dict[str, Renderer] = {"text": render_text, "json": render_json, "junit": render_junit}


# --- a run that could not finish -----------------------------------------------------------------


def error_json(error: ResumeCheckError) -> dict[str, Any]:
    return {"kind": error.kind, "type": type(error).__name__, "message": str(error)}


def render_failure(fmt: str, run: Invocation, error: ResumeCheckError) -> str:
    """The document a command prints when the tool itself failed: valid JSON or JUnit that
    carries the error, so a CI step that parses the report sees why instead of nothing."""
    if fmt == "json":
        return dump_json(run.envelope(error.exit_code) | {"error": error_json(error)})
    suites = junit.testsuites(run)
    suite = junit.testsuite(suites, "resume-check", run, tests=1, failures=0, errors=1, seconds=0.0)
    case = junit.testcase(suite, "resume-check", run.command, run.seconds)
    element = ET.SubElement(
        case, "error", type=type(error).__name__, message=junit.text(str(error))
    )
    element.text = junit.text(f"{error.kind}: {error}")
    return junit.to_xml(suites)


# --- resume-check spec ---------------------------------------------------------------------------


def spec_row_file(spec_dir: Path, row: Row) -> Path:
    """The file a row checks: a contract's base module, a configuration (model-checked or
    walked), or a mutant."""
    if row.kind == "contract":
        return spec_dir / f"{row.name}.tla"
    if row.kind in ("config", "walks"):
        return spec_dir / row.name
    return spec_dir / "mutants" / f"{row.name}.mutant"


def render_spec(
    fmt: str, rows: Sequence[Row], spec_dir: Path, invocation: Invocation, code: int
) -> str:
    """`resume-check spec` as JSON (one object per row) or JUnit (a testsuite per kind of row:
    contract coverage, configurations, walks, mutants)."""
    if fmt == "json":
        return dump_json(
            invocation.envelope(code)
            | {
                "spec_dir": str(spec_dir),
                "summary": {"checked": len(rows), "failed": sum(not r.passed for r in rows)},
                "rows": [asdict(r) | {"file": str(spec_row_file(spec_dir, r))} for r in rows],
            }
        )
    suites = junit.testsuites(invocation)
    for kind in ("contract", "config", "walks", "mutant"):
        members = [r for r in rows if r.kind == kind]
        suite = junit.testsuite(
            suites,
            kind,
            invocation,
            tests=len(members),
            failures=sum(not r.passed for r in members),
            errors=0,
            seconds=sum(r.seconds for r in members),
        )
        for row in members:
            case = junit.testcase(
                suite, kind, row.name, row.seconds, file=str(spec_row_file(spec_dir, row))
            )
            if not row.passed:
                failure = ET.SubElement(
                    case,
                    "failure",
                    type=row.outcome,
                    message=junit.text(f"expected {row.expected}, got {row.outcome}"),
                )
                failure.text = junit.text(row.detail)
    return junit.to_xml(suites)
