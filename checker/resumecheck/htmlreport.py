"""`--format html`: one self-contained page, a summary table and a timeline per violation.

A counterexample is easier to see than to read: each violating trace gets an SVG timeline with
one lane per process (or instance, attempt: whatever the contract's events are done by), its
events in order, and the first event no behaviour of the contract allows marked with the
property it breaks. Plain SVG from a string template, no script, no external file, so the page
can be attached to a CI run as it is. Every text from a trace is escaped: traces are untrusted.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from string import Template
from typing import Any

from resumecheck import escape as untrusted
from resumecheck.errors import ResumeCheckError
from resumecheck.report import Invocation, counts_line, exit_code, spec_files, spec_files_text
from resumecheck.trace.reader import read_trace
from resumecheck.verdict import Status, Verdict

# Who does an event, by contract: the first of these fields an event of the trace carries.
LANE_FIELDS = ("proc", "instance", "attempt", "node")
OTHER_LANE = "(no actor)"
STEP, LANE_HEIGHT, LEFT, TOP = 34, 36, 110, 120

PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>resume-check: $title</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.conforms{color:#17692f}.violates{color:#b00020}.invalid,.error{color:#8a5a00}
.timeline{overflow-x:auto;border:1px solid #ddd;margin:.5em 0 2em}
code{background:#f4f4f4;padding:0 .2em}
</style></head><body>
<h1>resume-check $command</h1>
<p>$counts &middot; exit code $code &middot; started $started &middot; $seconds s</p>
<table><tr><th>trace</th><th>contract</th><th>verdict</th><th>events</th><th>detail</th></tr>
$rows</table>
$spec
$timelines
</body></html>
""")


def escape(value: object) -> str:
    """HTML text for a value that may come from a trace or a file name: bidi overrides, control
    characters and undecodable bytes shown as escapes first (they would reorder or break the
    page), then HTML's own escaping."""
    return html.escape(untrusted.text(value))


def render_html(verdicts: Sequence[Verdict], run: Invocation) -> str:
    rows = "\n".join(_row(v) for v in verdicts)
    spec = "".join(
        f"<p>spec {escape(contract)}: {escape(spec_files_text(files))}</p>"
        for contract, files in spec_files(verdicts).items()
    )
    timelines = "\n".join(
        _timeline(v, number) for number, v in enumerate(verdicts) if v.status is Status.VIOLATES
    )
    return PAGE.substitute(
        title=escape(counts_line(verdicts)),
        command=escape(run.command),
        counts=escape(counts_line(verdicts)),
        code=exit_code(verdicts, require_complete=run.require_complete),
        started=escape(run.started.isoformat(timespec="seconds")),
        seconds=f"{run.seconds:.1f}",
        rows=rows,
        spec=spec,
        timelines=timelines,
    )


def _what(v: Verdict) -> str:
    if v.status is Status.VIOLATES:
        broken = ", ".join(v.properties) or "no action matches"
        return f"{broken} at event {v.event_index} (line {v.line})"
    return v.reason if v.status is not Status.CONFORMS else ""


def _row(v: Verdict) -> str:
    status = v.status.value
    return (
        f"<tr><td><code>{escape(str(v.path))}</code></td><td>{escape(v.contract or '')}</td>"
        f'<td class="{status}">{status}</td><td>{v.events}</td><td>{escape(_what(v))}</td></tr>'
    )


def lanes_of(events: Sequence[dict[str, Any]]) -> tuple[str | None, list[str]]:
    """The field that names who does each event, and its values in order of appearance."""
    field = next((f for f in LANE_FIELDS if any(f in e for e in events)), None)
    names = [OTHER_LANE] if field is None else []
    for event in events:
        name = _lane(event, field)
        if name not in names:
            names.append(name)
    return field, names


def _lane(event: dict[str, Any], field: str | None) -> str:
    if field is None or event.get(field) is None:
        return OTHER_LANE
    return str(event[field])


def _timeline(v: Verdict, number: int) -> str:
    """The SVG of one violating trace: lanes down, events left to right, the bad one marked."""
    events = read_trace(Path(v.path)).events
    field, lanes = lanes_of(events)
    width = LEFT + STEP * (len(events) + 1) + 60  # room for the last, slanted label
    height = TOP + LANE_HEIGHT * len(lanes) + 40
    bad = v.event_index or 0
    broken = ", ".join(v.properties) or "no action of the contract allows it"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="timeline of trace {number + 1}">'
    ]
    for row, name in enumerate(lanes):
        y = TOP + row * LANE_HEIGHT
        parts.append(
            f'<text x="8" y="{y + 4}" font-size="12">{escape(_short(name, 14))}</text>'
            f'<line x1="{LEFT - 8}" y1="{y}" x2="{width - 8}" y2="{y}" stroke="#ddd"/>'
        )
    for index, event in enumerate(events, start=1):
        x = LEFT + STEP * index
        y = TOP + lanes.index(_lane(event, field)) * LANE_HEIGHT
        kind = escape(_short(str(event.get("ev", "?")), 12))
        tip = escape(f"event {index}: {json.dumps(event)}")
        if index == bad:
            leftish = 2 * index <= len(events)  # the callout reads away from the nearer edge
            style, radius = 'fill="#b00020" stroke="#600" stroke-width="2"', 9
            parts.append(
                f'<line x1="{x}" y1="{TOP - 18}" x2="{x}" y2="{height - 30}" '
                'stroke="#b00020" stroke-dasharray="4 3"/>'
                f'<text x="{x + 6 if leftish else x - 6}" y="{height - 12}" font-size="12" '
                f'fill="#b00020" text-anchor="{"start" if leftish else "end"}">'
                f"event {index} ({kind}) breaks {escape(broken)}</text>"
            )
        elif index > bad:
            style, radius = 'fill="#fff" stroke="#aaa"', 5
        else:
            style, radius = 'fill="#3a6ea5"', 6
        parts.append(
            f'<g><title>{tip}</title><circle cx="{x}" cy="{y}" r="{radius}" {style}/>'
            f'<text x="{x}" y="{TOP - 24}" font-size="10" transform="rotate(-50 {x} {TOP - 24})">'
            f"{index} {kind}</text></g>"
        )
    parts.append("</svg>")
    legend = (
        f"lanes: {escape(field)}; " if field else ""
    ) + f"{v.matched} event(s) match the contract, event {bad} does not"
    return (
        f"<h2>{escape(str(v.path))}: violates {escape(v.contract or '')}: {escape(broken)}</h2>"
        f"<p>{legend}. Hover an event for its fields.</p>"
        f'<div class="timeline">{"".join(parts)}</div>'
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_html_failure(run: Invocation, error: ResumeCheckError) -> str:
    """The page for a run that could not finish: what failed, in the same frame."""
    return PAGE.substitute(
        title="error",
        command=escape(run.command),
        counts=f"could not run ({escape(error.kind)}: {escape(type(error).__name__)})",
        code=error.exit_code,
        started=escape(run.started.isoformat(timespec="seconds")),
        seconds=f"{run.seconds:.1f}",
        rows="",
        spec=f'<p class="error">{escape(str(error))}</p>',
        timelines="",
    )
