"""LangChain callbacks: task attempts and tool calls.

A task attempt is the run whose name equals `metadata["langgraph_node"]`; its task id is the
last part of `langgraph_checkpoint_ns` and its chain the part before (a subgraph's tasks run
in their subgraph's namespace). LangGraph calls these callbacks for every node of every graph
and subgraph, so the apps need nothing from the project. An interrupt arrives as
`on_chain_error(GraphInterrupt)`. A tool run (`on_tool_start`) inside a task is an effect:
its intent is the tool's name and a digest of its input, its kind the tool's name.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphInterrupt

from rctools.langgraph.observe import value_id
from rctools.langgraph.recorder import Attempt, Recorder

T = TypeVar("T")


class NodeCallbacks(BaseCallbackHandler, Generic[T]):
    """A node's own runs, from LangGraph's callbacks: the run whose name equals
    `metadata["langgraph_node"]` starts (`node_started`, which keeps what it tracks in `runs`
    under the run's id), then ends (`node_finished`) or raises (`node_failed`, an interrupt
    included). One place decides which chain runs are nodes, for the recorder and for the
    recovery suite's engine."""

    raise_error = True
    run_inline = True

    def __init__(self) -> None:
        self.runs: dict[UUID, T] = {}

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        metadata = metadata or {}
        node = metadata.get("langgraph_node")
        if node and kwargs.get("name") == node:
            self.node_started(run_id, node, metadata, inputs)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        tracked = self.runs.pop(run_id, None)
        if tracked is not None:
            self.node_finished(tracked, outputs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        tracked = self.runs.pop(run_id, None)
        if tracked is not None:
            self.node_failed(tracked, error)

    def node_started(self, run_id: UUID, node: str, metadata: dict[str, Any], inputs: Any) -> None:
        """A node's run started: track it in `runs[run_id]`, or leave it untracked."""
        raise NotImplementedError

    def node_finished(self, tracked: T, outputs: Any) -> None:
        """A tracked run returned `outputs`."""
        raise NotImplementedError

    def node_failed(self, tracked: T, error: BaseException) -> None:
        """A tracked run raised `error` (an interrupt is a `GraphInterrupt`)."""
        raise NotImplementedError


class RecorderCallbacks(NodeCallbacks[Attempt]):
    """Feeds task starts and ends and tool calls to the recorder; a SIGKILL may land right
    after a task's start or end."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    def node_started(self, run_id: UUID, node: str, metadata: dict[str, Any], inputs: Any) -> None:
        attempt = self.recorder.task_started(metadata)
        if attempt is None:
            return
        self.runs[run_id] = attempt
        self.recorder.kill.hit(f"start {node}")

    def node_finished(self, tracked: Attempt, outputs: Any) -> None:
        self.recorder.task_finished(tracked, "ok", None)
        self.recorder.kill.hit(f"end {tracked.node}")

    def node_failed(self, tracked: Attempt, error: BaseException) -> None:
        outcome = "interrupt" if isinstance(error, GraphInterrupt) else "error"
        self.recorder.task_finished(tracked, outcome, error)
        self.recorder.kill.hit(f"end {tracked.node}")

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        name = str(kwargs.get("name") or (serialized or {}).get("name") or "tool")
        given = inputs if inputs is not None else input_str
        self.recorder.effect(metadata or {}, f"{name}:{value_id(given)}", name)
