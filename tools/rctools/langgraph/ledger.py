"""The one public helper an app may call: an effect that is not a LangChain tool.

A tool call is recorded without help (the recorder's `on_tool_start` callback). Anything else
a node does to the outside world -- an HTTP call, a queue message -- can be announced with

    fire(config, "email:invoice-7", kind="email")

from inside the node (with the node's `config`). It finds the recorder among the config's
callbacks (no global state; without a recorder it does nothing) and records an `effect` of
the running task; `act`, if given, is then called and its result returned, so the record
precedes the effect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from langchain_core.runnables import RunnableConfig

from rctools.langgraph.callbacks import RecorderCallbacks

T = TypeVar("T")


def _recorders(config: RunnableConfig) -> list[RecorderCallbacks]:
    callbacks = config.get("callbacks")
    handlers = getattr(callbacks, "handlers", callbacks) or []
    return [h for h in handlers if isinstance(h, RecorderCallbacks)]


def fire(
    config: RunnableConfig,
    intent: str,
    kind: str | None = None,
    act: Callable[[], T] | None = None,
) -> T | None:
    """Records effect `intent` (stable across re-executions) of the task running `config`,
    then performs `act`."""
    for handler in _recorders(config):
        handler.recorder.effect(dict(config.get("metadata") or {}), intent, kind)
    return act() if act is not None else None
