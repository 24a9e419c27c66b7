"""The recovery audit: generated workflows are seeded and deterministic, the controller blames an
instance from the recorded events (never from the injector's answer), and a small audit on real
LangGraph, judged by TLC, finds unsafe admitted restores for `entry` and `native` and none for
`admissible`, which, with a restore point at every action boundary, never has to block.

The fast tests need neither LangGraph runs nor TLC; the audit (12 workflows x 3 policies, one
TLC run) takes about 15 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Run, invoke, read_trace_file, run_cli
from rctools.recovery.controller import certify, kept_after_restore, localize, observed
from rctools.recovery.generate import DOMAINS, generate
from rctools.recovery.workloads import WORKLOADS

WORKFLOWS, SEED = 12, 1
POLICIES = ("entry", "native", "admissible")


def test_generation_is_seeded_deterministic_and_spans_five_domains() -> None:
    first, again = generate(40, 5), generate(40, 5)
    assert first == again
    assert generate(10, 5) == first[:10]
    assert generate(10, 6) != first[:10]
    assert len({w.name for w in first}) == 40
    assert {w.name.rsplit("-", 1)[-1] for w in first} == {d.name for d in DOMAINS}
    assert len(DOMAINS) >= 5
    # Every workflow injects exactly one failure, at a tool call.
    for w in first:
        fails = [a for acts in w.instances.values() for a in acts if a.fails]
        assert len(fails) == 1 and fails[0].kind == "effect", w.name


def _ev(ev: str, **fields: Any) -> dict[str, Any]:
    return {"ev": ev, **fields}


# schedule-form up to A's failure: B committed on A's commit, A fails calling calendar.hold.
SCHEDULE_EVENTS = [
    _ev("begin", instance="A"),
    _ev("begin", instance="B"),
    _ev("effect", instance="A", tool="calendar.lookup", intent="A/find free slots"),
    _ev("commit", instance="A", value="Tue 10:00"),
    _ev("consume", instance="B", **{"from": "A"}, value="Tue 10:00"),
    _ev("effect", instance="B", tool="mail.send", intent="B/send invitation"),
    _ev("commit", instance="B", value="invitation for Tue 10:00"),
    _ev("exit", instance="B"),
    _ev("fail", instance="A", reason="hold the room failed"),
]


def test_localization_reads_the_events_not_the_injectors_answer() -> None:
    w = WORKLOADS["schedule-form"]
    found = localize(SCHEDULE_EVENTS, w.instances, w.tools, "calendar.hold")
    assert (found.instance, found.candidates) == ("A", ("A",))
    # The `fail` event is not what it goes by: without it the answer is the same.
    assert localize(observed(SCHEDULE_EVENTS), w.instances, w.tools, "calendar.hold") == found
    # An error about a tool no unfinished instance calls next blames nobody.
    assert localize(SCHEDULE_EVENTS, w.instances, w.tools, "mail.send").instance is None


def test_two_unfinished_instances_about_to_call_the_failed_tool_are_ambiguous() -> None:
    w = WORKLOADS["diagnosis"]  # A and C both call records.write
    events = [
        _ev("begin", instance="A"),
        _ev("effect", instance="A", tool="records.read", intent="A/read the history"),
        _ev("commit", instance="A", value="iron deficiency"),
        _ev("begin", instance="B"),
        _ev("consume", instance="B", **{"from": "A"}, value="iron deficiency"),
        _ev("effect", instance="B", tool="lab.order", intent="B/order the test"),
        _ev("commit", instance="B", value="test ordered for iron deficiency"),
        _ev("exit", instance="B"),
        _ev("begin", instance="C"),
        _ev("consume", instance="C", **{"from": "B"}, value="test ordered for iron deficiency"),
    ]
    found = localize(events, w.instances, w.tools, "records.write")
    assert found.ambiguous and found.candidates == ("A", "C")
    # Without the tool's name, every unfinished instance is a candidate.
    assert localize(events, w.instances, w.tools, None).candidates == ("A", "C")


def test_certification_matches_the_hand_written_cases() -> None:
    w = WORKLOADS["schedule-form"]
    # B read A's commit: the commit is certified, the entry is not.
    assert certify(SCHEDULE_EVENTS, "A", w.instances, w.tools) == ["commit"]
    # An irreversible effect after the commit: nothing is certified.
    paid = [
        *SCHEDULE_EVENTS[:4],
        _ev("effect", instance="A", tool="payments.charge", intent="A/pay the deposit"),
        *SCHEDULE_EVENTS[4:],
    ]
    assert certify(paid, "A", w.instances, w.tools) == []
    # A restore point saved after the payment is certified, and one before it is not.
    pointed = [
        *SCHEDULE_EVENTS[:4],
        _ev("checkpoint", instance="A", point="A@2"),
        paid[4],
        _ev("checkpoint", instance="A", point="A@3"),
        *SCHEDULE_EVENTS[4:],
    ]
    assert certify(pointed, "A", w.instances, w.tools) == ["A@3"]


def test_a_restore_forgets_the_checkpoints_after_its_target() -> None:
    """As the contract's Restore: a restore to A's commit drops the restore points saved
    after it, so they are neither certified nor restored to again; the exit at a restore
    point's boundary goes when the restore is to that point."""
    w = WORKLOADS["schedule-form"]
    events = [
        *SCHEDULE_EVENTS[:4],
        _ev("effect", instance="A", tool="calendar.lookup", intent="A/again"),
        _ev("checkpoint", instance="A", point="A@3"),
        *SCHEDULE_EVENTS[4:8],
        _ev("localize", instance="A"),
        _ev("restore", instance="A", boundary="commit"),
    ]
    assert certify(events, "A", w.instances, w.tools) == ["commit"]
    assert kept_after_restore({"entry": 0, "p": 2, "exit": 2}, "p") == {"entry": 0, "p": 2}
    assert kept_after_restore({"entry": 0, "p": 2, "exit": 2}, "exit") == {
        "entry": 0,
        "p": 2,
        "exit": 2,
    }


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit")


@pytest.fixture(scope="module")
def audit(out: Path) -> Run:
    args = ["run", "recovery", "--audit", "--workflows", str(WORKFLOWS), "--seed", str(SEED)]
    for policy in POLICIES:
        args += ["--policy", policy]
    run = run_cli(*args, "--out", out, "--format", "json", "--no-progress", timeout=300)
    run.assert_no_traceback()
    return run


@pytest.fixture(scope="module")
def rows(audit: Run) -> dict[str, dict[str, Any]]:
    return {r["policy"]: r for r in audit.json()["figures"]["audit"]["policies"]}


@pytest.mark.slow
def test_every_run_of_the_audit_is_judged(audit: Run, rows: dict) -> None:
    assert audit.returncode == 1, audit  # entry and native violate the contract
    document = audit.json()
    figures = document["figures"]["audit"]
    assert (figures["workflows"], figures["seed"]) == (WORKFLOWS, SEED)
    assert len(figures["domains"]) == 5
    runs = document["cells"]
    assert len(runs) == WORKFLOWS * len(POLICIES)
    assert all(r["status"] in ("conforms", "violates") for r in runs)
    assert {r["policy"]: r["runs"] for r in rows.values()} == dict.fromkeys(POLICIES, WORKFLOWS)


@pytest.mark.slow
def test_admissible_admits_no_unsafe_restore_and_never_blocks(rows: dict) -> None:
    """A failure surfaces at an action boundary, and the runtime saved a restore point at the
    one before it: nothing lies after that point, so it is admissible and no block is needed
    (the spec would count one as needless)."""
    admissible = rows["admissible"]
    assert admissible["unsafe_restores"] == 0 and admissible["properties"] == {}
    assert admissible["restores"] == WORKFLOWS
    assert admissible["blocks"] == admissible["needless_blocks"] == 0


@pytest.mark.slow
def test_entry_and_native_admit_unsafe_restores(rows: dict) -> None:
    for policy in ("entry", "native"):
        row = rows[policy]
        assert row["restores"] == WORKFLOWS and row["blocks"] == 0
        assert 0 < row["unsafe_restores"] <= WORKFLOWS, policy
        assert row["unsafe_restores"] == sum(row["unsafe_restores_by_domain"].values())
    # native's fork re-runs committed instances of the failed step.
    assert rows["native"]["properties"].get("PreserveCommitted", 0) > 0


@pytest.mark.slow
def test_the_controller_localized_every_failure_itself(audit: Run, rows: dict) -> None:
    assert all(r["mislocalized"] == 0 for r in rows.values())
    for cell in audit.json()["cells"]:
        run = cell["notes"]
        assert run["localized"] == run["failed"] is not None
        _, events = read_trace_file(Path(cell["trace"]))
        fails = [e["instance"] for e in events if e["ev"] == "fail"]
        blamed = [e["instance"] for e in events if e["ev"] == "localize"]
        assert fails[:1] == blamed[:1] == [run["failed"]]


@pytest.mark.slow
def test_the_audit_as_text(tmp_path: Path) -> None:
    run = run_cli(
        "run", "recovery", "--audit", "--workflows", "3", "--policy", "admissible",
        "--out", tmp_path, "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    lines = run.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("audit: "))
    assert lines[start].startswith("audit: 3 generated workflow(s), seed 0")
    assert lines[start + 1].split()[:4] == ["policy", "runs", "restores", "unsafe"]
    assert set(lines[start + 2]) == {"-"}  # the rule under the headings
    row = lines[start + 3].split()
    assert row[:4] == ["admissible", "3", row[2], "0"]
    assert (tmp_path / "summary.json").is_file()


def test_audit_with_a_hand_written_workload_is_a_usage_error(tmp_path: Path) -> None:
    run = invoke("run", "recovery", "--audit", "--workload", "etl", "--out", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert "--audit" in run.stderr


def test_admissible_blocks_rather_than_guess_between_candidates() -> None:
    from types import SimpleNamespace

    from rctools.recovery.controller import Localization
    from rctools.recovery.engine import RunResult
    from rctools.recovery.policies import admissible

    engine = SimpleNamespace(localization=Localization("A", ("A", "C")))
    decision = admissible(engine, "A")  # type: ignore[arg-type]
    assert (decision.kind, decision.reason) == ("block", "ambiguous localization")
    run = RunResult("w", "admissible", Path("t"), "blocked", 0, 0, None, None, 0, {})
    assert not run.mislocalized  # no failure, nothing to mislocalize
    run.failed, run.localized = "A", "C"
    assert run.mislocalized
