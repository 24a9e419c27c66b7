"""The fast tier (`make test-fast`): the CLI in-process on the revision, sandbox and recovery
traces, its reports against docs/report.schema.json, exit codes, the per-module spec path.

No servers, no runtimes, no subprocess per command: TLC runs once per contract and call.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from conftest import ROOT, SPEC, TRACES, Run, invoke, manifests
from resumecheck.contract import find_contract
from resumecheck.errors import SpecError

FOLDERS = ("revision", "sandbox", "recovery")
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
SANDBOX_OK = TRACES / "sandbox" / "ok-effect-aware.jsonl"


def valid_report(document: dict[str, Any]) -> dict[str, Any]:
    jsonschema.Draft202012Validator(
        SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(document)
    return document


@pytest.fixture(scope="module")
def judged() -> Run:
    run = invoke("--format", "json", "--no-progress", *(TRACES / f for f in FOLDERS))
    run.assert_no_traceback()
    return run


def test_every_trace_gets_its_manifest_verdict(judged: Run) -> None:
    expected = manifests(*(TRACES / f for f in FOLDERS))
    got = {Path(t["path"]).relative_to(ROOT).as_posix(): t for t in judged.json()["traces"]}
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        verdict = got[name]
        assert verdict["status"] == want["status"], name
        if want["status"] == "violates":
            assert verdict["event_index"] == want["event"], name
            assert verdict["properties"] == want["properties"], name


def test_json_report_follows_the_schema(judged: Run) -> None:
    document = valid_report(judged.json())
    assert judged.returncode == document["exit_code"] == 1
    assert document["command"] == "check"
    violation = next(t for t in document["traces"] if t["status"] == "violates")
    # The event is the trace's own object, not a JSON string inside JSON.
    line = Path(violation["path"]).read_text(encoding="utf-8").splitlines()[violation["line"] - 1]
    assert violation["event"] == json.loads(line)
    assert set(document["spec_files"]) == {"DagRevision", "SandboxCR", "SemanticRecovery"}
    assert document["spec_files"]["SandboxCR"] == [
        str(SPEC / name)
        for name in (
            "SandboxCR.tla",
            "TraceSandboxCR.cfg",
            "TraceSandboxCR.tla",
            "TraceValidation.tla",
        )
    ]


def test_junit_has_time_timestamp_and_file() -> None:
    run = invoke("--format", "junit", "--no-progress", TRACES / "sandbox")
    assert run.returncode == 1, run
    root = ET.fromstring(run.stdout)
    assert root.get("timestamp") and float(root.get("time", "-1")) > 0
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "SandboxCR" and suite.get("timestamp")
    cases = suite.findall("testcase")
    assert len(cases) == int(suite.get("tests", "0")) > 1
    for case in cases:
        assert Path(case.get("file", "")).is_file()
        assert float(case.get("time", "-1")) > 0
    assert sum(case.find("failure") is not None for case in cases) == int(suite.get("failures", ""))


def test_text_footer_names_the_spec_files() -> None:
    run = invoke("--no-progress", SANDBOX_OK)
    assert run.returncode == 0, run
    assert run.stdout.splitlines()[-2] == (
        "spec SandboxCR: SandboxCR.tla, TraceSandboxCR.cfg, TraceSandboxCR.tla, "
        f"TraceValidation.tla from {SPEC}"
    )


# --- the spec path, file by file ----------------------------------------------------------------


@pytest.fixture(scope="module")
def broken_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only SandboxCR.tla, with InspectorSound made unsatisfiable."""
    folder = tmp_path_factory.mktemp("override")
    text = (SPEC / "SandboxCR.tla").read_text(encoding="utf-8")
    old = "    insp # None => insp.truly \\subseteq insp.said\n"
    assert text.count(old) == 1, "SandboxCR.tla changed shape; update this test"
    (folder / "SandboxCR.tla").write_text(text.replace(old, "    FALSE\n"), encoding="utf-8")
    return folder


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_folder_with_one_module_overrides_just_that_module(broken_base: Path, how: str) -> None:
    args: tuple[str | Path, ...] = ("--format", "json", "--no-progress", SANDBOX_OK)
    if how == "option":
        run = invoke("--spec-path", broken_base, *args)
    else:
        run = invoke(*args, env={"RESUME_CHECK_SPEC_PATH": str(broken_base)})
    document = valid_report(run.json())
    assert run.returncode == 1, run
    (verdict,) = document["traces"]
    assert (verdict["status"], verdict["properties"]) == ("violates", ["InspectorSound"])
    files = document["spec_files"]["SandboxCR"]
    assert files[0] == str(broken_base.resolve() / "SandboxCR.tla")
    assert str(SPEC / "TraceSandboxCR.tla") in files
    assert str(SPEC / "SandboxCR.tla") not in files


def test_a_spec_folder_that_does_not_exist_is_an_environment_error(tmp_path: Path) -> None:
    run = invoke("--format", "json", "--spec-path", tmp_path / "nowhere", SANDBOX_OK)
    assert run.returncode == 3, run
    error = valid_report(run.json())["error"]
    assert (error["kind"], error["type"]) == ("environment", "SpecError")
    assert "nowhere" in error["message"]


def test_each_contract_file_comes_from_the_first_folder_holding_it(broken_base: Path) -> None:
    contract = find_contract("SandboxCR", [broken_base, SPEC])
    assert contract.base == broken_base / "SandboxCR.tla"
    assert (contract.trace_module, contract.trace_config) == (
        SPEC / "TraceSandboxCR.tla",
        SPEC / "TraceSandboxCR.cfg",
    )
    assert contract.search == (broken_base, SPEC)
    with pytest.raises(SpecError, match=r"no folder holds TraceSandboxCR.tla, TraceSandboxCR.cfg"):
        find_contract("SandboxCR", [broken_base])


# --- exit codes and failure documents -----------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "junit"])
def test_missing_java_still_prints_a_document(fmt: str) -> None:
    run = invoke("--format", fmt, SANDBOX_OK, env={"RESUME_CHECK_JAVA": "/nonexistent"})
    assert run.returncode == 3, run
    assert run.stderr.startswith("resume-check: error: RESUME_CHECK_JAVA='/nonexistent'")
    if fmt == "json":
        document = valid_report(run.json())
        assert document["exit_code"] == 3
        assert document["error"]["kind"] == "environment"
        assert document["error"]["type"] == "ToolchainError"
        assert "RESUME_CHECK_JAVA" in document["error"]["message"]
    else:
        error = ET.fromstring(run.stdout).find("testsuite/testcase/error")
        assert error is not None and error.get("type") == "ToolchainError"
        assert "RESUME_CHECK_JAVA" in error.get("message", "")


def test_java_not_on_path_is_exit_code_3(tmp_path: Path) -> None:
    run = invoke(
        "--format",
        "json",
        SANDBOX_OK,
        env={"RESUME_CHECK_JAVA": None, "JAVA_HOME": None, "PATH": str(tmp_path)},
    )
    assert run.returncode == 3, run
    assert "no java was found on PATH" in valid_report(run.json())["error"]["message"]


def test_an_invalid_trace_is_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text("nope\n", encoding="utf-8")
    run = invoke("--format", "json", tmp_path / "bad.jsonl")
    assert run.returncode == 2, run
    assert valid_report(run.json())["summary"]["invalid"] == 1


def test_bad_usage_is_exit_code_2() -> None:
    run = invoke("check", "--format", "yaml", SANDBOX_OK)
    assert run.returncode == 2
    assert "yaml" in run.stderr


def test_help_lists_the_exit_codes() -> None:
    for args in ((), ("check",), ("spec",), ("run",), ("run", "revision")):
        run = invoke(*args, "--help")
        assert run.returncode == 0, run
        codes = run.stdout.split("Exit codes:", 1)[1].split()
        assert [c for c in codes if c.isdigit()][:4] == ["0", "1", "2", "3"], args


# --- resume-check spec --------------------------------------------------------------------------


def test_spec_reports_as_json_and_junit() -> None:
    only = ("spec", "--only", "sandbox-chat-only-policy", "--no-progress")
    run = invoke(*only, "--format", "json")
    assert run.returncode == 0, run
    document = valid_report(run.json())
    (row,) = document["rows"]
    assert (row["kind"], row["passed"], row["expected"]) == ("mutant", True, "RestoreConsistency")
    assert Path(row["file"]).is_file()
    run = invoke(*only, "--format", "junit")
    root = ET.fromstring(run.stdout)
    (case,) = root.iter("testcase")
    assert case.get("name") == "sandbox-chat-only-policy" and Path(case.get("file", "")).is_file()
    assert float(case.get("time", "0")) > 0 and root.get("timestamp")


# --- --format html ------------------------------------------------------------------------------


def test_html_page_has_a_timeline_per_violation(tmp_path: Path) -> None:
    for trace in (TRACES / "recovery").glob("*.jsonl"):
        shutil.copy(trace, tmp_path / trace.name)
    hostile = tmp_path / "<b>bold.jsonl"
    shutil.copy(TRACES / "recovery" / "bwn-draft-consumed-restore-entry.jsonl", hostile)
    run = invoke("--format", "html", "--no-progress", tmp_path)
    assert run.returncode == 1, run
    page = run.stdout
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "<b>bold" not in page and "&lt;b&gt;bold" in page
    document = invoke("--format", "json", "--no-progress", tmp_path).json()
    violations = [t for t in document["traces"] if t["status"] == "violates"]
    svgs = re.findall(r"<svg .*?</svg>", page, re.S)
    assert len(svgs) == len(violations) == document["summary"]["violates"]
    for svg, verdict in zip(svgs, violations, strict=True):
        root = ET.fromstring(svg)  # plain SVG, well-formed XML
        lanes = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
        assert {"A", "B"} <= lanes  # SemanticRecovery's instances are the lanes
        index = verdict["event_index"]
        if verdict["properties"]:
            assert f"breaks {', '.join(verdict['properties'])}</text>" in svg
        else:
            assert ": no action of the contract allows it</text>" in svg
        (marked,) = [
            g
            for g in root.iter("{http://www.w3.org/2000/svg}g")
            if 'r="9"' in ET.tostring(g, encoding="unicode")
        ]
        assert marked.findtext("{http://www.w3.org/2000/svg}title", "").startswith(
            f"event {index}: "
        )


@pytest.mark.parametrize(
    ("name", "ringed"),
    [
        # CO: B receives the answer given to A -- B's park and the answer to A are ringed
        ("co-answer-of-other-task", {("task_end", "iB"), ("resume", "iA")}),
        # EO: the first fire of the effect fired again
        ("eo-at-least-once-refire-without-crash", {("effect", None)}),
    ],
)
def test_html_rings_the_earlier_events_a_violation_is_judged_against(
    name: str, ringed: set[tuple[str, str | None]]
) -> None:
    from resumecheck.htmlreport import RELATED, _related

    trace = TRACES / "core" / f"{name}.jsonl"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()[1:]]
    bad = manifests()[f"traces/core/{name}.jsonl"]["event"]
    related = {(events[i - 1]["ev"], events[i - 1].get("interrupt")) for i in _related(events, bad)}
    assert ringed <= related
    run = invoke("--format", "html", trace)
    assert run.stdout.count(f'stroke="{RELATED}"') == len(_related(events, bad))
    assert "ringed (orange)" in run.stdout


def test_html_is_drawn_from_the_verdicts_alone(tmp_path: Path) -> None:
    """A verdict carries what its picture needs: the page is the same once the judged file is
    gone (no renderer reads a trace again: it may have changed since it was judged)."""
    from resumecheck.contract import default_spec_paths
    from resumecheck.htmlreport import render_html
    from resumecheck.judge import judge
    from resumecheck.report import Invocation

    trace = tmp_path / "co.jsonl"
    shutil.copy(TRACES / "core" / "co-answer-of-other-task.jsonl", trace)
    (verdict,) = judge([trace], spec_paths=default_spec_paths())
    before = render_html([verdict], Invocation("check"))
    trace.unlink()
    assert render_html([verdict], Invocation("check")) == before
    assert before.count("<svg ") >= 1 and f"event {verdict.event_index}: " in before


def test_html_says_whose_finding_each_trace_is_and_shows_the_saver_first() -> None:
    """A suite that attributes (run langgraph) hands `labels`: a column per trace, each picture
    headed by its label, the saver's findings drawn before LangGraph's and the reference's."""
    from resumecheck.contract import default_spec_paths
    from resumecheck.htmlreport import render_html
    from resumecheck.judge import judge
    from resumecheck.report import Invocation

    names = (
        "co-answer-of-other-task",
        "cv-stale-latest-early-mention",
        "ok-failed-then-overwritten-by-a-concurrent-run",
    )
    paths = [TRACES / "core" / f"{n}.jsonl" for n in names]
    verdicts = judge(paths, spec_paths=default_spec_paths())
    labels = {
        str(verdicts[0].path): "runtime finding: the reference breaks it too",
        str(verdicts[1].path): "saver finding: CV <b>",
        str(verdicts[2].path): "reference run (sqlite) of chain.none.sync",
    }
    page = render_html(verdicts, Invocation("run langgraph"), labels)
    assert "<th>finding</th>" in page and "CV &lt;b&gt;" in page and "CV <b>" not in page
    headings = re.findall(r'<h2><span class="finding (\w+)">', page)
    assert headings == ["saver", "runtime"]  # the conforming reference run has no picture
    assert '<td class="finding reference">reference run (sqlite) of chain.none.sync</td>' in page
    plain = render_html(verdicts, Invocation("check"))
    assert "<th>finding</th>" not in plain and 'class="finding' not in plain
