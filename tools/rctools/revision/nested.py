"""Nested input paths: a field of a list element (`docs[1].title`), a field of a record
(`prefs.lang`), a whole list (`docs`).

A path names a value inside the input record. Its version changes whenever that value changes
-- so a revision of `docs[1].title` also makes a new version of `docs[1]` and of `docs` (the
values that contain it), and replacing `docs[0]` makes a new version of `docs[0].title`. The
runtime finds which declared paths a revision changed by comparing their values before and
after (it never guesses), and records one `revise` event per changed path.

Reads go through `TrackedView`: indexing into a list or record hands out another view and
records nothing; a read records the path of the value the node actually consumed -- a scalar
(`docs[0].title`), or a list or record taken whole (iterating `docs`, or `whole()`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

Key = str | int
_STEP = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
MISSING = object()


def parse(path: str) -> list[Key]:
    """`docs[1].title` -> ["docs", 1, "title"]."""
    keys: list[Key] = []
    at = 0
    while at < len(path):
        m = _STEP.match(path, at)
        if m is None or (at == 0 and path.startswith(".")):
            raise ValueError(f"not a path: {path!r}")
        keys.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        at = m.end()
    if not keys:
        raise ValueError("empty path")
    return keys


def join(keys: list[Key]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out


def resolve(record: Any, path: str) -> Any:
    """The value at `path`, or MISSING."""
    value = record
    for k in parse(path):
        try:
            value = value[k]
        except (KeyError, IndexError, TypeError):
            return MISSING
    return value


def assign(record: Any, path: str, value: Any) -> None:
    keys = parse(path)
    holder = record
    for k in keys[:-1]:
        holder = holder[k]
    holder[keys[-1]] = value


class NestedInputs:
    """The versioned, nested input record: one version per declared path."""

    def __init__(self, values: dict[str, Any], paths: list[str]) -> None:
        self.values = copy.deepcopy(values)
        self.paths = list(paths)
        self.versions = {p: 0 for p in self.paths}

    def snapshot(self) -> dict[str, Any]:
        return {p: copy.deepcopy(resolve(self.values, p)) for p in self.paths}

    def changed(self, before: dict[str, Any]) -> list[str]:
        """The declared paths whose value differs from `before`, in declaration order."""
        return [p for p in self.paths if resolve(self.values, p) != before[p]]


class TrackedView:
    """What a node body reads the nested input record through: every consumed value is
    recorded with its path and current version (`on_read`)."""

    def __init__(
        self,
        inputs: NestedInputs,
        on_read: Callable[[str, int], None],
        keys: list[Key] | None = None,
    ) -> None:
        self._inputs = inputs
        self._on_read = on_read
        self._keys = keys or []

    @property
    def path(self) -> str:
        return join(self._keys)

    def _raw(self) -> Any:
        value: Any = self._inputs.values
        for k in self._keys:
            value = value[k]
        return value

    def _consume(self, keys: list[Key], value: Any) -> Any:
        path = join(keys)
        self._on_read(path, self._inputs.versions[path])
        return copy.deepcopy(value)

    def __getitem__(self, key: Key) -> Any:
        keys = [*self._keys, key]
        value = self._raw()[key]
        if isinstance(value, (dict, list)):
            return TrackedView(self._inputs, self._on_read, keys)
        return self._consume(keys, value)

    def whole(self) -> Any:
        """The list or record itself, consumed whole: a read of this path."""
        return self._consume(self._keys, self._raw())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())


def read(view: TrackedView, path: str) -> Any:
    """A node body reading `path` through the view: index step by step, take the end whole."""
    value: Any = view
    for k in parse(path):
        value = value[k]
    return value.whole() if isinstance(value, TrackedView) else value
