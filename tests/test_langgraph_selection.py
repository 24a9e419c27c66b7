"""`run langgraph` takes every suite's selection options: the cells are named once the
fault-free runs have counted their kill points, then --list prints them, --cells and --stride
choose what is recorded and judged, and --jobs records cells at once without changing a
verdict. Cheap: the chain on SQLite in one durability mode, a handful of kill cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Run, run_cli

pytestmark = pytest.mark.slow

CHAIN = ("--backend", "sqlite", "--scenarios", "chain", "--durability", "sync", "--no-progress")


def _run(out: Path, *extra: str) -> Run:
    run = run_cli("run", "langgraph", *CHAIN, "--out", out, *extra)
    run.assert_no_traceback()
    return run


def test_list_prints_every_cell_with_its_fault_and_judges_nothing(tmp_path: Path) -> None:
    run = _run(tmp_path, "--list")
    assert run.returncode == 0, run
    lines = run.stdout.splitlines()
    names = [line.split()[0] for line in lines]
    assert "chain.none.sync" in names and "chain.kill-put-entry_1.sync" in names
    assert all("durability sync" in line for line in lines)
    assert not (tmp_path / "summary.json").exists()


def test_a_glob_that_matches_no_cell_is_exit_2_with_the_frameworks_message(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, "--cells", "chain.kill-*", "--cells", "nothing.*")
    assert run.returncode == 2, run
    assert "--cells nothing.* matches no cell; see --list" in run.stderr


def test_jobs_above_1_is_refused_where_cells_can_share_a_database(tmp_path: Path) -> None:
    run = run_cli("run", "langgraph", "--backend", "valkey", "--jobs", "2", "--out", tmp_path)
    assert run.returncode == 2, run
    assert "--jobs above 1 is not safe on valkey" in run.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cells_records_only_the_chosen_kill_cells_and_jobs_keeps_their_verdicts(
    tmp_path: Path, jobs: str
) -> None:
    run = _run(
        tmp_path, "--cells", "chain.kill-put-entry_*", "--stride", "2", "--jobs", jobs,
        "--format", "json",
    )  # fmt: skip
    assert run.returncode == 0, run
    summary = run.json()
    chosen = ["chain.kill-put-entry_1.sync", "chain.kill-put-entry_3.sync",
              "chain.kill-put-entry_5.sync"]  # fmt: skip
    assert [c["cell"] for c in summary["cells"]] == chosen
    assert [c["status"] for c in summary["cells"]] == ["conforms"] * 3
    assert summary["details"]["counts"]["cells"] == 3
    assert sorted(p.stem for p in (tmp_path / "traces" / "sqlite").iterdir()) == chosen
    # the fault-free run planned the kill cells, and was not reported
    assert (tmp_path / "cells" / "sqlite" / "chain.none.sync" / "trace.jsonl").is_file()
    assert len(summary["traces"]) == 3  # judged: the chosen cells (sqlite is the reference)
    profile = summary["details"]["profile"]
    assert profile["name"] == "full"
    assert profile["left_out"] == "nothing; --scenarios, --durability as given"


def test_the_quick_profile_kills_once_per_kind_of_point(tmp_path: Path) -> None:
    full = [line.split()[0] for line in _run(tmp_path / "full", "--list").stdout.splitlines()]
    run = _run(tmp_path / "quick", "--list", "--profile", "quick")
    assert run.returncode == 0, run
    quick = [line.split()[0] for line in run.stdout.splitlines()]
    assert set(quick) < set(full) and "chain.none.sync" in quick

    def kinds(names: list[str]) -> list[str]:
        """The kind of each kill cell's point, from its name (chain.kill-put-at0.136_5.sync)."""
        found = []
        for name in names:
            fault = name.removeprefix("chain.").removesuffix(".sync")
            if not fault.startswith("kill-"):
                continue
            words = fault.removeprefix("kill-").rsplit("_", 1)[0].split("-")
            if words[0] in ("start", "end"):
                found.append(words[0])
            elif "-at0." in fault or "-at1." in fault:
                found.append(f"{words[0]} @")
            elif "sql" in words:
                found.append(f"{words[0]} sql")
            else:
                found.append(f"{words[0]} {words[-1]}")
        return found

    assert sorted(kinds(quick)) == sorted(set(kinds(full)))  # every kind, once


def test_a_saver_without_delete_thread_runs_without_the_delete_scenario_said_up_front(
    tmp_path: Path,
) -> None:
    """LMDBSaver (bundled, correct) leaves `delete_thread` as LangGraph's base class has it,
    raising NotImplementedError. A thread it cannot delete is a method it lacks, not a bug of
    what it stores: the `delete` scenario is left out and said so, never a saver finding
    (before, its three fault-free cells were RUNS findings, exit 1)."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph_checkpoint_lmdb import LMDBSaver
    from rctools.langgraph.backends import deletes_of

    assert deletes_of(LMDBSaver.__new__(LMDBSaver)) == set()
    assert deletes_of(SqliteSaver.__new__(SqliteSaver)) == {"sync"}
    assert deletes_of(AsyncSqliteSaver.__new__(AsyncSqliteSaver)) == {"async"}
    lmdb = ("--backend", "lmdb", "--durability", "sync", "--no-progress", "--format", "json")
    run = run_cli("run", "langgraph", *lmdb, "--scenarios", "delete,chain",
                  "--kill-stride", "40", "--out", tmp_path / "both")  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    document = run.json()
    assert "no delete_thread" in document["details"]["profile"]["left_out"], document
    scenarios = {c["scenario"] for c in document["details"]["cells"]}
    assert scenarios == {"chain"}, scenarios
    alone = run_cli("run", "langgraph", *lmdb, "--scenarios", "delete", "--out", tmp_path / "one")
    alone.assert_no_traceback()
    assert alone.returncode == 2 and "no cell to record" in alone.stderr, alone
