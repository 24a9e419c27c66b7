"""A user's LangGraph graph under a revision (the first slice of `run revision --app`).

tests/fixtures/revapp/plan_execute.py is plain user code (LLMCompiler's shape: a planner, two
tool calls in parallel, a joiner). A later user message -- a new value of an input channel --
arrives inside each of its model calls in turn; the suffix policy recovers on LangGraph's own
checkpoints and DagRevision judges every run. A runtime that skips revalidation is caught, and
shapes the slice cannot run are refused with their own message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint
from rctools.langgraph.app import load_factory
from rctools.revision.app import (
    AppRevisionRun,
    UnsupportedApp,
    count_calls,
    record_app,
    workflow_of,
)
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status

APP = str(Path(__file__).parent / "fixtures" / "revapp" / "plan_execute.py") + ":make_graph"
INPUTS = {"request": "r0", "notes": "n0"}


def _run(tmp_path: Path, path: str, at: int, **patch: Any) -> Path:
    factory = load_factory(APP)
    run = AppRevisionRun(factory, INPUTS, path, f"{path}-v1", at, tmp_path / f"{path}{at}.db")
    for name, value in patch.items():
        setattr(run, name, value)
    return run.run(tmp_path / f"{path}-{at}.jsonl").trace


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


def test_a_revision_in_every_model_call_recovers_and_conforms(tmp_path: Path) -> None:
    calls = count_calls(load_factory(APP), INPUTS)
    assert calls == 4
    traces = [
        _run(tmp_path, path, at) for path in ("notes", "request") for at in range(1, calls + 1)
    ]
    verdicts = judge(traces, spec_paths=default_spec_paths())
    bad = {
        v.path.name: (v.reason, v.properties) for v in verdicts if v.status is not Status.CONFORMS
    }
    assert bad == {}
    revised = [t for t in traces if '"plan", "mode": "suffix", "cancel": ["' in t.read_text()]
    assert revised  # some revision did cancel work in flight


def test_a_runtime_blind_to_stale_work_is_caught(tmp_path: Path) -> None:
    """Revised inside lookup's model call: a runtime that sees nothing stale keeps lookup,
    which read the old notes, in a suffix plan and commits it."""
    trace = _run(tmp_path, "notes", 2, _stale=lambda a: False)
    (verdict,) = judge([trace], spec_paths=default_spec_paths())
    assert verdict.status is Status.VIOLATES
    assert verdict.properties == ["FailClosed", "PlanSoundness"]


def test_the_seed_draws_the_model_call(tmp_path: Path) -> None:
    one = record_app(APP, INPUTS, "notes", "n1", 7, tmp_path / "a.jsonl", tmp_path)
    (tmp_path / "app.sqlite").unlink()
    two = record_app(APP, INPUTS, "notes", "n1", 7, tmp_path / "b.jsonl", tmp_path)
    assert (one.revised_in, one.calls) == (two.revised_in, two.calls)


def test_the_functional_api_is_refused_up_front() -> None:
    @entrypoint(checkpointer=InMemorySaver())
    def flow(inputs: dict[str, Any]) -> dict[str, Any]:
        return inputs

    with pytest.raises(UnsupportedApp, match="functional API"):
        workflow_of(flow, INPUTS)
