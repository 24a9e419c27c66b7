"""`run recovery --app` on graph shapes beyond trip booking's, each a fixture app written as a
user writes one (tests/fixtures/apps/): a `Send` fan-out (fanout_digest), a ReAct loop through a
conditional edge (react_refunds), async-only nodes and tools (async_shop), a subgraph node
(research_subgraph: its checkpoints are restore points inside it); and a shape refused up
front (a subgraph inside a subgraph). Each supported shape is judged by SemanticRecovery.

The unmarked tests run under 20 s each (one pilot run, a few cells, one TLC run); the loop's
whole matrix is slow-marked.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Run, invoke, read_trace_file, run_cli

APPS = ROOT / "tests" / "fixtures" / "apps"


def _run(out: Path, app: str, tools: str, given: str, *policies: str) -> Run:
    args = ["run", "recovery", "--app", f"{APPS / app}:build", "--tools", APPS / tools]
    args += ["--input", given]
    for policy in policies:
        args += ["--policy", policy]
    run = run_cli(*args, "--out", out, "--format", "json", "--no-progress", timeout=300)
    run.assert_no_traceback()
    return run


def _rows(run: Run) -> dict[str, tuple[int, int, int]]:
    rows = run.json()["figures"]["audit"]["policies"]
    return {r["policy"]: (r["restores"], r["unsafe_restores"], r["blocks"]) for r in rows}


def _cells(run: Run) -> dict[str, dict[str, Any]]:
    return {c["cell"]: c for c in run.json()["cells"]}


def test_a_send_fan_out_is_localized_to_the_failed_branch(tmp_path: Path) -> None:
    """Three summarizers fanned out with `Send`. When the first fails before its siblings
    start, LangGraph keeps them as cancelled tasks (`CancelledError()`): they are not failures,
    so the failure is still localized to one task (before, such a cell was not recorded)."""
    run = _run(tmp_path, "fanout_digest.py", "fanout_digest_tools.json", '{"topic": "tla"}')
    cells = _cells(run)
    assert len(cells) == 12 and all(c["status"] in ("conforms", "violates") for c in cells.values())
    rows = _rows(run)
    assert {p: rows[p] for p in ("retry", "resume", "admissible")} == {
        "retry": (0, 0, 0),
        "resume": (3, 0, 0),
        "admissible": (3, 0, 0),
    }
    # the fork re-runs the committed summarizers of the failed step with it; a summarizer
    # LangGraph cancelled before it started had not committed (thread timing decides)
    (native,) = [r for r in run.json()["figures"]["audit"]["policies"] if r["policy"] == "native"]
    assert native["restores"] == 3
    assert set(native["properties"]) <= {"PreserveCommitted"}
    # native breaks the contract where a summarizer had committed (thread timing decides)
    assert run.returncode == (1 if native["properties"] else 0), run
    assert run.json()["figures"]["audit"]["instances"] == [
        "reduce", "split", "summarize", "summarize#2", "summarize#3"
    ]  # fmt: skip


def test_an_async_graph_runs_through_ainvoke_and_is_judged(tmp_path: Path) -> None:
    run = _run(tmp_path, "async_shop.py", "async_shop_tools.json", '{"customer": "ada"}')
    assert run.returncode == 1, run
    assert _rows(run) == {
        "retry": (0, 0, 0),
        "native": (4, 3, 0),
        # the holder failed after charging the card: its entry lies before an irreversible
        # effect; admissible blocks there, resume restores and is rejected
        "resume": (4, 1, 0),
        "admissible": (3, 0, 1),
    }
    cells = _cells(run)
    assert cells["admissible/hold.2-reserve"]["notes"]["outcome"] == "blocked"
    assert cells["resume/hold.2-reserve"]["verdict"].startswith("violates BlockWhenNone")
    # the reversible reservation, taken back by its async undo when the step is rolled back
    assert cells["native/notify.1-mail"]["notes"]["effects"]["undone"] == 1


def test_an_async_sibling_cancelled_mid_run_is_rolled_back_with_the_failed_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With async nodes LangGraph cancels a sibling still running when a node fails, and runs
    it again from its start on resume: the restore must say so (`also`), or the trace begins
    the sibling twice and is rejected. The notifier's mailer waits (an awaited event that is
    never set) on its first call, so it is surely running when the holder fails."""
    from rctools.recovery.app import load_app
    from rctools.recovery.appengine import AppRun, FailurePoint, pilot

    spec = f"{APPS / 'async_shop.py'}:build"
    app = load_app(spec, APPS / "async_shop_tools.json", {"customer": "ada"})
    instances, _ = pilot(app, tmp_path)
    module = importlib.import_module(app.factory.__module__)
    calls = []

    async def mail(to: str, body: str) -> str:
        calls.append(to)
        if len(calls) == 1:
            await asyncio.Event().wait()  # cancelled by LangGraph, never set
        return "sent"

    monkeypatch.setattr(module, "mail", mail)
    point = FailurePoint("hold", 1, "charge")
    trace = tmp_path / "t.jsonl"
    result = AppRun(app, "resume", point, trace, tmp_path / "t.sqlite", instances).run()
    assert result.outcome == "completed"
    _, events = read_trace_file(trace)
    (restore,) = [e for e in events if e["ev"] == "restore"]
    assert restore["instance"] == "hold" and restore["also"] == ["notify"]
    begins = [e["instance"] for e in events if e["ev"] == "begin"]
    assert begins.count("notify") == 2  # again after the restore, as LangGraph runs it
    check = invoke("check", trace, "--no-progress")
    assert check.returncode == 0, check


def test_a_react_loop_blocks_only_after_the_refund(tmp_path: Path) -> None:
    """The agent and its tool node alternate through a conditional edge: every execution is an
    instance of its own (tools, tools#2)."""
    given = '{"customer": "ada", "order": "o1"}'
    run = _run(tmp_path, "react_refunds.py", "react_refunds_tools.json", given, "admissible")
    assert run.returncode == 0, run
    cells = _cells(run)
    assert set(cells) == {
        "admissible/tools.1-lookup_order",
        "admissible/tools#2.1-issue_refund",
        "admissible/tools#2.2-email",
    }
    # the mail fails after the refund went out: the node's entry lies before it
    assert cells["admissible/tools#2.2-email"]["notes"]["outcome"] == "blocked"
    assert _rows(run) == {"admissible": (2, 0, 1)}


@pytest.mark.slow
def test_a_react_loop_every_policy(tmp_path: Path) -> None:
    given = '{"customer": "ada", "order": "o1"}'
    run = _run(tmp_path, "react_refunds.py", "react_refunds_tools.json", given)
    assert run.returncode == 1, run
    assert _rows(run) == {
        "retry": (0, 0, 0),
        "native": (3, 1, 0),
        "resume": (3, 1, 0),
        "admissible": (2, 0, 1),
    }


def test_a_subgraph_node_is_restored_to_a_checkpoint_inside_it(tmp_path: Path) -> None:
    """The research subgraph (search; tell the editor, irreversible; write a draft) is one
    instance; LangGraph's checkpoints inside it are its restore points, and resuming a failed
    subgraph goes back to the latest one. A failure at the draft: the entry lies before the
    editor's message, the point after it does not -- `admissible` and `resume` restore there,
    `native`'s fork starts the subgraph again and is rejected."""
    given = '{"topic": "tla"}'
    run = _run(tmp_path, "research_subgraph.py", "research_subgraph_tools.json", given)
    assert run.returncode == 1, run
    assert _rows(run) == {
        "retry": (0, 0, 0),
        "native": (3, 1, 0),
        "resume": (3, 0, 0),
        "admissible": (3, 0, 0),
    }
    rows = {r["policy"]: r for r in run.json()["figures"]["audit"]["policies"]}
    assert rows["native"]["properties"] == {"RestoreSound": 1}
    assert rows["admissible"]["restores_to_point"] == 2
    cells = _cells(run)
    _, events = read_trace_file(Path(cells["admissible/research.2-save_draft"]["trace"]))
    (restore,) = [e for e in events if e["ev"] == "restore"]
    assert (restore["boundary"], restore["point"]) == ("point", "research@2")
    points = [e["point"] for e in events if e["ev"] == "checkpoint"]
    assert points[:2] == ["research@1", "research@2"]  # after search, after the message


NESTED = """
from typing import TypedDict
from langgraph.graph import END, START, StateGraph

class S(TypedDict, total=False):
    topic: str

def search(topic: str) -> str:
    return topic

def _graph(node):
    graph = StateGraph(S)
    graph.add_node("inner", node)
    graph.add_edge(START, "inner")
    graph.add_edge("inner", END)
    return graph

def build(checkpointer):
    innermost = _graph(lambda s: {"topic": search(s["topic"])}).compile()
    return _graph(_graph(innermost).compile()).compile(checkpointer=checkpointer)
"""


def test_a_subgraph_inside_a_subgraph_is_refused_up_front(tmp_path: Path) -> None:
    app = tmp_path / "nested.py"
    app.write_text(NESTED)
    tools = tmp_path / "tools.json"
    tools.write_text('{"tools": {"search": {"policy": "none"}}}')
    run = invoke(
        "run", "recovery", "--app", f"{app}:build", "--tools", tools,
        "--input", '{"topic": "tla"}', "--out", tmp_path / "out", "--no-progress",
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert "subgraphs inside subgraphs are not supported yet" in run.stderr


def test_a_cancelled_sibling_is_no_failure() -> None:
    """What LangGraph keeps as a task's error: the failure, or a sibling cancelled because of it
    (as the object on the in-memory saver, as its repr on SQLite). Whether the fan-out test
    meets a cancelled sibling depends on thread timing; this does not."""
    from rctools.recovery.appengine import InjectedFailure, _failed

    assert _failed(InjectedFailure("cache_put")) and _failed("InjectedFailure('x failed')")
    assert not _failed(None)
    assert not _failed(asyncio.CancelledError()) and not _failed("CancelledError()")


@pytest.mark.parametrize(("policy", "verdict"), [("admissible", 0), ("resume", 1)])
def test_a_sibling_rerun_after_an_irreversible_effect_makes_admissible_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, verdict: int
) -> None:
    """The notifier fails while the holder, in the same step, has charged the card and waits
    on its reservation (an awaited event never set): LangGraph cancels the holder and will run
    it again on resume, so restoring the notifier's entry -- admissible by itself -- rolls back
    a charge. `admissible` blocks (found with --kill, where the holder dies the same way);
    `resume` restores and is rejected for BlockWhenNone and PreserveCommitted. The localize
    names the holder (`with`), so the contract counts the block as necessary: no restore of the
    notifier is admissible with the holder rolled back."""
    from rctools.recovery.app import load_app
    from rctools.recovery.appengine import AppRun, FailurePoint, pilot

    spec = f"{APPS / 'async_shop.py'}:build"
    app = load_app(spec, APPS / "async_shop_tools.json", {"customer": "ada"})
    instances, _ = pilot(app, tmp_path)
    module = importlib.import_module(app.factory.__module__)
    calls = []

    async def reserve(item: str) -> str:
        calls.append(item)
        if len(calls) == 1:
            await asyncio.Event().wait()  # cancelled by LangGraph, never set
        return f"r:{item}"

    monkeypatch.setattr(module, "reserve", reserve)
    trace = tmp_path / "t.jsonl"
    point = FailurePoint("notify", 1, "mail")
    result = AppRun(app, policy, point, trace, tmp_path / "t.sqlite", instances).run()
    _, events = read_trace_file(trace)
    (localize,) = [e for e in events if e["ev"] == "localize"]
    assert localize["with"] == ["hold"]
    if policy == "admissible":
        assert result.outcome == "blocked"
        (block,) = [e for e in events if e["ev"] == "block"]
        assert block["reason"] == "restoring would re-run hold"
    else:
        (restore,) = [e for e in events if e["ev"] == "restore"]
        assert restore["also"] == ["hold"]
    check = invoke("check", trace, "--no-progress", "--format", "json")
    assert check.returncode == verdict, check
    (judged,) = check.json()["traces"]
    if verdict:
        assert judged["properties"] == ["BlockWhenNone", "PreserveCommitted"]
    else:
        assert (judged["summary"]["blocks"], judged["summary"]["needless_blocks"]) == (1, 0)
