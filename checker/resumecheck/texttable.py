"""Every text table resume-check prints, drawn by one renderer on rich.

The tables (`resume-check spec`, the agreement tally, every suite's cells and verdicts, the
sandbox, recovery and audit figures, the LangGraph matrix and its saver calls) used to be
f-strings padded to widths chosen by hand, each with its own gaps and rules; a cell wider than
its width (a long mutant name, a `violates X` outcome, a race cell's verdict) pushed the rest of
its row out of line with the header. Here rich's `Table` measures every cell, the header with
the rows, so a column is as wide as its widest cell and a number column is right-aligned under
its heading.

What comes out is a plain `str` for click to echo or a report to join: no colour, no style
escapes (a console with no colour system, rendering to a string, whatever FORCE_COLOR says),
nothing wrapped or cut (no wrapping, a console wider than any table, COLUMNS ignored), no
trailing blanks. A cell's text is taken literally: cells hold names, verdicts and trace data
nobody vetted, so each becomes a `rich.text.Text` and `[bold]x[/]` prints as written, never as
markup. The look, everywhere: two blanks between columns, a dashed rule under the headings,
ASCII only (a CI log, a `C` locale).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.box import Box
from rich.console import Console
from rich.table import Table
from rich.text import Text

# rich's SIMPLE_HEAD (no edges, no column lines, a rule under the header) with an ASCII rule.
_RULED = Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)
_WIDTH = 1_000_000  # wider than any table: rich never wraps or cuts a cell


@dataclass(frozen=True)
class Column:
    """A column's heading; `right`: right-aligned (numbers), heading and cells."""

    title: str = ""
    right: bool = False


def right(title: str) -> Column:
    """A right-aligned column (a number's)."""
    return Column(title, right=True)


def render(
    columns: Sequence[Column | str],
    rows: Iterable[Sequence[object]],
    *,
    header: bool = True,
    indent: int = 0,
) -> str:
    """The table as lines joined by newlines (no newline at the end): a row per item of `rows`,
    each cell `str()`-ed; a plain string is a left-aligned column. `header=False` leaves out
    the headings and their rule; `indent` blanks go before every line."""
    specs = [c if isinstance(c, Column) else Column(c) for c in columns]
    table = Table(
        box=_RULED,
        show_header=header,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        header_style="",
        border_style="",
        style="",
        highlight=False,
    )
    for spec in specs:
        table.add_column(
            Text(spec.title),
            justify="right" if spec.right else "left",
            no_wrap=True,
        )
    for row in rows:
        cells = [Text(str(cell)) for cell in row]
        if len(cells) != len(specs):
            raise ValueError(f"a row of {len(cells)} cell(s) in a table of {len(specs)} column(s)")
        table.add_row(*cells)
    out = io.StringIO()
    console = Console(
        file=out,
        width=_WIDTH,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        no_color=True,
        markup=False,
        emoji=False,
        highlight=False,
        legacy_windows=False,
        soft_wrap=False,
    )
    console.print(table)
    pad = " " * indent
    return "\n".join(pad + line.rstrip() for line in out.getvalue().splitlines())
