"""`resume-check run burr` on a few cells: real Burr, its SQLitePersister on real SQLite, real
SIGKILL, real TLC.

A SIGKILL after an action's state was saved resumes at the next action and conforms; a SIGKILL
after an action's effect, before its state was saved, runs the action again on resume: its
effect fires twice, which the strictest level (Burr documents none) forbids.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rctools.suite import testing

pytest.importorskip("burr")

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-saved",
    "loop-kill-work-2-saved",
    "linear-kill-charge-effect",
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return testing.record("burr", CELLS, tmp_path_factory.mktemp("burr"), code=1)


@pytest.mark.parametrize("name", CELLS[:3])
def test_resuming_after_a_saved_step_conforms(summary: dict, name: str) -> None:
    row = testing.row(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def test_an_unsaved_action_runs_again(summary: dict) -> None:
    row = testing.row(summary, "linear-kill-charge-effect")
    assert row["status"] == "violates" and row["properties"] == ["EO"], row
    assert [w["exit"] for w in row["workers"]] == ["killed", "returned"]
    assert row["notes"]["fired_per_intent"]["charge"] == 2
    verdict = testing.verdict(summary, row["cell"])
    assert verdict["event"]["ev"] == "effect" and verdict["event"]["intent"] == "charge"
    assert Path(row["trace"]).read_text(encoding="utf-8").count('"ev": "crash"') == 1
