"""A cell's SIGKILL is the same *logical* instant on the saver under test and on the reference.

A kill inside a write call (a seeded fraction of its lines, a statement) is an instant of the
tested saver only. Which instant it was is decided by what the store holds right after it --
nothing of the call (the instant of a kill at the call's entry) or all of it (of its exit) --
read back through the saver by a fresh process (`rctools.langgraph.effect`); the reference is
killed at that edge of the same call. Where the store held part of the call, or could not be
read, no reference run is the same instant and the cell is `inconclusive`, never a saver
finding.

Measured before this rule (the reference always killed at the call's exit): a correct atomic
saver killed before its commit got STATE on `two-interrupts` (`kill:put @0.751#1`,
`kill:put_writes review @0.516#2`, `kill:put_writes - @0.160#2` in async): the tested thread
resumed without the call, the reference's with it. The cells below are those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import JOBS, ROOT, nodes_started, run_cli
from rctools.langgraph.effect import classify
from rctools.langgraph.killpoints import ALL, NOTHING, PART, UNKNOWN, KillPoint, for_reference

ENV = {"PYTHONPATH": str(ROOT / "tests" / "fixtures")}

# The cells of `two-interrupts` where a correct atomic saver got STATE from a reference killed
# at another instant (seeded: the same names on every run and every saver).
FALSE_ALARMS = (
    "two-interrupts.kill-put-at0.751_1.sync",
    "two-interrupts.kill-put_writes-review-at0.516_2.sync",
    "two-interrupts.kill-put-at0.751_1.async",
    "two-interrupts.kill-put_writes---at0.160_2.async",
)


def _matrix(tmp_path: Path, saver: str, *cells: str, reference: bool = True) -> dict[str, Any]:
    globs = [arg for cell in cells for arg in ("--cells", cell)]
    run = run_cli(
        "run", "langgraph", "--saver", saver, "--scenarios", "two-interrupts",
        "--durability", "sync,async", "--api", "sync", *globs, "--format", "json",
        "--out", tmp_path, "--no-progress", *JOBS, *([] if reference else ["--no-reference"]),
        env=ENV,
    )  # fmt: skip
    run.assert_no_traceback()
    document: dict[str, Any] = run.json()
    assert document["exit_code"] == run.returncode
    return document


# -- what the store holds decides the instant (no LangGraph run) ---------------------------


def test_a_kill_inside_a_call_maps_to_the_edge_whose_store_it_left() -> None:
    inside = KillPoint("put_writes review @0.516", 2)
    call = ("put_writes review", 2)
    assert for_reference(inside, call, NOTHING) == KillPoint("put_writes review entry", 2)
    assert for_reference(inside, call, ALL) == KillPoint("put_writes review exit", 2)
    # no edge matches: the exit, and the cell is inconclusive (matrix.same_instant)
    assert for_reference(inside, call, PART) == KillPoint("put_writes review exit", 2)
    edge = KillPoint("put entry", 3)  # a named point is the same instant on every saver
    assert for_reference(edge, None, None) == edge


def test_the_writes_of_a_call_held_in_the_store_classify_its_instant() -> None:
    """The identity is the one a real kill reported (`put_writes review` #3 of
    two-interrupts: the node's second answer): the `__resume__` write of its first answer was
    already held from the call before it, so it tells nothing; the regular writes decide."""
    call = {
        "call": "put_writes",
        "writes": [
            ["__resume__", "75de16aca277363d"],
            ["__resume__", "165cd9522eba0dc8"],
            ["log", "5163a1d84fbd7957"],
            ["branch:to:send", "74234e98afe7498f"],
        ],
    }
    before = [["__resume__", "75de16aca277363d"], ["__interrupt__", "ea84723ef557c0b6"]]
    assert classify(call, {"found": True, "writes": before}) == NOTHING
    assert classify(call, {"found": True, "writes": call["writes"]}) == ALL
    assert classify(call, {"found": True, "writes": [["log", "5163a1d84fbd7957"]]}) == PART
    # the channel held with another value: not nothing, not this write either
    assert classify(call, {"found": True, "writes": [["log", "other"]]}) == UNKNOWN
    assert classify(call, {"problem": "OperationalError: database disk image is malformed"}) == (
        UNKNOWN
    )
    put = {"call": "put", "checkpoint_id": "c1"}
    assert classify(put, {"found": True, "writes": []}) == ALL
    assert classify(put, {"found": False, "writes": []}) == NOTHING


def test_an_answer_resent_by_another_process_is_another_write() -> None:
    """Two answers to one interrupt differ only by their nonce (a UUID, which the final-state
    digest reads as a placeholder): the store holding the first is not the second taken
    effect, so a process killed while sending the second is not at the instant of one whose
    second answer landed."""
    from rctools.langgraph.effect import of_writes
    from rctools.langgraph.worker import Invocation, answer

    parked = {"node": "review", "interrupt": "a" * 32}
    first, second = (
        answer(parked, Invocation(kind="resume", proc=p, nonce=p)) for p in ("w2", "w3")
    )
    config = {"configurable": {"thread_id": "t1", "checkpoint_id": "c1"}}
    held = of_writes(config, [("__resume__", first)], "0")["writes"]
    call = of_writes(config, [("__resume__", second)], "0")
    assert classify(call, {"found": True, "writes": held}) == NOTHING
    assert classify(call, {"found": True, "writes": call["writes"]}) == ALL


# -- real LangGraph, real SQLite, real SIGKILL ----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "saver",
    [
        "broken_savers:correct_sqlite",  # a SqliteSaver subclass on a transactional connection
        "rctools.langgraph.backends:sqlite",  # LangGraph's SqliteSaver.from_conn_string
    ],
)
def test_a_correct_atomic_saver_killed_inside_a_write_has_no_saver_finding(
    tmp_path: Path, saver: str
) -> None:
    document = _matrix(tmp_path, saver, *FALSE_ALARMS)
    cells = {
        f"{c['scenario']}.{c['fault']}.{c['durability']}": c for c in document["details"]["cells"]
    }
    counts = document["details"]["counts"]
    assert counts["saver"] == 0 and counts["saver-error"] == 0, [
        (name, c["checks"], c["tested"]["effect"], c["reference"]["killed_at"])
        for name, c in cells.items()
        if c["checks"]
    ]
    assert counts["failed"] == 0 and counts["cells"] == len(FALSE_ALARMS)
    assert document["exit_code"] == 0
    inside = [c for c in cells.values() if " @" in (c["tested"]["killed_at"] or "")]
    assert inside, "no kill landed inside a call"
    for cell in inside:
        # an atomic saver holds all of a call or nothing of it, never part
        assert cell["tested"]["effect"] in (NOTHING, ALL), cell["tested"]
        edge = "entry" if cell["tested"]["effect"] == NOTHING else "exit"
        assert cell["reference"]["killed_at"].endswith(f" {edge}"), cell["reference"]
    # killed before its commit: the reference dies at the call's entry, not at its exit
    assert any(c["tested"]["effect"] == NOTHING for c in inside)


@pytest.mark.slow
def test_a_write_the_store_holds_in_part_is_cv_and_how_the_thread_ends_is_inconclusive(
    tmp_path: Path,
) -> None:
    """SqliteSaver on an autocommit connection stores a task's writes one row at a time:
    killed between the rows, the store holds part of the call, which no kill at an edge of
    the call leaves. The resume's load returns A's result with a content no write of A was
    handed over with: CV, the saver's without a reference killed alike (the contract judges
    the content against what was made); the end the thread reaches is compared with no
    reference run, so STATE stays inconclusive."""
    run = run_cli(
        "run", "langgraph", "--saver", "split_savers:writes_one_by_one", "--scenarios", "chain",
        "--durability", "sync", "--cells", "chain.kill-put_writes-A-sql-2-INSERT_1.sync",
        "--format", "json", "--out", tmp_path, "--no-progress", *JOBS, env=ENV,
    )  # fmt: skip
    run.assert_no_traceback()
    (cell,) = run.json()["details"]["cells"]
    assert cell["tested"]["effect"] == PART
    if "B" in nodes_started(Path(cell["tested"]["trace"]), crash="before"):
        # LangGraph stored B's step before A's write reached the kill: the part of A's write
        # is never read, and nothing is wrong (conftest.nodes_started)
        assert cell["tested"]["status"] == "conforms" and cell["finding"] != "saver", cell
        return
    assert cell["finding"] == "saver", cell
    assert cell["checks"] == ["CV"] and "STATE" in cell["inconclusive"]
    assert run.returncode == 1
