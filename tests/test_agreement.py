"""The contract's two statements agree on mutants of the recorded traces (issue 22, item 4).

Every recorded ResumeCore trace of traces/ (short enough) seeds mutants: events dropped,
duplicated, moved, swapped or fabricated, fields changed. TLC judges each mutant twice: by the
moves' named checks (the checker) and by the history forms of the properties (the history
oracle). No mutant may get two verdicts. `make test` draws 2,000; `make fuzz` many more
(RESUME_CHECK_AGREE_MUTANTS). The last test shows the comparison can fail: with one named
check deleted from a copy of the contract, mutants the history calls broken pass the checker.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import invoke
from resumecheck import tracemanifest
from resumecheck.agreement import FALSE_ALARM, MISSED, agree, render_text
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.mutation import mutants
from resumecheck.trace.reader import read_trace

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "traces"
CORPORA = ROOT / "corpora"
MUTANTS = int(os.environ.get("RESUME_CHECK_AGREE_MUTANTS", "2000"))
SEED = int(os.environ.get("RESUME_CHECK_AGREE_SEED", "20261202"))


def test_checker_and_history_oracle_agree_on_mutants_of_recorded_traces() -> None:
    result = agree(
        [TRACES, CORPORA],
        count=MUTANTS,
        seed=SEED,
        spec_paths=default_spec_paths(),
        max_seed_events=60,
        jobs=2,
    )
    assert len(result.cases) == MUTANTS
    assert not result.disagreements, render_text(result, None)
    tally = result.tally()
    # Both verdicts are common: the material is neither all broken nor all conforming.
    assert tally["conforms/conforms"] >= MUTANTS // 20, tally
    assert tally["violates/violates"] >= MUTANTS // 10, tally


@pytest.mark.parametrize(
    "area",
    [
        "core",
        # the other contracts' history forms cost minutes on their traces: make test-long
        pytest.param("revision", marks=pytest.mark.long),
        pytest.param("recovery", marks=pytest.mark.long),
        pytest.param("sandbox", marks=pytest.mark.long),
    ],
)
def test_the_history_oracle_judges_every_hand_written_trace_as_its_manifest_says(
    area: str,
) -> None:
    """The hand-written traces hold each property's hard cases; their manifests record the
    checker's verdicts. The history forms alone must give the same ones -- status, the first
    event that breaks and its properties -- so a history form weaker or stronger than its
    check shows on the material a reader learns from, not only on random mutants."""
    expected = tracemanifest.expected(TRACES / area)
    files = sorted(expected)
    verdicts = judge(files, spec_paths=default_spec_paths(), oracle=True, jobs=2)
    differ = {}
    for path, verdict in zip(files, verdicts, strict=True):
        entry = expected[path]
        want = (entry["status"], sorted(entry.get("properties", [])), entry.get("event"))
        got = (verdict.status.value, sorted(verdict.properties), verdict.event_index)
        if got != want:
            differ[path.name] = {"oracle": got, "manifest": want}
    assert len(files) >= 20
    assert not differ, differ


def test_mutants_repeat_for_a_seed_and_differ_from_their_traces() -> None:
    seeds = [read_trace(p) for p in sorted((TRACES / "core").glob("*.jsonl"))]
    first = [m.jsonl() for m in mutants(seeds, 50, seed=3)]
    again = [m.jsonl() for m in mutants(seeds, 50, seed=3)]
    other = [m.jsonl() for m in mutants(seeds, 50, seed=4)]
    assert first == again
    assert first != other
    originals = {p.read_text() for p in (TRACES / "core").glob("*.jsonl")}
    assert not originals & set(first)


def test_a_deleted_check_shows_as_mutants_the_checker_misses(tmp_path: Path) -> None:
    """The comparison can fail: without LoadWrong, a load returning anything passes the
    checker, and the history oracle still calls such mutants broken (CV) -- or broken
    later, where a load no longer proves what a crash lost (an answer delivered after the
    load showed it gone: CO). Each one missed is the deletion's doing: the whole checker
    flags it as the oracle does."""
    spec = tmp_path / "spec"
    spec.mkdir()
    base = (default_spec_paths()[-1] / "ResumeCore.tla").read_text(encoding="utf-8")
    check = (
        '    /\\ Broke({<<"CV", '
        "LoadWrong(ch, asked, before, got, parent, digest, writes, answers)>>,"
    )
    assert check in base
    (spec / "ResumeCore.tla").write_text(
        base.replace(check, '    /\\ Broke({<<"CV", FALSE>>,'), encoding="utf-8"
    )
    keep = tmp_path / "mutants"
    result = agree(
        [TRACES / "core"], count=150, seed=1, spec_paths=default_spec_paths([spec]), keep=keep
    )
    missed = [c for c in result.disagreements if c.disagreement == MISSED]
    assert missed, render_text(result, None)
    assert any(c.oracle.properties == ["CV"] for c in missed)
    assert not [c for c in result.disagreements if c.disagreement == FALSE_ALARM]
    whole = judge([c.path for c in missed], spec_paths=default_spec_paths())
    for case, verdict in zip(missed, whole, strict=True):
        assert verdict.status.value == "violates", (case.path.name, verdict)
        assert verdict.properties == case.oracle.properties, (case.path.name, verdict)


def test_agree_command_reports_and_exits_by_agreement(tmp_path: Path) -> None:
    keep = tmp_path / "mutants"
    run = invoke("agree", TRACES / "core", "--mutants", "20", "--keep", keep, "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    seeds = len(list((TRACES / "core").glob("*.jsonl")))
    assert f"20 mutant(s) of {seeds} recorded trace(s)" in run.stdout
    assert "the two statements agree on every mutant" in run.stdout
    # the tally: a line per pair of outcomes, its count right-aligned
    tally = [line for line in run.stdout.splitlines() if re.match(r"  \w+/\w+ +\d+$", line)]
    assert tally and sum(int(line.split()[-1]) for line in tally) == 20, run.stdout
    assert "\\n" not in run.stdout, run.stdout
    assert len(list(keep.glob("*.jsonl"))) == 20
