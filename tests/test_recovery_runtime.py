"""`resume-check run recovery` on real LangGraph: the contract catches the checkpoint-aligned
policies where a consumer already acted on the failed instance's output, accepts `admissible`
and `retry`, and `admissible`, whose runtime saves a restore point at every action boundary,
restores to one where no named checkpoint (entry, commit, exit) is admissible.

One run of the whole matrix (5 policies x 6 workloads, one TLC run to judge it) is shared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT, Run, read_trace_file, run_cli
from rctools.suite import testing

pytestmark = pytest.mark.slow

# Workloads where A's consumers committed on A's committed output (its commit is admissible).
COMMITTED_HANDOFF = ("schedule-form", "navigation", "diagnosis", "etl")
# Workloads where no named checkpoint is admissible: B read A's draft, or A paid after its
# commit. Only a restore point after the draft or the payment is.
NOTHING_ADMISSIBLE = ("schedule-form-draft", "schedule-form-payment")
WORKLOADS = COMMITTED_HANDOFF + NOTHING_ADMISSIBLE
POLICIES = ("retry", "entry", "native", "resume", "admissible")
# A native restore forks LangGraph's checkpoint, so the committed consumers that ran in the same
# step run again: it breaks PreserveCommitted besides what the restore itself breaks.
FORK = ["PreserveCommitted"]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recovery")


@pytest.fixture(scope="module")
def matrix(out: Path) -> Run:
    run = run_cli("run", "recovery", "--out", out, "--format", "json", "--no-progress")
    run.assert_no_traceback()
    return run


def flat(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Each cell of a summary as one run: what it did (its notes), its verdict, the spec's
    counts of blocks, and success (it completed and conforms)."""
    found = []
    for cell in document["cells"]:
        verdict = testing.verdict(document, cell["cell"])
        counted = verdict.get("summary", {})
        found.append(
            cell["notes"]
            | {
                "verdict": cell["status"],
                "properties": cell["properties"],
                "trace": cell["trace"],
                "success": cell["status"] == "conforms" and cell["notes"]["outcome"] == "completed",
                "blocks": counted.get("blocks"),
                "needless_blocks": counted.get("needless_blocks"),
            }
        )
    return found


@pytest.fixture(scope="module")
def runs(matrix: Run) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["policy"], r["workload"]): r for r in flat(matrix.json())}


def test_the_matrix_runs_every_pair_and_exits_1(matrix: Run, out: Path, runs: dict) -> None:
    assert matrix.returncode == 1, matrix
    assert set(runs) == {(p, w) for p in POLICIES for w in WORKLOADS}
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")) == matrix.json()
    assert all(r["verdict"] in ("conforms", "violates") for r in runs.values())
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(matrix.json())
    assert matrix.json()["figures"]["policies"]["admissible"]["runs"] == len(WORKLOADS)


@pytest.mark.parametrize("policy", ["entry", "native", "resume"])
@pytest.mark.parametrize("workload", ["schedule-form", "diagnosis", "etl"])
def test_checkpoint_aligned_restores_orphan_committed_consumers(
    runs: dict, policy: str, workload: str
) -> None:
    run = runs[(policy, workload)]
    extra = FORK if policy == "native" else []
    assert (run["verdict"], run["properties"]) == ("violates", sorted(["RestoreSound", *extra]))
    assert not run["success"]


def test_navigation_where_a_langgraph_checkpoint_is_the_commit_checkpoint(runs: dict) -> None:
    """Navigation splits A into two LangGraph nodes at its commit: the checkpoint LangGraph
    resumes from is A's commit checkpoint, which is admissible; A's entry is not. Resuming is
    then sound; forking still re-runs B, which had committed in that step."""
    assert runs[("entry", "navigation")]["properties"] == ["RestoreSound"]
    assert runs[("resume", "navigation")]["verdict"] == "conforms"
    assert runs[("native", "navigation")]["properties"] == FORK
    for policy, also in (("resume", None), ("native", ["B"])):
        _, events = read_trace_file(Path(runs[(policy, "navigation")]["trace"]))
        restores = [(e["boundary"], e.get("also")) for e in events if e["ev"] == "restore"]
        assert restores == [("commit", also)], policy


@pytest.mark.parametrize("policy", ["entry", "native", "resume"])
@pytest.mark.parametrize("workload", NOTHING_ADMISSIBLE)
def test_restoring_when_nothing_is_admissible_breaks_block_when_none(
    runs: dict, policy: str, workload: str
) -> None:
    extra = FORK if policy == "native" else []
    assert runs[(policy, workload)]["properties"] == sorted(["BlockWhenNone", *extra])


@pytest.mark.parametrize("policy", ["admissible", "retry"])
@pytest.mark.parametrize("workload", WORKLOADS)
def test_admissible_and_retry_conform(runs: dict, policy: str, workload: str) -> None:
    assert runs[(policy, workload)]["verdict"] == "conforms"


def test_admissible_restores_to_a_point_where_no_named_checkpoint_is_admissible(
    runs: dict,
) -> None:
    for workload in WORKLOADS:
        run = runs[("admissible", workload)]
        assert run["success"], workload
        # The spec counts no block, so none taken although a checkpoint was admissible.
        assert (run["blocks"], run["needless_blocks"]) == (0, 0), workload
        _, events = read_trace_file(Path(run["trace"]))
        (restore,) = [e for e in events if e["ev"] == "restore"]
        # The latest certified checkpoint: A's commit where its consumers read the commit and
        # nothing irreversible follows; a restore point where only one is admissible.
        named = workload not in NOTHING_ADMISSIBLE
        assert (restore["boundary"] != "point") == named, (workload, restore)
        if not named:
            saved = [e["point"] for e in events if e["ev"] == "checkpoint"]
            assert restore["point"] in saved


def test_admissible_preserves_committed_consumers_and_replays_nothing(runs: dict) -> None:
    for workload in COMMITTED_HANDOFF:
        admissible, retry = runs[("admissible", workload)], runs[("retry", workload)]
        assert admissible["success"] and retry["success"]
        assert admissible["preserved"] >= 1 and retry["preserved"] == 0
        assert admissible["replayed"] == 0 < retry["replayed"]


def test_retry_replays_the_payment_from_the_ledger(runs: dict) -> None:
    _, events = read_trace_file(Path(runs[("retry", "schedule-form-payment")]["trace"]))
    charges = [e for e in events if e["ev"] == "effect" and e["tool"] == "payments.charge"]
    assert [e.get("replayed", False) for e in charges] == [False, True]
    assert len({e["request"] for e in charges}) == 2  # same intent, new request id
    # B's invitation was compensated before the rerun sent a new one.
    assert runs[("retry", "schedule-form-payment")]["effects"].get("compensated") == 1


def test_a_re_executed_instance_may_choose_another_value(runs: dict) -> None:
    _, events = read_trace_file(Path(runs[("entry", "schedule-form")]["trace"]))
    slots = [e["value"] for e in events if e["ev"] == "commit" and e["instance"] == "A"]
    assert len(slots) == 2 and slots[0] != slots[1]


def test_one_conforming_pair_exits_0_with_a_text_table(tmp_path: Path) -> None:
    run = run_cli(
        "run", "recovery", "--policy", "admissible", "--workload", "schedule-form",
        "--out", tmp_path, "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["cell", "verdict"]
    assert lines[2].split() == ["admissible/schedule-form", "conforms"]
    assert ["admissible", "1", "1", "1"] in [line.split() for line in lines]  # runs conform success
    assert (tmp_path / "traces" / "admissible" / "schedule-form.jsonl").is_file()
    assert (tmp_path / "summary.json").is_file()


def test_without_the_ledger_a_rerun_charges_the_deposit_again(tmp_path: Path) -> None:
    run = run_cli(
        "run", "recovery", "--policy", "retry", "--workload", "schedule-form-payment",
        "--no-ledger", "--out", tmp_path, "--format", "json", "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 1, run
    (result,) = flat(run.json())
    assert result["properties"] == ["NoResurrectedEffect"]
    _, events = read_trace_file(Path(result["trace"]))
    charges = [e for e in events if e["ev"] == "effect" and e["tool"] == "payments.charge"]
    assert [e.get("replayed", False) for e in charges] == [False, False]


def test_an_unknown_policy_is_a_usage_error(tmp_path: Path) -> None:
    run = run_cli("run", "recovery", "--policy", "optimistic", "--out", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2
    assert "optimistic" in run.stderr
