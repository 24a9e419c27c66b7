"""LangGraph's own views of a checkpoint, in the contract's terms (trace format v2).

Everything here asks LangGraph itself -- its task preparation, its task-status reader, its
interrupt ids -- and never re-derives what LangGraph decides:

- `schedule`: the tasks a checkpoint schedules, from `prepare_next_tasks` (the function the
  Pregel loop and `get_state` call), with LangGraph's task ids, node names and task paths;
- `collapse`: a task's writes as one record (ok, error or interrupt), from
  `read_task_statuses` ("the single place that turns that log into task status");
- `address`: an interrupt's name in a trace, LangGraph's `Interrupt.id` and the call's index;
- `digest`: a stable hash of a checkpoint's content, computed the same way at `put` and at a
  load.

These are private LangGraph 1.2 modules (`langgraph.pregel._algo` and friends): the recorder
is written against the version the header names.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph._internal._config import recast_checkpoint_ns
from langgraph._internal._constants import INTERRUPT, NS_END, NS_SEP, NULL_TASK_ID, PUSH, RESUME
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.pregel._algo import prepare_next_tasks, task_path_str

from rctools.langgraph.compat import channels_from_checkpoint, read_task_statuses
from rctools.langgraph.compat import interrupt_id as _interrupt_id

__all__ = [
    "NULL_TASK_ID",
    "Chain",
    "SeenTask",
    "address_of",
    "chain_of_task_ns",
    "collapse",
    "delta_channels",
    "digest",
    "graph_for",
    "is_replay_load",
    "is_run_start",
    "maker_of",
    "resume_list",
    "schedule",
    "task_ns",
    "value_id",
]

Chain = tuple[str, str]  # (thread, checkpoint namespace)


def value_id(value: Any) -> str:
    """A value's identity in a trace: a digest of its JSON, so the value never leaves."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- content ------------------------------------------------------------------------


def _canonical(value: Any) -> Any:
    """`value` with its sets in a fixed order: a set serializes in iteration order, which
    string hashing makes differ from process to process (a join edge's channel keeps the
    set of nodes it has seen). A NamedTuple is rebuilt from its fields, not from one iterable
    (a `DeltaChannel`'s snapshot is one)."""
    if isinstance(value, (set, frozenset)):
        return ["<set>", *sorted((_canonical(v) for v in value), key=repr)]
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple: by position
        return type(value)(*(_canonical(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_canonical(v) for v in value)
    return value


# Where LangGraph notes the versions a forced snapshot bumped (`versions_seen`'s pseudo node).
SNAPSHOT_BUMPS = "__snapshot_bumps__"


def digest(
    checkpoint: dict[str, Any] | None, serde: Any, delta: frozenset[str] = frozenset()
) -> str | None:
    """A hash of channel values, channel versions and versions seen. Values are hashed in
    the saver's own serialization (`serde.dumps_typed`), so what was handed to `put` and what
    a load deserialized hash alike (sets in a fixed order); ids, timestamps and the
    `updated_channels` hint are not content, and neither is `versions_seen["__interrupt__"]`:
    it only gates `interrupt_before/after`, and time travel marks it on the fork copy ("proceed
    past previous checkpoint"), so a fork's content equals its source's without it.

    The `delta` channels (`DeltaChannel`s, `delta_channels`) are left out, value, version and
    the versions seen of them alike, and so is the bookkeeping of their snapshots: a
    checkpoint stores such a channel's value only as a snapshot now and then, and a fork copy
    is made with a forced snapshot (and a bumped version) of a channel its source stores as
    replayable writes, so the stored form of one state differs from copy to copy. What it is
    rebuilt from -- the writes saved on the ancestors -- is judged as writes."""
    if checkpoint is None:
        return None
    h = hashlib.sha256()
    values = checkpoint.get("channel_values") or {}
    for name in sorted(set(values) - delta):
        kind, data = serde.dumps_typed(_canonical(values[name]))
        h.update(f"v {name} {kind} {len(data)}\n".encode())
        h.update(data)
    versions = checkpoint.get("channel_versions") or {}
    h.update(
        json.dumps({k: v for k, v in versions.items() if k not in delta}, sort_keys=True).encode()
    )
    seen = {
        node: {k: v for k, v in (node_seen or {}).items() if k not in delta}
        for node, node_seen in (checkpoint.get("versions_seen") or {}).items()
        if node not in (INTERRUPT, SNAPSHOT_BUMPS)
    }
    if delta:  # a node that saw only delta channels in one copy may be absent in another
        seen = {node: node_seen for node, node_seen in seen.items() if node_seen}
    h.update(json.dumps(seen, sort_keys=True).encode())
    return h.hexdigest()[:20]


def delta_channels(graph: Any) -> frozenset[str]:
    """The channels of `graph` that are `DeltaChannel`s (none before LangGraph 1.2)."""
    try:
        from langgraph.channels.delta import DeltaChannel
    except ImportError:
        return frozenset()
    channels = getattr(graph, "channels", None) or {}
    return frozenset(name for name, ch in channels.items() if isinstance(ch, DeltaChannel))


def write_digest(writes: Iterable[tuple[str, Any]], serde: Any) -> str | None:
    """A hash of a task's result: its writes to value channels, as a multiset of channel and
    serialized value (`serde.dumps_typed`, as `digest` does), so that what was handed to
    `put_writes` and what a load returned hash alike in whatever order the saver keeps them.
    The special channels (error, interrupt, answers, schedule) are the task's status, not its
    result, and a saver replaces rather than keeps them. None when there is nothing to hash
    or a value does not serialize (then the saver's own call fails as well)."""
    parts = []
    try:
        for channel, value in writes:
            if channel in WRITES_IDX_MAP:
                continue
            kind, data = serde.dumps_typed(_canonical(value))
            parts.append(f"w {channel} {kind} {len(data)}\n".encode() + data)
    except Exception:  # not the recorder's to report: the saver's own call fails alike
        return None
    if not parts:
        return None
    h = hashlib.sha256()
    for part in sorted(parts):
        h.update(part)
    return h.hexdigest()[:20]


# -- tasks --------------------------------------------------------------------------


def task_ns(chain_ns: str, node: str, task: str) -> str:
    """The checkpoint namespace of a task: where its interrupts and subgraphs live."""
    own = f"{node}{NS_END}{task}"
    return f"{chain_ns}{NS_SEP}{own}" if chain_ns else own


ERROR_HANDLER = "node_error_handler"  # marks an error handler's task path (LangGraph's _algo)


def _depth(path: Sequence[Any]) -> int:
    """How many segments a task's namespace adds to its chain's: one of its own, plus, for a
    task another task's run made, that task's. A functional-API call (`@task`) has the path
    `(PUSH, caller's path, index, True)`; an error handler `(*failed[:3], ERROR_HANDLER,
    False)` with `failed` the path of the task whose failure it handles."""
    if len(path) >= 2 and path[-2] == ERROR_HANDLER:
        return 1 + _depth(path[:-2])
    if len(path) > 1 and path[0] == PUSH and isinstance(path[1], (tuple, list)):
        return 1 + _depth(path[1])
    return 1


def chain_of_task_ns(ns: str, path: Sequence[Any] = ()) -> tuple[str, str]:
    """(chain namespace, task id) from a task's namespace `parent|node:task_id` and its task
    path. A task made by another task's run -- a functional-API call, an error handler --
    nests its namespace under that task's (`caller|fetch:task_id`) yet runs in the same loop
    and writes on the same checkpoint: its chain is that task's."""
    parts = ns.split(NS_SEP)
    return NS_SEP.join(parts[: -_depth(path)]), parts[-1].rpartition(NS_END)[2]


def maker_of(ns: str, path: Sequence[Any]) -> str | None:
    """The task whose run made task `ns` (path as in `chain_of_task_ns`): the caller of a
    functional-API call, the failed task of an error handler; None for a task its
    checkpoint schedules."""
    parts = ns.split(NS_SEP)
    if _depth(path) > 1 and len(parts) > 1:
        return parts[-2].rpartition(NS_END)[2]
    return None


def graph_for(root: Any, chain_ns: str) -> Any:
    """The compiled graph that runs chain `chain_ns`: the root, or the subgraph at that
    namespace (LangGraph's `get_subgraphs`, which also finds a subgraph a node calls)."""
    if not chain_ns:
        return root
    path = recast_checkpoint_ns(chain_ns)
    for _, graph in root.get_subgraphs(namespace=path, recurse=True):
        return graph
    return None


def schedule(
    graph: Any,
    checkpoint: dict[str, Any],
    metadata: dict[str, Any] | None,
    thread: str,
    chain_ns: str,
    saver: Any = None,
) -> list[dict[str, str]]:
    """The tasks `checkpoint` schedules, as the loop that runs from it prepares them: the
    loop's step is the checkpoint's step + 1, task ids hash the checkpoint id, the chain's
    namespace and that step. `saver` (the unwrapped one) lets delta channels replay."""
    step = int((metadata or {}).get("step", -1)) + 1
    config = {
        "configurable": {
            "thread_id": thread,
            "checkpoint_ns": chain_ns,
            "checkpoint_id": checkpoint["id"],
        }
    }
    channels, managed = channels_from_checkpoint(
        graph.channels, checkpoint, saver=saver, config=config
    )
    updated = checkpoint.get("updated_channels")
    tasks = prepare_next_tasks(
        checkpoint,
        [],
        graph.nodes,
        channels,
        managed,
        config,
        step,
        step + 1,
        for_execution=False,
        trigger_to_nodes=graph.trigger_to_nodes,
        updated_channels=set(updated) if updated else None,
    )
    return [{"task": t.id, "node": t.name, "path": task_path_str(t.path)} for t in tasks.values()]


# -- writes -------------------------------------------------------------------------


@dataclass(frozen=True)
class SeenTask:
    """One task's writes in the contract's terms."""

    task: str
    kind: str  # ok | error | interrupt
    interrupt: Any  # the Interrupt it is parked at (kind interrupt), else None
    resumed: tuple[Any, ...]  # the values its interrupt() calls received, in order


def resume_list(writes: Iterable[tuple[str, Any]]) -> tuple[Any, ...]:
    """A task's own `__resume__` write: the answers its interrupt() calls consumed. A task
    can send it several times in one attempt (one per answer); the last one is complete."""
    found: tuple[Any, ...] = ()
    for channel, value in writes:
        if channel == RESUME:
            found = tuple(value) if isinstance(value, list) else (value,)
    return found


def collapse(pending: Sequence[tuple[str, str, Any]]) -> dict[str, SeenTask]:
    """Task id -> its status, for writes `(task, channel, value)`. A task that left only
    answers (no output, error or interrupt) has no status."""
    out: dict[str, SeenTask] = {}
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task, channel, value in pending:
        if task != NULL_TASK_ID:
            by_task.setdefault(str(task), []).append((channel, value))
    for task, status in read_task_statuses(pending).items():
        resumed = resume_list(by_task.get(str(task), ()))
        if status.finished:
            out[str(task)] = SeenTask(str(task), "ok", None, resumed)
        elif status.error is not None:
            out[str(task)] = SeenTask(str(task), "error", None, resumed)
        elif status.interrupts:
            out[str(task)] = SeenTask(str(task), "interrupt", status.interrupts[-1], resumed)
    return out


def null_answers(pending: Sequence[tuple[str, str, Any]]) -> list[Any]:
    """The answers written for no task (`Command(resume=x)`): at most one per checkpoint,
    a later one replaces it."""
    return [v for t, c, v in pending if t == NULL_TASK_ID and c == RESUME]


def address_of(interrupt_id: str, own_ns: str | None, answered: int | None) -> str | None:
    """`<Interrupt.id>#<k>`: the k-th interrupt() call of the task whose namespace is
    `own_ns`, if LangGraph's id for that call is `interrupt_id` (k = answers it had + 1);
    None when the id is another task's (a subgraph's interrupt its parent task parks)."""
    if own_ns is None:
        return None
    candidates = [answered] if answered is not None else range(64)
    for k in candidates:
        if _interrupt_id(own_ns, k) == interrupt_id:
            return f"{interrupt_id}#{k + 1}"
    return None


def answered_address(own_ns: str, index: int) -> str:
    """The address of the interrupt() call number `index` (from 1) of a task."""
    return f"{_interrupt_id(own_ns, index - 1)}#{index}"


# -- who reads ----------------------------------------------------------------------

_LOOP = os.path.join("langgraph", "pregel", "_loop.py")
_REPLAY = os.path.join("langgraph", "_internal", "_replay.py")
_READS = frozenset({"checkpoint_superseded", "acheckpoint_superseded"})


def is_run_start(depth: int = 2, limit: int = 16) -> bool:
    """Whether the saver's caller is a Pregel loop starting a run (`__enter__`), as opposed
    to a read that starts nothing (`get_state`, `update_state`, the loop's own check whether
    an addressed checkpoint is the latest)."""
    frame = sys._getframe(depth)
    for _ in range(limit):
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name in _READS:
            return False
        if code.co_filename.endswith(_LOOP):
            return code.co_name in ("__enter__", "__aenter__")
        frame = frame.f_back
    return False


def is_replay_load(depth: int = 2) -> bool:
    """Whether the saver's `list` is called by a subgraph's loop starting a run while its
    parent replays (time travel): LangGraph's `ReplayState.get_checkpoint` then loads the
    subgraph's checkpoint with `list(before=..., limit=1)` instead of `get_tuple`."""
    frame = sys._getframe(depth)
    return (
        frame is not None
        and frame.f_code.co_filename.endswith(_REPLAY)
        and frame.f_code.co_name in ("get_checkpoint", "aget_checkpoint")
    )
