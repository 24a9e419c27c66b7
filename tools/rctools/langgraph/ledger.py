"""What scenario apps call for the two things callbacks cannot see.

`fire(config, intent)` performs an effect on the outside world through a ledger, so every
effect that fired is in the trace (and in the cell's world file). `ask(config, question)`
calls LangGraph's `interrupt()` and records which interrupt of the task it was and whether a
resume value answered it or the task parked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

from rctools.langgraph.callbacks import task_of
from rctools.langgraph.recorder import NO_VALUE, Recorder

_recorder: Recorder | None = None
_world: Path | None = None


def install(recorder: Recorder | None, world: Path | None) -> None:
    """Called once per worker process, before the graph runs."""
    global _recorder, _world
    _recorder, _world = recorder, world


def _task(config: RunnableConfig) -> tuple[str, str, int]:
    task = task_of(config.get("metadata", {}))
    if task is None:
        raise RuntimeError("ask()/fire() must be called from a top-level node")
    return task


def fire(config: RunnableConfig, intent: str) -> None:
    """Performs effect `intent` (e.g. 'email:invoice-7'): records it, then does it."""
    _, node, step = _task(config)
    if _recorder is not None:
        _recorder.effect(step, node, intent)
    if _world is not None:
        fd = os.open(_world, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{node} {intent}\n".encode())
        finally:
            os.close(fd)


def ask(config: RunnableConfig, question: Any) -> Any:
    """interrupt(question), recorded with its position among the task's interrupts."""
    task_id, node, step = _task(config)
    index = _recorder.next_position(task_id) if _recorder is not None else 0
    try:
        answer = interrupt({"node": node, "index": index, "question": question})
    except GraphInterrupt:
        if _recorder is not None:
            _recorder.interrupted(step, task_id, node, index, NO_VALUE)
        raise
    if _recorder is not None:
        _recorder.interrupted(step, task_id, node, index, answer)
    return answer


def attempts(name: str) -> int:
    """How often `name` was attempted in this cell, across processes (1 on the first call):
    lets a node fail on its first attempt only, as a flaky tool would."""
    if _world is None:
        return 1
    counter = _world.parent / f"attempts-{name}"
    fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b".")
    finally:
        os.close(fd)
    return counter.stat().st_size
