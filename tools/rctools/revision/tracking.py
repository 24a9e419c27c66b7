"""The versioned input record and the read-tracking proxy node bodies read it through.

Validity-guided recovery is only as good as its provenance: every path a node reads, and the
version it saw, must be recorded while the node runs. A node that reads the raw record instead
escapes tracking, and the runtime must say so (its provenance is unknown).
"""

from __future__ import annotations

from collections.abc import Callable


class Inputs:
    """The versioned input record: a revision makes a new version of one path."""

    def __init__(self, values: dict[str, str | int]) -> None:
        self.values = dict(values)
        self.versions = {p: 0 for p in values}


class TrackedReads:
    """What a node body gets instead of the input record: every read is recorded."""

    def __init__(self, inputs: Inputs, on_read: Callable[[str, int], None]) -> None:
        self._inputs = inputs
        self._on_read = on_read

    def __getitem__(self, path: str) -> str | int:
        self._on_read(path, self._inputs.versions[path])
        return self._inputs.values[path]
