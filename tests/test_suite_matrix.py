"""The typed protocol of a suite's matrix (`rctools.suite.matrix`): what `run SUITE` may ask of
every suite, said by the type instead of probed with hasattr."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner
from rctools.suite.command import suite_command
from rctools.suite.matrix import CellByCell, SuiteMatrix
from rctools.suite.reports import Cell, CellReport

TRACES = Path(__file__).resolve().parents[1] / "traces" / "core"


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


class Copies(Two):
    """Two cells whose 'recording' copies a hand-written trace with a known verdict; the
    second cell could not be recorded."""

    def cells(self) -> list[Cell]:
        return [Cell("co", "s", "CO at event 16"), Cell("gone", "s", "not recorded")]

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        report = CellReport(cell, f"{cell.name}.jsonl")
        if cell.name == "gone":
            report.problem = "the runtime could not finish"
        else:
            shutil.copy(TRACES / "co-answer-of-other-task.jsonl", traces / report.trace)
        return report


@pytest.mark.parametrize("fmt", ["text", "junit"])
def test_finish_renders_a_cell_by_cell_suite_from_its_one_result(tmp_path: Path, fmt: str) -> None:
    """The verdict, the cell not recorded (exit 3), the summary's rows; JUnit is JUnit (a
    testcase per judged trace, the break a failure), never the text report relabelled."""
    out = tmp_path / "out"
    command = suite_command("copies", Copies(), "help")
    argv = ["--out", str(out), "--format", fmt, "--no-progress"]
    done = CliRunner().invoke(command, argv, standalone_mode=False)
    assert done.exception is None, done.output
    assert done.return_value == 3
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = {r["cell"]: (r["status"], r["properties"]) for r in summary["cells"]}
    assert rows == {"co": ("violates", ["CO"]), "gone": ("error", [])}
    assert summary["exit_code"] == 3 and summary["findings"] == {"CO": 1}
    assert "figures" not in summary and "details" not in summary
    if fmt == "text":
        assert "violates CO at event 16" in done.output
        assert "not recorded: the runtime could not finish" in done.output
    else:
        root = ET.fromstring(done.output)
        (case,) = root.iter("testcase")
        assert case.get("file", "").endswith("co.jsonl")
        failure = case.find("failure")
        assert failure is not None and failure.get("type") == "CO"


class Marks(Two):
    """Each cell sets process-wide state, and keeps where it ran."""

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        os.environ["RC_TEST_CELL"] = cell.name
        return CellReport(cell, f"{cell.name}.jsonl", kept=(os.getpid(), cell.name))


def test_cells_recorded_at_once_each_run_in_a_process_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the cell pool: what a cell sets process-wide is its own, and what the suite keeps of
    it comes back in its report; one job at a time records in this process."""
    monkeypatch.delenv("RC_TEST_CELL", raising=False)
    matrix = Marks()
    reports = matrix.record_cells(matrix.cells(), tmp_path, tmp_path, jobs=2, done=lambda _: None)
    assert [r.kept[1] for r in reports] == ["a", "b"]  # type: ignore[index]
    assert os.getpid() not in {r.kept[0] for r in reports}  # type: ignore[index]
    assert "RC_TEST_CELL" not in os.environ
    (one,) = matrix.record_cells(
        matrix.cells()[:1], tmp_path, tmp_path, jobs=1, done=lambda _: None
    )
    assert one.kept == (os.getpid(), "a")
