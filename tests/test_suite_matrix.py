"""The typed protocol of a suite's matrix (`rctools.suite.matrix`): what `run SUITE` may ask of
every suite, said by the type instead of probed with hasattr."""

from __future__ import annotations

from pathlib import Path

import pytest
from rctools.suite.command import suite_command
from rctools.suite.matrix import CellByCell, SuiteMatrix
from rctools.suite.reports import Cell, CellReport


class Two(CellByCell):
    DOCS = "docs/nowhere.md"
    DECLARED = {}  # noqa: RUF012 -- read only

    def cells(self) -> list[Cell]:
        return [Cell("a", "s", "first"), Cell("b", "s", "second")]

    def runtime(self) -> dict[str, str]:
        return {"name": "none", "version": "0"}

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        return CellReport(cell, f"{cell.name}.jsonl")


def test_a_matrix_that_cannot_record_is_refused_when_made() -> None:
    class NoRecording(SuiteMatrix):
        DOCS = "docs/nowhere.md"
        DECLARED = {}  # noqa: RUF012 -- read only

        def cells(self) -> list[Cell]:
            return []

        def runtime(self) -> dict[str, str]:
            return {}

    with pytest.raises(TypeError, match="record_cells"):
        NoRecording()  # type: ignore[abstract]


def test_cell_by_cell_records_in_cell_order_and_says_each(tmp_path: Path) -> None:
    matrix = Two()
    said: list[str] = []
    reports = matrix.record_cells(
        matrix.cells()[::-1], tmp_path, tmp_path, jobs=2, done=lambda r: said.append(r.cell.name)
    )
    assert [r.cell.name for r in reports] == ["b", "a"]
    assert sorted(said) == ["a", "b"]
    matrix.prepare()  # the default: this machine can record it
    assert matrix.figures([]) is None  # the default: no figures field


def test_a_suite_command_needs_a_matrix() -> None:
    with pytest.raises(TypeError, match="give a matrix"):
        suite_command("nothing", None, "no matrix and no configure")
    assert suite_command("two", Two(), "help").name == "two"
