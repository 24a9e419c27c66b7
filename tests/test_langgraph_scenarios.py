"""The built-in matrix scenarios for what people build, recorded from real LangGraph runs on
real SQLite files and judged: `invoke(None)` on a parked thread re-delivers a consumed answer
(CO, LangGraph's), several threads with ids that share prefixes and several subgraph
namespaces on one saver stay apart, a hand-built ReAct loop with an approval inside conforms;
and the recorder items: a fork's content equals its source's, a subgraph's loads are nested,
an answer consumed in exit durability is stored with the write that received it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rctools.langgraph.backends import resolve
from rctools.langgraph.driver import run_cell
from rctools.langgraph.scenarios import ALL
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Verdict

pytestmark = pytest.mark.slow

CELLS = (
    ("invoke-none", "sync"),
    ("invoke-none", "async"),
    ("threads", "sync"),
    ("threads-subgraph", "sync"),
    ("threads-subgraph", "exit"),
    ("react-approval", "sync"),
    ("fork", "async"),
    ("two-interrupts", "exit"),
    ("subgraph", "exit"),
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Verdict]]:
    work = tmp_path_factory.mktemp("scenarios")
    traces = {}
    for name, durability in CELLS:
        folder = work / f"{name}.{durability}"
        shutil.rmtree(folder, ignore_errors=True)
        run = run_cell(folder, ALL[name], durability, resolve("sqlite"), "sqlite")
        assert run.failure is None, run.failure
        traces[f"{name}.{durability}"] = run.trace
    verdicts = {v.path: v for v in judge(list(traces.values()), spec_paths=default_spec_paths())}
    return {key: (path, verdicts[path]) for key, path in traces.items()}


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_invoke_none_on_a_parked_thread_redelivers_the_consumed_answer_as_co(
    recorded: dict[str, tuple[Path, Verdict]], durability: str
) -> None:
    path, verdict = recorded[f"invoke-none.{durability}"]
    assert verdict.status.value == "violates" and "CO" in verdict.properties, verdict.reason
    event = _events(path)[verdict.event_index - 1]
    # the task ends having received, for its second question, the answer to its first
    assert event["ev"] == "task_end" and len(event["resumed"]) == 2
    first, second = event["resumed"]
    assert first["value"] == second["value"] and first["interrupt"] != second["interrupt"]
    answered = [e["interrupt"] for e in _events(path) if e["ev"] == "resume"]
    assert answered == [first["interrupt"]]  # nobody answered the second question


@pytest.mark.parametrize(
    "cell",
    ["threads.sync", "threads-subgraph.sync", "threads-subgraph.exit", "react-approval.sync"],
)
def test_these_cells_conform_and_end(recorded: dict[str, tuple[Path, Verdict]], cell: str) -> None:
    _, verdict = recorded[cell]
    assert verdict.status.value == "conforms", verdict.reason
    assert verdict.summary.get("end") == "done"


def test_threads_with_shared_prefixes_and_namespaces_share_one_saver(
    recorded: dict[str, tuple[Path, Verdict]],
) -> None:
    events = _events(recorded["threads-subgraph.sync"][0])
    assert {e["thread"] for e in events if "thread" in e} == {"t1", "t10", "t1:a"}
    namespaces = {(e["thread"], e["ns"]) for e in events if e.get("ns")}
    assert len({ns for _, ns in namespaces}) == 3 and len(namespaces) == 3
    # the threads interleave: the second thread starts before the first is done
    loads = [e["thread"] for e in events if e["ev"] == "load" and not e.get("ns")]
    assert loads[:3] == ["t1", "t10", "t1:a"]


def test_a_subgraph_load_is_nested(recorded: dict[str, tuple[Path, Verdict]]) -> None:
    events = _events(recorded["threads-subgraph.sync"][0])
    loads = [e for e in events if e["ev"] == "load"]
    assert loads and all(bool(e.get("nested")) == bool(e.get("ns")) for e in loads)
    assert any(e.get("nested") for e in loads)
    # each names its host: a task of its thread started before it, one namespace up
    for i, load in enumerate(events):
        if load["ev"] == "load" and load.get("nested"):
            hosts = {
                e["task"]
                for e in events[:i]
                if e["ev"] == "task_start"
                and e["thread"] == load["thread"]
                and load["ns"].startswith(e.get("ns") or "")
                and e.get("ns", "") != load["ns"]
            }
            assert load.get("under") in hosts, load


def test_a_fork_has_its_sources_content_digest(recorded: dict[str, tuple[Path, Verdict]]) -> None:
    path, verdict = recorded["fork.async"]
    assert verdict.status.value == "conforms", verdict.reason
    events = _events(path)
    digest = {e["checkpoint"]: e["digest"] for e in events if e["ev"] == "put"}
    forks = [e for e in events if e["ev"] == "fork"]
    assert forks
    for fork in forks:
        assert digest[fork["checkpoint"]] == digest[fork["parent"]]
    # every checkpoint is made with the content it is saved with, a fork copy with its source's
    made = [e for e in events if e["ev"] in ("step", "fork", "update")]
    assert made and all(e["digest"] == digest[e["checkpoint"]] for e in made)


@pytest.mark.parametrize("cell", ["two-interrupts.exit", "subgraph.exit"])
def test_exit_durability_answers_and_subgraphs_conform(
    recorded: dict[str, tuple[Path, Verdict]], cell: str
) -> None:
    """Answers consumed in memory are stored with the write that received them; a subgraph
    that completes saves nothing of its own (its loads are nested)."""
    _, verdict = recorded[cell]
    assert verdict.status.value == "conforms", verdict.reason


def test_the_scripted_chat_model_answers_through_the_async_api_too() -> None:
    """LangChain's default async path hands `run_manager` to `_generate` by position: the
    `react` scenario's model must take it, or every async cell of it fails in the model."""
    import asyncio

    from langchain_core.messages import HumanMessage
    from rctools.langgraph.scenarios import ScriptedChatModel

    model = ScriptedChatModel(script=["first", "second"])
    assert asyncio.run(model.ainvoke([HumanMessage("hi")])).content == "first"
    assert model.invoke([HumanMessage("hi")]).content == "first"
