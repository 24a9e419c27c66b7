"""The matrix tables in docs/langgraph.md and each corpora/langgraph/<backend>/MATRIX.md are the
output of `python -m rctools.langgraph.tables` for the committed summary.json files, never
typed: a table edited by hand, or a summary re-recorded without regenerating, fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT
from rctools.langgraph.tables import fill, load, main, matrix_of, matrix_table, tables
from resumecheck import tracemanifest

DOCS = ROOT / "docs" / "langgraph.md"
SUMMARIES = sorted((ROOT / "corpora" / "langgraph").glob("*/summary.json"))


def test_there_are_committed_summaries() -> None:
    assert any(p.parent.name == "sqlite" for p in SUMMARIES)


def test_the_docs_tables_are_the_scripts_output() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert "<!-- table: overview -->" in text and "<!-- table: matrix sqlite -->" in text
    assert fill(text, tables(SUMMARIES)) == text


@pytest.mark.parametrize("summary", SUMMARIES, ids=lambda p: p.parent.name)
def test_each_backends_matrix_md_is_the_scripts_output(summary: Path) -> None:
    kept = len(tracemanifest.folder_entries(summary.parent))
    expected = matrix_table(matrix_of(summary), kept)
    assert (summary.parent / "MATRIX.md").read_text(encoding="utf-8") == expected


def test_a_changed_summary_changes_the_tables_and_an_unknown_table_is_an_error(
    tmp_path: Path,
) -> None:
    document = load(SUMMARIES[0])
    first = document["details"]["cells"][0]
    first["tested"]["status"], first["tested"]["verdict"] = "violates", "CV at event 3"
    first["tested"]["properties"] = ["CV"]
    changed = tmp_path / "summary.json"
    changed.write_text(json.dumps(document), encoding="utf-8")
    assert tables([changed])["overview"] != tables([SUMMARIES[0]])["overview"]
    page = tmp_path / "page.md"
    page.write_text("<!-- table: matrix nowhere -->\nold\n<!-- end table -->\n")
    with pytest.raises(KeyError, match="nowhere"):
        main(["--write", str(page), str(changed)])
