"""Every checkpointer backend runs a real LangGraph graph, and what it saved outlives the process.

The servers are real (see services.py); the second process is a real subprocess that opens the
same store (`RESUME_CHECK_STORE`) and reads the thread through the graph, which is what a
resume after a crash does. Run as a script, this module is that second process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from rctools.langgraph.backends import (
    BACKENDS,
    DURABLE,
    STORE_VAR,
    BackendError,
    aopen_saver,
    api_of,
    open_saver,
    resolve,
)
from services import services  # noqa: F401  (session fixture: the real servers)

THREAD = "t-1"
CONFIG = {"configurable": {"thread_id": THREAD}}

# What each saver really implements; a package release that changes it must be noticed.
EXPECTED_API = {
    "memory": {"sync", "async"},
    "sqlite": {"sync"},
    "sqlite-async": {"async"},
    "postgres": {"sync"},
    "postgres-async": {"async"},
    "redis": {"sync"},
    "redis-async": {"async"},
    "lmdb": {"sync"},
    "lmdb-async": {"async"},
    "objectstorage": {"sync", "async"},
    "mysql": {"sync"},
    "mysql-async": {"async"},
    "valkey": {"sync"},
    "valkey-async": {"async"},
    "dynamodb": {"sync", "async"},
    "dynamodb-checkpoint": {"sync", "async"},
}


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def first(state: State) -> dict[str, list[str]]:
    return {"log": ["first"]}


def second(state: State) -> dict[str, list[str]]:
    return {"log": ["second"]}


def ask(state: State) -> dict[str, list[str]]:
    return {"log": [f"answer:{interrupt('question')}"]}


def two_nodes(middle: Any = first) -> StateGraph:
    """START -> middle -> second -> END."""
    builder = StateGraph(State)
    builder.add_sequence([("middle", middle), second])
    builder.add_edge(START, "middle")
    builder.add_edge("second", END)
    return builder


class Driver:
    """A graph compiled with a backend's saver, driven through `api` or else the API the saver
    implements (sync if it has it); one event loop lives as long as the driver, since async
    savers are bound to the loop they were opened in."""

    def __init__(self, backend: str, builder: StateGraph, api: str | None = None) -> None:
        self.backend, self.builder, self.use = backend, builder, api

    def __enter__(self) -> Driver:
        self.loop = asyncio.Runner()
        self.stack = contextlib.AsyncExitStack()
        saver = self.loop.run(self.stack.enter_async_context(aopen_saver(resolve(self.backend))))
        self.api = api_of(saver)
        self.sync = self.use == "sync" if self.use else "sync" in self.api
        self.graph = self.builder.compile(checkpointer=saver)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.run(self.stack.aclose())
        self.loop.close()

    def invoke(self, value: Any) -> dict[str, Any]:
        if self.sync:
            return self.graph.invoke(value, CONFIG)
        return self.loop.run(self.graph.ainvoke(value, CONFIG))

    def state(self) -> dict[str, Any]:
        """The thread's latest checkpoint as plain JSON-able data."""
        if self.sync:
            snapshot = self.graph.get_state(CONFIG)
        else:
            snapshot = self.loop.run(self.graph.aget_state(CONFIG))
        return {
            "values": snapshot.values,
            "next": list(snapshot.next),
            "checkpoint_id": snapshot.config["configurable"].get("checkpoint_id"),
            "interrupts": [i.value for i in snapshot.interrupts],
        }


def in_fresh_process(action: str, backend: str) -> dict[str, Any]:
    """Runs this module as a script: a new interpreter with the same environment and store."""
    proc = subprocess.run(
        [sys.executable, __file__, action, backend],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, services: dict[str, str]) -> Path:  # noqa: F811
    monkeypatch.setenv(STORE_VAR, str(tmp_path / "store"))
    return tmp_path / "store"


DURABLE_ONLY = [
    pytest.param(
        name,
        marks=pytest.mark.skip(reason="InMemorySaver keeps state in process memory only")
        if name not in DURABLE
        else (),
    )
    for name in BACKENDS
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_of_each_backend(backend: str, store: Path) -> None:
    with Driver(backend, two_nodes()) as driver:
        assert driver.api == EXPECTED_API[backend]


@pytest.mark.parametrize("backend", DURABLE_ONLY)
def test_final_checkpoint_is_seen_by_a_fresh_process(backend: str, store: Path) -> None:
    with Driver(backend, two_nodes()) as driver:
        assert driver.invoke({"log": []}) == {"log": ["first", "second"]}
        here = driver.state()
    assert here["values"] == {"log": ["first", "second"]}
    assert here["next"] == []
    assert in_fresh_process("state", backend) == here


@pytest.mark.parametrize(
    ("backend", "api"), [(name, api) for name in BACKENDS for api in sorted(EXPECTED_API[name])]
)
def test_interrupt_then_resume(backend: str, api: str, store: Path) -> None:
    with Driver(backend, two_nodes(ask), api) as driver:
        parked = driver.invoke({"log": []})
        assert [i.value for i in parked["__interrupt__"]] == ["question"]
        assert driver.state()["next"] == ["middle"]
        assert driver.state()["interrupts"] == ["question"]
        assert driver.invoke(Command(resume="yes")) == {"log": ["answer:yes", "second"]}
        assert driver.state()["next"] == []


@pytest.mark.parametrize("backend", DURABLE_ONLY)
def test_a_fresh_process_resumes_a_parked_interrupt(backend: str, store: Path) -> None:
    with Driver(backend, two_nodes(ask)) as driver:
        driver.invoke({"log": []})
    resumed = in_fresh_process("resume", backend)
    assert resumed["values"] == {"log": ["answer:later", "second"]}
    with Driver(backend, two_nodes(ask)) as driver:
        assert driver.state() == resumed


def test_a_bad_spec_is_a_clear_error() -> None:
    for spec, message in [
        ("nosuch", "unknown backend 'nosuch'"),
        ("rctools.nosuch:make", "cannot import 'rctools.nosuch'"),
        ("rctools.langgraph.backends:nosuch", "has no callable 'nosuch'"),
    ]:
        with pytest.raises(BackendError, match=message):
            resolve(spec)


def test_open_saver_refuses_an_async_only_backend(store: Path) -> None:
    with (
        pytest.raises(BackendError, match="aopen_saver"),
        open_saver(resolve("sqlite-async")),
    ):
        pass


def test_a_backend_without_its_store_variable_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(STORE_VAR, raising=False)
    with pytest.raises(BackendError, match=STORE_VAR), open_saver(resolve("sqlite")):
        pass


def _second_process(action: str, backend: str) -> None:
    builder = two_nodes(ask) if action == "resume" else two_nodes()
    with Driver(backend, builder) as driver:
        if action == "resume":
            driver.invoke(Command(resume="later"))
        print(json.dumps(driver.state()))


if __name__ == "__main__":
    _second_process(sys.argv[1], sys.argv[2])
