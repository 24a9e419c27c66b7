"""`run recovery --app --answer`: a graph that parks at `interrupt()` in a node, under the audit.

LangGraph runs a parked node again from its start when the answer comes. The suite answers
(`Command(resume=...)`), and before that takes back what the parked attempt did that can be
taken back, so its declared calls come again by the same intents and the ledger replays an
irreversible one. Fixtures: deposit_desk (a node charges a deposit, holds a room, then asks),
and lc_agent, built with LangChain's `create_agent` (its tools are LangChain tool objects, its
approval `HumanInTheLoopMiddleware`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Run, invoke, read_trace_file

APPS = ROOT / "tests" / "fixtures" / "apps"
DESK = f"{APPS / 'deposit_desk.py'}:build"
AGENT_INPUT = '{"messages": [{"role": "user", "content": "refund order 42"}]}'
APPROVE = '{"decisions": [{"type": "approve"}]}'


def _run(out: Path, app: str, tools: str, given: str, *more: str) -> Run:
    run = invoke(
        "run", "recovery", "--app", app, "--tools", APPS / tools, "--input", given, *more,
        "--out", out, "--format", "json", "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    return run


def _verdicts(run: Run) -> dict[str, tuple[str, list[str]]]:
    return {c["cell"]: (c["status"], c["properties"]) for c in run.json()["cells"]}


def _events(run: Run, cell: str) -> list[dict[str, Any]]:
    (found,) = [c for c in run.json()["cells"] if c["cell"] == cell]
    return read_trace_file(Path(found["trace"]))[1]


def test_an_answered_node_runs_again_and_its_irreversible_call_is_replayed(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, DESK, "deposit_desk_tools.json", '{"guest": "ada"}', "--answer", "true")
    assert run.returncode == 1, run
    verdicts = _verdicts(run)
    assert len(verdicts) == 16
    # a failure at the hold, after the deposit was charged in the same node: its entry lies
    # before an irreversible effect -- restoring it there is refused, admissible blocks
    broken = {cell: v for cell, v in verdicts.items() if v[0] != "conforms"}
    assert broken == {
        "native/hold.2-hold_room": ("violates", ["BlockWhenNone"]),
        "resume/hold.2-hold_room": ("violates", ["BlockWhenNone"]),
    }
    # the failure after the park: hold ran twice (parked, then answered), its deposit charged
    # once and replayed once by the same intent, its room held again by the same intent after
    # the first hold was taken back
    events = _events(run, "resume/confirm.1-send_mail")
    assert [e["ev"] for e in events].count("begin") == 3  # quote, hold, confirm: once each
    charges = [e for e in events if e["ev"] == "effect" and e["tool"] == "charge_deposit"]
    assert [(c["intent"], c.get("replayed", False)) for c in charges] == [
        ("hold/charge_deposit#1", False),
        ("hold/charge_deposit#1", True),
    ]
    holds = [e["intent"] for e in events if e["ev"] == "effect" and e["tool"] == "hold_room"]
    assert holds == ["hold/hold_room#2", "hold/hold_room#2"]
    (cell,) = [c for c in run.json()["cells"] if c["cell"] == "resume/confirm.1-send_mail"]
    assert cell["notes"]["effects"]["undone"] == 1  # the first hold, before the answer


@pytest.mark.parametrize(
    ("factory", "tools", "more", "names"),
    [
        ("build", "lc_agent_tools.json", ("--answer", APPROVE), ("lookup_order", "issue_refund")),
        ("build_unattended", "lc_agent_tools.json", (), ("lookup_order", "issue_refund")),
        # plain functions, made into tools when the graph is built: the graph holds them from
        # then on, so they are wrapped before it is built (before: "called no declared tool")
        ("build_plain", "lc_agent_plain_tools.json", (), ("find_order", "refund_order")),
    ],
)
def test_a_create_agent_app_runs_under_the_audit(
    tmp_path: Path, factory: str, tools: str, more: tuple[str, ...], names: tuple[str, str]
) -> None:
    """LangChain's `create_agent`: a model node, a tools node fed by `Send`, the approval
    middleware's node that parks (`build`); its tools `@tool` objects the graph holds, wrapped
    inside the object, or plain functions."""
    run = _run(tmp_path, f"{APPS / 'lc_agent.py'}:{factory}", tools, AGENT_INPUT, *more)
    assert run.returncode == 0, run
    verdicts = _verdicts(run)
    assert sorted({v[0] for v in verdicts.values()}) == ["conforms"], verdicts
    lookup, refund = names
    assert sorted(c.split("/")[1] for c in verdicts if c.startswith("resume/")) == [
        f"tools#2.1-{refund}",
        f"tools.1-{lookup}",
    ]
    events = _events(run, f"admissible/tools#2.1-{refund}")
    assert [e["tool"] for e in events if e["ev"] == "effect"] == [lookup, refund]


def test_a_parked_graph_needs_an_answer(tmp_path: Path) -> None:
    run = invoke(
        "run", "recovery", "--app", DESK, "--tools", APPS / "deposit_desk_tools.json",
        "--input", '{"guest": "ada"}', "--out", tmp_path, "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert "parked at an interrupt(); give --answer JSON" in run.stderr
    for args, message in (
        (["--answer", "true"], "go with --app"),
        (["--app", DESK, "--tools", APPS / "deposit_desk_tools.json", "--answer", "null"],
         "--answer null is no answer"),
    ):  # fmt: skip
        run = invoke("run", "recovery", *args, "--out", tmp_path, "--no-progress")
        run.assert_no_traceback()
        assert run.returncode == 2 and message in run.stderr, (args, run)
