"""The three private LangGraph views the recorder reads that changed between minor releases.

The recorder asks LangGraph itself how a task ended and what an interrupt is called, and never
re-derives what LangGraph decides. Three of the functions it asks moved:

- how a superstep's write log reads as task status: later 1.2 releases have one reader for
  it, `langgraph.pregel._task_status.read_task_statuses` (not in 1.2.0 to 1.2.11); before,
  the loop read the log in place (`PregelLoop._match_writes`): a task is finished when it has
  an output write -- a write to a channel other than the control ones (`__interrupt__`,
  `__error__`, `__resume__` and, where it exists, `__error_source_node__`) -- and its last
  interrupt waits while it is not finished (a task that asks twice has a `__resume__` write
  holding the first answer while its second question waits);
- how a checkpoint's channels are hydrated: later releases add delta channels, which need
  the saver and the checkpoint's config to replay their history (`channels_from_checkpoint(
  ..., saver=, config=)`); in older ones the checkpoint alone holds every channel's value;
- an interrupt's id: later releases key it by the number of answers its task already has
  (`langgraph.types._interrupt_id`); in older ones every interrupt of a task has the bare
  hash of the task's namespace (`Interrupt.from_ns`).

Each is chosen by what the installed LangGraph has, never by its version number, so a trace
says what that release did (`versions.SUPPORTED` is the range the recorder is tested on).
LangGraph 0.6 takes the older side of all three, as 1.0 does, and needs nothing of its own:
what else the recorder reads -- the modules `langgraph._internal._config`/`_constants`,
`pregel._algo` (`prepare_next_tasks`, `task_path_str`), `pregel._checkpoint` and the frames
of `pregel._loop`, the loop's reading of the write log, `CheckpointTuple`, `Command` and the
callbacks' metadata -- is as in 1.0 (below 0.6 the modules have other names). Where 0.6
differs from 1.1 and 1.2 it is behaviour, which the traces show: time travel runs the old
checkpoint's tasks again on that checkpoint, with no fork copy (as 1.0 does).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from langgraph._internal import _constants
from langgraph._internal._constants import ERROR, INTERRUPT, NULL_TASK_ID, RESUME
from langgraph.pregel import _checkpoint
from packaging.version import Version

__all__ = ["VERSION", "channels_from_checkpoint", "interrupt_id", "read_task_statuses"]

VERSION = Version(metadata.version("langgraph"))
# An error handler's run stores which node failed (1.2 on): a control write, not an output.
CONTROL_WRITES = frozenset(
    (ERROR, INTERRUPT, RESUME, getattr(_constants, "ERROR_SOURCE_NODE", ERROR))
)


@dataclass(frozen=True)
class _Status:
    """A task's status as LangGraph without `_task_status` read it from the write log."""

    output: tuple[tuple[str, Any], ...]
    interrupts: tuple[Any, ...]
    error: BaseException | None

    @property
    def finished(self) -> bool:
        return bool(self.output)

    @property
    def pending_interrupts(self) -> tuple[Any, ...]:
        return () if self.finished else self.interrupts


def _read_task_statuses_in_place(
    pending_writes: Iterable[tuple[str, str, Any]],
) -> dict[str, _Status]:
    output: dict[str, list[tuple[str, Any]]] = {}
    interrupts: dict[str, tuple[Any, ...]] = {}
    errors: dict[str, BaseException] = {}
    for task_id, channel, value in pending_writes:
        if task_id == NULL_TASK_ID:
            continue
        output.setdefault(task_id, [])
        if channel == INTERRUPT:
            interrupts[task_id] = tuple(value if isinstance(value, Sequence) else [value])
        elif channel == ERROR:
            errors.setdefault(task_id, value)
        elif channel not in CONTROL_WRITES:
            output[task_id].append((channel, value))
    return {
        task: _Status(tuple(writes), interrupts.get(task, ()), errors.get(task))
        for task, writes in output.items()
    }


def _interrupt_id_by_namespace(ns: str, answered: int) -> str:
    from xxhash import xxh3_128_hexdigest

    del answered  # every interrupt() call of a task had the same id
    return xxh3_128_hexdigest(ns.encode())


read_task_statuses: Callable[[Iterable[tuple[str, str, Any]]], dict[str, Any]]
interrupt_id: Callable[[str, int], str]
try:
    from langgraph.pregel._task_status import read_task_statuses
except ImportError:
    read_task_statuses = _read_task_statuses_in_place
try:
    from langgraph.types import _interrupt_id as interrupt_id
except ImportError:
    interrupt_id = _interrupt_id_by_namespace


_HYDRATES_DELTAS = "saver" in inspect.signature(_checkpoint.channels_from_checkpoint).parameters


def channels_from_checkpoint(
    specs: Any, checkpoint: Any, *, saver: Any, config: dict[str, Any]
) -> tuple[Any, Any]:
    """The channels and managed values the loop that runs from `checkpoint` has."""
    if _HYDRATES_DELTAS:
        return _checkpoint.channels_from_checkpoint(specs, checkpoint, saver=saver, config=config)
    return _checkpoint.channels_from_checkpoint(specs, checkpoint)
