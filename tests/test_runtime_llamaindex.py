"""`resume-check run llamaindex` on a few cells: real LlamaIndex Workflows, its Context snapshots
stored in real SQLite at every step boundary, real SIGKILL, real TLC.

A SIGKILL after a step's snapshot was stored resumes from it and conforms, and so does a wait
answered by another process; a SIGKILL after a step's effect, before its snapshot, runs the step
again on restore (EO under the strictest level); restoring the last snapshot of a finished run
starts the workflow over (RD); two processes answering one stored wait both deliver (CO).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rctools.suite import testing

pytest.importorskip("workflows")

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-saved",
    "approval-clean",
    "linear-kill-charge-effect",
    "linear-kill-returned",
    "approval-two-answerers",
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return testing.record("llamaindex", CELLS, tmp_path_factory.mktemp("llamaindex"), code=1)


def test_the_header_declares_what_the_docs_say(summary: dict) -> None:
    assert summary["runtime"]["name"] == "llama-index-workflows"
    assert summary["declared"] == {
        "durability": "sync",
        "effects_default": "exactly-once",
        "fencing": "none",
        "docs": "docs/runtimes/llamaindex.md",
    }


@pytest.mark.parametrize("name", CELLS[:3])
def test_resuming_from_a_stored_snapshot_conforms(summary: dict, name: str) -> None:
    row = testing.row(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def test_a_step_killed_before_its_snapshot_runs_again(summary: dict) -> None:
    row = testing.row(summary, "linear-kill-charge-effect")
    assert row["status"] == "violates" and row["properties"] == ["EO"], row
    assert row["notes"]["fired_per_intent"] == {"reserve": 1, "charge": 2, "mail": 1, "ship": 1}
    event = testing.verdict(summary, "linear-kill-charge-effect")["event"]
    assert event["ev"] == "effect" and event["intent"] == "charge" and event["proc"] == "w2"
    assert testing.crashes(summary, "linear-kill-charge-effect") == 1


def test_restoring_a_finished_run_starts_it_over(summary: dict) -> None:
    row = testing.row(summary, "linear-kill-returned")
    assert row["status"] == "violates" and row["properties"] == ["RD"], row
    event = testing.verdict(summary, "linear-kill-returned")["event"]
    assert event["ev"] == "task_start" and event["node"] == "reserve"
    assert set(row["notes"]["fired_per_intent"].values()) == {2}


def test_two_answers_to_one_stored_wait_are_both_delivered(summary: dict) -> None:
    row = testing.row(summary, "approval-two-answerers")
    assert row["status"] == "violates" and row["properties"] == ["CO"], row
    assert testing.verdict(summary, "approval-two-answerers")["event"]["ev"] == "resume"
    assert Path(row["trace"]).read_text(encoding="utf-8").count('"ev": "resume"') == 2
