"""`resume-check run langgraph` end to end: real LangGraph, real SQLite, real SIGKILLs.

The reference saver itself must keep the contract wherever LangGraph does; the runtime
findings (LangGraph without fencing, resuming an answered checkpoint) must be named with the
property they break; every cell's trace must be judged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from conftest import JOBS, ROOT, Run, run_cli, run_langgraph
from rctools.langgraph.matrix import CellKey

pytestmark = pytest.mark.slow

SCENARIOS = "chain,fanout,two-interrupts,retry,fork,pinned-twice,concurrent-2"


@pytest.fixture(scope="module")
def sqlite_matrix(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("lg-sqlite")
    run = run_langgraph(out, *JOBS, scenarios=SCENARIOS, durability="sync,async", stride=3)
    run.assert_no_traceback()
    return run


def _cells(run: Run) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(c["scenario"], c["fault"], c["durability"]): c for c in run.json()["details"]["cells"]}


def test_the_reference_saver_has_no_saver_finding_and_exit_0(sqlite_matrix: Run) -> None:
    assert sqlite_matrix.returncode == 0, sqlite_matrix
    counts = sqlite_matrix.json()["details"]["counts"]
    assert counts["saver"] == 0 and counts["failed"] == 0
    assert counts["cells"] >= 60


def test_every_kill_cell_of_a_chain_conforms(sqlite_matrix: Run) -> None:
    """LangGraph re-runs only what was in flight: each SIGKILL point, then a resume, keeps PC,
    CV and RD. (In fanout, when lookup raises, LangGraph can end the invocation before
    search's finished work is saved -- a race, rarely lost on SQLite -- and search runs again
    without a crash: EO, a runtime finding, not a kill's.)"""
    cells = _cells(sqlite_matrix)
    chain = [c for k, c in cells.items() if k[0] in ("chain", "fanout") and k[1] != "none"]
    assert len(chain) >= 20
    broken = [c for c in chain if c["finding"] != "conforms"]
    assert [c["tested"]["verdict"] for c in broken if c["tested"]["properties"] != ["EO"]] == []
    assert [c["fault"] for c in broken if c["scenario"] == "chain"] == []
    # Most kill points are reached; under async durability a few land after the run ended
    # (the background writer's timing, or the recorder holding events), and those cells simply
    # run fault-free.
    assert sum(bool(c["tested"]["killed_at"]) for c in chain) >= (len(chain) * 3) // 4


def test_a_node_killed_after_its_effect_runs_again_and_the_verdict_says_at_least_once(
    tmp_path: Path,
) -> None:
    """Killed between a node's end and its saved write, the node runs again on resume: its
    effect fires twice. LangGraph promises at-least-once, so the cell conforms, and the
    verdict names the guarantee that held."""
    run = run_langgraph(tmp_path, "--no-reference", scenarios="chain", durability="sync")
    assert run.returncode == 0, run
    after_end = [
        c
        for c in run.json()["details"]["cells"]
        if (c["tested"]["killed_at"] or "").endswith((": end A", ": end B", ": end C"))
    ]
    assert after_end, "no kill landed right after a node's end"
    assert {c["tested"]["verdict"] for c in after_end} == {"conforms (at-least-once)"}


# Without fencing, which property a race breaks first depends on the interleaving: both
# answers delivered (CO), the node's effect fired by both (EO), or the node run again after
# the other process saved its result (PC).
UNFENCED = {"CO", "EO", "PC"}


def test_two_processes_resuming_one_interrupt_is_a_runtime_finding(sqlite_matrix: Run) -> None:
    for mode in ("sync", "async"):
        cell = _cells(sqlite_matrix)[("concurrent-2", "none", mode)]
        assert cell["finding"] == "runtime"
        assert cell["tested"]["properties"]
        assert set(cell["tested"]["properties"]) <= UNFENCED


def test_resuming_an_answered_checkpoint_again_reruns_its_task_on_that_checkpoint(
    sqlite_matrix: Run,
) -> None:
    """`invoke(Command(resume=...), {checkpoint_id: answered})` on a checkpoint the thread
    moved past reruns the answered task on the old checkpoint itself (LangGraph 1.2: "a
    resume at a checkpoint the thread has moved past" replays finished tasks) instead of
    forking: a task whose result is stored runs again there."""
    for mode in ("sync", "async"):
        cell = _cells(sqlite_matrix)[("pinned-twice", "none", mode)]
        assert (cell["finding"], cell["tested"]["properties"]) == ("runtime", ["PC"])


def test_exit_durability_is_recorded_and_a_killed_chain_resumes(tmp_path: Path) -> None:
    """In exit durability LangGraph saves only when an invocation returns: a SIGKILL at any
    point before loses the whole invocation, and the next one starts over."""
    run = run_langgraph(tmp_path, "--no-reference", scenarios="chain,loop", durability="exit")
    assert run.returncode == 0, run
    cells = run.json()["details"]["cells"]
    assert len(cells) >= 8
    assert {c["tested"]["verdict"] for c in cells} <= {"conforms", "conforms (at-least-once)"}
    puts = [
        line
        for line in (tmp_path / "traces" / "sqlite" / "loop.none.exit.jsonl")
        .read_text()
        .split("\n")
        if '"ev": "put"' in line
    ]
    assert len(puts) == 1


def test_the_text_report_is_a_matrix_with_findings_and_trace_files(tmp_path: Path) -> None:
    run = run_langgraph(
        tmp_path, scenarios="chain,concurrent-2", durability="sync", stride=9, fmt=None
    )
    assert run.returncode == 0, run
    assert re.search(r"^chain +sync +conforms", run.stdout, re.M)
    assert "Runtime findings" in run.stdout
    assert any(f"{prop} at event" in run.stdout for prop in UNFENCED)
    assert str(tmp_path / "traces" / "sqlite" / "concurrent-2.none.sync.jsonl") in run.stdout
    assert (tmp_path / "summary.json").is_file()
    assert re.search(r"^  put_writes root values +\d+ \(\d+\)", run.stdout, re.M), run.stdout
    assert "delete_thread: never called" in run.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "nope"], "unknown backend 'nope'"),
        (["--saver", "no_such_module:make"], "cannot import 'no_such_module'"),
        (["--backend", "sqlite", "--saver", "x:y"], "exactly one of --backend"),
        ([], "exactly one of --backend"),
        (["--backend", "sqlite", "--scenarios", "chain,loop9"], "unknown scenario(s) loop9"),
        (["--backend", "sqlite", "--durability", "never"], "--durability takes"),
    ],
)
def test_bad_options_are_a_clear_error_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    run = run_cli("run", "langgraph", *args, "--out", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert message in run.stderr


def test_the_json_document_follows_the_report_schema(sqlite_matrix: Run) -> None:
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    document = sqlite_matrix.json()
    jsonschema.validate(document, schema)
    assert document["command"] == "run langgraph" and document["suite"] == "langgraph"
    # no reference: sqlite is it
    assert len(document["traces"]) == document["details"]["counts"]["cells"]


def test_the_coverage_counts_every_saver_call_the_cells_made(sqlite_matrix: Run) -> None:
    """The saver calls of the matrix by shape: writes and loads reached in every cell, a
    pinned load by fork and pinned-twice, what was never called said with why."""
    coverage = sqlite_matrix.json()["details"]["coverage"]
    assert coverage["reference"] is None  # sqlite is the reference: no second saver
    tested = coverage["tested"]
    calls: dict[str, int] = {}
    for row in tested["calls"]:
        calls[row["method"]] = calls.get(row["method"], 0) + row["calls"]
    assert calls["put"] > 0 and calls["put_writes"] > 0 and calls["get_tuple"] > 0
    loads = [r for r in tested["calls"] if r["method"] == "get_tuple" and "load" in r["args"]]
    assert tested["cells"] == len(sqlite_matrix.json()["details"]["cells"])
    assert any(r["cells"] == tested["cells"] for r in loads)  # every cell loads
    never = {n["shape"] for n in tested["never"]}
    assert "get_tuple(checkpoint_id)" not in never and "delete_thread" in never


def test_the_summary_has_every_suites_shape_with_the_matrix_in_details(sqlite_matrix: Run) -> None:
    """One row per matrix cell, on the trace of the saver under test, with its finding."""
    document = sqlite_matrix.json()
    assert document["runtime"]["name"] == "langgraph"
    assert document["declared"]["durability"] == "sync,async"
    matrix = document["details"]["cells"]
    assert [r["cell"] for r in document["cells"]] == [
        CellKey(c["scenario"], c["fault"], c["durability"]).slug for c in matrix
    ]
    for row, cell in zip(document["cells"], matrix, strict=True):
        assert row["trace"] == cell["tested"]["trace"]
        assert (row["status"], row["properties"]) == (
            cell["tested"]["status"],
            cell["tested"]["properties"],
        )
        assert row["notes"]["finding"] == cell["finding"]
    broken = sorted(p for c in matrix for p in c["tested"]["properties"])
    assert sum(document["findings"].values()) == len(broken)


def test_junit_has_a_testcase_per_cell_and_progress_is_plain_lines_off_a_terminal(
    tmp_path: Path,
) -> None:
    run = run_langgraph(
        tmp_path, scenarios="chain", durability="sync", stride=9, fmt="junit", progress=True
    )
    run.assert_no_traceback()
    assert run.returncode == 0, run
    cases = ET.fromstring(run.stdout).findall(".//testcase")
    cells = json.loads((tmp_path / "summary.json").read_text())["details"]["cells"]
    assert [c.get("name") for c in cases] == [  # the cell's file-name slug
        CellKey(c["scenario"], c["fault"], c["durability"]).slug for c in cells
    ]
    assert all(c.get("time") and c.get("timestamp") and c.get("file") for c in cases)
    assert "\r" not in run.stderr and "recording the matrix on sqlite" in run.stderr


def test_a_tool_failure_is_still_a_json_document(tmp_path: Path) -> None:
    run = run_cli("run", "langgraph", "--backend", "nope", "--format", "json", "--out", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2
    document = run.json()
    assert document["exit_code"] == 2 and "unknown backend" in document["error"]["message"]


def test_no_java_is_exit_3_before_anything_is_recorded(tmp_path: Path) -> None:
    run = run_cli(
        "run",
        "langgraph",
        "--backend",
        "sqlite",
        "--format",
        "junit",
        "--out",
        tmp_path,
        env={"RESUME_CHECK_JAVA": str(tmp_path / "no-java")},
    )
    run.assert_no_traceback()
    assert run.returncode == 3
    error = ET.fromstring(run.stdout).find(".//error")
    assert error is not None and "java" in (error.get("message") or "")
    assert not (tmp_path / "cells").exists()
