"""The three report formats and --witness, on a small mixed batch.

The batch holds one trace of each kind of verdict: conforms, violates with two properties,
violates with no matching action, and invalid.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from conftest import CORE, Run, by_name, read_trace_file, run_cli, write_trace_file

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

CONFORMS = "ok-linear-sync.jsonl"
TWO_PROPS = "pc-rd-rerun-under-other-node.jsonl"
UNMATCHED = "unmatched-put-of-unknown-checkpoint.jsonl"
INVALID = "invalid.jsonl"
INVALID_REASON = "line 1: not JSON (Expecting value: line 1 column 1 (char 0))"


def raw_line(name: str, line: int) -> str:
    return (CORE / name).read_text(encoding="utf-8").splitlines()[line - 1]


def event_at(name: str, line: int) -> dict[str, Any]:
    """The event on `line` as JSON reports carry it: the trace's own object."""
    return json.loads(raw_line(name, line))


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reports")
    for name in (CONFORMS, TWO_PROPS, UNMATCHED):
        shutil.copy(CORE / name, folder / name)
    (folder / INVALID).write_text("nope\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def as_json(batch: Path) -> Run:
    run = run_cli("--format", "json", ".", cwd=batch)
    run.assert_no_traceback()
    return run


# --- json ----------------------------------------------------------------------------------------


def test_json_document_shape(as_json: Run) -> None:
    assert as_json.returncode == 2
    document = as_json.json()
    assert set(document) == {
        *("tool", "version", "command", "started", "seconds", "exit_code"),
        *("summary", "traces", "spec_files"),
    }
    assert document["command"] == "check"
    assert document["exit_code"] == 2
    assert list(document["spec_files"]) == ["ResumeCore"]
    assert document["summary"] == {"conforms": 1, "violates": 2, "invalid": 1, "error": 0}
    assert [t["path"] for t in document["traces"]] == sorted(
        [CONFORMS, TWO_PROPS, UNMATCHED, INVALID]
    )


def test_json_conforming_trace(as_json: Run) -> None:
    assert by_name(as_json.json())[CONFORMS] == {
        "path": CONFORMS,
        "status": "conforms",
        "contract": "ResumeCore",
        "events": 18,
        "matched": 18,
        "summary": {"complete": True, "effects": "exactly-once", "end": "done", "repeats": []},
        "complete": True,
    }


def test_json_violation_with_two_properties(as_json: Run) -> None:
    assert by_name(as_json.json())[TWO_PROPS] == {
        "path": TWO_PROPS,
        "status": "violates",
        "contract": "ResumeCore",
        "events": 10,
        "matched": 9,
        "event_index": 10,
        "line": 11,
        "event": event_at(TWO_PROPS, 11),
        "properties": ["PC", "RD"],
        "reason": "event 10 leads to a state that breaks PC, RD",
    }


def test_json_violation_that_no_action_matches(as_json: Run) -> None:
    assert by_name(as_json.json())[UNMATCHED] == {
        "path": UNMATCHED,
        "status": "violates",
        "contract": "ResumeCore",
        "events": 5,
        "matched": 4,
        "event_index": 5,
        "line": 6,
        "event": event_at(UNMATCHED, 6),
        "properties": [],
        # What a correct runtime would have done instead: start A (or return), not save a
        # phantom.
        "expected": [
            {"ev": "finish", "proc": "w1"},
            {"ev": "task_start", "proc": "w1", "thread": "t1", "task": "k1"},
        ],
        "reason": "no action of ResumeCore allows event 5 after the 4 before it",
    }


def test_json_invalid_trace(as_json: Run) -> None:
    assert by_name(as_json.json())[INVALID] == {
        "path": INVALID,
        "status": "invalid",
        "contract": None,
        "events": 0,
        "matched": 0,
        "reason": INVALID_REASON,
    }


def test_json_exit_code_field_is_1_without_invalid_input(batch: Path) -> None:
    run = run_cli("--format", "json", UNMATCHED, CONFORMS, cwd=batch)
    run.assert_no_traceback()
    assert run.returncode == 1
    document = run.json()
    assert document["exit_code"] == 1
    assert document["summary"] == {"conforms": 1, "violates": 1, "invalid": 0, "error": 0}
    # Traces named on the command line are reported in that order.
    assert [t["path"] for t in document["traces"]] == [UNMATCHED, CONFORMS]


# --- junit ---------------------------------------------------------------------------------------


def test_junit_is_well_formed_with_one_testcase_per_trace(batch: Path) -> None:
    run = run_cli("--format", "junit", ".", cwd=batch)
    run.assert_no_traceback()
    assert run.returncode == 2
    root = ET.fromstring(run.stdout.encode("utf-8"))
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"ResumeCore", "unknown"}
    core = suites["ResumeCore"]
    assert (core.get("tests"), core.get("failures"), core.get("errors")) == ("3", "2", "0")
    unknown = suites["unknown"]
    assert (unknown.get("tests"), unknown.get("failures"), unknown.get("errors")) == ("1", "0", "1")

    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert sorted(cases) == sorted([CONFORMS, TWO_PROPS, UNMATCHED, INVALID])
    assert list(cases[CONFORMS]) == []
    failure = cases[TWO_PROPS].find("failure")
    assert failure is not None
    assert failure.get("type") == "PC,RD"
    assert failure.get("message") == "event 10 leads to a state that breaks PC, RD"
    assert f"at event 10 (line 11): {raw_line(TWO_PROPS, 11)}" in (failure.text or "")
    unmatched = cases[UNMATCHED].find("failure")
    assert unmatched is not None
    assert unmatched.get("type") == "unmatched"
    error = cases[INVALID].find("error")
    assert error is not None
    assert (error.get("type"), error.get("message"), error.text) == (
        "invalid",
        INVALID_REASON,
        INVALID_REASON,
    )
    assert cases[INVALID].find("failure") is None


# --- text ----------------------------------------------------------------------------------------


def test_text_names_property_event_and_line(batch: Path) -> None:
    run = run_cli(".", cwd=batch)
    run.assert_no_traceback()
    assert run.returncode == 2
    lines = run.stdout.splitlines()
    assert f"{INVALID}: invalid: {INVALID_REASON}" in lines
    assert (
        f"{CONFORMS}: conforms to ResumeCore (18 events); met effects: exactly-once, end: done, "
        "complete: yes, repeats: []" in lines
    )
    start = lines.index(f"{TWO_PROPS}: violates ResumeCore: PC, RD")
    assert lines[start + 1] == f"  at event 10 (line 11): {raw_line(TWO_PROPS, 11)}"
    assert lines[start + 2] == (
        "  the 9 event(s) before it match the contract; event 10 leads to a state that breaks "
        "PC, RD"
    )
    # Each broken property is explained by the comment above it in ResumeCore.tla.
    assert lines[start + 3].startswith("  PC, prefix continuation: ")
    assert any(line.startswith("  RD, recovery determinism: ") for line in lines[start + 3 :])
    start = lines.index(f"{UNMATCHED}: violates ResumeCore: no action matches")
    assert lines[start + 1] == f"  at event 5 (line 6): {raw_line(UNMATCHED, 6)}"
    assert lines[start + 3] == "  a correct runtime's next move would have been one of:"
    assert lines[start + 5] == (
        '    {"ev": "task_start", "proc": "w1", "task": "k1", "thread": "t1"}'
    )
    assert lines[-2].startswith("spec ResumeCore: ResumeCore.tla, TraceResumeCore.cfg, ")
    assert lines[-1] == "4 trace(s): 1 conforms, 2 violates, 1 invalid"


# --- witness -------------------------------------------------------------------------------------

CRASH = "ok-crash-resume.jsonl"
VARIABLES = {
    "keeps", "past", "allowed", "settled", "hosts", "closed",
    "wf", "ck", "latest", "sched", "wr", "aw", "ans", "dlv", "run", "alive", "holders",
    "inflight", "ledger", "crashes", "ending", "broke", "hist",
}  # fmt: skip


@pytest.fixture(scope="module")
def witness_json() -> dict[str, Any]:
    run = run_cli("--witness", "--format", "json", CORE / CRASH)
    run.assert_no_traceback()
    assert run.returncode == 0, run
    return run.json()["traces"][0]


def test_witness_has_one_step_per_event_plus_the_initial_state(
    witness_json: dict[str, Any],
) -> None:
    assert witness_json["status"] == "conforms"
    events = witness_json["events"]
    assert events == 20
    witness = witness_json["witness"]
    steps = [s for s in witness if "after_event" in s]
    assert len(steps) == events + 1
    assert [s["after_event"] for s in steps] == list(range(events + 1))
    assert len(witness) == events + 2  # and the ids legend
    raw = (CORE / CRASH).read_text(encoding="utf-8").splitlines()
    assert "event" not in steps[0]
    assert [s["event"] for s in steps[1:]] == [json.loads(line) for line in raw[1:]]


def test_witness_initial_state_shows_every_variable(witness_json: dict[str, Any]) -> None:
    initial = witness_json["witness"][0]["changed"]
    assert set(initial) == VARIABLES
    assert initial["ck"] == "<<>>"
    assert initial["broke"] == "{}"


def test_witness_shows_the_checkpoint_made_durable(witness_json: dict[str, Any]) -> None:
    steps = witness_json["witness"]
    # Event 3 is the saver's ack of c0: the checkpoint is stored and is the latest.
    assert steps[3]["event"]["ev"] == "put"
    assert {"ck[1].st", "latest"} <= set(steps[3]["changed"])
    changed_anywhere = {k.split("[")[0].split(".")[0] for s in steps[1:-1] for k in s["changed"]}
    assert {"ck", "wr", "inflight", "run", "ledger", "crashes"} <= changed_anywhere
    # A task start changes nothing stored (only the checkpoint's record of the tasks begun
    # from it); its run records it under <<proc, chain>>.
    assert steps[5]["event"]["ev"] == "task_start"
    assert not any(k.startswith("wr") for k in steps[5]["changed"])
    assert all(k.endswith(".begun") for k in steps[5]["changed"] if k.startswith("ck"))
    assert "run[<<1, 1>>].running" in steps[5]["changed"]


def test_witness_ids_legend(witness_json: dict[str, Any]) -> None:
    assert witness_json["witness"][-1] == {
        "ids": {
            "node": {"1": "A", "2": "B"},
            "proc": {"1": "w1", "2": "w2"},
            "chain": {"1": "t1"},
            "checkpoint": {"1": "c0", "2": "c1"},
            "digest": {"1": "d-c0", "2": "d-c1"},
            "task": {"1": "k1", "2": "k2"},
            "path": {"1": "A", "2": "B"},
            "intent": {"1": "mail"},
        }
    }


def test_witness_in_text(tmp_path: Path) -> None:
    run = run_cli("--witness", CORE / CRASH)
    run.assert_no_traceback()
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert lines[1].startswith("  witness (")
    assert lines[2] == "    initial state"
    heads = [line for line in lines if line.startswith("    after event ")]
    assert len(heads) == 20
    assert heads[-1] == f"    after event 20: {raw_line(CRASH, 21)}"
    assert any(
        line.startswith("    ids: node 1='A', 2='B'; proc 1='w1', 2='w2'; chain 1='t1'")
        for line in lines
    )


def test_witness_legend_shows_integer_process_ids_as_written(tmp_path: Path) -> None:
    """A pid recorded as the JSON number 4242 is named 4242 in the legend, not an internal
    ('int', 4242) key."""
    header, events = read_trace_file(CORE / "ok-linear-sync.jsonl")
    for event in events:
        event["proc"] = 4242
    path = write_trace_file(tmp_path / "pid.jsonl", header, events)
    run = run_cli("--witness", "--format", "json", path)
    run.assert_no_traceback()
    assert run.returncode == 0, run
    verdict = run.json()["traces"][0]
    assert verdict["status"] == "conforms"
    assert verdict["witness"][-1]["ids"]["proc"] == {"1": 4242}


def test_witness_of_a_violation_ends_in_the_bad_state() -> None:
    """pc-sync-runs-ahead breaks PC at event 10: the witness shows events 1..10 and the state
    the bad event leads to, with the broken property in `broke`."""
    name = "pc-sync-runs-ahead.jsonl"
    run = run_cli("--witness", "--format", "json", CORE / name)
    run.assert_no_traceback()
    assert run.returncode == 1
    verdict = run.json()["traces"][0]
    assert (verdict["event_index"], verdict["properties"]) == (10, ["PC"])
    steps = [s for s in verdict["witness"] if "after_event" in s]
    assert [s["after_event"] for s in steps] == list(range(11))
    assert steps[-1]["event"] == event_at(name, 11)
    assert steps[-1]["changed"]["broke"] == '{"PC"}'
    assert "run[<<1, 1>>].running" in steps[-1]["changed"]


def test_a_runtime_at_a_version_the_recorder_does_not_take_is_named_with_the_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user with LangGraph 0.5 installed is told which version is installed and which range
    resume-check records, not "install the runtimes" (the private module it needs is absent
    from 0.5, not uninstalled)."""
    from importlib import metadata

    from resumecheck import suites

    assert suites._unsupported("langgraph.pregel._algo") is None  # 1.2 here: in range
    real = metadata.version
    monkeypatch.setattr(
        metadata, "version", lambda name: "0.5.4" if name == "langgraph" else real(name)
    )
    said = suites._unsupported("langgraph.pregel._algo")
    assert said is not None and said.startswith("langgraph 0.5.4 is installed")
    assert ">=1.0" in said and "<1.3" in said
    assert suites._unsupported("no_such_distribution.sub") is None


def test_judging_explains_nothing_the_caller_did_not_ask_for() -> None:
    """`judge()` says where a trace stops matching; what a correct runtime would have done there
    is a further TLC run that only a report asks for (`explain.add_expected`), so a suite
    judging many traces pays nothing for explanations it does not show."""
    from resumecheck.contract import default_spec_paths
    from resumecheck.explain import add_expected
    from resumecheck.judge import judge

    (verdict,) = judge([CORE / UNMATCHED], spec_paths=default_spec_paths())
    assert (verdict.event_index, verdict.properties, verdict.expected) == (5, [], None)
    add_expected([verdict], default_spec_paths())
    assert verdict.expected == [
        {"ev": "finish", "proc": "w1"},
        {"ev": "task_start", "proc": "w1", "thread": "t1", "task": "k1"},
    ]
