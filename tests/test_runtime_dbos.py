"""`resume-check run dbos` on a few cells: real DBOS, real SQLite, real SIGKILL, real TLC.

A clean run and a SIGKILL inside a step conform (DBOS re-runs the step in flight, at-least-once
as it documents); a fork conforms; an approval clicked twice is delivered to the workflow's next
recv on the same topic, which CO forbids (the finding in docs/runtimes.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rctools.suite import testing

pytest.importorskip("dbos")

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-effect-recover",
    "linear-fork-at-2",
    "two-approvals-double-click",
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return testing.record("dbos", CELLS, tmp_path_factory.mktemp("dbos"), code=1)


def test_every_cell_is_recorded_and_judged(summary: dict) -> None:
    assert [c["cell"] for c in summary["cells"]] == list(CELLS)
    assert summary["runtime"]["name"] == "dbos"
    assert summary["declared"]["fencing"] == "none"


@pytest.mark.parametrize("name", CELLS[:3])
def test_conforming_cells(summary: dict, name: str) -> None:
    row = testing.row(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def test_the_killed_step_ran_again_and_only_it(summary: dict) -> None:
    row = testing.row(summary, "linear-kill-charge-effect-recover")
    assert [w["exit"] for w in row["workers"]] == ["killed", "returned"]
    assert row["notes"]["fired_per_intent"] == {"reserve": 1, "charge": 2, "mail": 1, "ship": 1}
    trace = Path(row["trace"]).read_text(encoding="utf-8")
    assert trace.count('"ev": "crash"') == 1


def test_a_duplicate_answer_reaches_the_next_recv(summary: dict) -> None:
    row = testing.row(summary, "two-approvals-double-click")
    assert row["status"] == "violates" and row["properties"] == ["CO"], row
    verdict = testing.verdict(summary, row["cell"])
    assert verdict["event"]["ev"] == "task_end"
    assert verdict["event"]["task"].endswith(":4")  # the second recv
