"""Recovery interrupted by a real crash: the runtime process is killed with SIGKILL right after
the revision arrives or inside the recovery's first model call, and a new process restarts
from what was durable. The recovering policies must still conform; `stale` must not. One TLC
run for all traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rctools.revision.crash import crash_points, record_crash
from rctools.revision.workloads import WORKLOADS
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

pytestmark = pytest.mark.slow

POLICIES = ("full", "suffix", "validity", "stale")


def _cases(workload: str) -> list[tuple[str, str, str]]:
    return [(workload, p, c) for p in POLICIES for c in crash_points(p)]


# `make test` crashes the diamond workload; the routed one, the same crash points on a graph
# with a conditional edge, under `make test-long`.
CASES = _cases("diamond")


def _record(cases: list[tuple[str, str, str]], out: Path) -> dict[tuple[str, str, str], Verdict]:
    traces = {case: record_crash(WORKLOADS[case[0]], case[1], case[2], out) for case in cases}
    judged = judge(list(traces.values()), spec_paths=default_spec_paths())
    by_path = {v.path.resolve(): v for v in judged}
    return {case: by_path[Path(path).resolve()] for case, path in traces.items()}


def _check(case: tuple[str, str, str], verdict: Verdict) -> None:
    """One crash, one restart; a recovering policy conforms, `stale` is caught."""
    text = verdict.path.read_text(encoding="utf-8")
    assert text.count('"ev": "crash"') == 1 and text.count('"ev": "restart"') == 1
    if case[1] == "stale":
        assert "OracleEquivalence" in verdict.properties, case
    else:
        assert verdict.status is Status.CONFORMS, (case, verdict.reason, verdict.properties)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], Verdict]:
    return _record(CASES, tmp_path_factory.mktemp("crash"))


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_a_crash_is_recorded_and_judged(
    verdicts: dict[tuple[str, str, str], Verdict], case: tuple[str, str, str]
) -> None:
    _check(case, verdicts[case])


@pytest.mark.long
def test_the_routed_workload_is_recorded_and_judged_alike(tmp_path: Path) -> None:
    for case, verdict in _record(_cases("route"), tmp_path).items():
        _check(case, verdict)


@pytest.mark.parametrize("policy", ["full", "validity"])
def test_an_email_out_before_the_crash_is_not_sent_again(tmp_path: Path, policy: str) -> None:
    """The e-mail went out before the revision (y, which it does not read); the process dies
    after accepting it. The restarted process re-runs the e-mail node under a full plan and
    must know from what was durable that the e-mail is out: sent once, never revoked."""
    case = ("email", policy, "after-revision")
    verdict = _record([case], tmp_path)[case]
    _check(case, verdict)
    events = [json.loads(line) for line in verdict.path.read_text().splitlines()[1:]]
    emails = {e["attempt"] for e in events if e["ev"] == "start" and e["node"] == "email"}
    assert len(emails) == (2 if policy == "full" else 1)
    sent = [e for e in events if e["ev"] in ("publish", "revoke") and e["attempt"] in emails]
    assert [e["ev"] for e in sent] == ["publish"]
