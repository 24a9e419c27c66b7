"""Node callbacks: one task_start/task_end per real execution attempt of a node.

LangChain calls `on_chain_start` for every runnable inside a node too; the node itself is the
run whose name equals `metadata["langgraph_node"]`. Its task id is the suffix of
`langgraph_checkpoint_ns`. An interrupt arrives as `on_chain_error(GraphInterrupt)`: the task
parked (the `ask` helper recorded where), it did not end. Subgraph runs (a namespace with
'|') are outside the recorded workflow and are skipped.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphInterrupt

from rctools.langgraph.recorder import Recorder


def task_of(metadata: dict[str, Any]) -> tuple[str, str, int] | None:
    """(task id, node, step) of a top-level node run, from LangGraph's run metadata."""
    node = metadata.get("langgraph_node")
    namespace = str(metadata.get("langgraph_checkpoint_ns", ""))
    if not node or "|" in namespace or ":" not in namespace:
        return None
    return namespace.rsplit(":", 1)[-1], str(node), int(metadata.get("langgraph_step", 0))


class NodeCallbacks(BaseCallbackHandler):
    """Feeds node starts and ends to the recorder; a SIGKILL may land right after either."""

    raise_error = True
    run_inline = True

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._runs: dict[UUID, tuple[str, str, int]] = {}

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        task = task_of(metadata or {})
        if task is None or kwargs.get("name") != task[1]:
            return
        self._runs[run_id] = task
        task_id, node, step = task
        self.recorder.task_started(step, task_id, node)
        self.recorder.kill.point(f"start {node}")

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        task = self._runs.pop(run_id, None)
        if task is None:
            return
        self.recorder.task_ended(task[2], task[1], "ok")
        self.recorder.kill.point(f"end {task[1]}")

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        task = self._runs.pop(run_id, None)
        if task is None or isinstance(error, GraphInterrupt):
            return
        self.recorder.task_ended(task[2], task[1], "error")
        self.recorder.kill.point(f"end {task[1]}")
