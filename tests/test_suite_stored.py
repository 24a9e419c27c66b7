"""What a `load` returns from a run its runtime's store records operation by operation (DBOS,
Temporal, Restate): the write of the next operation on an older checkpoint, an error as an
error, a fork's copied checkpoints under its source's names with the copy's parent the one it
copies, and nothing at all for a run the store does not have."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rctools.suite.stored import StoredRun


@dataclass
class Run(StoredRun):
    """Operations as (maker, result, failed); answers as {checkpoint: [answer]}."""

    name: str
    ops: list[tuple[str, str, bool]]
    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    exists: bool = True
    source: Run | None = None
    fork_point: int = 0

    @property
    def prefix(self) -> str:
        return self.name

    def count(self) -> int:
        return len(self.ops)

    def maker(self, k: int) -> str:
        return self.ops[k - 1][0]

    def failed(self, k: int) -> bool:
        return self.ops[k - 1][2]

    def digest(self, k: int) -> str:
        return "|".join(result for _, result, _ in self.ops[:k])

    def answers_at(self, k: int) -> list[dict[str, Any]]:
        return self.answers.get(self.ckid(k), [])


def test_a_load_of_an_older_checkpoint_carries_the_next_operations_write() -> None:
    answer = {"interrupt": "r:2", "value": "yes"}
    run = Run("r", [("w1", "a", False), ("w2", "b", True)], {"r@1/w1": [answer]})
    assert run.load_fields() == {
        "checkpoint": "r@2/w2",
        "parent": "r@1/w1",
        "digest": "a|b",
        "writes": [],
        "answers": [],
    }
    assert run.load_fields(1) == {
        "checkpoint": "r@1/w1",
        "parent": "r@0",
        "digest": "a",
        "writes": [{"task": "r:2", "kind": "error"}],
        "answers": [answer],
    }
    assert run.load_fields(0)["writes"] == [{"task": "r:1", "kind": "ok"}]


def test_a_fork_keeps_its_sources_checkpoints_and_a_missing_run_loads_nothing() -> None:
    source = Run("r", [("w1", "a", False), ("w1", "b", False)])
    fork = Run("f", [("w1", "a", False), ("w3", "c", False)], source=source, fork_point=1)
    # the fork copied its source's start; its first operation's state copies the source's @1
    assert [fork.ckid(k) for k in range(3)] == ["r@0", "f@1/w1", "f@2/w3"]
    assert fork.load_fields(1)["parent"] == "r@1/w1"
    assert fork.load_fields()["parent"] == "f@1/w1"
    assert Run("r", [], exists=False).load_fields() == {
        "checkpoint": None,
        "parent": None,
        "digest": None,
        "writes": [],
        "answers": [],
    }
