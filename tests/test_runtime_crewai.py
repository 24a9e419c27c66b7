"""`resume-check run crewai` on a few cells: real CrewAI Flows, `@persist` on real SQLite, real
SIGKILL, real TLC (workers forked from a server that imported crewai once).

A clean run conforms, and so does a review answered by another process through
`from_pending(...).resume(...)`; a SIGKILL after a method's state was saved and the documented
resume (`kickoff(inputs={"id": ...})`) re-runs the flow from its start method on the restored
state (RD: the saved checkpoint scheduled the next method); a fork with `restore_from_state_id`
does the same on a copy (FD): the study's "re-executes completed methods after a restore".
"""

from __future__ import annotations

import pytest
import runtime_cells
from rctools.suite import testing

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "approval-clean",
    "linear-kill-charge-saved",
    "linear-fork-after-charge",
)

summary = runtime_cells.recorded("crewai", CELLS, code=1, needs=("crewai",))


test_a_clean_run_and_an_answered_review_conform = runtime_cells.conforming(CELLS[:2])


def test_the_documented_resume_runs_completed_methods_again(summary: dict) -> None:
    row, event = runtime_cells.violation(summary, "linear-kill-charge-saved", "RD")
    assert event["ev"] == "schedule" and [t["node"] for t in event["tasks"]] == ["reserve"]
    assert row["notes"]["fired_per_intent"] == {"reserve": 2, "charge": 2, "mail": 1, "ship": 1}
    assert testing.crashes(summary, "linear-kill-charge-saved") == 1


def test_a_fork_reruns_the_flow_from_its_start(summary: dict) -> None:
    _, event = runtime_cells.violation(summary, "linear-fork-after-charge", "FD")
    assert event["ev"] == "schedule"
