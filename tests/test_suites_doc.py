"""docs/architecture.md lists every suite the registry has (`resumecheck.suites.markdown_table`),
each with its page: a suite added to the registry shows here until the page is regenerated."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ROOT
from resumecheck.suites import BEGIN, END, SUITES, markdown_table, write_table

PAGE = ROOT / "docs" / "architecture.md"


def test_the_page_holds_the_table_the_registry_makes() -> None:
    text = PAGE.read_text(encoding="utf-8")
    block = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert block == markdown_table(PAGE.parent), "out of date: run `make docs`"


def test_every_suite_has_a_row_and_a_page() -> None:
    rows = markdown_table(PAGE.parent).splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == sorted(SUITES)
    assert all(not row.endswith("| - |") for row in rows), rows


def test_writing_the_table_changes_only_the_block(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(PAGE.parent, docs)
    page = docs / "architecture.md"
    text = page.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END)
    page.write_text(text[: start + len(BEGIN)] + "\nstale\n" + text[end:], encoding="utf-8")
    assert write_table(page) is True
    assert page.read_text(encoding="utf-8") == text
    assert write_table(page) is False
