"""Racing revision recovery: parallel branches on worker threads, revisions sent by another
process at seeded instants (several per execution, all four kinds, nested paths), every trace
judged by DagRevision in one TLC run. The recovering policies must conform on every execution;
`stale` must be caught. Small: the full 300-execution run is `resume-check run revision
--racing`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from rctools.revision.matrix import Racing, Run, record_racing
from rctools.revision.nested import NestedInputs, TrackedView, parse, read
from rctools.revision.racing import Attempt, RaceOutcome, RacingRuntime
from rctools.revision.sender import RevisionSender
from rctools.revision.workloads import RACING_WORKLOADS
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

SEED = 7
EXECUTIONS = {"validity": 12, "full": 6, "suffix": 6, "stale": 6}

Judged = list[tuple[Run, Verdict]]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    out = tmp_path_factory.mktemp("racing")
    workloads = list(RACING_WORKLOADS.values())
    runs = [
        run
        for policy, n in EXECUTIONS.items()
        for run in record_racing(workloads, policy, out, Racing(n, SEED))
    ]
    verdicts = judge([r.trace for r in runs], spec_paths=default_spec_paths())
    by_path = {v.path.resolve(): v for v in verdicts}
    return [(r, by_path[r.trace.resolve()]) for r in runs]


def _events(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.trace.read_text().splitlines()[1:]]


def _outcome(run: Run) -> RaceOutcome:
    assert isinstance(run.outcome, RaceOutcome)
    return run.outcome


@pytest.mark.slow
def test_recovering_policies_conform_on_every_racing_execution(judged: Judged) -> None:
    recovering = [(r, v) for r, v in judged if r.policy != "stale"]
    assert len(recovering) == 24
    bad = {
        r.trace.name: (v.reason, v.properties)
        for r, v in recovering
        if v.status.value != "conforms"
    }
    assert bad == {}


@pytest.mark.slow
def test_stale_continuation_is_caught_under_racing(judged: Judged) -> None:
    stale = [(r, v) for r, v in judged if r.policy == "stale"]
    caught = [v for _, v in stale if v.status is Status.VIOLATES]
    assert len(caught) >= 4
    for verdict in caught:
        assert set(verdict.properties) & {"NoStaleCommit", "OracleEquivalence", "RouteValidity"}


@pytest.mark.slow
def test_every_execution_has_several_revisions_of_every_kind(judged: Judged) -> None:
    outcomes = [_outcome(r) for r, _ in judged]
    assert all(o.revisions >= 2 for o in outcomes)
    assert {k for o in outcomes for k in o.kinds} == {"replace", "append", "cancel", "control"}
    refused = [
        e
        for r, _ in judged
        for e in _events(r)
        if e["ev"] == "revise" and not e.get("accepted", True)
    ]
    assert refused, "the sender sends some revisions against an old version"


@pytest.mark.slow
def test_independent_branches_really_run_at_once(judged: Judged) -> None:
    assert max(_outcome(r).max_parallel for r, _ in judged) >= 2
    overlapping = 0
    for run, _ in judged:
        spans: dict[str, list[float]] = {}
        for e in _events(run):
            if e["ev"] in ("start", "end"):
                spans.setdefault(e["attempt"], []).append(e["ts"])
        closed = [s for s in spans.values() if len(s) == 2]
        overlapping += any(a[0] < b[0] < a[1] for a in closed for b in closed if a is not b)
    assert overlapping >= len(judged) // 2


@pytest.mark.slow
def test_nested_paths_are_read_and_revised(judged: Judged) -> None:
    digest = [r for r, _ in judged if r.workload == "digest"]
    assert digest
    events = [e for r in digest for e in _events(r)]
    reads = {e["path"] for e in events if e["ev"] == "read"}
    assert {"docs[0].title", "docs[1].body", "docs", "prefs.lang"} <= reads
    revised = {e["path"] for e in events if e["ev"] == "revise"}
    assert "docs" in revised  # every revision under docs is a new version of the list


def test_a_revision_under_a_list_element_is_a_new_version_of_its_containers() -> None:
    inputs = NestedInputs(
        {"docs": [{"title": "t0"}, {"title": "t1"}]},
        ["docs", "docs[0]", "docs[0].title", "docs[1].title"],
    )
    before = inputs.snapshot()
    inputs.values["docs"][0]["title"] = "t0-r1"
    assert inputs.changed(before) == ["docs", "docs[0]", "docs[0].title"]
    seen: list[tuple[str, int]] = []
    view = TrackedView(inputs, lambda p, v: seen.append((p, v)))
    assert read(view, "docs[1].title") == "t1"
    assert len(read(view, "docs")) == 2
    assert seen == [("docs[1].title", 0), ("docs", 0)]
    assert parse("docs[1].title") == ["docs", 1, "title"]


@pytest.mark.slow
def test_command_runs_racing_executions_and_reports_them(tmp_path: Path) -> None:
    done = run_cli(
        "run", "revision", "--policy", "validity", "--racing", "--executions", "6",
        "--seed", "2", "--revisions", "2", "--out", tmp_path,
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 0, done
    assert "6 cells, 6 conform" in done.stdout
    assert "racing: 12 accepted revision(s)" in done.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["figures"]["racing"] == {"executions": 6, "seed": 2, "width": 3}
    assert all(c["notes"]["revisions"] == 2 for c in summary["cells"])


class ForgetsAttemptsInFlight(RacingRuntime):
    """A runtime bug the sequential runtime could not have: the planner is shown the commits
    only, not the attempts in flight, so a running attempt that read the revised path is kept
    (its commit's revalidation still rejects it: only the plan is wrong)."""

    def _work_items(self) -> list[tuple[Attempt, bool]]:
        return [(a, False) for a in self.cur.values()]


@pytest.mark.slow
def test_a_plan_that_forgets_attempts_in_flight_is_caught(tmp_path: Path) -> None:
    traces = []
    with RevisionSender() as sender:
        for seed in range(16):
            workload = RACING_WORKLOADS[("digest", "app10")[seed % 2]]
            runtime = ForgetsAttemptsInFlight(workload, "validity", sender, seed=seed, revisions=4)
            runtime.run()
            traces.append(tmp_path / f"{workload.name}-{seed}.jsonl")
            runtime.write(traces[-1])
    verdicts = judge(traces, spec_paths=default_spec_paths())
    broken = [v for v in verdicts if v.status is Status.VIOLATES]
    assert broken, "some revision lands while an attempt that read its path runs"
    assert all("PlanSoundness" in v.properties for v in broken), [v.reason for v in broken]
