"""SemanticRecovery traces at the edges: what the spec reports beyond a verdict, and input that
must be refused before it reaches TLC. One `resume-check` run judges them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import TRACES, Run, by_name, read_trace_file, run_cli, write_trace_file

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

SCHEDULE = TRACES / "recovery" / "ok-restore-to-commit.jsonl"


def _variant(folder: Path, name: str, change: Any) -> None:
    header, events = read_trace_file(SCHEDULE)
    header, events = change(header, events)
    write_trace_file(folder / name, header, events)


def _block_instead_of_restore(h: dict, evs: list) -> tuple[dict, list]:
    return h, [*evs[:10], {"ev": "block", "reason": "cautious"}]


def _undeclared_instance(h: dict, evs: list) -> tuple[dict, list]:
    return h, [*evs[:3], {"ev": "begin", "instance": "Z"}]


def _undeclared_tool(h: dict, evs: list) -> tuple[dict, list]:
    return h, [*evs[:3], {"ev": "effect", "instance": "A", "tool": "rm -rf", "intent": "x"}]


def _replay_of_nothing(h: dict, evs: list) -> tuple[dict, list]:
    fake = {"ev": "effect", "instance": "A", "tool": "payments.charge", "intent": "A/pay"}
    return h, [*evs[:3], {**fake, "replayed": True}]


def _restore_to_missing_exit(h: dict, evs: list) -> tuple[dict, list]:
    return h, [*evs[:10], {"ev": "restore", "instance": "A", "boundary": "exit"}]


def _restore_to_a_point_never_saved(folder: Path) -> None:
    header, events = read_trace_file(
        TRACES / "recovery" / "ok-restore-to-point-after-payment.jsonl"
    )
    wrong = {"ev": "restore", "instance": "A", "boundary": "point", "point": "A-nowhere"}
    write_trace_file(folder / "restore-to-unsaved-point.jsonl", header, [*events[:-1], wrong])


def _core_event(h: dict, evs: list) -> tuple[dict, list]:
    return h, [*evs[:3], {"ev": "step", "proc": "w1", "checkpoint": "c1", "parent": None}]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("edges")
    _variant(folder, "needless-block.jsonl", _block_instead_of_restore)
    _variant(folder, "undeclared-instance.jsonl", _undeclared_instance)
    _variant(folder, "undeclared-tool.jsonl", _undeclared_tool)
    _variant(folder, "replay-of-nothing.jsonl", _replay_of_nothing)
    _variant(folder, "core-event.jsonl", _core_event)
    _variant(folder, "restore-to-missing-exit.jsonl", _restore_to_missing_exit)
    _restore_to_a_point_never_saved(folder)
    run: Run = run_cli("--format", "json", folder)
    run.assert_no_traceback()
    assert run.returncode == 2, run  # invalid traces among them
    return by_name(run.json())


def test_a_block_with_an_admissible_checkpoint_conforms_but_is_counted(judged: dict) -> None:
    verdict = judged["needless-block.jsonl"]
    assert verdict["status"] == "conforms"
    assert verdict["summary"]["blocks"] == 1
    assert verdict["summary"]["needless_blocks"] == 1


def test_undeclared_instances_and_tools_are_invalid(judged: dict) -> None:
    for name, reason in (
        ("undeclared-instance.jsonl", "line 5 (event 4.instance): instance 'Z' was not declared"),
        ("undeclared-tool.jsonl", "line 5 (event 4.tool): tool 'rm -rf' was not declared"),
    ):
        verdict = judged[name]
        assert verdict["status"] == "invalid"
        assert verdict["reason"].startswith(reason), verdict["reason"]


def test_a_replay_of_an_intent_never_issued_matches_no_action(judged: dict) -> None:
    verdict = judged["replay-of-nothing.jsonl"]
    assert (verdict["status"], verdict["event_index"], verdict["properties"]) == (
        "violates",
        4,
        [],
    )


def test_an_event_of_another_contract_is_invalid(judged: dict) -> None:
    verdict = judged["core-event.jsonl"]
    assert verdict["status"] == "invalid"
    assert (
        "unknown event 'step'; SemanticRecovery knows: begin, block, checkpoint, commit"
        in verdict["reason"]
    )


def test_a_restore_to_a_checkpoint_never_taken_names_the_expected_restore(judged: dict) -> None:
    """A failed instance has no exit checkpoint; the spec's reference controller says what it
    would have done instead: restore A to its latest admissible checkpoint, its commit."""
    verdict = judged["restore-to-missing-exit.jsonl"]
    assert (verdict["status"], verdict["event_index"], verdict["properties"]) == (
        "violates",
        11,
        [],
    )
    assert verdict["expected"] == [{"ev": "restore", "instance": "A", "boundary": "commit"}]


def test_a_restore_to_a_point_never_saved_names_the_latest_saved_one(judged: dict) -> None:
    """A restore point is legal only once saved; the reference controller would have restored A
    to the latest admissible one, named as the trace names it."""
    verdict = judged["restore-to-unsaved-point.jsonl"]
    assert (verdict["status"], verdict["event_index"], verdict["properties"]) == (
        "violates",
        14,
        [],
    )
    assert verdict["expected"] == [
        {"ev": "restore", "instance": "A", "boundary": "point", "point": "A-after-pay"}
    ]
