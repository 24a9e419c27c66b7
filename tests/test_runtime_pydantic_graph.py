"""`resume-check run pydantic-graph` on a few cells: real pydantic-graph, its FileStatePersistence,
real SIGKILL, real TLC.

A SIGKILL after a node's successor snapshot was written resumes and conforms; a SIGKILL inside a
node leaves its snapshot `running`, `iter_from_persistence` finds no snapshot to run and the
load returns nothing although the store holds the latest checkpoint: CV (the study's finding).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rctools.suite import testing

pytest.importorskip("pydantic_graph.persistence")

pytestmark = pytest.mark.slow

CELLS = (
    "linear-clean",
    "linear-kill-charge-snapshotted",
    "loop-kill-work-2-snapshotted",
    "linear-kill-charge-effect",
)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return testing.record(
        "pydantic-graph", CELLS, tmp_path_factory.mktemp("pydantic-graph"), code=1
    )


@pytest.mark.parametrize("name", CELLS[:3])
def test_resuming_from_a_created_snapshot_conforms(summary: dict, name: str) -> None:
    row = testing.row(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def test_a_kill_inside_a_node_cannot_be_resumed(summary: dict) -> None:
    row = testing.row(summary, "linear-kill-charge-effect")
    assert row["status"] == "violates" and row["properties"] == ["CV"], row
    assert [w["exit"] for w in row["workers"]] == ["killed", "returned"]
    assert "Unable to restore snapshot" in row["notes"]["results"]["w2"]["raised"]
    verdict = testing.verdict(summary, row["cell"])
    assert verdict["event"]["ev"] == "load" and verdict["event"]["checkpoint"] is None
    assert Path(row["trace"]).read_text(encoding="utf-8").count('"ev": "crash"') == 1
