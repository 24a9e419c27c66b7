"""`resume-check run recovery --app`: a user's unchanged LangGraph graph (tests/fixtures/apps/
trip_booking.py, written as a user writes one: a planner, a booker and a notifier in parallel,
a cashier that charges a card, a confirmer) with its tools declared in a JSON file beside it,
failed before each declared tool call and recovered by each policy, judged by SemanticRecovery.

The unmarked test runs `admissible` alone (about 5 s: the pilot run, six runs, one TLC run);
the whole matrix is slow-marked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Run, invoke, read_trace_file, run_cli

APPS = ROOT / "tests" / "fixtures" / "apps"
APP = f"{APPS / 'trip_booking.py'}:build"
TOOLS = APPS / "trip_booking_tools.json"
INPUT = '{"traveller": "ada", "city": "Oslo"}'
POINTS = {
    "book.1-search_hotels",
    "book.2-hold_room",
    "notify.1-send_mail",
    "pay.1-charge_card",
    "pay.2-send_mail",
    "confirm.1-send_mail",
}


def _run(out: Path, *policies: str) -> Run:
    args = ["run", "recovery", "--app", APP, "--tools", TOOLS, "--input", INPUT]
    for policy in policies:
        args += ["--policy", policy]
    run = run_cli(*args, "--out", out, "--format", "json", "--no-progress", timeout=300)
    run.assert_no_traceback()
    return run


def _cells(run: Run) -> dict[str, dict[str, Any]]:
    return {c["cell"]: c for c in run.json()["cells"]}


def _rows(run: Run) -> dict[str, dict[str, Any]]:
    return {r["policy"]: r for r in run.json()["figures"]["audit"]["policies"]}


def test_admissible_recovers_every_failure_it_can_and_blocks_after_the_charge(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, "admissible")
    assert run.returncode == 0, run
    cells = _cells(run)
    assert set(cells) == {f"admissible/{p}" for p in POINTS}
    assert all(c["status"] == "conforms" for c in cells.values())
    row = _rows(run)["admissible"]
    # Only the failure after the card was charged leaves no admissible checkpoint: the node's
    # entry (LangGraph's checkpoint before its step) lies before an irreversible effect.
    assert (row["restores"], row["blocks"], row["necessary_blocks"]) == (5, 1, 1)
    assert cells["admissible/pay.2-send_mail"]["notes"]["outcome"] == "blocked"
    # Every restore went through LangGraph (resume), and the failed node ran on from its entry.
    assert row["restores_through_langgraph"] == 5
    _, events = read_trace_file(Path(cells["admissible/book.2-hold_room"]["trace"]))
    kinds = [(e["ev"], e.get("instance")) for e in events]
    restore = kinds.index(("restore", "book"))
    assert ("begin", "book") not in kinds[restore:]  # a restored instance is not begun again
    assert ("commit", "book") in kinds[restore:]


@pytest.mark.slow
def test_every_policy_side_by_side(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.returncode == 1, run  # native and resume break the contract
    rows = _rows(run)
    assert {p: (r["restores"], r["unsafe_restores"], r["blocks"]) for p, r in rows.items()} == {
        "retry": (0, 0, 0),
        # a fork re-runs the committed sibling of the failed step (3 points, when the sibling
        # had started before the failure: LangGraph cancels one that had not, and thread
        # timing decides); after the charge, it restores past an irreversible effect
        "native": (6, rows["native"]["unsafe_restores"], 0),
        "resume": (6, 1, 0),
        "admissible": (5, 0, 1),
    }
    assert 1 <= rows["native"]["unsafe_restores"] <= 4
    assert rows["native"]["properties"]["BlockWhenNone"] == 1
    assert set(rows["native"]["properties"]) <= {"BlockWhenNone", "PreserveCommitted"}
    assert rows["resume"]["properties"] == {"BlockWhenNone": 1}
    cells = _cells(run)
    # retry: the rerun on a new thread replays the card charge from the ledger.
    _, events = read_trace_file(Path(cells["retry/confirm.1-send_mail"]["trace"]))
    charges = [e.get("replayed", False) for e in events if e.get("tool") == "charge_card"]
    assert charges == [False, True]
    # native, failing the booker: the notifier, committed in the same step, is rolled back and
    # its mail retracted through the declared undo.
    _, events = read_trace_file(Path(cells["native/book.2-hold_room"]["trace"]))
    (restore,) = [e for e in events if e["ev"] == "restore"]
    assert restore.get("also") == ["notify"]
    assert cells["native/book.2-hold_room"]["notes"]["effects"]["undone"] == 1


def _write_tools(folder: Path, tools: Any) -> Path:
    path = folder / "tools.json"
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"hold_room": {"policy": "reversible"}}, "name its undo"),
        ({"hold_room": {"policy": "sometimes"}}, "needs a policy"),
        ({"book_flight": {"policy": "none"}}, "not a callable or a LangChain tool"),
        ({"charge_card": {"policy": "irreversible", "undo": "release_room"}}, "has no undo"),
    ],
)
def test_a_bad_tools_file_is_a_usage_error(
    tmp_path: Path, tools: dict[str, Any], message: str
) -> None:
    run = invoke(
        "run", "recovery", "--app", APP, "--tools", _write_tools(tmp_path, tools),
        "--out", tmp_path / "out", "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert message in run.stderr


def test_unsupported_shapes_are_refused_up_front(tmp_path: Path) -> None:
    tools = _write_tools(tmp_path, {"search_hotels": {"policy": "none"}})
    (tmp_path / "parked").mkdir()
    parked_tools = _write_tools(tmp_path / "parked", {"tally": {"policy": "none"}})
    (tmp_path / "unused").mkdir()
    unused = _write_tools(tmp_path / "unused", {"release_room": {"policy": "none"}})
    cases = [
        (["--app", f"{APPS / 'drafting.py'}:make_workflow", "--tools", tools], "StateGraph"),
        (["--app", APP], "--app needs --tools"),
        (["--app", APP, "--tools", tools, "--policy", "entry"], "resume"),
        (["--tools", tools], "go with --app"),
        # the fault-free run, before any cell: a graph that parks at interrupts; one whose
        # nodes call none of the declared tools
        (
            ["--app", f"{APPS / 'parallel_review.py'}:make_graph", "--tools", parked_tools],
            "interrupt",
        ),
        (["--app", APP, "--tools", unused, "--input", INPUT], "called no declared tool"),
    ]
    for args, message in cases:
        run = invoke("run", "recovery", *args, "--out", tmp_path / "out", "--no-progress")
        run.assert_no_traceback()
        assert run.returncode == 2, (args, run)
        assert message in run.stderr, (args, run.stderr)


def test_a_static_interrupt_changes_nothing_the_audit_sees(tmp_path: Path) -> None:
    """`build_approved` stops before `pay` for a human's approval (`interrupt_before`; refused
    before) and goes on with `invoke(None)`: no instance is in flight at the stop, so every
    cell's verdict and the audit's counts are those of the same graph without the stop."""
    seen = {}
    for factory in ("build", "build_approved"):
        run = invoke(
            "run", "recovery", "--app", f"{APPS / 'trip_booking.py'}:{factory}", "--tools",
            TOOLS, "--input", INPUT, "--policy", "admissible", "--policy", "resume", "--out",
            tmp_path / factory, "--format", "json", "--no-progress",
        )  # fmt: skip
        run.assert_no_traceback()
        seen[factory] = (
            {cell: (c["status"], c["properties"]) for cell, c in _cells(run).items()},
            _rows(run),
        )
    assert seen["build_approved"] == seen["build"]
    cells, rows = seen["build"]
    assert len(cells) == 12 and rows["resume"]["properties"] == {"BlockWhenNone": 1}
