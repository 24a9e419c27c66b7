"""`resume-check run burr` on a few cells: real Burr, its SQLitePersister on real SQLite, real
SIGKILL, real TLC.

A SIGKILL after an action's state was saved resumes at the next action and conforms; a SIGKILL
after an action's effect, before its state was saved, runs the action again on resume: its
effect fires twice, which the strictest level (Burr documents none) forbids.
"""

from __future__ import annotations

import pytest
import runtime_cells

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-saved",
    "loop-kill-work-2-saved",
    "linear-kill-charge-effect",
)

summary = runtime_cells.recorded("burr", CELLS, code=1, needs=("burr",))


test_resuming_after_a_saved_step_conforms = runtime_cells.conforming(CELLS[:3])


def test_an_unsaved_action_runs_again(summary: dict) -> None:
    _, event = runtime_cells.violation(summary, "linear-kill-charge-effect", "EO")
    runtime_cells.assert_killed_step_ran_again(summary, "linear-kill-charge-effect", "charge")
    assert event["ev"] == "effect" and event["intent"] == "charge"
