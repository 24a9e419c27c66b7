"""The world the agents act on: tool stand-ins with policies, an intent ledger, a model.

The tools are deterministic stand-ins, but their effects are real rows in the run's SQLite
database, so undo, compensation and the ledger are observable after the run. The ledger keeps
the result of every irreversible intent: asked again for the same intent, the tool layer
replays the recorded result instead of issuing the effect a second time (an idempotency key
derived from the intent, not from the request id, which changes on every call).
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from dataclasses import dataclass

from rctools.recovery.workloads import Policy

_SCHEMA = """
CREATE TABLE IF NOT EXISTS effects (
    id INTEGER PRIMARY KEY, request TEXT, tool TEXT, intent TEXT, policy TEXT,
    state TEXT  -- live | undone | compensated
);
CREATE TABLE IF NOT EXISTS ledger (intent TEXT PRIMARY KEY, effect INTEGER, result TEXT);
"""


@dataclass(frozen=True)
class Issued:
    """What a tool call did: the effect row (None for a replay or a read) and its request id."""

    effect: int | None
    request: str
    replayed: bool


class World:
    """Tool calls against one SQLite database, safe to call from LangGraph's worker threads."""

    def __init__(
        self,
        db: sqlite3.Connection,
        tools: dict[str, Policy],
        latency: float = 0.0,
        *,
        ledger: bool = True,
    ) -> None:
        self.db = db
        self.tools = tools
        self.ledger = ledger  # off: a tool layer that forgets what it issued (a broken runtime)
        self.latency = latency  # seconds a call takes, as a remote tool's round trip would
        self.lock = threading.Lock()
        self.requests = itertools.count(1)
        with self.lock:
            self.db.executescript(_SCHEMA)

    def call(self, tool: str, intent: str) -> Issued:
        policy = self.tools[tool]
        request = f"req-{next(self.requests)}"
        time.sleep(self.latency)
        with self.lock, self.db:
            if policy == "irreversible" and self.ledger:
                row = self.db.execute("SELECT effect FROM ledger WHERE intent = ?", (intent,))
                if row.fetchone() is not None:
                    return Issued(None, request, replayed=True)
            if policy == "none":
                return Issued(None, request, replayed=False)
            cursor = self.db.execute(
                "INSERT INTO effects (request, tool, intent, policy, state) "
                "VALUES (?, ?, ?, ?, 'live')",
                (request, tool, intent, policy),
            )
            effect = cursor.lastrowid
            if policy == "irreversible":
                self.db.execute(
                    "INSERT OR REPLACE INTO ledger VALUES (?, ?, ?)",
                    (intent, effect, f"done {request}"),
                )
            return Issued(effect, request, replayed=False)

    def take_back(self, effect: int) -> None:
        """Undoes a reversible effect, compensates a compensable one; irreversible ones stay."""
        with self.lock, self.db:
            (policy,) = self.db.execute(
                "SELECT policy FROM effects WHERE id = ?", (effect,)
            ).fetchone()
            state = {"reversible": "undone", "compensable": "compensated"}.get(policy)
            if state:
                self.db.execute("UPDATE effects SET state = ? WHERE id = ?", (state, effect))

    def counts(self) -> dict[str, int]:
        """Effects by state, e.g. {'live': 3, 'compensated': 1}."""
        with self.lock:
            rows = self.db.execute("SELECT state, COUNT(*) FROM effects GROUP BY state")
            return dict(rows.fetchall())


class Model:
    """A model stand-in: deterministic per attempt, but a re-executed instance (a later
    attempt) chooses the next option, as a re-sampled model may. Counts its calls."""

    def __init__(self, latency: float = 0.0) -> None:
        self.calls = 0
        self.latency = latency  # seconds a call takes, as a model's response time would
        self.lock = threading.Lock()

    def choose(self, options: tuple[str, ...], attempt: int) -> str:
        with self.lock:
            self.calls += 1
        time.sleep(self.latency)
        return options[(attempt - 1) % len(options)]
