"""Revision recovery on real LangGraph runs, judged by DagRevision.

Every policy runs every workload with the revision injected at every point (before and while
each node runs, and after the run); all traces are judged in one batch. `stale` must be caught,
the three recovering policies must conform everywhere, and validity-guided recovery must
recompute exactly the affected set, computed here from the workload's definition alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from rctools.revision.matrix import Run, record
from rctools.revision.workloads import WORKLOADS, Workload
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

pytestmark = pytest.mark.slow

Judged = dict[tuple[str, str, str], tuple[Run, Verdict]]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    out = tmp_path_factory.mktemp("revision")
    runs = [
        run
        for policy in ("full", "suffix", "stale", "validity")
        for run in record(list(WORKLOADS.values()), policy, out)
    ]
    verdicts = judge([r.trace for r in runs], spec_paths=default_spec_paths())
    by_path = {v.path.resolve(): v for v in verdicts}
    return {(r.workload, r.policy, r.point): (r, by_path[r.trace.resolve()]) for r in runs}


@pytest.mark.parametrize("policy", ["full", "suffix", "validity"])
def test_recovering_policies_conform_on_every_workload_and_point(
    judged: Judged, policy: str
) -> None:
    mine = {k: v for k, v in judged.items() if k[1] == policy}
    assert len(mine) > 50
    bad = {k: (v.reason, v.properties) for k, (_, v) in mine.items() if v.status != Status.CONFORMS}
    assert bad == {}


def test_stale_continuation_is_caught(judged: Judged) -> None:
    stale = {k: v for k, (_, v) in judged.items() if k[1] == "stale"}
    caught = {k: v for k, v in stale.items() if v.status is Status.VIOLATES}
    assert len(caught) >= 20
    for verdict in caught.values():
        broken = {"NoStaleCommit", "OracleEquivalence", "IrreversibleEffects"}
        assert set(verdict.properties) & broken, verdict.reason
    # C finishes on the old y and commits: the REVISE scenario's stale continuation.
    assert stale[("diamond", "stale", "during-C")].properties == ["NoStaleCommit"]
    assert stale[("diamond", "stale", "after")].properties == ["OracleEquivalence"]
    # A revision before anything read the revised path leaves nothing stale, even here.
    assert stale[("diamond", "stale", "before-A")].status is Status.CONFORMS


def _expected_recompute(workload: Workload, point: str) -> set[str]:
    """Nodes that ran before the revision and whose output depends on the revised path."""
    rev = workload.revision
    hit = {
        n.name for n in workload.nodes if rev.path in n.reads or (n.route or ("",))[0] == rev.path
    }
    grew = True
    while grew:
        more = {n.name for n in workload.nodes if set(n.after) & hit} - hit
        hit |= more
        grew = bool(more)
    inputs = {**workload.inputs, **({rev.path: rev.value} if rev.kind == "control" else {})}
    active = {n.name for n in workload.nodes if n.route is None or inputs[n.route[0]] == n.route[1]}
    ran_before = set()
    initially = {
        n.name
        for n in workload.nodes
        if n.route is None or workload.inputs[n.route[0]] == n.route[1]
    }
    for name in workload.order:
        if point == f"before-{name}":
            break
        if name in initially:
            ran_before.add(name)
        if point == f"during-{name}":
            break
    return hit & active & ran_before


@pytest.mark.parametrize("workload", ["diamond", "app10", "compiler", "route"])
def test_validity_recomputes_exactly_the_affected_set(judged: Judged, workload: str) -> None:
    points = {k[2]: run for k, (run, _) in judged.items() if k[:2] == (workload, "validity")}
    for point, run in points.items():
        expected = _expected_recompute(WORKLOADS[workload], point)
        assert run.outcome is not None
        assert set(run.outcome.recomputed) == expected, point
        assert len(run.outcome.recomputed) == len(expected), point  # each node once


def test_the_revise_scenario_costs(judged: Judged) -> None:
    """A -> {B, C} -> D plus E, y revised after the run: full 5, suffix C, E, D, minimal C, D."""
    after = {p: judged[("diamond", p, "after")][0].outcome for p in ("full", "suffix", "validity")}
    assert sorted(after["full"].recomputed) == ["A", "B", "C", "D", "E"]
    assert after["suffix"].recomputed == ["C", "E", "D"]
    assert after["validity"].recomputed == ["C", "D"]
    assert [after[p].calls for p in ("full", "suffix", "validity")] == [10, 8, 7]


def test_unknown_provenance_falls_back_to_the_suffix(judged: Judged) -> None:
    run, verdict = judged[("untracked", "validity", "after")]
    assert run.outcome is not None
    assert verdict.status is Status.CONFORMS
    assert run.outcome.recomputed == ["C", "E", "D"]
    plans = [json.loads(line) for line in run.trace.read_text().splitlines() if '"plan"' in line]
    assert [p["mode"] for p in plans] == ["suffix"]


def test_command_names_the_broken_property_and_writes_a_summary(tmp_path: Path) -> None:
    done = run_cli("run", "revision", "--policy", "stale", "--workload", "route", "--out", tmp_path)
    done.assert_no_traceback()
    assert done.returncode == 1, done
    assert "NoStaleCommit" in done.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["exit_code"] == 1
    assert {c["notes"]["point"] for c in summary["cells"]} >= {"before-R", "during-J", "after"}
    assert summary["figures"]["policy"] == "stale"


def test_command_rejects_an_unknown_policy(tmp_path: Path) -> None:
    done = run_cli("run", "revision", "--policy", "sometimes", "--out", tmp_path)
    done.assert_no_traceback()
    assert done.returncode == 2
