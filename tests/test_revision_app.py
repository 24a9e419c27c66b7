"""A user's LangGraph graph under a revision: `run revision --app MODULE:FACTORY`.

tests/fixtures/revapp/plan_execute.py is plain user code (LLMCompiler's shape: a planner, two
tool calls in parallel, a joiner). A later user message -- a new value of an input channel --
arrives at every point of its run (inside each model call, at each node's start, between each
node's end and its commit); every policy recovers on LangGraph's own checkpoints and DagRevision
judges every run. The stale baseline and a planner blind to stale work are caught, so the
conforming verdicts are earned; shapes the suite cannot run are refused up front.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from rctools.langgraph.app import load_factory
from rctools.revision.app import (
    APP_POLICIES,
    AppRevisionRun,
    Point,
    UnsupportedApp,
    points_of,
    record_app,
    workflow_of,
)
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status
from revision_apps import Judged, RevisedApp

FIXTURE = Path(__file__).parent / "fixtures" / "revapp" / "plan_execute.py"
APP = f"{FIXTURE}:make_graph"
INPUTS = {"request": "r0", "notes": "n0"}


REVISED = RevisedApp(APP, INPUTS, {path: f"{path}-v1" for path in INPUTS})


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    return REVISED.judged(tmp_path_factory.mktemp("revapp"), ("notes", "request"))


def test_the_workflow_is_read_off_langgraph() -> None:
    wf = workflow_of(load_factory(APP)(InMemorySaver()), INPUTS)
    assert wf.order == ["planner", "lookup", "search", "joiner"]
    assert wf.reads == {
        "planner": ["request"],
        "lookup": ["notes"],
        "search": [],
        "joiner": ["request"],
    }
    assert set(wf.edges) == {
        ("planner", "lookup"),
        ("planner", "search"),
        ("lookup", "joiner"),
        ("search", "joiner"),
    }
    labels = [p.label for p in points_of(load_factory(APP), INPUTS)]
    assert labels[:4] == ["call-1", "call-2", "call-3", "call-4"]
    assert {"node-lookup", "commit-lookup", "node-joiner", "commit-joiner"} <= set(labels)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["full", "suffix", "validity"])
def test_recovering_policies_conform_at_every_point(judged: Any, policy: str) -> None:
    mine = {k: v for k, (_, v) in judged.items() if k[1] == policy}
    assert len(mine) == 2 * 12
    bad = {k: (v.reason, v.properties) for k, v in mine.items() if v.status is not Status.CONFORMS}
    assert bad == {}


@pytest.mark.slow
def test_the_stale_baseline_is_caught(judged: Any) -> None:
    stale = {k: v for k, (_, v) in judged.items() if k[1] == "stale"}
    caught = {k for k, v in stale.items() if v.status is Status.VIOLATES}
    # every revision of the request (read by the first node) is caught; of the notes, every
    # one that lookup read before it arrived or joiner builds on
    assert {k for k in stale if k[0] == "request"} <= caught
    assert ("notes", "stale", "commit-lookup") in caught
    # before lookup read the notes nothing is stale, even here
    assert stale[("notes", "stale", "call-1")].status is Status.CONFORMS


def test_validity_reuses_the_parallel_sibling(tmp_path: Path) -> None:
    """Notes revised between lookup's end and its commit (the fast representative of the
    matrix above): every policy recovers and conforms, stale is caught; suffix re-runs the
    whole superstep (search too), validity re-applies search's writes as search and runs
    lookup alone."""
    point = Point("commit", "lookup")
    calls = {p: REVISED.run(tmp_path, "notes", point, p) for p in APP_POLICIES}
    verdicts = judge([c.trace for c in calls.values()], spec_paths=default_spec_paths())
    status = {v.path.name.split("-")[1]: v.status for v in verdicts}
    assert status == {
        "full": Status.CONFORMS,
        "suffix": Status.CONFORMS,
        "validity": Status.CONFORMS,
        "stale": Status.VIOLATES,
    }
    assert calls["validity"].recomputed == ["lookup"]
    assert "search" in calls["suffix"].recomputed
    assert calls["validity"].calls < calls["suffix"].calls < calls["full"].calls
    trace = calls["validity"].trace.read_text().splitlines()
    plans = [json.loads(line) for line in trace if '"plan"' in line]
    assert [p["mode"] for p in plans] == ["selective"]


def _lookup_emails(trace: Path) -> tuple[set[str], list[dict[str, Any]]]:
    events = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    ids = {e["attempt"] for e in events if e["ev"] == "start" and e["node"] == "lookup"}
    return ids, events


def test_an_irreversible_effect_of_your_graph_is_held_sent_once_and_fenced(tmp_path: Path) -> None:
    """Lookup's writes declared an irreversible effect (it e-mails what it found), joiner's a
    revocable one. Notes revised while lookup's step commits: the stale e-mail is never sent,
    the recomputed one once; revised once joiner ran, the e-mail it depends on is out, so the
    revision is refused. The stale baseline sends an e-mail computed from an old request."""
    effects = {"lookup": False, "joiner": True}
    factory = load_factory(APP)
    runs = {}
    for policy in ("full", "suffix", "validity"):
        for point in (Point("commit", "lookup"), Point("commit", "joiner")):
            name = f"{policy}-{point.label}"
            run = AppRevisionRun(
                factory, INPUTS, "notes", "n1", point, policy, tmp_path / f"{name}.db", effects
            )
            runs[name] = run.run(tmp_path / f"{name}.jsonl").trace
    stale = AppRevisionRun(
        factory,
        INPUTS,
        "request",
        "r1",
        Point("node", "lookup"),
        "stale",
        tmp_path / "s.db",
        effects,
    )
    runs["stale"] = stale.run(tmp_path / "stale.jsonl").trace
    verdicts = {v.path.name: v for v in judge(list(runs.values()), spec_paths=default_spec_paths())}
    for name, trace in runs.items():
        if name == "stale":
            assert verdicts[trace.name].properties == ["IrreversibleEffects"]
            continue
        assert verdicts[trace.name].status is Status.CONFORMS, (name, verdicts[trace.name].reason)
        ids, events = _lookup_emails(trace)
        out = [e["ev"] for e in events if e["ev"] in ("publish", "revoke") and e["attempt"] in ids]
        assert out == ["publish"], name
        staged = [e for e in events if e["ev"] == "stage" and e["attempt"] in ids]
        assert all(e["revocable"] is False for e in staged)
        refused = [e for e in events if e["ev"] == "revise" and e.get("accepted") is False]
        assert len(refused) == (1 if name.endswith("commit-joiner") else 0), name


def test_a_planner_blind_to_stale_work_is_caught(tmp_path: Path) -> None:
    """Revised between lookup's end and its commit: a runtime that sees nothing stale keeps
    lookup, which read the old notes."""
    run = REVISED.run(
        tmp_path, "notes", Point("commit", "lookup"), "suffix", _stale=lambda a: False
    )
    (verdict,) = judge([run.trace], spec_paths=default_spec_paths())
    assert verdict.status is Status.VIOLATES
    assert set(verdict.properties) >= {"PlanSoundness"}


def test_the_seed_draws_the_point(tmp_path: Path) -> None:
    one = record_app(APP, INPUTS, "notes", "n1", "validity", 7, tmp_path / "a.jsonl", tmp_path)
    two = record_app(APP, INPUTS, "notes", "n1", "validity", 7, tmp_path / "b.jsonl", tmp_path)
    assert (one.revised_in, one.calls, one.recomputed) == (
        two.revised_in,
        two.calls,
        two.recomputed,
    )


def test_the_functional_api_is_refused_up_front() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    def flow(inputs: dict[str, Any]) -> dict[str, Any]:
        return inputs

    with pytest.raises(UnsupportedApp, match="functional API"):
        workflow_of(flow, INPUTS)


@pytest.mark.slow
def test_the_command_runs_your_graph_and_compares_with_full_and_suffix(tmp_path: Path) -> None:
    done = run_cli(
        "run", "revision", "--policy", "validity", "--app", APP,
        "--input", json.dumps(INPUTS), "--revise", 'notes="n1"', "--out", tmp_path,
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 0, done
    summary = json.loads((tmp_path / "summary.json").read_text())
    figures = summary["figures"]
    assert figures["model_calls"] < figures["suffix_calls"] < figures["full_calls"]
    assert len(summary["cells"]) == 12


FUNCTIONAL = """
from langgraph.func import entrypoint

def make(checkpointer):
    @entrypoint(checkpointer=checkpointer)
    def flow(inputs):
        return inputs
    return flow
"""

NO_CHECKPOINTER = """
def make():
    return None
"""


@pytest.mark.parametrize(
    ("source", "says"),
    [(FUNCTIONAL, "functional API"), (NO_CHECKPOINTER, "make(checkpointer) raised TypeError")],
)
def test_an_unsupported_app_is_refused_with_exit_2(tmp_path: Path, source: str, says: str) -> None:
    app = tmp_path / "userapp.py"
    app.write_text(source)
    done = run_cli(
        "run", "revision", "--policy", "suffix", "--app", f"{app}:make",
        "--input", json.dumps(INPUTS), "--revise", 'notes="n1"', "--out", tmp_path / "out",
    )  # fmt: skip
    done.assert_no_traceback()
    assert done.returncode == 2, done
    assert says in done.stderr
