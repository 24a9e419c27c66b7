"""The restore policies a controller may follow after an instance fails.

Each is a function (engine, failed instance) -> Decision. They are the runtime under test: the
`admissible` policy certifies boundaries with its own bookkeeping, and the SemanticRecovery
spec, not this module, judges whether its choice (or any other policy's) was sound.
"""

from __future__ import annotations

from collections.abc import Callable

from rctools.recovery.engine import BOUNDARIES, Decision, Engine


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
    """The checkpoints of `failed`, latest first, that no committed consumer depends on output
    produced after, and that no irreversible effect lies after."""
    inc = engine.inc[failed]
    found = []
    for boundary in reversed(BOUNDARIES):
        snapshot = inc.checkpoints.get(boundary)
        if snapshot is None:
            continue
        q = snapshot.pos
        orphaned = any(
            other.committed and source == failed and out_pos > q and inc.live_output(out_pos, value)
            for name, other in engine.inc.items()
            if name != failed
            for _, source, out_pos, value in other.consumed
        )
        irreversible = any(pos > q and policy == "irreversible" for pos, policy, _ in inc.effects)
        if not orphaned and not irreversible:
            found.append(boundary)
    return found


def admissible(engine: Engine, failed: str) -> Decision:
    """Restore the failed instance to its latest admissible checkpoint; block when none is."""
    found = admissible_boundaries(engine, failed)
    return Decision("restore", found[0]) if found else Decision("block")


POLICIES: dict[str, Callable[[Engine, str], Decision]] = {
    "retry": retry,
    "entry": entry,
    "native": native,
    "resume": resume,
    "admissible": admissible,
}
