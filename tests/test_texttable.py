"""resumecheck.texttable, the one renderer of every text table: headings line up with the rows
whatever their widths, numbers right-aligned under theirs; a cell's text is printed as written
(never read as rich markup); plain text, no escape sequences, nothing wrapped."""

from __future__ import annotations

import pytest
from resumecheck import speccheck, texttable
from resumecheck.texttable import Column, right

ROWS = [
    ("admissible", 1, "-"),
    ("entry", 1234, "RestoreSound 2, PreserveCommitted 1"),
    ("x", 7, ""),
]


def test_headings_line_up_with_rows_of_other_widths() -> None:
    text = texttable.render(["policy", right("runs"), "broken"], ROWS)
    head, rule, *rows = text.splitlines()
    assert head.split() == ["policy", "runs", "broken"]
    assert set(rule) == {"-"} and len(rule) >= max(len(line) for line in rows)
    assert len(rows) == len(ROWS)
    # A left-aligned column starts where its heading starts; a right-aligned one ends where
    # its heading ends; two blanks at least between columns.
    ends = head.index("runs") + len("runs")
    start = head.index("broken")
    for line, (policy, runs, broken) in zip(rows, ROWS, strict=True):
        assert line.startswith(f"{policy} ")
        assert line[:ends].endswith(f" {runs}"), line
        assert line[start:] == broken
        assert line[ends:start].strip() == ""
    assert start - ends >= 2 and head[ends:start] == " " * (start - ends)
    assert rows[0] == "admissible     1  -"
    assert all(line == line.rstrip() for line in text.splitlines())  # no trailing blanks


def test_a_heading_wider_than_its_cells_widens_the_column() -> None:
    text = texttable.render([right("ckpt bytes"), "what"], [("1,024", "a"), ("-", "b")])
    assert text.splitlines() == [
        "ckpt bytes  what",
        "----------------",
        "     1,024  a",
        "         -  b",
    ]


@pytest.mark.parametrize(
    "cell",
    ["[bold]x[/]", "[red]alert[/red]", "[link=https://example.com]here[/link]", ":smile:", "\\[x]"],
)
def test_a_markup_looking_cell_is_printed_literally(cell: str) -> None:
    text = texttable.render(["name", right("n")], [(cell, 1)], header=False)
    assert text == f"{cell}  1"
    titled = texttable.render([cell, Column("[i]n[/i]", right=True)], [("a", 2)])
    assert titled.splitlines()[0].split() == [cell, "[i]n[/i]"]


def test_no_escape_sequence_even_where_rich_would_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "20")
    cells = [("[bold red]boom[/]", 3.5, "http://example.com 12 True None"), ("b", 10, "'quoted'")]
    text = texttable.render(["name", right("n"), "note"], cells)
    assert "\x1b" not in text and "\r" not in text
    assert "[bold red]boom[/]" in text
    # COLUMNS=20 is ignored: nothing wraps, nothing is cut.
    assert len(text.splitlines()) == 4
    assert text.splitlines()[2].endswith("http://example.com 12 True None")


def test_a_long_cell_is_neither_wrapped_nor_cut() -> None:
    long = "event " * 400
    text = texttable.render(["a", "b"], [(long.strip(), "end")], header=False)
    assert text == f"{long.strip()}  end"


def test_without_header_and_with_indent() -> None:
    text = texttable.render(["pair", right("n")], [("conforms/conforms", 12), ("PC/PC", 3)],
                            header=False, indent=2)  # fmt: skip
    assert text.splitlines() == ["  conforms/conforms  12", "  PC/PC               3"]


def test_a_row_of_another_length_is_an_error() -> None:
    with pytest.raises(ValueError, match="2 cell"):
        texttable.render(["a", "b", "c"], [("x", "y")])


def test_the_spec_table_keeps_its_result_column_in_line() -> None:
    """`resume-check spec`: a long outcome or property no longer pushes PASS/FAIL out of line
    with the `result` heading."""
    rows = [
        speccheck.Row("config", "MCResumeCore.cfg", "ok", "ok", 1234567, 12.34, True),
        speccheck.Row(
            "mutant",
            "core-check-end-changes-other-branch",
            "PreserveCommitted",
            "violates PreserveCommitted, not in manifest",
            None,
            0.5,
            False,
        ),
    ]
    head, _, *lines = speccheck.render_table(rows).splitlines()
    assert head.split() == ["kind", "name", "distinct", "time", "outcome", "result"]
    column = head.index("result")
    assert [line[column:] for line in lines] == ["PASS", "FAIL"]
    assert lines[0].split() == [
        "config", "MCResumeCore.cfg", "1,234,567", "12.3s", "ok", "expected", "ok", "PASS",
    ]  # fmt: skip
    time_end = head.index("time") + len("time")
    assert lines[0][:time_end].endswith(" 12.3s") and lines[1][:time_end].endswith(" 0.5s")
    assert lines[1][: head.index("time")].rstrip().endswith(" -")
