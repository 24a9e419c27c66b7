"""The restore policies a controller may follow after an instance fails.

Each is a function (engine, failed instance) -> Decision. They are the runtime under test: the
`admissible` policy certifies boundaries with its own bookkeeping, and the SemanticRecovery
spec, not this module, judges whether its choice (or any other policy's) was sound.
"""

from __future__ import annotations

from collections.abc import Callable

from rctools.recovery.controller import certify
from rctools.recovery.engine import Decision, Engine


def retry(engine: Engine, failed: str) -> Decision:
    """Rerun the whole task from the start (irreversible effects are replayed from the ledger)."""
    return Decision("rerun")


def entry(engine: Engine, failed: str) -> Decision:
    """Restore the failed instance to its entry checkpoint and run it again."""
    return Decision("restore", "entry")


def _node_start(engine: Engine, failed: str) -> str:
    """The checkpoint of `failed` its failed LangGraph node started at: where LangGraph's own
    checkpoint, taken before that node's step, leaves the instance."""
    segment = engine.failed_segment
    assert segment is not None and segment.instance == failed
    pos = engine.pos_at(failed, segment.start)
    for boundary, snapshot in engine.inc[failed].checkpoints.items():
        if snapshot.pos == pos and snapshot.index <= segment.start:
            return boundary
    raise RuntimeError(f"node {segment.node} starts at no checkpoint of {failed}")


def resume(engine: Engine, failed: str) -> Decision:
    """LangGraph's resume after an error: invoke the thread again; LangGraph keeps the writes of
    the step's successful tasks and re-runs the failed node from its start."""
    return Decision("restore", _node_start(engine, failed), resume="node")


def native(engine: Engine, failed: str) -> Decision:
    """LangGraph's checkpoint-aligned restore: fork from the latest checkpoint before the
    failure (time travel). A fork carries no pending writes, so every task of that step runs
    again: the failed node from its start, and the other instances that ran in the step from
    theirs, committed or not."""
    others = set()
    for task in engine.graph.get_state(engine.config).tasks:
        segment = engine.segment(task.name)
        if segment.instance == failed:
            continue
        if segment.start != 0:
            raise RuntimeError(f"node {segment.node} does not start {segment.instance}")
        others.add(segment.instance)
    return Decision(
        "restore", _node_start(engine, failed), resume="fork", also=tuple(sorted(others))
    )


def admissible_boundaries(engine: Engine, failed: str) -> list[str]:
    """The checkpoints of `failed`, latest first, the controller certifies from the recorded
    events: no committed consumer read an output of `failed` produced after it, and no
    irreversible effect of `failed` lies after it (controller.certify)."""
    with engine.cond:
        events = list(engine.trace.events)
    return certify(events, failed, engine.workload.instances, engine.workload.tools)


def admissible(engine: Engine, failed: str) -> Decision:
    """Restore the blamed instance to its latest certified checkpoint; block when none is, or
    when the localization was ambiguous (restoring the wrong instance is never admissible).
    Where the certified checkpoint is the start of the failed LangGraph node (a layout whose
    node boundary is aligned with it), the restore goes through LangGraph's own checkpoint:
    the thread is resumed and LangGraph re-runs that node."""
    if engine.localization.ambiguous:
        return Decision("block", reason="ambiguous localization")
    found = admissible_boundaries(engine, failed)
    if not found:
        return Decision("block")
    aligned = found[0] == _node_start(engine, failed)
    return Decision("restore", found[0], resume="node" if aligned else "checkpoint")


# The policies whose controller also places the runtime's checkpoints: their workloads run on
# the layout aligned to the boundaries certified from the plan (workloads.aligned).
ALIGNED_LAYOUT = frozenset({"admissible"})

POLICIES: dict[str, Callable[[Engine, str], Decision]] = {
    "retry": retry,
    "entry": entry,
    "native": native,
    "resume": resume,
    "admissible": admissible,
}
