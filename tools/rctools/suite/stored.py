"""A run as the runtime's own store records it, operation by operation, as ResumeCore sees it.

DBOS (its system tables) and Temporal (a run's history on the server) record a run as a list of
completed operations: checkpoint `@0` is the run's start, `@k` the state after its k-th
operation, `<run>@<k>/<proc>` naming the process that completed it, so that a checkpoint a
killed process made in memory and the one a later process made again are two checkpoints, as
they are for the contract. A fork (DBOS's `fork_workflow`, Temporal's reset) copies its
source's first operations as they are. Restate's journal is read the same way (no forks, and a
load there is always of the latest checkpoint). What a `load` of a checkpoint returns follows
from that alike in all three; where a runtime keeps its operations and answers is its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


def ck(run: str, k: int, maker: str | None = None) -> str:
    """Checkpoint `k` of `run`, `<run>@<k>`, and `/<maker>` where a process made it."""
    return f"{run}@{k}" if maker is None else f"{run}@{k}/{maker}"


class StoredRun(ABC):
    """A run read from the store; a subclass says where its operations and answers are."""

    exists: bool  # False: the store has no such run (a load finds nothing)
    source: StoredRun | None = None  # for a fork: the run it was forked from
    fork_point = 0  # for a fork: how many operations it copied from `source`

    @property
    @abstractmethod
    def prefix(self) -> str:
        """The run's name in its checkpoints' and tasks' ids."""

    @abstractmethod
    def count(self) -> int:
        """How many operations are recorded."""

    @abstractmethod
    def maker(self, k: int) -> str:
        """The name of the process that recorded operation k (from 1), as the store has it."""

    @abstractmethod
    def digest(self, k: int) -> str:
        """A hash of the first k operations' recorded results, never of the ids, so the prefix
        a fork copies digests like its source."""

    @abstractmethod
    def answers_at(self, k: int) -> list[dict[str, Any]]:
        """The answers stored on checkpoint k, as a load returns them."""

    def failed(self, k: int) -> bool:
        """Whether operation k (from 1) recorded an error rather than a result."""
        return False

    def task(self, k: int) -> str:
        return f"{self.prefix}:{k}"

    def ckid(self, k: int) -> str:
        """The name of checkpoint k (0: the run's start) as the store has it; a fork's copied
        checkpoints keep their source's names."""
        if self.source is not None and k < self.fork_point:
            return self.source.ckid(k)
        return ck(self.prefix, 0) if k == 0 else ck(self.prefix, k, self.maker(k))

    def load_fields(self, asked: int | None = None) -> dict[str, Any]:
        """The fields of a `load` (or `read`) of the latest checkpoint, or of `@asked`."""
        if not self.exists:
            return {"checkpoint": None, "parent": None, "digest": None, "writes": [], "answers": []}
        k = self.count() if asked is None else asked
        answers = self.answers_at(k)
        writes = []
        if k < self.count():  # the next operation's recorded result is its write on @k
            writes = [{"task": self.task(k + 1), "kind": "error" if self.failed(k + 1) else "ok"}]
        parent = self.ckid(k - 1) if k > 0 else None
        if self.source is not None and k == self.fork_point:
            parent = self.source.ckid(k)  # a fork's copy: its parent is what it copies
        return {
            "checkpoint": self.ckid(k),
            "parent": parent,
            "digest": self.digest(k),
            "writes": writes,
            "answers": answers,
        }
