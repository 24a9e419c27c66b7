"""Extensibility: a property added to the contract's TLA+ is checked with no Python change.

A copy of spec/ gets a new invariant `NoFork` in ResumeCore.tla and in its `Properties` record;
the checker, pointed at the copy with --spec-path (or $RESUME_CHECK_SPEC_PATH), now rejects the
fork example at the fork event, while the original contract accepts it. And `resume-check spec`
says what the new property still lacks: a place in every MC configuration and a mutant.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORE, by_name, patched_spec, run_cli
from resumecheck.speccheck import check_coverage

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

PROPERTIES = "Properties == [PC |-> PC, EO |-> EO, CO |-> CO, CV |-> CV, FD |-> FD, RD |-> RD"
COMMENT = "NoFork, no time travel: no process ever runs from a forked checkpoint."
NEW_INVARIANT = f"\\* {COMMENT}\nNoFork == \\A c \\in DOMAIN ck : ck[c].origin = 0\n\n"
FORK = "ok-fork-refires-on-new-branch.jsonl"
PLAIN = "ok-loop-reruns-node.jsonl"
FORK_EVENT = 14  # the 14th event (line 15) is the fork


@pytest.fixture(scope="module")
def extended_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return patched_spec(
        tmp_path_factory.mktemp("spec"),
        "ResumeCore.tla",
        PROPERTIES,
        f"{NEW_INVARIANT}{PROPERTIES}, NoFork |-> NoFork",
    )


def test_fork_example_conforms_to_the_original_contract() -> None:
    run = run_cli("--format", "json", CORE / FORK)
    run.assert_no_traceback()
    assert run.returncode == 0, run
    assert run.json()["traces"][0]["status"] == "conforms"


def test_new_invariant_rejects_the_fork_event(extended_spec: Path) -> None:
    """One TLC run: the fork example now violates NoFork; a trace without a fork still conforms."""
    run = run_cli(
        "--format",
        "json",
        "--spec-path",
        extended_spec,
        CORE / FORK,
        CORE / PLAIN,
    )
    run.assert_no_traceback()
    assert run.returncode == 1, run
    verdicts = by_name(run.json())
    fork = verdicts[FORK]
    assert fork["status"] == "violates"
    assert fork["properties"] == ["NoFork"]
    assert fork["event_index"] == FORK_EVENT
    assert fork["line"] == FORK_EVENT + 1
    assert fork["matched"] == FORK_EVENT - 1
    lines = (CORE / FORK).read_text(encoding="utf-8").splitlines()
    assert fork["event"] == json.loads(lines[FORK_EVENT])
    assert fork["event"]["ev"] == "fork"
    assert verdicts[PLAIN]["status"] == "conforms"


def test_text_report_explains_the_new_property_with_its_comment(extended_spec: Path) -> None:
    run = run_cli("--spec-path", extended_spec, CORE / FORK)
    run.assert_no_traceback()
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    path = CORE / FORK
    assert lines[0] == f"{path}: violates ResumeCore: NoFork"
    assert lines[1].startswith(f"  at event {FORK_EVENT} (line {FORK_EVENT + 1}): ")
    assert f"  {COMMENT}" in lines
    # The copy holds every module, so every file TLC used comes from it.
    assert lines[-2] == (
        "spec ResumeCore: ResumeCore.tla, TraceResumeCore.cfg, TraceResumeCore.tla, "
        f"TraceValidation.tla from {extended_spec.resolve()}"
    )
    assert lines[-1] == "1 trace(s): 1 violates"


def test_spec_path_from_the_environment(extended_spec: Path) -> None:
    run = run_cli(
        "--format",
        "json",
        CORE / FORK,
        env={"RESUME_CHECK_SPEC_PATH": str(extended_spec)},
    )
    run.assert_no_traceback()
    assert run.returncode == 1, run
    verdict = run.json()["traces"][0]
    assert (verdict["event_index"], verdict["properties"]) == (FORK_EVENT, ["NoFork"])


def test_spec_check_names_what_the_new_property_lacks(extended_spec: Path) -> None:
    rows = {row.name: row for row in check_coverage(extended_spec)}
    core = rows["ResumeCore"]
    assert not core.passed
    assert "NoFork is not an INVARIANT of MCResumeCore.cfg" in core.detail
    assert "NoFork has no mutant that must break it" in core.detail
    assert all(row.passed for name, row in rows.items() if name != "ResumeCore")
