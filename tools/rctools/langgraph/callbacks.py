"""LangChain callbacks: task attempts and tool calls.

A task attempt is the run whose name equals `metadata["langgraph_node"]`; its task id is the
last part of `langgraph_checkpoint_ns` and its chain the part before (a subgraph's tasks run
in their subgraph's namespace). LangGraph calls these callbacks for every node of every graph
and subgraph, so the apps need nothing from the project. An interrupt arrives as
`on_chain_error(GraphInterrupt)`. A tool run (`on_tool_start`) inside a task is an effect:
its intent is the tool's name and a digest of its input, its kind the tool's name.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphInterrupt

from rctools.langgraph.observe import value_id
from rctools.langgraph.recorder import Attempt, Recorder


class RecorderCallbacks(BaseCallbackHandler):
    """Feeds task starts and ends and tool calls to the recorder; a SIGKILL may land right
    after a task's start or end."""

    raise_error = True
    run_inline = True

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._runs: dict[UUID, Attempt] = {}

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
        if not node or kwargs.get("name") != node:
            return
        attempt = self.recorder.task_started(metadata)
        if attempt is None:
            return
        self._runs[run_id] = attempt
        self.recorder.kill.hit(f"start {node}")

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        attempt = self._runs.pop(run_id, None)
        if attempt is None:
            return
        self.recorder.task_finished(attempt, "ok", None)
        self.recorder.kill.hit(f"end {attempt.node}")

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        attempt = self._runs.pop(run_id, None)
        if attempt is None:
            return
        outcome = "interrupt" if isinstance(error, GraphInterrupt) else "error"
        self.recorder.task_finished(attempt, outcome, error)
        self.recorder.kill.hit(f"end {attempt.node}")

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
