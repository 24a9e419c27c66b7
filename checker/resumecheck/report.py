"""Verdicts for people (text), for programs (json) and for CI dashboards (junit).

Every file name and every string a trace supplied goes through `resumecheck.escape`, so no
name or event can add a line, a field or an element of its own to a report.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree import ElementTree as ET

from resumecheck import escape
from resumecheck.inputs import Skipped
from resumecheck.verdict import Status, Verdict


@dataclass(frozen=True)
class ReportOptions:
    """What a report says beyond the verdicts: entries left out, and whether a conforming
    trace that is not complete (stops before an end, or its last line was cut) fails."""

    require_complete: bool = False
    skipped: Sequence[Skipped] = ()


def exit_code(verdicts: Sequence[Verdict], *, require_complete: bool = False) -> int:
    """0: all conform; 1: some trace violates its contract (or, with `require_complete`, a
    conforming trace stops before an end or was cut short); 2: some input could not be judged."""
    statuses = {v.status for v in verdicts}
    if statuses & {Status.INVALID, Status.ERROR}:
        return 2
    if Status.VIOLATES in statuses:
        return 1
    return 1 if require_complete and any(v.complete is False for v in verdicts) else 0


def counts_line(verdicts: Sequence[Verdict]) -> str:
    counts = Counter(v.status.value for v in verdicts)
    cut = sum(v.truncated for v in verdicts if v.status is Status.CONFORMS)
    parts = [f"{counts[s.value]} {s.value}" for s in Status if counts[s.value]]
    if cut:
        parts[0] += f" ({cut} truncated)"
    return f"{len(verdicts)} trace(s): " + ", ".join(parts)


def render_text(verdicts: Sequence[Verdict], options: ReportOptions = ReportOptions()) -> str:
    lines: list[str] = []
    for v in verdicts:
        lines.extend(_text_one(v, options))
    lines.append(counts_line(verdicts))
    return "\n".join(lines) + "\n"


def _text_one(v: Verdict, options: ReportOptions) -> list[str]:
    """The report lines of one verdict, each escaped: one line of text is one report line."""
    return [escape.text(line) for line in _lines_of(v, options)]


def _lines_of(v: Verdict, options: ReportOptions) -> list[str]:
    out: list[str] = []
    name = escape.path(v.path)
    if v.status is Status.CONFORMS:
        met = ", ".join(f"{k}: {val}" for k, val in v.summary.items())
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
    if v.truncation is not None:
        fails = options.require_complete and v.status is Status.CONFORMS
        out.append(f"  note: {v.truncation}" + ("; --require-complete: fails" if fails else ""))
    if v.witness:
        out.append(
            "  witness (a behaviour of the contract matching the trace, hidden state too):"
            if v.status is Status.CONFORMS
            else "  witness (the behaviour that matches the events before the bad one, then the "
            "state the bad event leads to):"
        )
        for step in v.witness:
            if "ids" in step:
                legend = "; ".join(
                    f"{ns} " + ", ".join(f"{n}={name!r}" for n, name in table.items())
                    for ns, table in step["ids"].items()
                )
                out.append(f"    ids: {legend}")
                continue
            if "error" in step:
                out.append(f"    {step['error']}")
                continue
            head = (
                "initial state"
                if not step["after_event"]
                else (f"after event {step['after_event']}: {step['event']}")
            )
            out.append(f"    {head}")
            for name, value in step["changed"].items():
                out.append(f"      {name} = {' '.join(value.split())}")
    return out


def render_json(verdicts: Sequence[Verdict], options: ReportOptions = ReportOptions()) -> str:
    summary = Counter(v.status.value for v in verdicts)
    document: dict[str, object] = {
        "traces": [v.to_json() for v in verdicts],
        "summary": {s.value: summary[s.value] for s in Status},
        "exit_code": exit_code(verdicts, require_complete=options.require_complete),
    }
    if options.skipped:
        document["skipped"] = [{"path": str(s.path), "reason": s.reason} for s in options.skipped]
    return json.dumps(escape.json_safe(document), indent=2) + "\n"


def render_junit(verdicts: Sequence[Verdict], options: ReportOptions = ReportOptions()) -> str:
    suites = ET.Element("testsuites", name="resume-check")
    by_contract: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_contract.setdefault(escape.xml(escape.text(v.contract or "unknown")), []).append(v)
    for contract, members in by_contract.items():
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=contract,
            tests=str(len(members)),
            failures=str(sum(_fails(v, options) for v in members)),
            errors=str(sum(v.status in (Status.INVALID, Status.ERROR) for v in members)),
        )
        for v in members:
            name = escape.xml(escape.text(v.path))
            case = ET.SubElement(suite, "testcase", classname=contract, name=name)
            message = escape.xml(escape.text(v.reason))
            if v.status is Status.VIOLATES:
                failure = ET.SubElement(
                    case, "failure", type=",".join(v.properties) or "unmatched", message=message
                )
                failure.text = escape.xml("\n".join(_text_one(v, options)))
            elif v.status is not Status.CONFORMS:
                error = ET.SubElement(case, "error", type=v.status.value, message=message)
                error.text = message
            elif options.require_complete and v.complete is False:
                note = escape.xml(escape.text(v.truncation or "the trace stops before an end"))
                ET.SubElement(case, "failure", type="incomplete", message=note).text = note
            elif v.truncation is not None:
                ET.SubElement(case, "system-out").text = escape.xml(escape.text(v.truncation))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _fails(v: Verdict, options: ReportOptions) -> bool:
    return v.status is Status.VIOLATES or (options.require_complete and v.complete is False)


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
