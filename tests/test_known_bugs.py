"""docs/findings.md: every known-bug app declares what it shows, and the page's table is the
generator's (rctools.langgraph.known_bugs). Recording the table takes minutes at a dozen
LangGraph releases: `make findings` does it; here the page is checked against the apps and
the rule that says whether a row is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT
from rctools.langgraph import known_bugs
from rctools.langgraph.versions import SUPPORTED

FOLDER = ROOT / "tests" / "fixtures" / "known_bugs"
PAGE = ROOT / "docs" / "findings.md"


def test_every_app_declares_a_bug_at_releases_the_recorder_records() -> None:
    bugs = known_bugs.apps(FOLDER)
    assert len(bugs) == len(list(FOLDER.glob("lg*.py"))) >= 6
    for bug in bugs:
        assert bug.app.name == f"lg{bug.issue}.py"
        assert bug.affected and all(v in SUPPORTED for v in (*bug.affected, *bug.fixed))
        assert bug.property in ("PC", "EO", "CO", "CV", "FD", "RD")


def test_the_page_has_a_recorded_row_per_app_in_its_generated_table() -> None:
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index(known_bugs.BEGIN) : text.index(known_bugs.END)]
    for bug in known_bugs.apps(FOLDER):
        row = next(line for line in table.splitlines() if f"[#{bug.issue}]" in line)
        for version in (*bug.affected, *bug.fixed):
            assert f"{version}: `" in row, row
        assert f"`{bug.cell}`" in row


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ({"1.0.10": "PC at event 45", "1.1.7": "conforms"}, True),
        ({"1.0.10": "CO, PC at event 45", "1.1.7": "conforms"}, True),
        ({"1.0.10": "conforms", "1.1.7": "conforms"}, False),  # not seen where it lives
        ({"1.0.10": "PC at event 45", "1.1.7": "PC at event 47"}, False),  # still there
        ({"1.0.10": "CO at event 45", "1.1.7": "conforms"}, False),  # another property
        ({"1.0.10": "no report (exit 3)", "1.1.7": "conforms"}, False),
    ],
)
def test_a_row_is_shown_only_when_it_breaks_where_it_lives_and_conforms_where_fixed(
    verdicts: dict[str, str], expected: bool
) -> None:
    bug = known_bugs.KnownBug(
        Path("lg1.py"), 1, "", ("1.0.10",), ("1.1.7",), "", (), "app.none.sync", "PC"
    )
    assert known_bugs.shown(bug, verdicts) is expected


def test_a_manifest_that_does_not_match_its_apps_is_refused_naming_what(tmp_path: Path) -> None:
    (tmp_path / "lg1.py").write_text("", encoding="utf-8")
    (tmp_path / "manifest.json").write_text('{"lg1.py": {"issue": 1}}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"manifest\.json: lg1\.py: 'symptom' is a required"):
        known_bugs.apps(tmp_path)
    entry = json.loads((FOLDER / "manifest.json").read_text(encoding="utf-8"))["lg6663.py"]
    (tmp_path / "manifest.json").write_text(json.dumps({"lg2.py": entry}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"apps and entries differ: lg1\.py, lg2\.py"):
        known_bugs.apps(tmp_path)
