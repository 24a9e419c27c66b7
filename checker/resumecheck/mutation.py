"""Mutants of recorded traces: adversarial material the contract cannot be tuned to.

Each mutant is a recorded trace with one to three edits: an event dropped, duplicated, moved
elsewhere, swapped with its neighbour, or fabricated (a copy of one of the trace's events,
placed anywhere, with one field changed); or one field of one event changed (a value, digest,
task, thread, process, checkpoint, interrupt, outcome...), to another value the trace uses for
a field of that name or to a fresh one, including inside the lists an event carries (writes,
answers, scheduled tasks, received answers), where an element may also be dropped.

The generator knows the trace format only: the schema keeps every mutant judgeable (a mutant
the format refuses is drawn again). What a mutant means -- conforming or breaking which
property -- it never decides; TLC does (`resumecheck.agreement`). Draws come from a seeded
`random.Random`, so a seed and a list of recorded traces name the same mutants on every
machine.
"""

from __future__ import annotations

import copy
import json
import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumecheck.trace.encode import EncodeError, encode_trace
from resumecheck.trace.reader import RawTrace
from resumecheck.trace.schema import TraceSchema, load_schema

# Fields never changed: they name the kind of event, or nothing the contract reads.
_FIXED = frozenset({"ev", "ts", "scenario", "note"})
# Draws per mutant before giving up on a seed the format keeps refusing to let change.
_ATTEMPTS = 40


@dataclass(frozen=True)
class Mutant:
    """One mutated trace: where it came from, what was done, and the result."""

    seed: Path
    edits: tuple[str, ...]
    header: dict[str, Any]
    events: tuple[dict[str, Any], ...]

    def jsonl(self) -> str:
        lines = [self.header, *self.events]
        return "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)


def mutants(seeds: Sequence[RawTrace], count: int, seed: int = 0) -> Iterator[Mutant]:
    """`count` mutants, drawn round-robin-at-random from `seeds` (traces that read cleanly,
    all of contracts with a known format). Every mutant passes the format's schema and
    encodes; one that differs from its seed in nothing is drawn again."""
    usable = [s for s in seeds if s.header is not None and not s.problem and s.events]
    if not usable:
        return
    rng = random.Random(seed)
    made = 0
    misses = 0
    while made < count:
        raw = rng.choice(usable)
        schema = load_schema(str(raw.header.get("contract")))  # type: ignore[union-attr]
        mutant = _one(raw, schema, rng) if schema is not None else None
        if mutant is None:
            misses += 1
            if misses > _ATTEMPTS * count:
                return  # the seeds admit no judgeable change
            continue
        made += 1
        yield mutant


def _one(raw: RawTrace, schema: TraceSchema, rng: random.Random) -> Mutant | None:
    assert raw.header is not None
    for _ in range(_ATTEMPTS):
        events = copy.deepcopy(raw.events)
        edits = [_edit(events, rng) for _ in range(rng.choice((1, 1, 2, 3)))]
        if events == raw.events or not events:
            continue
        if any(schema.event_problem(event) for event in events):
            continue
        try:
            encode_trace(schema, raw.header, events)
        except EncodeError:
            continue
        return Mutant(raw.path, tuple(edits), raw.header, tuple(events))
    return None


def _edit(events: list[dict[str, Any]], rng: random.Random) -> str:
    """One edit of `events` in place; says what it did, in a person's words."""
    n = len(events)
    i = rng.randrange(n)
    kind = rng.choice(("drop", "duplicate", "move", "swap", "fabricate", "change", "change"))
    if kind == "drop" and n > 1:
        del events[i]
        return f"dropped event {i + 1}"
    if kind == "duplicate":
        events.insert(i + 1, copy.deepcopy(events[i]))
        return f"duplicated event {i + 1}"
    if kind == "move" and n > 2:
        event = events.pop(i)
        j = rng.randrange(n)
        events.insert(j, event)
        return f"moved event {i + 1} to {j + 1}"
    if kind == "swap" and i + 1 < n:
        events[i], events[i + 1] = events[i + 1], events[i]
        return f"swapped events {i + 1} and {i + 2}"
    if kind == "fabricate":
        event = copy.deepcopy(events[i])
        what = _change(event, _pools(events), rng)
        j = rng.randrange(n + 1)
        events.insert(j, event)
        return f"fabricated at {j + 1} a copy of event {i + 1} with {what}"
    what = _change(events[i], _pools(events), rng)
    return f"changed in event {i + 1} {what}"


def _pools(events: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Every value each field name takes anywhere in the trace (inside lists too), in order of
    first use: a changed field takes another value the trace gives a field of its name."""
    pools: dict[str, list[Any]] = defaultdict(list)

    def walk(node: dict[str, Any]) -> None:
        for key, value in node.items():
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict):
                        walk(item)
            elif value not in pools[key]:
                pools[key].append(value)

    for event in events:
        walk(event)
    return pools


def _change(event: dict[str, Any], pools: dict[str, list[Any]], rng: random.Random) -> str:
    """Changes one field of `event` (maybe inside one of its lists) in place."""
    keys = sorted(k for k in event if k not in _FIXED)
    if not keys:
        return "nothing"
    key = rng.choice(keys)
    value = event[key]
    if isinstance(value, list) and value and isinstance(value[0], dict):
        j = rng.randrange(len(value))
        if rng.random() < 0.3:
            del value[j]
            return f"{key}[{j}] dropped"
        item = value[j]
        sub = rng.choice(sorted(item))
        item[sub] = _other(item[sub], pools.get(sub, []), rng)
        return f"{key}[{j}].{sub}"
    if isinstance(value, list):
        if value and rng.random() < 0.5:
            del value[rng.randrange(len(value))]
            return f"an element of {key} dropped"
        value.append(_other(None, pools.get(key, []), rng))
        return f"an element added to {key}"
    event[key] = _other(value, pools.get(key, []), rng)
    return key


def _other(value: Any, pool: list[Any], rng: random.Random) -> Any:
    """Another value for a field: one the trace uses for a field of that name, a fresh string
    (a phantom id, a value nobody wrote), null, or the boolean's opposite."""
    if isinstance(value, bool):
        return not value
    choices = [x for x in pool if x != value]
    fresh = f"m{rng.randrange(1, 4)}" if isinstance(value, str) or value is None else None
    if fresh is not None and (not choices or rng.random() < 0.2):
        return fresh if rng.random() < 0.85 else None
    if isinstance(value, int) and not choices:
        return value + rng.choice((-1, 1))
    return rng.choice(choices) if choices else value


ACKNOWLEDGES = "x-acknowledges"
"""The schema's mark on an event kind that records a call's return (ResumeCore's `put`,
`put_writes`): what the call handed over may have reached the store, and been seen, at any
instant before it."""


def late_acknowledgements(raw: RawTrace, schema: TraceSchema) -> Iterator[Mutant]:
    """The trace as a slower store would have given it: each acknowledgement alone, then all at
    once, moved as late as its process allows -- past the other processes' events, to just
    before its own process's next event (or the end). A store that answers later gives such a
    run with nothing else changed, so each is a trace of a correct store wherever the seed is.
    Acknowledgements already last before their process's next event yield nothing."""
    if raw.header is None or raw.problem or not raw.events:
        return
    late = {kind for kind in schema.event_kinds if schema.defs[f"ev_{kind}"].get(ACKNOWLEDGES)}
    movable = [i for i in range(len(raw.events)) if _delay(raw.events, i, late) > i]
    for i in movable:
        events = list(raw.events)
        j = _delay(events, i, late)
        events.insert(j, events.pop(i))
        yield Mutant(
            raw.path, (f"acknowledged event {i + 1} late, at {j + 1}",), raw.header, tuple(events)
        )
    if len(movable) > 1:
        events = list(raw.events)
        for i in reversed(movable):  # from the end: each moves past events already placed
            events.insert(_delay(events, i, late), events.pop(i))
        yield Mutant(
            raw.path, (f"acknowledged {len(movable)} events late",), raw.header, tuple(events)
        )


def _delay(events: list[dict[str, Any]], i: int, late: set[str]) -> int:
    """Where acknowledgement `i` lands when it comes as late as its process allows (`i` itself
    for an event of another kind)."""
    if events[i].get("ev") not in late:
        return i
    proc = events[i].get("proc")
    j = i + 1
    while j < len(events) and events[j].get("proc") != proc:
        j += 1
    return j - 1
