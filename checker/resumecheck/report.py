"""Verdicts for people (text), for programs (json) and for CI dashboards (junit)."""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from xml.etree import ElementTree as ET

from resumecheck.verdict import Status, Verdict


def exit_code(verdicts: Sequence[Verdict], *, require_complete: bool = False) -> int:
    """0: all conform; 1: some trace violates its contract (or, with `require_complete`, a
    conforming trace stops before an end); 2: some input could not be judged."""
    statuses = {v.status for v in verdicts}
    if statuses & {Status.INVALID, Status.ERROR}:
        return 2
    if Status.VIOLATES in statuses:
        return 1
    return 1 if require_complete and any(v.complete is False for v in verdicts) else 0


def counts_line(verdicts: Sequence[Verdict]) -> str:
    counts = Counter(v.status.value for v in verdicts)
    parts = [f"{counts[s.value]} {s.value}" for s in Status if counts[s.value]]
    return f"{len(verdicts)} trace(s): " + ", ".join(parts)


def render_text(verdicts: Sequence[Verdict]) -> str:
    lines: list[str] = []
    for v in verdicts:
        lines.extend(_text_one(v))
    lines.append(counts_line(verdicts))
    return "\n".join(lines) + "\n"


def _text_one(v: Verdict) -> list[str]:
    out: list[str] = []
    if v.status is Status.CONFORMS:
        met = ", ".join(f"{k}: {val}" for k, val in v.summary.items())
        status = "conforms" if v.complete is not False else "conforms (incomplete)"
        out.append(
            f"{v.path}: {status} to {v.contract} ({v.events} events)"
            + (f"; met {met}" if met else "")
        )
    elif v.status is Status.VIOLATES:
        what = ", ".join(v.properties) if v.properties else "no action matches"
        out.append(f"{v.path}: violates {v.contract}: {what}")
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
        out.append(f"{v.path}: {v.status.value}: {v.reason}")
    if v.truncated:
        out.append(f"  note: {v.truncated}")
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


def render_json(verdicts: Sequence[Verdict]) -> str:
    summary = Counter(v.status.value for v in verdicts)
    document = {
        "traces": [v.to_json() for v in verdicts],
        "summary": {s.value: summary[s.value] for s in Status},
        "exit_code": exit_code(verdicts),
    }
    return json.dumps(document, indent=2) + "\n"


def render_junit(verdicts: Sequence[Verdict]) -> str:
    suites = ET.Element("testsuites", name="resume-check")
    by_contract: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_contract.setdefault(v.contract or "unknown", []).append(v)
    for contract, members in by_contract.items():
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=contract,
            tests=str(len(members)),
            failures=str(sum(v.status is Status.VIOLATES for v in members)),
            errors=str(sum(v.status in (Status.INVALID, Status.ERROR) for v in members)),
        )
        for v in members:
            case = ET.SubElement(suite, "testcase", classname=contract, name=_xml_text(str(v.path)))
            if v.status is Status.VIOLATES:
                failure = ET.SubElement(
                    case,
                    "failure",
                    type=",".join(v.properties) or "unmatched",
                    message=_xml_text(v.reason),
                )
                failure.text = _xml_text("\n".join(_text_one(v)))
            elif v.status is not Status.CONFORMS:
                error = ET.SubElement(
                    case, "error", type=v.status.value, message=_xml_text(v.reason)
                )
                error.text = _xml_text(v.reason)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# Characters XML 1.0 cannot carry, even escaped; a trace may contain any of them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
