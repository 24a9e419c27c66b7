"""The shapes of LangGraph apps, recorded again from real runs (real LangGraph, real SQLite,
real SIGKILLs of worker processes) and judged: each must get the verdict
corpora/manifest.json records for it.

The apps (`rctools.langgraph.scenarios.SHAPES`) call no project helper: the recorder sees
their tool calls through LangChain's callbacks, their interrupts and answers in the saver's
writes, their checkpoints and schedules through the saver and LangGraph's own task
preparation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPORA
from rctools.langgraph.scenarios import SHAPES
from rctools.langgraph.shapes import CELLS, record_all
from rctools.suite.publish import entry
from resumecheck import tracemanifest

FOLDER = CORPORA / "langgraph" / "shapes"
MANIFEST: dict[str, dict[str, Any]] = tracemanifest.folder_entries(FOLDER)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return record_all(tmp_path_factory.mktemp("shapes"))


def test_the_corpus_is_the_cells_recorded() -> None:
    assert sorted(MANIFEST) == sorted(f"{cell.name}.jsonl" for cell in CELLS)
    assert {cell.shape for cell in CELLS} == set(SHAPES)
    assert sorted(p.name for p in FOLDER.glob("*.jsonl")) == sorted(MANIFEST)


@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_recorded_again_the_verdict_is_the_manifests(cell: Any, recorded: dict[str, Any]) -> None:
    """A fault-free run gets the manifest's verdict again. A SIGKILL run is judged (never
    invalid), but its verdict may differ from the recorded one: whether the killed process's
    answer write had reached the store before the kill is a race of LangGraph's background
    writer, and a re-asked interrupt that is answered again is CO (the committed trace keeps
    the verdict it got, and tests/test_manifest.py re-judges it)."""
    _, verdict = recorded[cell.name]
    got = entry(verdict.status.value, verdict.event_index, verdict.properties)
    expected = MANIFEST[f"{cell.name}.jsonl"]
    if cell.kill is not None:
        assert got["status"] in ("conforms", "violates"), verdict.reason
        return
    assert got["status"] == expected["status"], verdict.reason
    assert got.get("properties") == expected.get("properties")


def test_every_fault_free_shape_conforms_and_ends(recorded: dict[str, Any]) -> None:
    for cell in CELLS:
        if cell.kill is None:
            _, verdict = recorded[cell.name]
            assert (verdict.status.value, verdict.summary.get("end")) == ("conforms", "done")


def test_a_crash_variant_is_killed_and_resumed(
    recorded: dict[str, Any],
) -> None:
    for cell in CELLS:
        if cell.kill is not None:
            path, verdict = recorded[cell.name]
            assert verdict.status.value != "invalid", verdict.reason
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            assert any('"ev": "crash"' in line for line in lines)


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def test_what_the_traces_show() -> None:
    """The recorded traces carry what each shape is about."""
    send = _events(FOLDER / "send.sync.jsonl")
    fanned = [e for e in send if e["ev"] == "schedule" and len(e["tasks"]) == 3]
    assert fanned and {t["node"] for t in fanned[0]["tasks"]} == {"work"}
    assert len({t["path"] for t in fanned[0]["tasks"]}) == 3  # each Send its own path

    sub = _events(FOLDER / "subgraph-interrupt.sync.jsonl")
    child = {e.get("ns") for e in sub if e["ev"] == "step"} - {None}
    assert len(child) == 1 and next(iter(child)).startswith("review:")
    parked = {e["interrupt"] for e in sub if e["ev"] == "task_end" and e["outcome"] == "interrupt"}
    assert len(parked) == 1  # the subgraph's task and the parent task share it
    assert [e["interrupt"] for e in sub if e["ev"] == "resume"] == list(parked)

    update = _events(FOLDER / "update-state.sync.jsonl")
    assert [e["ev"] for e in update].count("update") == 1

    approval = _events(FOLDER / "approval-loop.sync.jsonl")
    assert sum(e["ev"] == "resume" for e in approval) == 2  # one per turn of the loop

    react = _events(FOLDER / "react.sync.jsonl")
    assert {e["kind"] for e in react if e["ev"] == "effect"} == {"lookup", "charge"}

    exit_ = _events(FOLDER / "exit.exit.jsonl")
    assert sum(e["ev"] == "put" for e in exit_) == 1  # saved once, when it returned
    assert sum(e["ev"] == "step" for e in exit_) > 1
