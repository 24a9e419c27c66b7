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
from rctools.suite import testing

pytest.importorskip("crewai")

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "approval-clean",
    "linear-kill-charge-saved",
    "linear-fork-after-charge",
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return testing.record("crewai", CELLS, tmp_path_factory.mktemp("crewai"), code=1)


@pytest.mark.parametrize("name", CELLS[:2])
def test_a_clean_run_and_an_answered_review_conform(summary: dict, name: str) -> None:
    row = testing.row(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def test_the_documented_resume_runs_completed_methods_again(summary: dict) -> None:
    row = testing.row(summary, "linear-kill-charge-saved")
    assert row["status"] == "violates" and row["properties"] == ["RD"], row
    event = testing.verdict(summary, "linear-kill-charge-saved")["event"]
    assert event["ev"] == "schedule" and [t["node"] for t in event["tasks"]] == ["reserve"]
    assert row["notes"]["fired_per_intent"] == {"reserve": 2, "charge": 2, "mail": 1, "ship": 1}
    assert testing.crashes(summary, "linear-kill-charge-saved") == 1


def test_a_fork_reruns_the_flow_from_its_start(summary: dict) -> None:
    row = testing.row(summary, "linear-fork-after-charge")
    assert row["status"] == "violates" and row["properties"] == ["FD"], row
    assert testing.verdict(summary, "linear-fork-after-charge")["event"]["ev"] == "schedule"
