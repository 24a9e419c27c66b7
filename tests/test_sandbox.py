"""The sandbox suite end to end: real namespaces and overlayfs, SIGKILL at every turn, SandboxCR.

`full` and `effect-aware` must conform at every crash point of the dev-task workload, and in
its rollback run and both rollouts of its fork run; the baselines `chat-only` and `chat-files`
must be caught, by RestoreConsistency (crashes) and RewindConsistency (rollbacks and forks),
once the sandbox has file or process effects they do not capture. Everything is judged by the
contract: these tests only read its verdicts. The runs go four sandboxes at a time, with one
checkpoint slot for the host (the defaults).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Run, run_cli
from rctools.sandbox.command import missing_privileges
from rctools.sandbox.workloads import WORKLOADS
from rctools.suite import testing

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        missing_privileges() is not None, reason=f"sandbox unavailable: {missing_privileges()}"
    ),
]

TURNS = len(WORKLOADS["dev-task"].turns)
# dev-task turns with no net effect: exploration, and temp files created and deleted. Turns 7
# and 8 only read files, but they query the live server, which wakes it: its memory may have
# changed, so its process image is taken again.
READ_ONLY_TURNS = {1, 3}
# Where the baselines are killed: before any effect, after the install (turn 2), while the
# server (turn 4) is not yet in a restore point, after it, and at the end.
BASELINE_TURNS = (1, 3, 4, 5, TURNS)


def _runs(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Each row of the summary as one run: its notes (workload, policy, crash, rewind), the
    contract's verdict in a word (`conforms` or the broken properties), the event it named and
    the trace's file name."""
    found = []
    for cell in summary["cells"]:
        verdict = testing.verdict(summary, cell["cell"])
        notes = cell["notes"]
        rollout = f" ({notes['rollout']})" if notes["rollout"] else ""
        found.append(
            notes
            | {
                "rewind": notes["rewind"] + rollout,
                "verdict": ", ".join(cell["properties"]) or cell["status"],
                "event": verdict.get("event_index"),
                "trace": Path(cell["trace"]).name,
            }
        )
    return found


def _run(tmp: Path, *args: str) -> tuple[Run, dict[str, Any]]:
    run = run_cli("run", "sandbox", *args, "--format", "json", "--out", tmp, timeout=900)
    run.assert_no_traceback()
    summary = json.loads((tmp / "summary.json").read_text(encoding="utf-8"))
    assert run.json() == summary  # --format json prints what summary.json holds
    return run, summary


@pytest.fixture(scope="module")
def correct(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("correct")
    run, summary = _run(out, "--policy", "full", "--policy", "effect-aware")
    return run, summary, out


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("baselines")
    args = ("--policy", "chat-only", "--policy", "chat-files", "--crash-points", "checkpoint")
    args += ("--crash-turns", ",".join(map(str, BASELINE_TURNS)))
    run, summary = _run(out, *args)
    return run, summary, out


def test_full_and_effect_aware_conform_at_every_crash_point(correct: Any) -> None:
    run, summary, _ = correct
    assert run.returncode == 0, run
    assert summary["exit_code"] == 0
    runs = _runs(summary)
    assert {r["verdict"] for r in runs} == {"conforms"}
    for policy in ("full", "effect-aware"):
        rewinds = {r["rewind"] for r in runs if r["policy"] == policy} - {"none"}
        assert rewinds == {"fork at 5 (dev-task)", "fork at 5 (dev-task-alt)", "rollback 6->2"}
        crashes = {r["crash"] for r in runs if r["policy"] == policy and r["crash"] != "none"}
        assert crashes == {
            f"turn {t} {p}"
            for t in range(1, TURNS + 1)
            for p in ("command", "checkpoint", "response")
        }
    stats = {s["policy"]: s for s in summary["figures"]["policies"]}
    assert stats["full"]["correctness"] == stats["effect-aware"]["correctness"] == 1.0
    assert stats["full"]["rewinds_correct"] == stats["full"]["rewind_runs"] == 3


def test_every_crash_run_really_crashed_and_restored(correct: Any) -> None:
    _, summary, out = correct
    for entry in _runs(summary):
        lines = (out / "traces" / entry["trace"]).read_text(encoding="utf-8").splitlines()
        kinds = [json.loads(line)["ev"] for line in lines[1:]]
        rewind = entry["rewind"].split(" ")[0]
        assert kinds.count("rollback") == (rewind == "rollback")
        assert kinds.count("fork") == (rewind == "fork")
        if entry["crash"] == "none":
            assert "crash" not in kinds and "restore" not in kinds
        else:
            assert kinds.count("crash") == 1 and kinds.count("restore") == 1, entry
            assert kinds.index("restore") == kinds.index("crash") + 1


def _clean_events(out: Path, summary: dict[str, Any], policy: str) -> list[dict[str, Any]]:
    (clean,) = [
        r
        for r in _runs(summary)
        if r["policy"] == policy and r["crash"] == "none" and r["rewind"] == "none"
    ]
    lines = (out / "traces" / clean["trace"]).read_text(encoding="utf-8").splitlines()[1:]
    return [json.loads(line) for line in lines]


def _decisions(out: Path, summary: dict[str, Any], policy: str) -> dict[int, list[str]]:
    events = _clean_events(out, summary, policy)
    return {e["turn"]: e["capture"] for e in events if e["ev"] == "checkpoint"}


def test_effect_aware_skips_read_only_turns_and_captures_the_rest(correct: Any) -> None:
    _, summary, out = correct
    decisions = _decisions(out, summary, "effect-aware")
    assert {t for t, capture in decisions.items() if not capture} == READ_ONLY_TURNS
    # Files are decided from the kernel's file events: exact. The package install (2), the
    # server's log (5) and the append (6); nothing else writes a file that stays.
    assert {t for t, capture in decisions.items() if "files" in capture} == {2, 5, 6}
    # Processes: the server started (4), woken by a hit (5) and by the queries (7, 8). Turn 6
    # does not touch it, but a thawed server preempted on its way back to sleep on a loaded
    # machine counts one involuntary switch, which the inspector takes as a change: a false
    # alarm costs an image, never a lost state, so it is allowed there and only there.
    procs = {t for t, capture in decisions.items() if "procs" in capture}
    assert {4, 5, 7, 8} <= procs <= {4, 5, 6, 7, 8}
    assert all(
        capture == ["files", "procs"] for capture in _decisions(out, summary, "full").values()
    )


def test_effect_aware_writes_fewer_checkpoint_bytes_than_full(correct: Any) -> None:
    _, summary, out = correct
    stats = {s["policy"]: s for s in summary["figures"]["policies"]}
    assert stats["effect-aware"]["skipped_share"] == len(READ_ONLY_TURNS) / TURNS
    assert stats["full"]["skipped_share"] == 0
    assert stats["effect-aware"]["checkpoint_bytes"] < stats["full"]["checkpoint_bytes"]

    def stored(policy: str, kind: str) -> tuple[int, int]:
        jobs = [e for e in _clean_events(out, summary, policy) if e["ev"] == "job_done"]
        return sum(1 for e in jobs if e[kind]), sum(e[f"{kind}_bytes"] for e in jobs)

    # Files as deltas on three turns against the whole upper layer on every turn.
    assert stored("effect-aware", "files")[1] < stored("full", "files")[1] * 0.5
    # No process image where no process ran: turns 1 to 3, before the server starts.
    assert stored("effect-aware", "procs")[0] <= stored("full", "procs")[0] - 3


def test_baselines_are_caught_by_restore_consistency(baselines: Any) -> None:
    run, summary, _ = baselines
    assert run.returncode == 1, run
    assert summary["exit_code"] == 1
    runs = _runs(summary)
    verdicts = {(r["policy"], r["crash"]): r["verdict"] for r in runs if r["rewind"] == "none"}
    assert set(verdicts.values()) == {"conforms", "RestoreConsistency"}
    # Going back to turn 2 (rollback) or 5 (fork) without the process table: the rewind
    # itself is caught, for every rollout.
    rewinds = {(r["policy"], r["rewind"]): r["verdict"] for r in runs if r["rewind"] != "none"}
    assert len(rewinds) == 6
    assert rewinds[("chat-files", "rollback 6->2")] == "conforms"  # turn 2 had no process
    assert {v for (policy, rewind), v in rewinds.items() if rewind != "rollback 6->2"} == {
        "RewindConsistency"
    }
    for policy in ("chat-only", "chat-files"):
        assert verdicts[(policy, "none")] == "conforms"  # no crash, nothing to lose
        assert verdicts[(policy, "turn 1 checkpoint")] == "conforms"  # nothing happened yet
    # chat-only loses the installed package (turn 2, files) ...
    assert verdicts[("chat-only", "turn 3 checkpoint")] == "RestoreConsistency"
    # ... chat-files keeps it but loses the background server (turn 4, processes).
    assert verdicts[("chat-files", "turn 3 checkpoint")] == "conforms"
    assert verdicts[("chat-files", "turn 4 checkpoint")] == "conforms"  # restores turn 3
    for turn in (5, TURNS):
        assert verdicts[("chat-files", f"turn {turn} checkpoint")] == "RestoreConsistency"
        assert verdicts[("chat-only", f"turn {turn} checkpoint")] == "RestoreConsistency"


def test_the_violation_is_the_restore_that_lost_the_server(baselines: Any) -> None:
    """chat-files restores the files but not the process table: the restore event itself is
    the first one that breaks the contract."""
    _, summary, out = baselines
    (entry,) = [
        r
        for r in _runs(summary)
        if r["policy"] == "chat-files"
        and r["crash"] == f"turn {TURNS} checkpoint"
        and r["rewind"] == "none"
    ]
    lines = (out / "traces" / entry["trace"]).read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[entry["event"]])  # line 0 is the header, events count from 1
    assert event["ev"] == "restore"
    assert event["turn"] == TURNS - 1


def test_the_benches_record_runs_through_the_suites_pool(tmp_path: Path) -> None:
    """`recorder.record_all` (the sandbox benches' batch of runs) records through the suites'
    one pool, each run in a process of its own, as `run sandbox` records its cells: the
    results in the order asked, a run asked twice kept under a name of its own."""
    from rctools.sandbox.recorder import RunSpec, record_all

    clean = RunSpec("memory-server", "full", None, "respawn")
    crash = RunSpec("memory-server", "chat-only", (3, "checkpoint"), "respawn")
    runs = record_all([clean, crash, clean], tmp_path / "out", tmp_path / "run", 0.01, jobs=2)
    assert [r.spec for r in runs] == [clean, crash, clean]
    names = [r.trace.name for r in runs]
    assert names[2] == names[0].replace(".jsonl", "--1.jsonl"), names
    assert all(r.trace.exists() and r.cpu_seconds > 0 for r in runs)
