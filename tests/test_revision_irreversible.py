"""Irreversible effects in the revision suite: the e-mail workloads under every policy.

The e-mail is irreversible. A revision it does not depend on (the notes, y) makes full and
suffix plans re-run it, and the runtime must not send it again nor revoke it; a revision it
does depend on (the request, x) is refused once the e-mail is out, and before that the e-mail
is held until its output is revalidated. The stale baseline, which never replans, sends an
e-mail written from an old request: DagRevision must reject that for IrreversibleEffects, so
this test can fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rctools.revision.injection import Injection
from rctools.revision.matrix import Racing, Run, record_one, record_racing
from rctools.revision.workloads import WORKLOADS
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

CELLS = [
    ("email", policy, point)
    for policy in ("full", "suffix", "validity")
    for point in (("during", "email"), ("after", None))
] + [
    ("email-late", "validity", ("before", "email")),
    ("email-late", "validity", ("after", None)),
    ("email-late", "stale", ("before", "draft")),
]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Run, Verdict]]:
    out = tmp_path_factory.mktemp("irreversible")
    runs = []
    for name, policy, (point, node) in CELLS:
        workload = WORKLOADS[name]
        injection = Injection(point, node, workload.revision)
        runs.append(record_one(workload, policy, injection, out, out))
    verdicts = {
        v.path.resolve(): v for v in judge([r.trace for r in runs], spec_paths=default_spec_paths())
    }
    return {f"{r.workload}-{r.policy}-{r.point}": (r, verdicts[r.trace.resolve()]) for r in runs}


def _events(run: Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.trace.read_text().splitlines()[1:]]


def _email_attempts(events: list[dict[str, Any]]) -> set[str]:
    return {e["attempt"] for e in events if e["ev"] == "start" and e["node"] == "email"}


def test_recovering_policies_conform(judged: dict[str, tuple[Run, Verdict]]) -> None:
    bad = {
        k: (v.reason, v.properties)
        for k, (r, v) in judged.items()
        if r.policy != "stale" and v.status is not Status.CONFORMS
    }
    assert bad == {}


@pytest.mark.parametrize("policy", ["full", "suffix"])
def test_a_rerun_email_is_neither_resent_nor_revoked(
    judged: dict[str, tuple[Run, Verdict]], policy: str
) -> None:
    run, _ = judged[f"email-{policy}-after"]
    events = _events(run)
    emails = _email_attempts(events)
    assert len(emails) == 2  # the plan re-ran it ...
    sent = [e for e in events if e["ev"] == "publish" and e["attempt"] in emails]
    assert len(sent) == 1  # ... and it went out once
    assert not [e for e in events if e["ev"] == "revoke" and e["attempt"] in emails]
    staged = [e for e in events if e["ev"] == "stage" and e["attempt"] in emails]
    assert all(e["revocable"] is False for e in staged)


def test_validity_does_not_rerun_the_email(judged: dict[str, tuple[Run, Verdict]]) -> None:
    run, _ = judged["email-validity-after"]
    assert len(_email_attempts(_events(run))) == 1


def test_a_revision_too_late_for_the_email_is_refused(
    judged: dict[str, tuple[Run, Verdict]],
) -> None:
    late, _ = judged["email-late-validity-after"]
    revise = [e for e in _events(late) if e["ev"] == "revise"]
    assert [r["accepted"] for r in revise] == [False]
    early, _ = judged["email-late-validity-before-email"]
    events = _events(early)
    assert [e.get("accepted", True) for e in events if e["ev"] == "revise"] == [True]
    assert (
        len([e for e in events if e["ev"] == "publish" and e["attempt"] in _email_attempts(events)])
        == 1
    )


def test_the_stale_baseline_sends_a_stale_email_and_is_caught(
    judged: dict[str, tuple[Run, Verdict]],
) -> None:
    _, verdict = judged["email-late-stale-before-draft"]
    assert verdict.status is Status.VIOLATES
    assert verdict.properties == ["IrreversibleEffects"]
    assert verdict.event is not None and json.loads(verdict.event)["ev"] == "publish"


def _late_refusals(events: list[dict[str, Any]]) -> int:
    """Revisions refused although made against the current version: too late for the e-mail."""
    versions: dict[str, int] = {}
    late = 0
    for e in events:
        if e["ev"] != "revise":
            continue
        if e.get("accepted", True):
            versions[e["path"]] = versions.get(e["path"], 0) + 1
        elif e["base"] == versions.get(e["path"], 0):
            late += 1
    return late


def test_racing_runs_hold_the_email_and_refuse_late_revisions(tmp_path: Path) -> None:
    """Parallel branches, revisions from another process at seeded instants: every recovering
    execution conforms, some revisions come too late and are refused, and the e-mail goes
    out at most once per execution; the stale baseline is caught in most executions (which
    property depends on the thread schedule; the sequential runs above pin IrreversibleEffects)."""
    workloads = [WORKLOADS["email"], WORKLOADS["email-late"]]
    runs = [
        run
        for policy in ("validity", "full", "suffix", "stale")
        for run in record_racing(
            workloads, policy, tmp_path / policy, Racing(executions=12, seed=3, revisions=6)
        )
    ]
    verdicts = {
        v.path.resolve(): v for v in judge([r.trace for r in runs], spec_paths=default_spec_paths())
    }
    late = 0
    for run in runs:
        verdict, events = verdicts[run.trace.resolve()], _events(run)
        late += _late_refusals(events)
        if run.policy == "stale":
            continue
        assert verdict.status is Status.CONFORMS, (run.trace.name, verdict.reason)
        emails = _email_attempts(events)
        assert len([e for e in events if e["ev"] == "publish" and e["attempt"] in emails]) <= 1
    assert late > 0, late
    stale = [verdicts[r.trace.resolve()] for r in runs if r.policy == "stale"]
    assert sum(v.status is Status.VIOLATES for v in stale) >= len(stale) // 2
