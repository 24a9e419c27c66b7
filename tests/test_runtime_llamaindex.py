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
import runtime_cells

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-saved",
    "approval-clean",
    "linear-kill-charge-effect",
    "linear-kill-returned",
    "approval-two-answerers",
)

summary = runtime_cells.recorded("llamaindex", CELLS, code=1, needs=("workflows",))


def test_the_header_declares_what_the_docs_say(summary: dict) -> None:
    assert summary["runtime"]["name"] == "llama-index-workflows"
    assert summary["declared"] == {
        "durability": "sync",
        "effects_default": "exactly-once",
        "fencing": "none",
        "docs": "docs/runtimes/llamaindex.md",
    }


test_resuming_from_a_stored_snapshot_conforms = runtime_cells.conforming(CELLS[:3])


def test_a_step_killed_before_its_snapshot_runs_again(summary: dict) -> None:
    _, event = runtime_cells.violation(summary, "linear-kill-charge-effect", "EO")
    runtime_cells.assert_killed_step_ran_again(summary, "linear-kill-charge-effect", "charge")
    assert event["ev"] == "effect" and event["intent"] == "charge" and event["proc"] == "w2"


def test_restoring_a_finished_run_starts_it_over(summary: dict) -> None:
    row, event = runtime_cells.violation(summary, "linear-kill-returned", "RD")
    assert event["ev"] == "task_start" and event["node"] == "reserve"
    assert set(row["notes"]["fired_per_intent"].values()) == {2}


def test_two_answers_to_one_stored_wait_are_both_delivered(summary: dict) -> None:
    row, event = runtime_cells.violation(summary, "approval-two-answerers", "CO")
    assert event["ev"] == "resume"
    assert Path(row["trace"]).read_text(encoding="utf-8").count('"ev": "resume"') == 2
