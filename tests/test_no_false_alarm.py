"""`make no-false-alarm`'s runner: which child run each correct saver gets, how its figures go
into docs/langgraph.md, and that the committed figures show no saver finding. The runs
themselves take hours (the make target); tests/test_langgraph_savers.py runs a slice in CI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT
from rctools.langgraph import no_false_alarm
from rctools.langgraph.no_false_alarm import BEGIN, END, Row, command, main, merge

DOCS = ROOT / "docs" / "langgraph.md"


def _row(saver: str, saver_findings: int = 0, inconclusive: int = 0) -> Row:
    counts = {"cells": 10, "saver": saver_findings, "inconclusive": inconclusive, "runtime": 1}
    return Row(saver, 1, counts, 600.0, 900.0, "1.2.24", "2026-12-03")


def test_the_reference_saver_is_tested_as_a_saver_of_its_own_not_as_its_own_reference() -> None:
    """`--backend sqlite` is the reference itself: every break would be LangGraph's and the
    run could never show a false alarm. As a --saver it is compared with the reference."""
    sqlite = command("sqlite", 1, ROOT / "out", 2, None)
    assert sqlite[sqlite.index("--saver") + 1] == "rctools.langgraph.backends:sqlite"
    assert "--backend" not in sqlite
    memory = command("memory", 1, ROOT / "out", 2, "chain")
    assert memory[memory.index("--backend") + 1] == "memory"
    assert memory[-2:] == ["--scenarios", "chain"]
    wrapper = command("correct_sqlite", 3, ROOT / "out", 1, None)
    assert wrapper[wrapper.index("--saver") + 1] == "broken_savers:correct_sqlite"
    assert wrapper[wrapper.index("--kill-stride") + 1] == "3"


def test_figures_replace_their_saver_s_row_and_keep_the_others() -> None:
    text = f"before\n{BEGIN}\n| `lmdb` | 1 | 5 | **0** |\n| `sqlite` | 1 | old |\n{END}\nafter\n"
    merged = merge(text, [_row("sqlite"), _row("correct_sqlite", inconclusive=3)])
    body = merged.split(BEGIN)[1].split(END)[0]
    names = re.findall(r"^\| `([^`]+)`", body, re.M)
    assert names == ["correct_sqlite", "lmdb", "sqlite"]
    assert "| `sqlite` | 1 | old |" not in body
    assert merged.startswith("before\n") and merged.endswith(f"{END}\nafter\n")
    assert "| 3 |" in body  # the inconclusive count shown beside the findings
    with pytest.raises(SystemExit, match="no-false-alarm"):
        merge("no block here", [_row("sqlite")])


def test_a_saver_finding_or_a_cell_that_could_not_run_fails_the_saver() -> None:
    assert _row("sqlite").clean
    assert not _row("sqlite", saver_findings=1).clean
    assert not Row("x", 1, {"failed": 2}, 1.0, 1.0, "1", "d").clean


def test_an_unknown_saver_is_refused_before_anything_runs() -> None:
    result = CliRunner().invoke(main, ["--savers", "sqlite,mine"])
    assert result.exit_code == 2
    assert "not a correct saver of the project: mine" in result.output


def test_a_saver_not_correct_here_runs_on_request_and_never_enters_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """objectstorage on file:// tears objects under a kill: run by name, never by default, its
    findings fail the run, and its row is not written among the correct savers'."""
    assert "objectstorage" not in no_false_alarm.BUNDLED
    on_file = command("objectstorage", 1, ROOT / "out", 2, None)
    assert on_file[on_file.index("--backend") + 1] == "objectstorage"
    monkeypatch.setattr(no_false_alarm, "run_one", lambda saver, *_: _row(saver, 20))
    doc = tmp_path / "figures.md"
    doc.write_text(f"{BEGIN}\n{END}\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["--savers", "objectstorage", "--write", str(doc)])
    assert result.exit_code == 1, result.output
    assert "torn object" in result.output
    assert "objectstorage" not in doc.read_text(encoding="utf-8")


def test_the_committed_figures_show_no_saver_finding_on_any_correct_saver() -> None:
    text = DOCS.read_text(encoding="utf-8")
    body = text.split(BEGIN)[1].split(END)[0]
    rows = [line for line in body.splitlines() if line.startswith("| `")]
    assert any(line.startswith("| `sqlite` | 1 |") for line in rows), rows  # LangGraph's own
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[3] == "**0**", line  # saver findings
        assert cells[6] == "0", line  # cells that could not run
