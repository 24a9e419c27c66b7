"""`resume-check run pydantic-graph` on a few cells: real pydantic-graph, its FileStatePersistence,
real SIGKILL, real TLC.

A SIGKILL after a node's successor snapshot was written resumes and conforms; a SIGKILL inside a
node leaves its snapshot `running`, `iter_from_persistence` finds no snapshot to run and the
load returns nothing although the store holds the latest checkpoint: CV (the study's finding).
"""

from __future__ import annotations

import pytest
import runtime_cells
from rctools.suite import testing

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-snapshotted",
    "loop-kill-work-2-snapshotted",
    "linear-kill-charge-effect",
)

summary = runtime_cells.recorded(
    "pydantic-graph", CELLS, code=1, needs=("pydantic_graph.persistence",)
)


test_resuming_from_a_created_snapshot_conforms = runtime_cells.conforming(CELLS[:3])


def test_a_kill_inside_a_node_cannot_be_resumed(summary: dict) -> None:
    row, event = runtime_cells.violation(summary, "linear-kill-charge-effect", "CV")
    assert [w["exit"] for w in row["workers"]] == ["killed", "returned"]
    assert "Unable to restore snapshot" in row["notes"]["results"]["w2"]["raised"]
    assert event["ev"] == "load" and event["checkpoint"] is None
    assert testing.crashes(summary, row["cell"]) == 1
