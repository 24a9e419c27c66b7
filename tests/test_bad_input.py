"""Bad input through the real CLI: an exit code, a one-line reason, never a traceback.

Traces rejected before TLC cost no TLC run; the few that reach TLC are noted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    CORE,
    Run,
    by_name,
    patched_spec,
    read_trace_file,
    run_cli,
    write_trace_file,
)

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

KNOWN_KINDS = (
    "crash, delete, edit, effect, finish, fork, load, put, put_writes, read, resume, schedule, "
    "step, task_end, task_start, update"
)


def judge_one(path: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[Run, dict]:
    """Runs `--format json` on one trace; returns the run and that trace's verdict."""
    run = run_cli("--format", "json", *extra, path, env=env)
    run.assert_no_traceback()
    document = run.json()
    assert len(document["traces"]) == 1
    assert document["exit_code"] == run.returncode
    return run, document["traces"][0]


def assert_invalid(path: Path, reason: str, *extra: str) -> dict[str, Any]:
    """The trace is invalid for exactly `reason`, in the json and the text report, exit 2."""
    run, verdict = judge_one(path, *extra)
    assert run.returncode == 2, run
    assert verdict["status"] == "invalid"
    assert verdict["reason"] == reason
    text = run_cli(*extra, path)
    text.assert_no_traceback()
    assert text.returncode == 2
    assert f"{path}: invalid: {reason}\n" in text.stdout
    assert text.stdout.endswith("1 trace(s): 1 invalid\n")
    return verdict


def linear() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return read_trace_file(CORE / "ok-linear-sync.jsonl")


# --- not JSON Lines at all -------------------------------------------------------------------


def test_non_json_file_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "prose.jsonl"
    path.write_text("this is not a trace\njust words\n", encoding="utf-8")
    verdict = assert_invalid(path, "line 1: not JSON (Expecting value: line 1 column 1 (char 0))")
    assert verdict["events"] == 0
    assert verdict["contract"] is None


def test_broken_json_in_a_middle_line_names_the_line(tmp_path: Path) -> None:
    lines = (CORE / "ok-linear-sync.jsonl").read_text(encoding="utf-8").splitlines()
    lines[5] = '{"seq": 4, "ev": "task_end", "proc": "w1", "node": "A", "outc'  # line 6
    path = tmp_path / "broken-middle.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run, verdict = judge_one(path)
    assert run.returncode == 2
    assert verdict["status"] == "invalid"
    assert verdict["reason"].startswith("line 6: not JSON (")
    assert "truncated" not in verdict


def test_broken_middle_line_is_invalid_even_without_final_newline(tmp_path: Path) -> None:
    lines = (CORE / "ok-linear-sync.jsonl").read_text(encoding="utf-8").splitlines()
    lines[3] = "{oops"
    path = tmp_path / "broken-middle-no-newline.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")  # last line complete, no newline
    run, verdict = judge_one(path)
    assert run.returncode == 2
    assert verdict["status"] == "invalid"
    assert verdict["reason"].startswith("line 4: not JSON (")


def test_empty_file_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert_invalid(path, "empty file: a trace needs a header line")


def test_whitespace_only_file_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n   \n\t\n", encoding="utf-8")
    assert_invalid(path, "empty file: a trace needs a header line")


def test_json_array_line_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    path = tmp_path / "array.jsonl"
    path.write_text(json.dumps(header) + "\n[1, 2, 3]\n" + json.dumps(events[0]) + "\n")
    assert_invalid(path, "line 2: not a JSON object")


# --- a trace cut short by a killed writer ------------------------------------------------------


def test_cut_last_line_judges_the_complete_prefix(tmp_path: Path) -> None:
    """One TLC run. ok-linear-sync has 18 events; its last line (19) is cut in half."""
    data = (CORE / "ok-linear-sync.jsonl").read_bytes()
    lines = data.rstrip(b"\n").split(b"\n")
    assert len(lines) == 19
    last = lines[-1]
    cut = last[: len(last) // 2]
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"\n".join(lines[:-1]) + b"\n" + cut)
    run, verdict = judge_one(path)
    assert run.returncode == 0, run
    assert verdict["status"] == "conforms"
    assert verdict["events"] == 17
    assert verdict["matched"] == 17
    assert verdict["complete"] is False  # the cut line was the invocation's return
    assert verdict["truncated"] is True
    assert verdict["truncation"] == (
        f"line 19 is incomplete ({len(cut)} bytes, no newline): the writer was probably "
        "killed; it was not judged, only the complete lines before it"
    )
    text = run_cli(path)
    assert text.returncode == 0
    assert f"{path}: conforms (truncated) to ResumeCore (17 events)" in text.stdout
    assert "  note: line 19 is incomplete" in text.stdout
    assert text.stdout.endswith("1 trace(s): 1 conforms (1 truncated)\n")
    strict = run_cli("--require-complete", "--format", "json", path)
    assert strict.returncode == 1, strict
    assert strict.json()["exit_code"] == 1


def test_violating_trace_with_a_partial_line_appended_still_violates(tmp_path: Path) -> None:
    """One TLC run for both traces."""
    expected = {
        "pc-rd-rerun-under-other-node.jsonl": (10, ["PC", "RD"]),
        "unmatched-put-of-unknown-checkpoint.jsonl": (5, []),
    }
    for name in expected:
        data = (CORE / name).read_bytes()
        assert data.endswith(b"\n")
        (tmp_path / name).write_bytes(data + b'{"seq": 99, "ev": "task_st')
    run = run_cli("--format", "json", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 1, run
    verdicts = by_name(run.json())
    for name, (event, properties) in expected.items():
        complete = len((CORE / name).read_text(encoding="utf-8").splitlines()) - 1
        got = verdicts[name]
        assert got["status"] == "violates"
        assert (got["event_index"], sorted(got["properties"])) == (event, properties)
        assert got["events"] == complete
        assert got["truncated"] is True
        assert got["truncation"].startswith(f"line {complete + 2} is incomplete (26 bytes")


# --- well-formed JSON, wrong trace -------------------------------------------------------------


def test_unknown_event_kind_lists_the_known_ones(tmp_path: Path) -> None:
    header, events = linear()
    events[3] = {"seq": 3, "ev": "teleport", "proc": "w1"}
    path = write_trace_file(tmp_path / "teleport.jsonl", header, events)
    verdict = assert_invalid(
        path, f"line 5 (event 4): unknown event 'teleport'; ResumeCore knows: {KNOWN_KINDS}"
    )
    assert verdict["contract"] == "ResumeCore"


def test_event_without_kind_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    del events[0]["ev"]
    path = write_trace_file(tmp_path / "no-kind.jsonl", header, events)
    assert_invalid(path, f"line 2 (event 1): unknown event None; ResumeCore knows: {KNOWN_KINDS}")


def test_node_not_in_the_graph_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    assert events[4]["ev"] == "task_start"
    events[4]["node"] = "Z"
    path = write_trace_file(tmp_path / "stranger.jsonl", header, events)
    assert_invalid(path, "line 6 (event 5.node): node 'Z' was not declared in the header")


def test_scheduled_node_not_in_the_graph_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    assert events[3]["ev"] == "schedule"
    events[3]["tasks"].append({"task": "k9", "node": "C", "path": "C"})
    path = write_trace_file(tmp_path / "schedule.jsonl", header, events)
    run, verdict = judge_one(path)
    assert run.returncode == 2
    assert verdict["status"] == "invalid"
    assert "'C' was not declared in the header" in verdict["reason"]


@pytest.mark.parametrize("fmt", [None, "resume-check/v1"], ids=["no-format", "v1"])
def test_a_header_without_the_v2_format_is_not_judged(tmp_path: Path, fmt: str | None) -> None:
    header, events = linear()
    if fmt is None:
        del header["format"]
    else:
        header["format"] = fmt
    path = write_trace_file(tmp_path / "header.jsonl", header, events)
    assert_invalid(
        path,
        f"line 1 (header): format {fmt!r} is not judged; ResumeCore traces are "
        "'resume-check/v2' (docs/trace-format.md)",
    )


def test_graph_without_nodes_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    del header["graph"]["nodes"]
    path = write_trace_file(tmp_path / "no-nodes.jsonl", header, events)
    assert_invalid(path, "line 1 (header): graph: 'nodes' is a required property")


def test_missing_event_field_names_line_and_field(tmp_path: Path) -> None:
    header, events = linear()
    assert events[2]["ev"] == "put"
    del events[2]["checkpoint"]
    path = write_trace_file(tmp_path / "no-checkpoint.jsonl", header, events)
    assert_invalid(path, "line 4 (event 3): (top): 'checkpoint' is a required property")


def test_header_only_line_cut_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "header-cut.jsonl"
    path.write_text('{"format": "resume-check/v1", "contr', encoding="utf-8")
    run, verdict = judge_one(path)
    assert run.returncode == 2
    assert verdict["status"] == "invalid"
    assert verdict["reason"] == "no complete header line"


def test_unknown_contract_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    header["contract"] = "NoSuchContract"
    path = write_trace_file(tmp_path / "unknown-contract.jsonl", header, events)
    verdict = assert_invalid(path, "no trace format is known for contract 'NoSuchContract'")
    assert verdict["contract"] == "NoSuchContract"


def test_header_without_contract_needs_spec(tmp_path: Path) -> None:
    header, events = linear()
    del header["contract"]
    path = write_trace_file(tmp_path / "anonymous.jsonl", header, events)
    assert_invalid(path, "the header names no contract; pass --spec NAME")


def test_spec_option_names_the_contract_for_a_header_without_one(tmp_path: Path) -> None:
    """One TLC run."""
    header, events = linear()
    del header["contract"]
    path = write_trace_file(tmp_path / "anonymous.jsonl", header, events)
    run, verdict = judge_one(path, "--spec", "ResumeCore")
    assert run.returncode == 0, run
    assert verdict["status"] == "conforms"
    assert verdict["contract"] == "ResumeCore"
    assert verdict["events"] == 18


def test_spec_option_with_unknown_contract_is_invalid(tmp_path: Path) -> None:
    header, events = linear()
    del header["contract"]
    path = write_trace_file(tmp_path / "anonymous.jsonl", header, events)
    assert_invalid(path, "no trace format is known for contract 'Nope'", "--spec", "Nope")


def test_integral_float_seq_is_invalid(tmp_path: Path) -> None:
    """`"seq": 1.0` is an integer to JSON Schema, but not to resume-check: an integer is
    written without a fraction (docs/input-rules.md)."""
    header, events = read_trace_file(CORE / "ok-interrupt-resume.jsonl")
    events[10]["seq"] = 1.0
    path = write_trace_file(tmp_path / "float-seq.jsonl", header, events)
    run, verdict = judge_one(path)
    assert run.returncode == 2, run
    assert verdict["status"] == "invalid"
    assert verdict["reason"].endswith("seq: 1.0 is not of type 'integer'")


def test_one_invalid_trace_does_not_stop_the_others(tmp_path: Path) -> None:
    """One TLC run: the good trace is still judged; exit 2 because one input is invalid."""
    shutil.copy(CORE / "ok-linear-sync.jsonl", tmp_path / "good.jsonl")
    (tmp_path / "bad.jsonl").write_text("nope\n", encoding="utf-8")
    run = run_cli("--format", "json", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2
    verdicts = by_name(run.json())
    assert verdicts["good.jsonl"]["status"] == "conforms"
    assert verdicts["bad.jsonl"]["status"] == "invalid"


# --- paths and toolchain -------------------------------------------------------------------------


def test_nonexistent_path_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.jsonl"
    run = run_cli(missing)
    run.assert_no_traceback()
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == f"resume-check: error: {missing}: no such file or directory\n"


def test_directory_without_traces_exits_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a trace\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    run = run_cli(tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (
        f"resume-check: error: no trace files (*.jsonl, *.ndjson) in {tmp_path}\n"
    )


def test_missing_java_exits_3_with_a_message() -> None:
    run = run_cli(CORE / "ok-linear-sync.jsonl", env={"RESUME_CHECK_JAVA": "/nonexistent"})
    run.assert_no_traceback()
    assert run.returncode == 3
    assert run.stdout == ""
    assert run.stderr.startswith("resume-check: error: RESUME_CHECK_JAVA='/nonexistent'")
    assert "java" in run.stderr.split(":", 2)[2]
    assert len(run.stderr.strip().splitlines()) == 1


def test_missing_jar_exits_3_with_a_message_and_a_document() -> None:
    run = run_cli(
        "--format",
        "json",
        CORE / "ok-linear-sync.jsonl",
        env={"RESUME_CHECK_TLA2TOOLS": "/nonexistent.jar"},
    )
    run.assert_no_traceback()
    assert run.returncode == 3
    error = run.json()["error"]
    assert (error["kind"], error["type"]) == ("environment", "ToolchainError")
    assert run.stderr.startswith(
        "resume-check: error: RESUME_CHECK_TLA2TOOLS='/nonexistent.jar' is not a file"
    )
    assert len(run.stderr.strip().splitlines()) == 1


def test_contract_that_does_not_parse_exits_3(tmp_path: Path) -> None:
    """One TLC run: a syntax error in the contract is a tool failure, not a verdict."""
    spec = patched_spec(tmp_path, "ResumeCore.tla", "Max(a, b) ==", "Max(a, b) == ((")
    run = run_cli("--format", "json", "--spec-path", spec, CORE / "ok-linear-sync.jsonl")
    run.assert_no_traceback()
    assert run.returncode == 3
    assert run.json()["error"]["type"] == "SpecError"
    assert run.stderr.startswith("resume-check: error: contract ResumeCore does not parse: ")


def test_a_checkpoint_id_made_twice_is_invalid(tmp_path: Path) -> None:
    """Ids are global to the trace: a second thread (or a re-creation) that makes an id already
    made names two checkpoints with one id, which no verdict can be earned on."""
    header, events = linear()
    made = next(e for e in events if e["ev"] == "step")
    events.append({"ev": "load", "proc": "w9", "thread": "t2", "asked": None,
                   "checkpoint": None, "parent": None, "writes": [], "answers": []})  # fmt: skip
    events.append({"ev": "step", "proc": "w9", "thread": "t2", "checkpoint": made["checkpoint"],
                   "parent": None})  # fmt: skip
    path = write_trace_file(tmp_path / "made-twice.jsonl", header, events)
    first = events.index(made) + 1
    assert_invalid(
        path,
        f"line {len(events) + 1} (event {len(events)}): checkpoint {made['checkpoint']!r} is made "
        f"again (first at event {first}); an id names one thing across the trace "
        "(docs/trace-format.md, Identifiers)",
    )


def test_a_schedule_naming_one_task_id_twice_is_invalid(tmp_path: Path) -> None:
    """A task id is one task instance of the step, with one node and one path, and the step's
    writes are keyed by it: a schedule naming it twice (as two nodes) cannot be judged."""
    header, events = linear()
    schedule = next(e for e in events if e["ev"] == "schedule" and e["tasks"])
    first = schedule["tasks"][0]
    schedule["tasks"] = [*schedule["tasks"], {**first, "node": "Other", "path": "Other"}]
    path = write_trace_file(tmp_path / "task-named-twice.jsonl", header, events)
    line = events.index(schedule) + 2
    count = len(schedule["tasks"]) - 1
    assert_invalid(
        path,
        f"line {line} (event {line - 1}.tasks[{count}]): task {first['task']!r} is named again "
        "(first at [0]); one list names each task once "
        "(docs/trace-format.md, Identifiers)",
    )
