"""Which saver methods, with which shapes of arguments, the recorded runs reached: a matrix
that never calls `list(before=...)` says nothing of a saver's `before`, however green it is.

`RecordingSaver` notes each call's `Shape` in the process's `CallTally` (a counter under a
lock of its own, never the saver lock: the count stays out of the calls it counts). The
worker reports the tally as `{key: count}` with its other facts -- in its kill message too,
so a killed process's calls are counted -- the driver sums a cell's processes into
`CellRun.saver_calls`, and `coverage` sums the cells of one saver into a `Coverage`: what
was reached, in how many calls and cells, and which shapes of `EXPECTED` were never reached
and what would reach them. `render` is the text report's table. docs/langgraph.md, "Output".
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resumecheck import texttable

ROOT, SUBGRAPH, ALL_THREADS = "root", "subgraph", "all-threads"
# The channels of a write that are the loop's own records, not a node's values.
SPECIAL_WRITES = ("__error__", "__interrupt__", "__resume__")


@dataclass(frozen=True, order=True)
class Shape:
    """One kind of saver call. `method` as called (`aget_tuple` is the async API); `args`
    the argument shape (a load's role and what it asked, the namespace, which of `before`,
    `limit`, `filter` were given, a put's `source`, a write's special channels); `got` what a
    load was answered: `found`, `none`, or `another` (a pinned load answered with another
    checkpoint id); empty for a call that is not a load."""

    method: str
    args: tuple[str, ...] = ()
    got: str = ""

    @property
    def base(self) -> str:
        """The method's sync name: the async twins are `a` + it, no sync name starts so."""
        return self.method[1:] if self.method.startswith("a") else self.method

    @property
    def api(self) -> str:
        return "async" if self.method.startswith("a") else "sync"

    @property
    def key(self) -> str:
        """The shape as one string (a JSON key): `get_tuple load pinned root -> found`."""
        return " ".join((self.method, *self.args)) + (f" -> {self.got}" if self.got else "")

    @classmethod
    def parse(cls, key: str) -> Shape:
        call, _, got = key.partition(" -> ")
        method, *args = call.split(" ")
        return cls(method, tuple(args), got)


def namespace(config: Mapping[str, Any] | None) -> str:
    """`root`, `subgraph` (a checkpoint namespace), or `all-threads` (a list with no config)."""
    if config is None:
        return ALL_THREADS
    return SUBGRAPH if config.get("configurable", {}).get("checkpoint_ns") else ROOT


def _got(asked: str | None, tup: Any) -> str:
    if tup is None:
        return "none"
    if asked and tup.config.get("configurable", {}).get("checkpoint_id") != asked:
        return "another"
    return "found"


def load_shape(method: str, config: Mapping[str, Any], tup: Any, run_start: bool) -> Shape:
    """A `get_tuple`: a run's `load` or another `read` (get_state), of the latest checkpoint
    or a pinned `checkpoint_id`, in which namespace, and what came back."""
    asked = config.get("configurable", {}).get("checkpoint_id")
    role = "load" if run_start else "read"
    return Shape(
        method, (role, "pinned" if asked else "latest", namespace(config)), _got(asked, tup)
    )


def list_shape(
    method: str,
    config: Mapping[str, Any] | None,
    given: Mapping[str, Any],
    found: Sequence[Any] | None,
) -> Shape:
    """A `list`: a subgraph's replay `load` (its first tuple is the answer) or `history`
    (get_state_history's, streamed to its caller: `got` left empty), with the keyword
    arguments `given` (`before`, `limit`, `filter`) that were not None."""
    role = "history" if found is None else "load"
    args = (role, namespace(config), *(name for name, value in given.items() if value is not None))
    got = "" if found is None else ("found" if found else "none")
    return Shape(method, args, got)


def put_shape(method: str, config: Mapping[str, Any], metadata: Mapping[str, Any]) -> Shape:
    """A `put`: its namespace and its checkpoint's `source` (input, loop, update, fork)."""
    return Shape(method, (namespace(config), str(metadata.get("source") or "-")))


def writes_shape(method: str, config: Mapping[str, Any], writes: Sequence[Any]) -> Shape:
    """A `put_writes`: its namespace and the loop's special channels it writes, if any."""
    channels = {w[0] for w in writes}
    special = tuple(c for c in SPECIAL_WRITES if c in channels)
    return Shape(method, (namespace(config), *(special or ("values",))))


class CallTally:
    """One process's saver calls, counted by shape. Its own lock: LangGraph's background
    writer calls the saver from another thread, and the saver lock must not be touched."""

    def __init__(self) -> None:
        self._counts: Counter[Shape] = Counter()
        self._lock = threading.Lock()

    def note(self, shape: Shape) -> None:
        with self._lock:
            self._counts[shape] += 1

    def to_json(self) -> dict[str, int]:
        with self._lock:
            return {s.key: n for s, n in sorted(self._counts.items())}


def add(into: dict[str, int], counts: Mapping[str, Any] | None) -> None:
    """Adds one process's tally to a cell's."""
    for key, n in (counts or {}).items():
        into[key] = into.get(key, 0) + int(n)


@dataclass(frozen=True)
class Expected:
    """A shape a matrix may never reach, and what reaches it. Reached by any call whose base
    method is `method` (any when empty), whose args include `args`, of API `api` (any when
    empty), answered `got` (any when empty)."""

    label: str
    why: str
    method: str = ""
    args: tuple[str, ...] = ()
    api: str = ""
    got: str = ""

    def met_by(self, shape: Shape) -> bool:
        return (
            (not self.method or shape.base == self.method)
            and set(self.args) <= set(shape.args)
            and (not self.api or shape.api == self.api)
            and (not self.got or shape.got == self.got)
        )


EXPECTED = (
    Expected("the sync API", "the saver has only the async API", api="sync"),
    Expected(
        "the async API (aget_tuple, aput...)",
        "the saver has no async API, or the run chose --api sync",
        api="async",
    ),
    Expected(
        "get_tuple(latest) -> none",
        "only a thread's first run finds nothing",
        "get_tuple",
        ("load", "latest"),
        got="none",
    ),
    Expected(
        "get_tuple(checkpoint_id)",
        "only time travel (fork) and a resume on an older checkpoint (pinned) ask by id",
        "get_tuple",
        ("load", "pinned", ROOT),
    ),
    Expected(
        "get_tuple(subgraph namespace)",
        "only a subgraph that keeps checkpoints of its own loads in its namespace",
        "get_tuple",
        ("load", SUBGRAPH),
    ),
    Expected(
        "get_tuple(checkpoint_id, subgraph namespace)",
        "only time travel into a subgraph (--app's app-subfork-I) loads it by checkpoint_map",
        "get_tuple",
        ("load", "pinned", SUBGRAPH),
    ),
    Expected(
        "list(before=)",
        "only time travel past a subgraph compiled with checkpointer=True calls it "
        "(LangGraph loads that subgraph's checkpoint with list(before=..., limit=1))",
        "list",
        ("before",),
    ),
    Expected(
        "list(filter=)",
        "LangGraph's loop never filters; only get_state_history(filter=...) does, and the "
        "driver lists history through the bare saver",
        "list",
        ("filter",),
    ),
    Expected(
        "put(subgraph namespace)", "only a subgraph that keeps checkpoints", "put", (SUBGRAPH,)
    ),
    Expected("put(source=update)", "only update_state", "put", ("update",)),
    Expected("put(source=fork)", "only time travel that copies its checkpoint", "put", ("fork",)),
    Expected(
        "put_writes(subgraph namespace)", "only a subgraph's tasks", "put_writes", (SUBGRAPH,)
    ),
    Expected("put_writes(__error__)", "only a node that raises", "put_writes", ("__error__",)),
    Expected(
        "put_writes(__interrupt__)",
        "only a node that calls interrupt()",
        "put_writes",
        ("__interrupt__",),
    ),
    Expected(
        "delete_thread",
        "only the `delete` scenario (a thread deleted, then started again on its id)",
        "delete_thread",
    ),
)


@dataclass(frozen=True)
class Reached:
    """A shape the runs called: in how many calls, in how many cells."""

    shape: Shape
    calls: int
    cells: int


@dataclass(frozen=True)
class Coverage:
    """One saver's calls over the cells it ran, and the expected shapes it never reached."""

    saver: str
    cells: int
    reached: tuple[Reached, ...]
    never: tuple[Expected, ...]

    def calls(self, method: str) -> int:
        """Every call of a method by its sync name (both APIs)."""
        return sum(r.calls for r in self.reached if r.shape.base == method)

    def to_json(self) -> dict[str, Any]:
        return {
            "saver": self.saver,
            "cells": self.cells,
            "calls": [
                {
                    "method": r.shape.method,
                    "args": list(r.shape.args),
                    "got": r.shape.got or None,
                    "calls": r.calls,
                    "cells": r.cells,
                }
                for r in self.reached
            ],
            "never": [{"shape": e.label, "why": e.why} for e in self.never],
        }


def coverage(
    saver: str, per_cell: Iterable[Mapping[str, int]], expected: Sequence[Expected] = EXPECTED
) -> Coverage:
    """Sums the cells' tallies (`CellRun.saver_calls`) of one saver."""
    calls: Counter[Shape] = Counter()
    cells: Counter[Shape] = Counter()
    count = 0
    for tally in per_cell:
        count += 1
        for key, n in tally.items():
            shape = Shape.parse(key)
            calls[shape] += int(n)
            cells[shape] += 1
    reached = tuple(Reached(s, calls[s], cells[s]) for s in sorted(calls))
    never = tuple(e for e in expected if not any(e.met_by(r.shape) for r in reached))
    return Coverage(saver, count, reached, never)


def _apis(side: Coverage) -> tuple[str, ...]:
    return tuple(a for a in ("sync", "async") if any(r.shape.api == a for r in side.reached))


def _column(side: Coverage) -> dict[Shape, str]:
    """`calls (cells)` per shape by its sync name; a saver driven through both APIs shows
    `sync / async`, so a row stays one per shape whichever API called it."""
    apis = _apis(side)
    by: dict[tuple[Shape, str], Reached] = {
        (Shape(r.shape.base, r.shape.args, r.shape.got), r.shape.api): r for r in side.reached
    }
    rows = {shape for shape, _ in by}
    return {
        row: " / ".join(
            f"{r.calls} ({r.cells})" if (r := by.get((row, api))) else "-" for api in apis
        )
        for row in rows
    }


def _never(title: str, side: Coverage, tested: Coverage | None) -> list[str]:
    """What a saver never reached and what would; the reference only where it differs."""
    if tested is None:
        head = f"Never called on {title}:" + ("" if side.never else " nothing expected")
        return [head, *(f"  {e.label}: never called -- {e.why}" for e in side.never)]
    other = [e for e in side.never if e not in tested.never]
    if not other:
        return [f"Never called on {title}: as on the tested saver"]
    head = f"Never called on {title}, besides what the tested saver never called:"
    return [head, *(f"  {e.label}: never called -- {e.why}" for e in other)]


def render(tested: Coverage, reference: Coverage | None = None) -> list[str]:
    """The text report's table: a row per method (by its sync name) and argument shape,
    `calls (cells)` per saver, then what each saver never reached and why."""
    sides = [tested, *([reference] if reference else [])]
    titles = [
        f"{who} {side.saver} ({' / '.join(_apis(side)) or '-'})"
        for who, side in zip(("tested", "reference"), sides, strict=False)
    ]
    columns = [_column(side) for side in sides]
    shapes = sorted({shape for column in columns for shape in column})
    table = texttable.render(
        ["call", "got", *titles],
        [(" ".join((s.method, *s.args)), s.got, *(c.get(s, "-") for c in columns)) for s in shapes],
        indent=2,
    )
    lines = ["Saver calls: calls (cells) per method and argument shape", *table.splitlines()]
    lines += _never(titles[0], tested, None)
    if reference is not None:
        lines += _never(titles[1], reference, tested)
    return lines
