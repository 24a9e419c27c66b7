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
from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

from resumecheck import escape as untrusted
from resumecheck.checkpointgraph import checkpoint_graph
from resumecheck.errors import ResumeCheckError
from resumecheck.report import Invocation, counts_line, exit_code, spec_files, spec_files_text
from resumecheck.verdict import Status, Verdict

# Who does an event, by contract: the first of these fields an event of the trace carries.
LANE_FIELDS = ("proc", "instance", "attempt", "node")
OTHER_LANE = "(no actor)"
# What an event is about, shown beside its kind: the first of these it carries (not its lane).
SUBJECT_FIELDS = ("node", "checkpoint", "interrupt", "turn", "cmd", "instance", "attempt")
STEP, LANE_HEIGHT, LEFT, TOP = 34, 36, 110, 160
# A long trace gets narrower steps (down to MIN_STEP, where slanted labels still clear each
# other) so that about FIT_WIDTH pixels hold it; the verdict carries the events drawn.
MIN_STEP, FIT_WIDTH = 20, 1150
BAD, MATCHED, EXPECTED, RELATED = "#b00020", "#3a6ea5", "#17692f", "#d97706"
# What ties an event to earlier ones for a person reading the picture: the same effect intent,
# interrupt, or checkpoint (asked for, returned, or named as a parent). Drawn only; the verdict
# is TLC's, and nothing here decides it.
TIES = ("intent", "interrupt", "checkpoint", "asked", "before", "parent")
CHECKPOINT_EVENTS = ("step", "fork", "update", "put", "load", "read")  # make, store, return one
MAX_EXPECTED = 4  # moves drawn in the "expected instead" row; the panel lists them all

PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>resume-check: $title</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}
.conforms{color:#17692f}.violates{color:#b00020}.invalid,.error{color:#8a5a00}
.timeline{overflow-x:auto;border:1px solid #ddd;margin:.5em 0 .5em}
.bad{border-left:5px solid #b00020;background:#fff5f6;padding:.2em 1em;margin:0 0 2.5em}
.bad pre{white-space:pre-wrap;word-break:break-all;margin:.3em 0}
.expected{color:#17692f}
/* A link to one trace (#trace-N) shows that trace alone, at the top: a picture to share. */
body:has(section:target)>:not(section:target){display:none}
.back{display:none}section:target .back{display:inline}
code{background:#f4f4f4;padding:0 .2em}
.finding{font-weight:bold}.saver{color:#b00020}.runtime{color:#8a5a00}
.inconclusive,.reference{color:#666}
</style></head><body>
<h1>resume-check $command</h1>
<p>$counts &middot; exit code $code &middot; started $started &middot; $seconds s</p>
<table><tr><th>trace</th>$finding_head<th>contract</th><th>verdict</th><th>events</th><th>detail</th></tr>
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


def render_html(
    verdicts: Sequence[Verdict], run: Invocation, labels: Mapping[str, str] | None = None
) -> str:
    """The page. `labels` (a suite's attribution: trace path -> "saver finding: CV",
    "runtime finding", "reference run", ...) adds a column saying whose finding each trace is,
    heads each picture with it, and orders the pictures by it: the saver's findings first, then
    LangGraph's, then what is inconclusive, then the reference runs that explain them."""
    labels = labels or {}
    spec = "".join(
        f"<p>spec {escape(contract)}: {escape(spec_files_text(files))}</p>"
        for contract, files in spec_files(verdicts).items()
    )
    violating = [(n, v) for n, v in enumerate(verdicts) if v.status is Status.VIOLATES]
    violating.sort(key=lambda item: _rank(labels.get(str(item[1].path), "")))
    timelines = "\n".join(_timeline(v, number, labels.get(str(v.path))) for number, v in violating)
    rows = "\n".join(
        _row(v, number, labels.get(str(v.path), "") if labels else None)
        for number, v in enumerate(verdicts)
    )
    return PAGE.substitute(
        finding_head="<th>finding</th>" if labels else "",
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


def anchor(number: int) -> str:
    """The id of a violating trace's picture: the table links to it, a URL can point at it."""
    return f"trace-{number + 1}"


# The order of a suite's labels on the page, by their first word.
LABEL_ORDER = ("saver", "runtime", "inconclusive", "unattributed", "reference")


def _label_class(label: str) -> str:
    """A label's kind (its first word, when LABEL_ORDER knows it): its CSS class and rank."""
    word = label.split(" ", 1)[0].rstrip(":")
    return word if word in LABEL_ORDER else "other"


def _rank(label: str) -> int:
    kind = _label_class(label)
    return LABEL_ORDER.index(kind) if kind in LABEL_ORDER else len(LABEL_ORDER)


def _row(v: Verdict, number: int, label: str | None = None) -> str:
    status = v.status.value
    name = f"<code>{escape(str(v.path))}</code>"
    if v.status is Status.VIOLATES:
        name = f'<a href="#{anchor(number)}">{name}</a>'
    finding = (
        f'<td class="finding {_label_class(label)}">{escape(label)}</td>'
        if label is not None
        else ""
    )
    return (
        f"<tr><td>{name}</td>{finding}<td>{escape(v.contract or '')}</td>"
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


def _timeline(v: Verdict, number: int, finding: str | None = None) -> str:
    """One violating trace: an SVG with lanes down and events left to right (what each event is
    about beside its kind), the bad event marked, the moves a correct runtime could have made
    there drawn below it; then a panel with the bad event's fields, the property's meaning
    from the spec, and those moves. Events after the bad one were never judged: a few are
    drawn, pale, the rest only counted, so the bad event stays in view on a long trace."""
    events = shown = list(v.shown)
    bad = v.event_index or 0
    field, lanes = lanes_of(shown)
    broken = ", ".join(v.properties) or "no action of the contract allows it"
    expected = list(v.expected or [])
    step = max(MIN_STEP, min(STEP, FIT_WIDTH // max(len(shown), 1)))
    bad_x = LEFT + step * bad
    callout = f"event {bad} ({_short(str(events[bad - 1].get('ev', '?')), 12)})" + (
        f" breaks {broken}" if v.properties else f": {broken}"
    )
    # room for the last slanted label, the callout and the expected moves
    width = max(
        LEFT + step * (len(shown) + 1) + 60,
        bad_x + 16 + _text_width(callout, 12),
        bad_x + 30 + 12 * MAX_EXPECTED + _text_width("x" * 22, 11) if expected else 0,
    )
    rows = len(lanes) + (1 if expected else 0)
    height = TOP + LANE_HEIGHT * rows + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="timeline of trace {number + 1}">'
    ]
    for row, name in enumerate(lanes):
        y = TOP + row * LANE_HEIGHT
        parts.append(
            f'<text x="8" y="{y + 4}" font-size="12">{escape(_short(name, 14))}'
            f"<title>{escape(name)}</title></text>"
            f'<line x1="{LEFT - 8}" y1="{y}" x2="{width - 8}" y2="{y}" stroke="#ddd"/>'
        )
    related = _related(events, bad)
    for index, event in enumerate(shown, start=1):
        x = LEFT + step * index
        y = TOP + lanes.index(_lane(event, field)) * LANE_HEIGHT
        if index in related:
            parts.append(
                f'<circle cx="{x}" cy="{y}" r="11" fill="none" stroke="{RELATED}" '
                'stroke-width="2"/>'
            )
        label = f"{index} {_short(str(event.get('ev', '?')), 12)}"
        about = _subject(event, field)
        if about:
            label += f" {about}"
        tip = f"event {index}: {json.dumps(event)}"
        weight = ""
        if index == bad:
            style, radius = f'fill="{BAD}" stroke="#600" stroke-width="2"', 9
            weight = f' font-weight="bold" fill="{BAD}"'
            # the callout reads to the right of the line unless there is more room to its left
            right = bad_x - 6 - _text_width(callout, 12) < 8 or 2 * index <= len(shown)
            parts.append(
                f'<line x1="{x}" y1="{TOP - 18}" x2="{x}" y2="{height - 30}" '
                f'stroke="{BAD}" stroke-dasharray="4 3"/>'
                f'<text x="{x + 6 if right else x - 6}" y="{height - 12}" font-size="12" '
                f'fill="{BAD}" text-anchor="{"start" if right else "end"}">'
                f"{escape(callout)}</text>"
            )
        elif index > bad:
            style, radius = 'fill="#fff" stroke="#aaa"', 5
        else:
            style, radius = f'fill="{MATCHED}"', 6
        parts.append(
            f'<g><title>{escape(tip)}</title><circle cx="{x}" cy="{y}" r="{radius}" {style}/>'
            f'<text x="{x}" y="{TOP - 24}" font-size="10"{weight} '
            f'transform="rotate(-50 {x} {TOP - 24})">{escape(label)}</text></g>'
        )
    if expected:
        parts.append(_expected_row(expected, TOP + len(lanes) * LANE_HEIGHT, bad_x))
    parts.append("</svg>")
    later = v.events - len(shown)
    legend = (f"lanes: {escape(field)}; " if field else "") + (
        f"events 1 to {v.matched} match the contract (blue), event {bad} does not (red)"
        + (
            f"; ringed (orange): {len(related)} earlier event(s) with its effect, interrupt "
            "or checkpoint"
            if related
            else ""
        )
        + (f"; {later} later event(s), never judged, are left out" if later else "")
    )
    return (
        f'<section id="{anchor(number)}" class="trace"><h2>'
        + (
            f'<span class="finding {_label_class(finding)}">{escape(finding)}</span>: '
            if finding
            else ""
        )
        + f"{escape(str(v.path))}: violates {escape(v.contract or '')}: {escape(broken)}</h2>"
        f'<p>{legend}. Hover an event for its fields. <a class="back" href="#">All traces</a></p>'
        f'<div class="timeline">{"".join(parts)}</div>'
        f"{checkpoint_graph(events, bad, _graph_nodes(v.header))}"
        f"{_bad_event_panel(v, events, field, broken, expected)}</section>"
    )


def _ties(event: dict[str, Any]) -> set[tuple[str, str]]:
    """What an event names that another may name too: an effect's intent, an interrupt (raised,
    answered or received), an answer's value, a checkpoint (made, stored, asked for, returned,
    a parent)."""
    found: set[tuple[str, str]] = set()
    for name in TIES:
        value = event.get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            kind = "checkpoint" if name in ("checkpoint", "asked", "before", "parent") else name
            if kind != "checkpoint" or event.get("ev") in CHECKPOINT_EVENTS:
                found.add((kind, str(value)))
    for delivered in event.get("resumed") or []:
        if isinstance(delivered, dict) and isinstance(delivered.get("interrupt"), (str, int)):
            found.add(("interrupt", str(delivered["interrupt"])))
        if isinstance(delivered, dict) and isinstance(delivered.get("value"), (str, int)):
            found.add(("answer", str(delivered["value"])))
    if event.get("ev") == "resume" and isinstance(event.get("value"), (str, int)):
        found.add(("answer", str(event["value"])))
    return found


def _related(events: list[dict[str, Any]], bad: int) -> set[int]:
    """The earlier events that name what the bad one names (`_ties`): for a CV the checkpoint
    asked for and the one returned, for a CO the earlier answer and park, for an EO the first
    fire. Only an effect's intent ties effects, so one effect does not ring every event of its
    checkpoint."""
    if not 0 < bad <= len(events):
        return set()
    target = events[bad - 1]
    mine = _ties(target)
    if target.get("ev") == "effect":
        mine = {t for t in mine if t[0] == "intent"}
    return {i for i, e in enumerate(events[: bad - 1], start=1) if _ties(e) & mine}


def _graph_nodes(header: dict[str, Any] | None) -> list[str]:
    """The workflow's nodes as the header declares them (`graph.nodes`), if it does."""
    graph = (header or {}).get("graph")
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    return [str(n) for n in nodes if isinstance(n, (str, int))] if isinstance(nodes, list) else []


def _text_width(text: str, size: int) -> int:
    """About how wide a line of text is in the page's sans-serif font, to leave room for it."""
    return int(len(text) * size * 0.62)


def _subject(event: dict[str, Any], lane_field: str | None) -> str:
    """What an event is about, in a few characters: its node, checkpoint (with the parent it
    names: `c1←c0`), interrupt, turn..., whichever it carries first; a number with its name."""
    for name in SUBJECT_FIELDS:
        value = event.get(name)
        if name == lane_field or value is None or isinstance(value, (dict, list)):
            continue
        if isinstance(value, (int, float)):  # a bare number says nothing: "turn 1"
            return f"{name} {value}"
        text = _short(untrusted.text(value), 12) if name == "node" else _id(value)
        parent = event.get("parent")
        if name == "checkpoint" and isinstance(parent, (str, int)):
            text += f"\u2190{_id(parent)}"
        return text
    return ""


def _id(value: object) -> str:
    """An identifier short enough for a label: a long one (a UUID) by its tail, which is the
    part that differs between the checkpoints of one run."""
    text = untrusted.text(value)
    return text if len(text) <= 8 else "\u2026" + text[-5:]


def _expected_row(expected: list[dict[str, Any]], y: int, x: int) -> str:
    """A last row, under the bad event: the moves the contract's reference runtime could have
    made there, as hollow green marks with their kind and actor."""
    parts = [
        f'<text x="8" y="{y + 4}" font-size="12" fill="{EXPECTED}">expected</text>'
        f'<line x1="{LEFT - 8}" y1="{y}" x2="{x}" y2="{y}" stroke="{EXPECTED}" '
        'stroke-dasharray="2 4"/>'
    ]
    for slot, move in enumerate(expected[:MAX_EXPECTED]):
        cx = x + slot * 14
        actor = next((str(move[f]) for f in LANE_FIELDS if move.get(f) is not None), "")
        what = escape(_short(f"{move.get('ev', '?')} {actor}".strip(), 18))
        parts.append(
            f'<g><title>{escape(json.dumps(move))}</title><circle cx="{cx}" cy="{y}" r="6" '
            f'fill="#fff" stroke="{EXPECTED}" stroke-width="2" stroke-dasharray="3 2"/></g>'
        )
        if slot == 0:
            more = f" (+{len(expected) - 1})" if len(expected) > 1 else ""
            parts.append(
                f'<text x="{x + 14 * min(len(expected), MAX_EXPECTED) + 2}" y="{y + 4}" '
                f'font-size="11" fill="{EXPECTED}">{what}{more}</text>'
            )
    return "".join(parts)


def _bad_event_panel(
    v: Verdict,
    events: Sequence[dict[str, Any]],
    field: str | None,
    broken: str,
    expected: list[dict[str, Any]],
) -> str:
    """The first non-conforming event in words: who did what, its fields, what it breaks."""
    bad = v.event_index or 0
    event = events[bad - 1] if 0 < bad <= len(events) else {}
    actor = _lane(event, field)
    who = f" by {escape(field)} {escape(actor)}" if field and actor != OTHER_LANE else ""
    lines = [
        f"<p><b>event {bad}</b> (line {v.line}){who}: <b>{escape(event.get('ev', '?'))}</b>"
        + (f" breaks <b>{escape(broken)}</b>" if v.properties else f": {escape(broken)}")
        + "</p>",
        f"<pre>{escape(json.dumps(event, ensure_ascii=False))}</pre>",
    ]
    for prop in v.properties:
        text = v.descriptions.get(prop)
        if text:
            lines.append(f"<p>{escape(' '.join(text.split()))}</p>")
    if expected:
        moves = "".join(f"<li><code>{escape(json.dumps(m))}</code></li>" for m in expected)
        lines.append(
            f'<p class="expected">what a correct runtime could have done instead:</p><ul '
            f'class="expected">{moves}</ul>'
        )
    elif v.expected == [] and not v.properties:
        lines.append('<p class="expected">the contract allows no move at this point</p>')
    return f'<div class="bad">{"".join(lines)}</div>'


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
