"""What the store holds of a write call the saver was killed inside: none, all, or part of it.

A kill *inside* a saver call (before one of its statements, at a seeded fraction of its
lines) is an instant of the saver under test only: the reference saver runs other code, and
the same fraction of its lines is another instant. What makes two kills the same *logical*
instant is what the store holds afterwards. An atomic saver killed before its commit holds
nothing of the call -- the store of a kill at the call's entry; killed after it, all of the
call -- the store of a kill at its exit. So right after such a kill, before anything resumes,
a fresh process opens the saver on the cell's store (as a user coming back would) and reads
through the saver's own API whether the call took effect:

- `put`: is the checkpoint it put there (`get_tuple` with its id)?
- `put_writes`: how many of the call's writes (channel and value, digested in the canonical
  form of `rctools.langgraph.final`, so any serializer reads alike, ids kept: two answers
  that differ only by their nonce are two writes) are among the pending
  writes of its task on its checkpoint? LangGraph's special channels (`__interrupt__`,
  `__resume__`, `__error__`...: one per task, replaced by the next) decide only a call made of
  them alone: an earlier call of the same task may have left the very same one.

The answer is `killpoints.NOTHING`, `ALL`, `PART` (a write stored in part: no edge of the
call leaves the store so) or `UNKNOWN` (the saver could not read it back). The matrix kills
the reference at the edge of the call that matches (`killpoints.for_reference`) and calls a
cell inconclusive where none does. Nothing here looks at bytes or tables: only what the
saver returns, so it holds for any saver.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP

from rctools.langgraph.backends import BackendError, aopen_saver, api_of, open_saver
from rctools.langgraph.final import digest, in_fresh_process
from rctools.langgraph.killpoints import ALL, NOTHING, PART, UNKNOWN


def _where(config: Any, checkpoint_id: Any) -> dict[str, Any]:
    conf = dict(config.get("configurable") or {})
    return {
        "thread_id": str(conf.get("thread_id", "")),
        "checkpoint_ns": str(conf.get("checkpoint_ns", "")),
        "checkpoint_id": None if checkpoint_id is None else str(checkpoint_id),
    }


def of_put(config: Any, checkpoint: Any) -> dict[str, Any]:
    """What a `put` writes, as the kill report carries it: the checkpoint's place and id."""
    return {"call": "put", **_where(config, checkpoint.get("id"))}


def of_writes(config: Any, writes: Sequence[tuple[str, Any]], task_id: str) -> dict[str, Any]:
    """What a `put_writes` writes: its checkpoint, its task, and each write as (channel,
    digest of the value), digested before the saver sees it."""
    conf = dict(config.get("configurable") or {})
    return {
        "call": "put_writes",
        **_where(config, conf.get("checkpoint_id")),
        "task_id": str(task_id),
        "writes": [[str(channel), digest(value, ids=True)] for channel, value in writes],
    }


def classify(identity: dict[str, Any], stored: dict[str, Any] | None) -> str:
    """What the store holds of the call, from what the saver returned for the call's
    checkpoint (`stored`: `found`, and the pending writes of the call's task as (channel,
    digest) pairs; None: it could not be read)."""
    if stored is None or "problem" in stored:
        return UNKNOWN
    if identity.get("call") == "put":
        return ALL if stored.get("found") else NOTHING
    if not stored.get("found"):
        return UNKNOWN  # the writes' checkpoint is not there: nothing to read them from
    wanted = [tuple(w) for w in identity.get("writes") or []]
    held = Counter(tuple(w) for w in stored.get("writes") or [])
    if not wanted:
        return UNKNOWN
    # LangGraph's special channels (an interrupt, a resume value, an error) are kept one per
    # task and replaced by the next: an earlier call of the same task on the same checkpoint
    # may have left the very same one (a node that asks twice sends its first answer
    # again), so they tell nothing when the call has writes of its own
    regular = [w for w in wanted if w[0] not in WRITES_IDX_MAP]
    special = [w for w in wanted if w[0] in WRITES_IDX_MAP]
    decisive = regular or special
    present = _present(decisive, held)
    if present == len(decisive) and _present(special, held) == len(special):
        return ALL
    if regular:
        # the same channels held with other values: not these writes, yet not nothing
        # either (a serializer that reads a value back otherwise): no instant is sure
        channels = Counter(w[0] for w in held.elements())
        if sum((Counter(w[0] for w in regular) & channels).values()) == 0:
            return NOTHING
        return PART if present else UNKNOWN
    return NOTHING if present == 0 else PART


def _present(writes: list[tuple[Any, ...]], held: Counter[tuple[Any, ...]]) -> int:
    return sum((Counter(writes) & held).values())


def _answer(identity: dict[str, Any], tup: Any) -> dict[str, Any]:
    if tup is None:
        return {"found": False, "writes": []}
    task = identity.get("task_id")
    writes = [
        [str(channel), digest(value, ids=True)]
        for task_id, channel, value in (tup.pending_writes or [])
        if task is not None and str(task_id) == task
    ]
    return {"found": True, "writes": writes}


def _read(identity: dict[str, Any], factory: Callable[[], Any]) -> dict[str, Any]:
    config = {
        "configurable": {
            "thread_id": identity["thread_id"],
            "checkpoint_ns": identity["checkpoint_ns"],
            "checkpoint_id": identity["checkpoint_id"],
        }
    }
    try:
        with open_saver(factory) as saver:
            if "sync" in api_of(saver):
                return _answer(identity, saver.get_tuple(config))
    except BackendError as exc:
        if "asynchronously" not in str(exc):
            raise

    async def aread() -> dict[str, Any]:
        async with aopen_saver(factory) as saver:
            return _answer(identity, await saver.aget_tuple(config))

    return asyncio.run(aread())


def probe(store: Path, factory: Callable[[], Any], identity: dict[str, Any] | None) -> str:
    """What the store at `store` holds of the call `identity` names, read by a fresh process
    through the saver (see the module); `UNKNOWN` without an identity or a checkpoint id."""
    if not identity or not identity.get("checkpoint_id"):
        return UNKNOWN
    return classify(identity, in_fresh_process(store, lambda: _read(identity, factory)))
