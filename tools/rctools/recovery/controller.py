"""What the recovery controller knows after a failure: the failed run's recorded events.

The fault injector knows which instance it made fail, and writes it into the trace (`fail`,
the ground truth the contract judges against). The controller is not told: it gets the events
the runtime recorded, without the `fail` events, the workflow's declared plan (each instance's
actions, as a structured workflow declares them) and the error the runtime raised, which names
the tool call that failed but not the instance that made it. From those it

- **localizes** the failure (`localize`): the candidates are the instances that began and have
  not exited in their current incarnation (replaying begin / exit / restore / rerun from the
  events); when the error names a tool, only those whose next declared action, counted from
  their recorded actions, is a call of that tool. One candidate: it is blamed. Several: the
  first is blamed and the localization is ambiguous (the admissible policy then blocks rather
  than guess). None: nothing is blamed.
- **certifies** the checkpoints of the blamed instance (`certify`): a checkpoint (entry at
  position 0, commit and exit where the events put them, and every restore point a `checkpoint`
  event saved at a later action boundary) is certified when every output of the instance that
  a committed consumer read was produced at or before it, and no irreversible effect of the
  instance lies after it.

This is the runtime under test, not the judge: the SemanticRecovery spec decides whether the
blamed instance had failed and whether the certified checkpoint was admissible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rctools.recovery.workloads import Action

NAMED = ("entry", "commit", "exit")

Event = Mapping[str, Any]


@dataclass
class Incarnation:
    """An instance since its last (re)start, as the events show it."""

    begun: bool = False
    exited: bool = False
    pos: int = 0
    # entry, commit, exit or a restore point's name -> its position
    checkpoints: dict[str, int] = field(default_factory=dict)
    outputs: list[tuple[int, str]] = field(default_factory=list)  # (pos, value)
    consumed: list[tuple[int, str, str]] = field(default_factory=list)  # (pos, from, value)
    irreversible: list[int] = field(default_factory=list)  # positions of issued or replayed

    @property
    def committed(self) -> bool:
        return "commit" in self.checkpoints


@dataclass(frozen=True)
class Localization:
    """Whom the controller blames (None: nobody) and the candidates it chose among."""

    instance: str | None
    candidates: tuple[str, ...]

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) > 1


def restore_target(event: Event) -> str:
    """The checkpoint a restore event names: a named boundary, or the restore point's name."""
    return str(event["point"]) if event["boundary"] == "point" else str(event["boundary"])


def kept_after_restore(checkpoints: dict[str, int], target: str) -> dict[str, int]:
    """The checkpoints an instance keeps when restored to `target` (the contract's Restore):
    those at or before its position, but an exit there only when it is the one restored to
    (the exit was taken after any other checkpoint at its boundary)."""
    q = checkpoints[target]
    return {
        b: p
        for b, p in checkpoints.items()
        if p < q or (p == q and (b != "exit" or target == "exit"))
    }


def observed(events: Iterable[Event]) -> list[Event]:
    """The events the controller may read: all but the injector's `fail`."""
    return [e for e in events if e["ev"] != "fail"]


def replay(
    events: Iterable[Event], instances: Iterable[str], tools: Mapping[str, str]
) -> dict[str, Incarnation]:
    """Each instance's current incarnation, from the events alone."""
    inc = {name: Incarnation() for name in instances}
    for e in events:
        ev, name = e["ev"], e.get("instance")
        if ev == "rerun":
            inc = {n: Incarnation() for n in inc}
            continue
        if ev in ("localize", "block"):
            continue
        me = inc[name]
        if ev == "begin":
            inc[name] = Incarnation(begun=True, checkpoints={"entry": 0})
        elif ev == "exit":
            me.exited = True
            me.checkpoints["exit"] = me.pos
        elif ev == "checkpoint":
            me.checkpoints[str(e["point"])] = me.pos
        elif ev == "restore":
            target = restore_target(e)
            q = me.checkpoints[target]
            me.checkpoints = kept_after_restore(me.checkpoints, target)
            me.outputs = [o for o in me.outputs if o[0] <= q]
            me.consumed = [c for c in me.consumed if c[0] <= q]
            me.irreversible = [p for p in me.irreversible if p <= q]
            me.pos, me.exited = q, False
            for other in e.get("also", ()):
                inc[other] = Incarnation()
        else:  # emit, commit, consume, effect: one action
            me.pos += 1
            if ev in ("emit", "commit"):
                me.outputs.append((me.pos, e["value"]))
                if ev == "commit":
                    me.checkpoints["commit"] = me.pos
            elif ev == "consume":
                me.consumed.append((me.pos, e["from"], e["value"]))
            elif tools.get(e["tool"]) == "irreversible":
                me.irreversible.append(me.pos)
    return inc


def localize(
    events: Sequence[Event],
    plan: Mapping[str, Sequence[Action]],
    tools: Mapping[str, str],
    failed_tool: str | None,
) -> Localization:
    """Blames an instance from the recorded events (see the module's docstring)."""
    inc = replay(observed(events), plan, tools)
    unfinished = [n for n in plan if inc[n].begun and not inc[n].exited]
    candidates = unfinished
    if failed_tool is not None:

        def next_call(name: str) -> str | None:
            traced = [a for a in plan[name] if a.kind != "await"]
            pos = inc[name].pos
            return traced[pos].tool if pos < len(traced) and traced[pos].kind == "effect" else None

        candidates = [n for n in unfinished if next_call(n) == failed_tool]
    return Localization(candidates[0] if candidates else None, tuple(candidates))


def certify(
    events: Sequence[Event], instance: str, instances: Iterable[str], tools: Mapping[str, str]
) -> list[str]:
    """The checkpoints of `instance` (a named boundary or a restore point's name), latest
    first, that the controller certifies."""
    inc = replay(observed(events), instances, tools)
    me = inc[instance]
    live = set(me.outputs)
    read_by_committed = [
        (pos, value)
        for name, other in inc.items()
        if name != instance and other.committed
        for _, source, value in other.consumed
        if source == instance
        for pos, out in live
        if out == value
    ]
    found = []
    # Latest first: by position, and at one position the exit (taken after the others there).
    for boundary, q in sorted(
        me.checkpoints.items(), key=lambda item: (item[1], item[0] == "exit"), reverse=True
    ):
        orphans = any(pos > q for pos, _ in read_by_committed)
        if not orphans and not any(p > q for p in me.irreversible):
            found.append(boundary)
    return found
