"""`resume-check run pydantic-graph` on a few cells: real pydantic-graph, its FileStatePersistence,
real SIGKILL, real TLC.

A SIGKILL after a node's successor snapshot was written resumes and conforms; a SIGKILL inside a
node leaves its snapshot `running`, `iter_from_persistence` finds no snapshot to run and the
load returns nothing although the store holds the latest checkpoint: CV (the study's finding).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

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
    out = tmp_path_factory.mktemp("pydantic-graph")
    args = ["run", "pydantic-graph", "--out", str(out), "--format", "json", "--no-progress"]
    for cell in CELLS:
        args += ["--cells", cell]
    run = run_cli(*args, cwd=ROOT)
    run.assert_no_traceback()
    document = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert run.returncode == document["exit_code"] == 1, run
    return document


def cell(summary: dict, name: str) -> dict:
    return next(c for c in summary["cells"] if c["cell"] == name)


@pytest.mark.parametrize("name", CELLS[:3])
def test_resuming_from_a_created_snapshot_conforms(summary: dict, name: str) -> None:
    row = cell(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def test_a_kill_inside_a_node_cannot_be_resumed(summary: dict) -> None:
    row = cell(summary, "linear-kill-charge-effect")
    assert row["status"] == "violates" and row["properties"] == ["CV"], row
    assert [w["exit"] for w in row["workers"]] == ["killed", "returned"]
    assert "Unable to restore snapshot" in row["notes"]["results"]["w2"]["raised"]
    verdict = next(t for t in summary["traces"] if t["path"] == row["trace"])
    assert verdict["event"]["ev"] == "load" and verdict["event"]["checkpoint"] is None
    assert Path(row["trace"]).read_text(encoding="utf-8").count('"ev": "crash"') == 1
