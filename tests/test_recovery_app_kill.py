"""`run recovery --app --kill`: the failure is a SIGKILL of the process running the user's graph
(tests/fixtures/apps/trip_booking.py), and the suite's own process recovers from what survives:
LangGraph's SQLite checkpoints and saved writes, the trace, the side log the killed process
appended (rctools.recovery.appkill).

Which sibling's writes LangGraph had saved when the kill came depends on thread timing, so the
command tests assert what does not: every cell recorded and judged, and the verdicts of the
sequential failure points. The rebuild is tested on a hand-written killed run, where nothing
depends on timing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Run, read_trace_file, run_cli

APPS = ROOT / "tests" / "fixtures" / "apps"
APP = f"{APPS / 'trip_booking.py'}:build"
TOOLS = APPS / "trip_booking_tools.json"
INPUT = '{"traveller": "ada", "city": "Oslo"}'


def _run(out: Path, *policies: str, cells: str = "*") -> Run:
    args = ["run", "recovery", "--app", APP, "--tools", TOOLS, "--input", INPUT, "--kill"]
    for policy in policies:
        args += ["--policy", policy]
    args += ["--cells", cells]
    run = run_cli(*args, "--out", out, "--format", "json", "--no-progress", timeout=600)
    run.assert_no_traceback()
    return run


def _rows(run: Run) -> dict[str, dict[str, Any]]:
    return {r["policy"]: r for r in run.json()["figures"]["audit"]["policies"]}


def test_admissible_recovers_a_killed_cashier_and_blocks_after_the_charge(
    tmp_path: Path,
) -> None:
    """The cashier killed before its charge (restored on the killed process's thread) and
    after it (blocked: its entry lies before an irreversible effect). The other points run in
    the slow test."""
    run = _run(tmp_path, "admissible", cells="admissible/pay*")
    assert run.returncode == 0, run
    cells = {c["cell"]: c for c in run.json()["cells"]}
    assert set(cells) == {"admissible/pay.1-charge_card", "admissible/pay.2-send_mail"}
    assert all(c["status"] == "conforms" for c in cells.values())
    assert run.json()["figures"]["audit"]["failure"] == "kill"
    assert cells["admissible/pay.2-send_mail"]["notes"]["outcome"] == "blocked"
    _, events = read_trace_file(Path(cells["admissible/pay.1-charge_card"]["trace"]))
    (fail,) = [e for e in events if e["ev"] == "fail"]
    assert fail == {**fail, "instance": "pay", "reason": "process killed"}
    # the restarted process restored pay on the killed process's thread: it ran on from its
    # entry (no second begin), charged the card once and committed
    after = events[events.index(fail) :]
    assert [e["ev"] for e in after if e.get("instance") == "pay"][-2:] == ["commit", "exit"]
    assert ("begin", "pay") not in [(e["ev"], e.get("instance")) for e in after]
    assert sum(e.get("tool") == "charge_card" for e in events) == 1


@pytest.mark.slow
def test_every_policy_after_a_kill(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.returncode == 1, run
    cells = run.json()["cells"]
    assert len(cells) == 24 and all(c["status"] in ("conforms", "violates") for c in cells)
    rows = _rows(run)
    assert (rows["retry"]["restores"], rows["retry"]["reruns"]) == (0, 6)
    # the cashier killed after charging the card: its entry lies before the charge
    for policy in ("native", "resume"):
        verdict = next(c for c in cells if c["cell"] == f"{policy}/pay.2-send_mail")["verdict"]
        assert verdict.startswith("violates BlockWhenNone"), verdict
    admissible = rows["admissible"]
    assert (admissible["restores"], admissible["unsafe_restores"], admissible["blocks"]) == (
        5,
        0,
        1,
    )


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_the_restarted_process_rebuilds_the_killed_run(tmp_path: Path) -> None:
    """A killed run as the child leaves it: plan committed; book and notify running in one
    step, book having held a room (reversible: its undo's arguments in the side log) and
    returned but not saved, notify killed at its mail. The successor knows plan committed
    (and what it wrote), book died uncommitted (rolled back with notify: its undo callable
    with the same arguments), notify failed; a charge's result is back in the ledger."""
    from rctools.recovery.app import load_app
    from rctools.recovery.appengine import AppRun, FailurePoint
    from rctools.recovery.appkill import SideLog

    app = load_app(APP, TOOLS, json.loads(INPUT))
    header = {"format": "resume-check/v1", "contract": "SemanticRecovery", "workflow": {}}
    events = [
        ("begin", "plan"), ("commit", "plan"), ("exit", "plan"), ("begin", "book"),
        ("effect", "book"), ("begin", "notify"), ("fail", "notify"),
    ]  # fmt: skip
    trace = tmp_path / "t.jsonl"
    _write(trace, [header] + [{"seq": i, "ev": ev, "instance": n, "value": "v"}
                              for i, (ev, n) in enumerate(events)])  # fmt: skip
    side = tmp_path / "t.side.jsonl"
    pack = SideLog.pack
    _write(side, [
        {"kind": "task", "task": "t1", "instance": "plan", "node": "plan"},
        {"kind": "commit", "instance": "plan", "writes": ["dates"]},
        {"kind": "task", "task": "t2", "instance": "book", "node": "book"},
        # a hold taken back before an answer ran book again (`unpark`): not taken back twice
        {"kind": "undo", "instance": "book", "tool": "hold_room",
         "args": pack((("Oslo Grand", "May 1-2"), {}))},
        {"kind": "unpark", "instance": "book", "undo": 0},
        {"kind": "undo", "instance": "book", "tool": "hold_room",
         "args": pack((("Oslo Grand", "May 3-5"), {}))},
        {"kind": "ledger", "intent": "pay/charge_card#1", "result": pack("charge:1")},
        {"kind": "task", "task": "t3", "instance": "notify", "node": "notify"},
    ])  # fmt: skip
    point = FailurePoint("notify", 1, "send_mail")
    names = ["book", "confirm", "notify", "pay", "plan"]
    run = AppRun(app, "resume", point, trace, tmp_path / "t.sqlite", names, mode="recover")
    try:
        states = {n: i.state for n, i in run.instances.items()}
        assert states == {"plan": "done", "book": "cancelled", "notify": "run"}
        assert run.instances["plan"].writes == {"dates"}
        assert run.by_task["t2"] is run.instances["book"]
        assert run.ledger == {"pay/charge_card#1": "charge:1"}
        assert run.instances["book"].calls == 1 and len(run.instances["book"].undo) == 1
        (module, _), *_ = app.tools["hold_room"].places
        world = module.WORLD["hotel"]
        before = len(world)
        run.instances["book"].undo[0]()
        assert world[before:] == [("release", "Oslo Grand", "May 3-5")]
        assert [e["seq"] for e in run.trace.events] == list(range(7))
        run.trace.event("localize", instance="notify")
        _, written = read_trace_file(trace)
        assert written[-1] == {**written[-1], "seq": 7, "ev": "localize"}  # numbered on
    finally:
        run.trace.close()
        run.driver.close()
