"""The inspector's accuracy study (`accuracy.py`) counts what it should, misses above all.

A miss -- the inspector said "no effect" where the full diff of the sandbox shows one -- is the
count that matters (a checkpoint skipped that should not have been); the study must find one
when a trace holds one, and must compare each kind with its own base (the last checkpoint that
captured it, or the last restore).
"""

from __future__ import annotations

from pathlib import Path

from rctools.sandbox.accuracy import judge_trace, study
from rctools.sandbox.inspector import Inspector
from rctools.sandbox.namespace import Process, table_digest


def _boundary(turn: int, files: str, procs: str, changed: list[str]) -> dict[str, object]:
    return {"ev": "boundary", "turn": turn, "files": files, "procs": procs, "changed": changed}


def _checkpoint(turn: int, capture: list[str]) -> dict[str, object]:
    return {"ev": "checkpoint", "turn": turn, "capture": capture}


def test_a_skipped_change_is_a_miss_and_a_change_already_captured_is_a_false_alarm() -> None:
    counts = judge_trace(
        [
            {"ev": "start", "files": "f0", "procs": "p0"},
            _boundary(1, "f1", "p0", []),  # files changed, the inspector saw nothing: a miss
            _checkpoint(1, []),
            _boundary(2, "f1", "p1", ["files", "procs"]),  # still f1 against base f0: a hit
            _checkpoint(2, ["files", "procs"]),
            _boundary(3, "f1", "p1", ["files"]),  # f1 is what turn 2's image holds: an alarm
            _checkpoint(3, ["files"]),
            _boundary(4, "f1", "p1", []),  # nothing: quiet both
        ]
    )
    assert counts.turns == 4 and counts.effect_free == 2
    assert counts.miss == {"files": 1, "procs": 0}
    assert counts.hit == {"files": 1, "procs": 1}
    assert counts.alarm == {"files": 1, "procs": 0}
    assert counts.quiet == {"files": 1, "procs": 3}


def test_a_restore_is_the_new_base() -> None:
    counts = judge_trace(
        [
            {"ev": "start", "files": "f0", "procs": "p0"},
            _boundary(1, "f1", "p0", ["files"]),
            _checkpoint(1, []),  # chat-only: captured nothing, so the base stays f0
            {"ev": "crash"},
            {"ev": "restore", "turn": 0, "files": "f0", "procs": "p0", "history": 0},
            _boundary(1, "f0", "p0", []),
        ]
    )
    assert counts.hit["files"] == 1 and counts.quiet["files"] == 1 and counts.miss["files"] == 0


def test_the_recorded_traces_hold_no_miss() -> None:
    traces = sorted((Path(__file__).parents[1] / "traces" / "sandbox").glob("recorded-*.jsonl"))
    counts = study(traces)
    assert counts.turns > 0 and counts.miss == {"files": 0, "procs": 0}


def test_a_process_caught_running_counts_as_changed_now_and_after_its_image() -> None:
    """Context switches cannot tell a process blocked at the freeze from one caught running
    that finishes its work after the thaw (what the memory diff found); the freeze's state
    reading must make both turns count."""
    table = [Process(("python3", "server.py"), ".")]
    quiet = {7: (10, 0)}
    inspector = Inspector({}, table_digest(table))
    inspector.settled(quiet)
    assert inspector.classify({}, table, quiet) == set()  # blocked, not woken: no change
    assert inspector.classify({}, table, quiet, running={7}) == {"procs"}
    inspector.settled(quiet, running={7})  # its image was taken while it was running
    assert inspector.classify({}, table, quiet) == {"procs"}
    inspector.settled(quiet)
    assert inspector.classify({}, table, quiet) == set()
