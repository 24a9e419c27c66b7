"""DBOS's system tables as ground truth: what a load of a workflow returns, as ResumeCore sees it.

A workflow (its root's id, for forks) is a thread. Its checkpoints are named `<id>@<k>`: `@0`
is the workflow_status row (inputs stored, nothing run), `@k` the state after its k-th recorded
task operation (a step, or a `DBOS.recv`; the durable-sleep row a recv writes for its timeout
is bookkeeping, not a task). A checkpoint's digest hashes the recorded outputs (DBOS drops
the inputs column once a workflow ends), never the workflow id, so a fork copy digests like
its source.

A step's output is `<name>-done/<proc>`: the checkpoint it makes is `<id>@<k>/<proc>`, so a
checkpoint a killed process made in memory and a recovery makes again are two checkpoints, as
they are for the contract; the name is read back from the table, never assumed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rctools.suite.stored import StoredRun

BOOKKEEPING = {"DBOS.sleep"}


@dataclass
class Snapshot(StoredRun):
    wf: str
    exists: bool
    status: str | None
    forked_from: str | None
    inputs: str | None
    tasks: list[tuple[int, str, str | None, str | None]]  # (function_id, name, output, error)
    messages: list[tuple[str, Any]]  # (topic, message), consumed or not, oldest first
    serializations: list[str | None]
    sleeps: list[int]  # function ids of durable-sleep rows (a recv's timeout)
    source: Snapshot | None = None  # for a fork: the workflow it was forked from
    fork_point: int = 0  # for a fork: how many task rows fork_workflow copied

    def parked(self) -> int | None:
        """The task index of the recv this workflow waits in (its timeout recorded, no
        output yet), or None."""
        recorded = {fid for fid, *_ in self.tasks}
        last = max(recorded, default=0)
        for sleep in self.sleeps:
            if sleep - 1 not in recorded and sleep - 1 > last:
                return self.count() + 1
        return None

    @property
    def prefix(self) -> str:
        return self.wf

    def count(self) -> int:
        return len(self.tasks)

    def maker(self, k: int) -> str:
        """The process whose name is in the step's output, or `recv` for a consumed message."""
        _, name, output, _ = self.tasks[k - 1]
        value = _decode(output, self.serializations[k - 1])
        if isinstance(value, str) and "/" in value:
            return value.rsplit("/", 1)[1]
        return "recv" if name == "DBOS.recv" else "x"

    def failed(self, k: int) -> bool:
        return self.tasks[k - 1][3] is not None

    def digest(self, k: int) -> str:
        body = [(name, out, err) for _, name, out, err in self.tasks[:k]]
        return hashlib.sha256(json.dumps(body).encode()).hexdigest()[:16]

    def answers_at(self, k: int) -> list[dict[str, Any]]:
        """The messages sent against checkpoint k (a message names the checkpoint it saw)."""
        return [
            {"interrupt": msg["interrupt"], "value": msg["answer"]}
            for _, msg in self.messages
            if isinstance(msg, dict) and msg.get("against") == self.ckid(k)
        ]


def snapshot(db: Path, wf: str) -> Snapshot:
    if not Path(db).exists():
        return Snapshot(wf, False, None, None, None, [], [], [], [])
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        con.execute("BEGIN")
        row = con.execute(
            "select status, forked_from, inputs from workflow_status where workflow_uuid = ?",
            (wf,),
        ).fetchone()
        rows = [
            r
            for r in con.execute(
                "select function_id, function_name, output, error, serialization "
                "from operation_outputs where workflow_uuid = ? order by function_id",
                (wf,),
            )
            if r[1] not in BOOKKEEPING
        ]
        tasks = [r[:4] for r in rows]
        serializations = [r[4] for r in rows]
        messages = []
        for topic, message, serialization in con.execute(
            "select topic, message, serialization from notifications "
            "where destination_uuid = ? order by created_at_epoch_ms, rowid",
            (wf,),
        ):
            messages.append((topic, _decode(message, serialization)))
        sleeps = [
            r[0]
            for r in con.execute(
                "select function_id from operation_outputs where workflow_uuid = ? "
                "and function_name = 'DBOS.sleep'",
                (wf,),
            )
        ]
        con.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return Snapshot(wf, False, None, None, None, [], [], [], [])
        raise
    finally:
        con.close()
    if row is None:
        return Snapshot(wf, False, None, None, None, [], [], [], [])
    snap = Snapshot(wf, True, row[0], row[1], row[2], tasks, messages, serializations, sleeps)
    if snap.forked_from:
        # fork_workflow copies the rows before its start step as they are; the rows the fork
        # ran itself carry its own processes' names (cells never reuse a process name), so
        # the copied prefix is the longest prefix equal to the source's.
        snap.source = snapshot(db, snap.forked_from)
        n = 0
        for mine, theirs in zip(snap.tasks, snap.source.tasks, strict=False):
            if mine != theirs:
                break
            n += 1
        snap.fork_point = n
    return snap


def _decode(message: str | None, serialization: str | None) -> Any:
    if message is None:
        return None
    try:
        from dbos._serialization import DBOSDefaultSerializer, deserialize_value

        return deserialize_value(message, serialization, DBOSDefaultSerializer)
    except Exception:
        return message


def forks_of(db: Path, wf: str) -> list[str]:
    """The workflows forked from `wf`, oldest first."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return [
            r[0]
            for r in con.execute(
                "select workflow_uuid from workflow_status where forked_from = ? "
                "order by created_at, rowid",
                (wf,),
            )
        ]
    finally:
        con.close()
