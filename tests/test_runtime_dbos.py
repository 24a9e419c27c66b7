"""`resume-check run dbos` on a few cells: real DBOS, real SQLite, real SIGKILL, real TLC.

A clean run and a SIGKILL inside a step conform (DBOS re-runs the step in flight, at-least-once
as it documents); a fork conforms; an approval clicked twice is delivered to the workflow's next
recv on the same topic, which CO forbids (the finding in docs/runtimes.md).
"""

from __future__ import annotations

import pytest
import runtime_cells

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-effect-recover",
    "linear-fork-at-2",
    "two-approvals-double-click",
)

summary = runtime_cells.recorded("dbos", CELLS, code=1, needs=("dbos",))


def test_every_cell_is_recorded_and_judged(summary: dict) -> None:
    assert [c["cell"] for c in summary["cells"]] == list(CELLS)
    assert summary["runtime"]["name"] == "dbos"
    assert summary["declared"]["fencing"] == "none"


test_conforming_cells = runtime_cells.conforming(CELLS[:3])


def test_the_killed_step_ran_again_and_only_it(summary: dict) -> None:
    runtime_cells.assert_killed_step_ran_again(
        summary, "linear-kill-charge-effect-recover", "charge"
    )


def test_a_duplicate_answer_reaches_the_next_recv(summary: dict) -> None:
    _, event = runtime_cells.violation(summary, "two-approvals-double-click", "CO")
    assert event["ev"] == "task_end"
    assert event["task"].endswith(":4")  # the second recv
