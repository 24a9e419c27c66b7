"""Faults where bugs hide, end to end: real LangGraph, real SQLite, real SIGKILLs.

- a kill *inside* a saver call (before one of its SQL statements, or at a seeded instant)
  catches a saver that commits one call in two steps, which no kill at a call's entry or
  exit can;
- cells whose processes' saver calls are not serialized really race (their write calls
  overlap in time) and are judged;
- the cells of a matrix and their kill points are the same on every run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import JOBS, ROOT, Run, nodes_started, run_cli

pytestmark = pytest.mark.slow

ENV = {"PYTHONPATH": str(ROOT / "tests" / "fixtures")}


def _matrix(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    run = run_cli(
        "run", "langgraph", *args, "--api", "sync", "--format", "json", "--out", tmp_path,
        "--no-progress",
        *JOBS, env=env,
    )  # fmt: skip
    run.assert_no_traceback()
    return run


def _on_saver(tmp_path: Path, saver: str, scenarios: str, *more: str) -> Run:
    """`scenarios` in sync durability on `saver`, a saver of tests/fixtures/split_savers.py."""
    return _matrix(
        tmp_path, "--saver", f"split_savers:{saver}", "--scenarios", scenarios,
        "--durability", "sync", *more, env=ENV,
    )  # fmt: skip


def _by_fault(run: Run) -> dict[str, Any]:
    """The run's cells by fault (one scenario and durability)."""
    return {c["fault"]: c for c in run.json()["details"]["cells"]}


def _inside(fault: str) -> bool:
    return " sql " in fault or " @" in fault


def test_a_checkpoint_committed_in_two_statements_is_caught_by_a_kill_between_them(
    tmp_path: Path,
) -> None:
    """`parent_linked_later` inserts a checkpoint, then links it to its parent: killed
    between the two statements, the store holds a checkpoint without its parent, which the
    resume loads as the latest -- CV, the saver's (the reference, killed at the end of the
    same call, conforms). No kill at a call's entry or exit can land there."""
    run = _on_saver(
        tmp_path,
        "parent_linked_later",
        "chain",
        "--cells",
        # every `put` killed between its two statements (one of them can race to an instant
        # no reference run was killed at: inconclusive), and one at its entry and its exit
        "chain.kill-put-sql*",
        "--cells",
        "chain.kill-put-e*_2.sync",
    )
    assert run.returncode == 1, run
    cells = run.json()["details"]["cells"]
    caught = [c for c in cells if c["finding"] == "saver"]
    assert all(_inside(c["fault"]) for c in caught), [c["fault"] for c in caught]
    # The fixture's autocommit connection also tears put_writes (caught by STATE, the end
    # compared with the reference's); the split put is what this test is about.
    puts = [c for c in caught if c["fault"].startswith("kill:put ")]
    assert puts, "no kill cell caught the split put"
    assert {p for c in puts for p in c["tested"]["properties"]} == {"CV"}
    assert any(c["fault"].startswith("kill:put sql 2 UPDATE#") for c in puts)
    at_the_edges = [c for c in cells if c["fault"] != "none" and not _inside(c["fault"])]
    assert at_the_edges and all(c["finding"] == "conforms" for c in at_the_edges)
    for cell in puts:
        assert cell["reference"]["status"] == "conforms"
        assert cell["reference"]["killed_at"].endswith(": put exit")


def test_writes_stored_one_row_per_transaction_are_torn_by_a_kill_between_rows(
    tmp_path: Path,
) -> None:
    """SqliteSaver on an autocommit connection stores A's state update and the edge that
    triggers B in two transactions. Killed between them, the resume finds A done and nothing
    scheduled after it: B and C never run. The kill lands between the rows, the trace shows
    it, and the contract names it: A's result comes back with a content none of A's writes was
    handed over with (CV; test_langgraph_instants.py checks the verdict).

    LangGraph's loop does not wait for a step's `put_writes` (its background writer stores
    them) before it stores the next checkpoint: on a loaded machine B's step can be stored,
    and B run, before A's write reaches the kill. That is LangGraph's other interleaving, not
    a torn write: the trace shows B started before the crash, and the run conforms."""
    cells = _by_fault(_on_saver(tmp_path, "writes_one_by_one", "chain", "--no-reference"))
    torn = cells["kill:put_writes A sql 2 INSERT#1"]
    assert torn["tested"]["killed_at"] == "w1: put_writes A sql 2 INSERT"
    trace = Path(torn["tested"]["trace"])
    if "B" in nodes_started(trace, crash="before"):  # the loop went on first
        assert torn["tested"]["status"] == "conforms", torn
    else:
        assert nodes_started(trace, crash="after") == set()
    whole = cells["kill:put_writes A exit#1"]  # killed after both rows: B and C run
    assert nodes_started(Path(whole["tested"]["trace"]), crash="after") == {"B", "C"}


def test_unserialized_resumers_race_and_the_race_is_judged(tmp_path: Path) -> None:
    """In a `race` cell the recorder does not serialize saver calls: two resumers'
    `put_writes` overlap in time (each takes 50 ms in this saver), and the trace is judged
    like any other -- the unfenced resume is LangGraph's CO/EO/PC, nothing is invalid."""
    cells = _by_fault(_on_saver(tmp_path, "slow_writes", "concurrent-2"))
    race = cells["race"]
    assert race["tested"]["overlapping_calls"] > 0
    assert cells["none"]["tested"]["overlapping_calls"] == 0  # serialized: nothing overlaps
    assert race["tested"]["status"] == "violates"
    assert set(race["tested"]["properties"]) <= {"CO", "EO", "PC"}
    assert race["finding"] == "runtime"  # the reference races the same way
    cells_dir = Path(race["tested"]["trace"]).parents[2] / "cells"
    log = next(cells_dir.glob("split_savers-slow_writes/concurrent-2.race.sync/calls.jsonl"))
    writes = [
        json.loads(line)
        for line in log.read_text().splitlines()
        if json.loads(line)["call"].startswith("put_writes")
    ]
    assert any(
        a["proc"] != b["proc"] and a["start"] < b["end"] and b["start"] < a["end"]
        for a in writes
        for b in writes
    ), "no two processes' put_writes overlapped"


def _cells(run: Run) -> list[tuple[Any, ...]]:
    return [(c["scenario"], c["fault"], c["durability"]) for c in run.json()["details"]["cells"]]


@pytest.mark.long  # the same matrix twice: minutes, for determinism (`make test-long`)
def test_two_runs_of_a_matrix_give_the_same_cells(tmp_path: Path) -> None:
    """Async durability moved kill points from run to run when they were numbered in the
    order reached; named by label and occurrence from the fault-free run, they do not."""
    args = ("--backend", "sqlite", "--scenarios", "chain", "--durability", "async")
    one = _matrix(tmp_path / "one", *args, "--no-reference")
    two = _matrix(tmp_path / "two", *args, "--no-reference")
    assert _cells(one) == _cells(two)
    assert len(_cells(one)) > 30
    unreached = [c for c in one.json()["details"]["cells"] if c["tested"]["kill_reached"] is False]
    for cell in unreached:  # a point not reached is said so
        assert any("not reached" in note for note in cell["tested"]["notes"])
