"""What is left of a cell's thread once its script ended, read back by a fresh process.

The matrix compares the end of the tested saver's thread with the end of the reference's
(the runner checks END and STATE, `rctools.langgraph.attribution`). The worker processes'
own reports are not used for that: a saver that makes a thread read as finished while work
is left would be believed about exactly what it gets wrong. Here a new process -- like a
user coming back later -- opens the saver from the cell's store, compiles the scenario's
graph on the bare saver (nothing recorded) and reads `get_state()` once.

The values are digested in one canonical form, the same for every saver: JSON with sorted
keys, pydantic models and dataclasses as their fields, sets sorted, and random UUIDs (message
ids LangGraph's `add_messages` assigns) replaced by a placeholder. So two savers with
different serializers, or two runs with different message ids, digest the same state alike,
and the digest never depends on how the tested saver encodes its bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rctools.langgraph.backends import (
    STORE_VAR,
    BackendError,
    aopen_saver,
    api_of,
    deletes_of,
    open_saver,
)
from rctools.suite.child import start_forked

READ_TIMEOUT = 60.0
THREAD_CONFIG = {"configurable": {"thread_id": "t1"}}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


@dataclass(frozen=True)
class FinalState:
    """The thread as a fresh process finds it: finished or not, what is still due, and the
    digest of its values."""

    done: bool
    next: tuple[str, ...]
    digest: str
    problem: str | None = None  # the read itself failed (the store could not be opened...)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"next": list(self.next)}


def _plain(value: Any, ids: bool) -> Any:
    """`value` as JSON data, whatever object LangGraph or the app put in the state; UUIDs
    replaced by a placeholder unless `ids`."""
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(), ids)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value), ids)
    if isinstance(value, dict):
        return {str(k): _plain(v, ids) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, ids) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_plain(v, ids) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if ids else _UUID.sub("<uuid>", text)


def digest(values: Any, *, ids: bool = False) -> str:
    """The canonical digest of a thread's values (see the module's docstring). `ids=True`
    keeps UUIDs: within one run they tell values apart (two answers differ only by their
    nonce), while across runs they must not (`ids=False`, comparing two runs' ends)."""
    text = json.dumps(_plain(values, ids), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _of(state: Any) -> dict[str, Any]:
    nothing = state.created_at is None
    due = tuple(state.next) or tuple(t.name for t in state.tasks)
    return {"done": not nothing and not due, "next": list(due), "digest": digest(state.values)}


def _compiled(build: Callable[[], Any], saver: Any) -> Any:
    from rctools.langgraph.record import on_saver

    return on_saver(build(), saver)


def _read(build: Callable[[], Any], factory: Callable[[], Any]) -> dict[str, Any]:
    try:
        with open_saver(factory) as saver:
            if "sync" in api_of(saver):
                return _of(_compiled(build, saver).get_state(THREAD_CONFIG))
    except BackendError as exc:
        if "asynchronously" not in str(exc):
            raise

    async def aread() -> dict[str, Any]:
        async with aopen_saver(factory) as saver:
            return _of(await _compiled(build, saver).aget_state(THREAD_CONFIG))

    return asyncio.run(aread())


def _apis(factory: Callable[[], Any]) -> dict[str, Any]:
    async def aapis() -> dict[str, Any]:
        async with aopen_saver(factory) as saver:  # opens sync and async factories alike
            return {"apis": sorted(api_of(saver)), "deletes": sorted(deletes_of(saver))}

    return asyncio.run(aapis())


@dataclass(frozen=True)
class Surface:
    """What a saver really implements: its APIs ("sync", "async") and the APIs through which
    it deletes a thread (`backends.deletes_of`)."""

    apis: frozenset[str]
    deletes: frozenset[str]


def saver_surface(store: Path, factory: Callable[[], Any]) -> Surface:
    """The saver's `Surface`, asked of a saver opened on `store` by a fresh process (opening
    one may bind a connection or an event loop); raises BackendError with the reason when it
    cannot be opened."""
    answer = in_fresh_process(store, lambda: _apis(factory))
    if "problem" in answer:
        raise BackendError(f"the saver could not be opened: {answer['problem']}")
    return Surface(frozenset(answer["apis"]), frozenset(answer["deletes"]))


def read_final(store: Path, build: Callable[[], Any], factory: Callable[[], Any]) -> FinalState:
    """Forks a process that opens the saver on `store` and reads the thread; its answer, or
    a FinalState whose `problem` says why there is none."""
    answer = in_fresh_process(store, lambda: _read(build, factory))
    if "problem" in answer:
        return FinalState(False, (), "", problem=answer["problem"])
    return FinalState(bool(answer["done"]), tuple(answer["next"]), str(answer["digest"]))


def in_fresh_process(store: Path, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Runs `work` in a forked process (the suite framework's child harness) with
    `$RESUME_CHECK_STORE` set to `store`, and returns its JSON answer, or `{"problem": why}`
    when it raised, answered nothing or took too long: a reader that breaks (a store left
    unreadable) must not break the matrix."""

    def read(_kill_fd: int) -> dict[str, Any]:
        try:
            os.environ[STORE_VAR] = str(store)
            return work()
        except BaseException as exc:  # told to the parent, never raised there
            return {"problem": f"{type(exc).__name__}: {exc}"[:300]}

    ended = start_forked(read, proc="reader", role="read", timeout=READ_TIMEOUT).wait()
    if not isinstance(ended.result, dict):
        return {"problem": ended.error or "the reader died without an answer"}
    return ended.result
