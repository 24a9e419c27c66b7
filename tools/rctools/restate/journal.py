"""Restate's journal as ground truth: what a retry of a workflow invocation replays, as
ResumeCore sees it, read through Restate's SQL introspection (`sys_journal`, `sys_promise`).

A workflow key is a thread. Its checkpoints are named `<key>@k`: `@0` is the invocation's
`Input` entry (the workflow was submitted), `@k` the journal after its k-th completed task.
A task is a `ctx.run` (a `Run` command; its completion notification carries the stored
result), the wait for a durable promise (a `GetPromise` command) or for an awakeable (no
command: its first `Signal` notification completes it). The server completes a
`GetPromise` the moment the promise is resolved, whether or not a handler is running; until a
handler has consumed the value (a later command is in the journal) the value is an answer on
`@k-1`, not yet the task's stored result -- which is what the contract calls an answer.

A `ctx.run` result is `<name>-done/<proc>`: the checkpoint it makes is `<key>@k/<proc>`, so a
result a killed attempt made in memory and a retry makes again are two checkpoints, as they are
for the contract; the name is read back from the journal, never assumed. The journal does not
say which attempt consumed a promise, so the consuming attempt notes its name in the cell's
control folder (`consumed-<k>`) before it journals anything after the wait: the checkpoint
after a promise is `<key>@k/promise:<proc>`. A digest hashes the stored results.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rctools.restate.server import query
from rctools.suite.stored import StoredRun

SERVICE = "order"


@dataclass
class Task:
    """One `Run` or `GetPromise` command of the journal and its completion, if any."""

    kind: str  # "run" | "promise" | "awakeable"
    name: str  # the run's name, or the promise's key
    index: int  # the command's journal index
    completion: int
    done: bool = False
    value: Any = None
    failed: bool = False
    values: list[Any] = field(default_factory=list)  # an awakeable's: every resolve, in order


@dataclass
class Snapshot(StoredRun):
    key: str
    invocation: str | None
    tasks: list[Task] = field(default_factory=list)
    commands: list[int] = field(default_factory=list)  # journal indexes of every command
    promises: dict[str, Any] = field(default_factory=dict)  # resolved promise -> value
    notes: Path | None = None  # where consuming attempts note their names

    @property
    def exists(self) -> bool:
        return self.invocation is not None

    def started(self) -> bool:
        """Whether any attempt got past the input (a command beyond `Input` is journaled)."""
        return len(self.commands) > 1

    def consumed(self, t: Task) -> bool:
        """A completed task whose value the handler has used: a run's stored result, or a
        promise after which the handler journaled another command."""
        if not t.done:
            return False
        return t.kind == "run" or any(i > t.index for i in self.commands)

    def count(self) -> int:
        n = 0
        for t in self.tasks:
            if not self.consumed(t):
                break
            n += 1
        return n

    @property
    def prefix(self) -> str:
        return self.key

    def maker(self, k: int) -> str:
        """A run's process from its result; a wait's consumer from the note it left."""
        t = self.tasks[k - 1]
        if t.kind != "run":
            noted = self.notes / f"consumed-{k}" if self.notes else None
            by = noted.read_text() if noted and noted.exists() else "?"
            return f"{t.kind}:{by}"
        value = t.value
        if isinstance(value, str) and "/" in value:
            return value.rsplit("/", 1)[1]
        return "x"

    def digest(self, k: int) -> str:
        body = [(t.kind, t.name, t.value, t.failed) for t in self.tasks[:k]]
        return hashlib.sha256(json.dumps(body).encode()).hexdigest()[:16]

    def parked(self) -> int | None:
        """The task index of the promise the workflow waits for (its `GetPromise` has no
        completion yet), or None."""
        k = self.count()
        if k < len(self.tasks):
            t = self.tasks[k]
            if t.kind == "promise" and not t.done:
                return k + 1
        return None

    def answers_at(self, k: int) -> list[dict[str, Any]]:
        """The answers stored on checkpoint k: a resolved promise whose wait is task k+1, or
        every value an awakeable waited for as task k+1 was resolved with."""
        if k < len(self.tasks) and self.tasks[k].kind == "awakeable":
            values = list(dict.fromkeys(json.dumps(v) for v in self.tasks[k].values))
            return [{"interrupt": f"{self.key}:{k + 1}", "value": json.loads(v)} for v in values]
        if k < len(self.tasks) and self.tasks[k].kind == "promise":
            name = self.tasks[k].name
            if name in self.promises:
                return [{"interrupt": f"{self.key}:{k + 1}", "value": self.promises[name]}]
        return []


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def invocation_of(admin: str, key: str) -> str | None:
    rows = query(
        admin,
        "select id from sys_invocation where target_service_name = "
        f"{_quote(SERVICE)} and target_service_key = {_quote(key)} "
        "and target_handler_name = 'run'",
    )
    return str(rows[0]["id"]) if rows else None


def _decode(raw: Any) -> Any:
    """A completion's `Success` payload (the JSON bytes the SDK wrote)."""
    if isinstance(raw, list):
        try:
            return json.loads(bytes(raw).decode())
        except (ValueError, UnicodeDecodeError):
            return bytes(raw).hex()
    return raw


def snapshot(
    admin: str, key: str, invocation: str | None = None, notes: Path | None = None
) -> Snapshot:
    if invocation is None:
        invocation = invocation_of(admin, key)
    snap = Snapshot(key, invocation, notes=notes)
    if invocation is None:
        return snap
    rows = query(
        admin,
        "select index, entry_type, entry_json from sys_journal "
        f"where id = {_quote(invocation)} order by index",
    )
    by_completion: dict[int, Task] = {}
    signals: dict[str, Task] = {}
    completions: dict[int, dict[str, Any]] = {}
    for row in rows:
        entry = json.loads(row["entry_json"]) if row.get("entry_json") else {}
        if "Command" in entry:
            snap.commands.append(int(row["index"]))
            (kind, body), *_ = entry["Command"].items()
            if kind in ("Run", "GetPromise"):
                task = Task(
                    "run" if kind == "Run" else "promise",
                    body.get("name", "") if kind == "Run" else body.get("key", ""),
                    int(row["index"]),
                    int(body["completion_id"]),
                )
                snap.tasks.append(task)
                by_completion[task.completion] = task
        elif "Signal" in entry.get("Notification", {}):
            # an awakeable's resolve: no command marks the wait; the first signal completes it
            # (the handler takes that one), every later one stays in the journal unread
            signal = entry["Notification"]["Signal"]
            index = str(signal.get("id", {}).get("Index", "?"))
            result = signal.get("result", {})
            value = _decode(result["Success"]) if "Success" in result else None
            task = signals.get(index)
            if task is None:
                task = Task("awakeable", index, int(row["index"]), -1, True, value)
                signals[index] = task
                snap.tasks.append(task)
            task.values.append(value)
        elif "Notification" in entry:
            completion = entry["Notification"].get("Completion", {})
            for body in completion.values():
                if isinstance(body, dict) and "completion_id" in body:
                    completions[int(body["completion_id"])] = body.get("result", {})
    for cid, result in completions.items():
        task = by_completion.get(cid)
        if task is None:
            continue
        task.done = True
        if isinstance(result, dict) and "Success" in result:
            task.value = _decode(result["Success"])
        else:
            task.failed = True
            task.value = json.dumps(result, sort_keys=True)
    for row in query(
        admin,
        "select key, completed, completion_success_value_utf8 from sys_promise "
        f"where service_name = {_quote(SERVICE)} and service_key = {_quote(key)}",
    ):
        if row.get("completed") and row.get("completion_success_value_utf8") is not None:
            snap.promises[row["key"]] = json.loads(row["completion_success_value_utf8"])
    return snap
