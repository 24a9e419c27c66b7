"""Your own graph under the recovery audit: `run recovery --app MODULE:FACTORY --tools FILE`.

`FACTORY(checkpointer)` returns the user's compiled StateGraph, unchanged (loaded as for
`run langgraph --app`: rctools.langgraph.app.load_factory). The graph does not say which of the
functions its nodes call act on the world, nor whether an effect can be taken back, so the
user declares them in a small JSON file, beside the graph rather than in it:

    {"tools": {"hold_room":   {"policy": "reversible",  "undo": "release_room"},
               "send_mail":   {"policy": "compensable", "undo": "retract_mail"},
               "charge_card": {"policy": "irreversible"},
               "search":      {"policy": "none"}}}

A tool is a module-level callable the nodes call by its name (`hold_room`: an attribute of the
app's module; `pkg.mod:attr`: of another module, as the nodes' module imports it), or a
LangChain tool object there (`@tool`, `StructuredTool`: what `create_agent` and `ToolNode` are
given). A function is wrapped where it lives, the module's attribute; a LangChain tool is
wrapped inside the object (its `func` and `coroutine`), since a graph built before the run
holds the object itself. Its policy
is one of the contract's: none, reversible (a restore undoes it), compensable (a restore
compensates it), irreversible (nothing undoes it: the suite's ledger replays its result when
the same intent comes again). A reversible or compensable tool names its `undo`, called with
the same arguments when a restore or a rerun takes the effect back.

A graph with async-only nodes runs through `ainvoke` (appdriver); its tools and undos may be
`async def`. Refused up front, each with its own message (exit 2): a graph that is not a
StateGraph (an `@entrypoint`), one with subgraphs, a tools file that is not as above, a tool or
undo that is neither a callable nor a LangChain tool of the module, and (after the fault-free
run) a graph that parks at an `interrupt()` in a node without `--answer` or calls no declared
tool (no boundary to fail at). A static interrupt (`interrupt_before`/`interrupt_after`) is a
stop between two steps: the run goes on from it with `invoke(None)`; an `interrupt()` answered
with `--answer` runs its node again from its start, as LangGraph does
(`appengine.AppRun._invoke`).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import StateGraph

from rctools.langgraph.app import AppError, async_only_nodes, load_factory

POLICIES = ("none", "reversible", "compensable", "irreversible")


@dataclass(frozen=True)
class Tool:
    """A declared tool: where its callables live (`places`: (holder, attribute) pairs -- the
    module's attribute for a function; a LangChain tool's `func` and `coroutine`), its policy,
    its undo."""

    name: str
    places: tuple[tuple[Any, str], ...]
    policy: str
    undo: Callable[..., Any] | None


@dataclass(frozen=True)
class RecoveryApp:
    """A user's graph factory, its input and its declared tools."""

    spec: str
    factory: Callable[[Any], Any]
    input: Any
    tools: dict[str, Tool]
    asynchronous: bool = False
    """The graph has async-only nodes: it runs through `ainvoke` alone."""
    tools_file: Path | None = None
    """Where the tools were declared (a killed cell's child process loads them again)."""
    answer: tuple[Any, ...] = ()
    """What a human answers every `interrupt()` with (`--answer`; none: a graph that parks is
    refused)."""

    @property
    def policies(self) -> dict[str, str]:
        return {name: tool.policy for name, tool in self.tools.items()}


def _resolve(where: str, app_module: Any, what: str) -> tuple[str, tuple[tuple[Any, str], ...]]:
    """`attr` of the app's module or `module:attr` -> (attr, where its callables live)."""
    module_name, sep, attr = where.rpartition(":")
    try:
        module = importlib.import_module(module_name) if sep else app_module
    except Exception as exc:
        raise AppError(
            f"--tools: {what} {where!r}: importing {module_name!r} failed: {exc}"
        ) from None
    found = getattr(module, attr, None)
    if isinstance(found, BaseTool):
        places = tuple(
            (found, slot) for slot in ("func", "coroutine") if callable(getattr(found, slot, None))
        )
        if not places:
            raise AppError(
                f"--tools: {what} {where!r} is a LangChain tool of class "
                f"{type(found).__name__} with no func or coroutine to wrap (a tool made by "
                "@tool or StructuredTool.from_function is supported)"
            )
        return attr, places
    if not callable(found):
        raise AppError(
            f"--tools: {what} {where!r} is not a callable or a LangChain tool of the app's module"
        )
    return attr, ((module, attr),)


def _undo_of(where: str, app_module: Any) -> Callable[..., Any]:
    """The undo named `where`: a function, or a LangChain tool's function."""
    _, places = _resolve(where, app_module, "undo")
    holder, slot = places[0]
    return getattr(holder, slot)


def load_tools(path: Path, app_module: Any) -> dict[str, Tool]:
    """The tools file (see the module's docstring), every name resolved and checked."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AppError(f"--tools: cannot read {path}: {exc}") from None
    declared = document.get("tools") if isinstance(document, dict) else None
    if not isinstance(declared, dict) or not declared:
        raise AppError(f'--tools: {path} must be {{"tools": {{NAME: {{"policy": ...}}, ...}}}}')
    tools = {}
    for where, entry in declared.items():
        if not isinstance(entry, dict) or entry.get("policy") not in POLICIES:
            raise AppError(f"--tools: {where!r} needs a policy, one of {', '.join(POLICIES)}")
        attr, places = _resolve(where, app_module, "tool")
        undo = entry.get("undo")
        if entry["policy"] in ("reversible", "compensable"):
            if not isinstance(undo, str):
                raise AppError(
                    f"--tools: {where!r} is {entry['policy']}: name its undo (a callable taking "
                    "the same arguments), or declare it irreversible"
                )
            undo = _undo_of(undo, app_module)
        elif undo is not None:
            raise AppError(f"--tools: {where!r} is {entry['policy']}: it has no undo")
        tools[attr] = Tool(attr, places, entry["policy"], undo)
    return tools


def load_app(
    spec: str, tools_file: Path | None, given_input: Any, answer: tuple[Any, ...] = ()
) -> RecoveryApp:
    """The app, checked for the shapes the recovery audit supports."""
    if tools_file is None:
        raise AppError("--app needs --tools FILE: which functions act on the world, and how")
    factory = load_factory(spec)
    graph = factory(InMemorySaver())
    if not isinstance(getattr(graph, "builder", None), StateGraph):
        raise AppError(
            "--app: run recovery supports a compiled StateGraph; an @entrypoint (functional "
            "API) has no node boundaries to restore to"
        )
    direct = list(graph.get_subgraphs())
    if len(list(graph.get_subgraphs(recurse=True))) > len(direct):
        raise AppError(
            "--app: subgraphs inside subgraphs are not supported yet by run recovery (a "
            "subgraph node is one instance, its checkpoints restore points inside it)"
        )
    # The module the factory was built from (a .py path is imported under a name of its own).
    app_module = sys.modules[factory.__module__]
    tools = load_tools(tools_file, app_module)
    asynchronous = bool(async_only_nodes(graph))
    return RecoveryApp(spec, factory, given_input, tools, asynchronous, tools_file, answer)
