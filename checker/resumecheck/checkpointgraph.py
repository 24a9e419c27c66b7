"""The workflow as a violating trace built it: checkpoints, their parents, what each schedules.

A timeline says who did what when; this picture says where: every checkpoint an event made
(`step`, `fork`, `update`: any event naming a new `checkpoint` and its `parent`) as a box,
joined to its parent, a fork on a row of its own, and under each box the nodes its `schedule`
event lists. The checkpoint the first non-conforming event is about is drawn in red. Built from
the trace's events only (no contract knowledge), so an area whose events name no checkpoints
gets no picture. Every text comes from the trace and is escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from resumecheck import escape as untrusted

BOX_W, BOX_H, GAP_X, ROW_H, LEFT, TOP = 92, 26, 36, 64, 12, 18
BAD, BOX, EDGE = "#b00020", "#3a6ea5", "#888"
MAX_NODES = 3  # scheduled nodes listed under a box; the tooltip has them all


@dataclass
class _Checkpoint:
    name: str
    parent: str | None
    made_by: str  # the event kind that made it
    event: int  # the index of that event
    scheduled: list[str] | None = None  # None: no schedule event seen for it
    column: int = 0
    row: int = 0


def _text(value: object) -> str:
    return html.escape(untrusted.text(value))


def _short(value: object, limit: int) -> str:
    text = untrusted.text(value)
    return text if len(text) <= limit else "\u2026" + text[-(limit - 1) :]


def checkpoints_of(events: Sequence[dict[str, Any]]) -> dict[str, _Checkpoint]:
    """The checkpoints the events made, in creation order, with their parents and schedules."""
    made: dict[str, _Checkpoint] = {}
    for index, event in enumerate(events, start=1):
        name, parent = event.get("checkpoint"), event.get("parent")
        key = untrusted.text(name) if isinstance(name, (str, int)) else None
        if key is None:
            continue
        if "parent" in event and event.get("ev") != "load" and key not in made:
            up = untrusted.text(parent) if isinstance(parent, (str, int)) else None
            made[key] = _Checkpoint(key, up, str(event.get("ev", "?")), index)
        tasks = event.get("tasks")
        if event.get("ev") == "schedule" and key in made and isinstance(tasks, list):
            made[key].scheduled = [
                untrusted.text(t.get("node", "?")) for t in tasks if isinstance(t, dict)
            ]
    return made


def _layout(made: dict[str, _Checkpoint]) -> int:
    """Columns by creation order; a checkpoint goes on its parent's row unless the parent
    already has a child there (a fork, an update, a step made again), and a root or such a
    second child opens a new row. Returns the number of rows."""
    rows = 0
    continued: set[str] = set()  # parents whose row already goes on
    for column, checkpoint in enumerate(made.values()):
        checkpoint.column = column
        parent = made.get(checkpoint.parent or "")
        if parent is not None and parent.name not in continued:
            checkpoint.row = parent.row
        else:
            checkpoint.row, rows = rows, rows + 1
        if parent is not None:
            continued.add(parent.name)
    return rows


def checkpoint_graph(events: Sequence[dict[str, Any]], bad: int, nodes: Sequence[str]) -> str:
    """The picture as an SVG string, or "" when the events up to the bad one made none.
    `nodes` are the workflow's nodes from the trace header, named in the caption."""
    made = checkpoints_of(events[:bad])
    if not made:
        return ""
    rows = _layout(made)
    bad_event = events[bad - 1] if 0 < bad <= len(events) else {}
    hot = bad_event.get("checkpoint")
    hot = untrusted.text(hot) if isinstance(hot, (str, int)) else None
    width = LEFT * 2 + len(made) * (BOX_W + GAP_X)
    height = TOP + rows * ROW_H + 10

    def at(c: _Checkpoint) -> tuple[int, int]:
        return LEFT + c.column * (BOX_W + GAP_X), TOP + c.row * ROW_H

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        'aria-label="checkpoints and their parents">'
    ]
    for c in made.values():
        parent = made.get(c.parent or "")
        if parent is None:
            continue
        (px, py), (x, y) = at(parent), at(c)
        parts.append(
            f'<path d="M{px + BOX_W} {py + BOX_H // 2} C{px + BOX_W + GAP_X // 2} '
            f'{py + BOX_H // 2} {x - GAP_X // 2} {y + BOX_H // 2} {x} {y + BOX_H // 2}" '
            f'fill="none" stroke="{EDGE}" marker-end="url(#arrow)"/>'
        )
    parts.insert(
        1,
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="6" '
        f'markerHeight="6" orient="auto"><path d="M0 0 L8 4 L0 8 z" fill="{EDGE}"/></marker>'
        "</defs>",
    )
    for c in made.values():
        x, y = at(c)
        colour = BAD if c.name == hot else BOX
        tip = {
            "checkpoint": c.name,
            "parent": c.parent,
            "made by": f"{c.made_by} (event {c.event})",
            "schedules": c.scheduled,
        }
        names = c.scheduled or []
        listed = ", ".join(_short(n, 10) for n in names[:MAX_NODES])
        listed += "\u2026" if len(names) > MAX_NODES else ""
        if c.scheduled == []:
            listed = "(nothing)"
        parts.append(
            f"<g><title>{_text(json.dumps(tip, ensure_ascii=False))}</title>"
            f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="4" fill="#fff" '
            f'stroke="{colour}" stroke-width="{3 if c.name == hot else 1.5}"/>'
            f'<text x="{x + 6}" y="{y + 17}" font-size="11" fill="{colour}">'
            f"{_text(_short(c.made_by, 6))} {_text(_short(c.name, 8))}</text>"
            f'<text x="{x + 2}" y="{y + BOX_H + 13}" font-size="10" fill="#555">'
            f"{_text(listed)}</text></g>"
        )
    parts.append("</svg>")
    caption = "Checkpoints the trace made before the bad event, each joined to its parent"
    caption += "; under each, the nodes it schedules"
    if hot in made:
        caption += "; in red, the checkpoint the bad event is about"
    if nodes:
        caption += f". The workflow's nodes: {_text(', '.join(map(str, nodes)))}"
    return f'<p>{caption}.</p><div class="timeline">{"".join(parts)}</div>'
