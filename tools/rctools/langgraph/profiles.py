"""How much of the matrix a run records: `quick`, `pr` or `full`.

A profile chooses cells by what they carry, not by thinning: every scenario's fault-free run
(where a saver that mixes threads, namespaces or checkpoint ids is already wrong), and of the
kill points of each killed scenario a few of each *kind* (`killpoints.kind`: node start and
end, each saver call's entry and exit, between two statements of a write, an instant inside
it) instead of every one. Options given on the command line win over the profile's choice:
`--scenarios`, `--durability` (each mode named is recorded with its faults), and
`--kill-stride` (which keeps every N-th point instead of a few of each kind). Budgets and what
each profile catches are measured in `bench/profiles_bench.py` (results in
`bench/profiles-results.md`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rctools.langgraph.matrix import DURABILITIES, KILLED
from rctools.langgraph.scenarios import ALL as SCENARIOS


@dataclass(frozen=True)
class Profile:
    """`scenarios` every scenario recorded (fault-free, and killed where `killed` says),
    `killed` the scenarios killed at `per_kind` points of each kind (0: every point),
    `durabilities` the modes recorded fault-free, `faulted` those of them whose cells include
    kills and races (None: every one); `left_out` says in a sentence what a full run would
    add."""

    name: str
    scenarios: tuple[str, ...]
    killed: tuple[str, ...]
    durabilities: tuple[str, ...]
    per_kind: int
    left_out: str
    faulted: tuple[str, ...] | None = None


# Killed in `quick`: the writes and checkpoints of a plain chain, answers to interrupts, a
# subgraph's namespace under a kill, and edits (update_state) -- one scenario per thing a
# saver stores.
QUICK_KILLED = ("chain", "two-interrupts", "subgraph-interrupt", "update-state")

PROFILES: dict[str, Profile] = {
    # Every durability fault-free (a saver that loses a write put before its checkpoint --
    # LangGraph's background put in async durability -- is wrong there with no fault at all),
    # faults in sync only.
    "quick": Profile(
        "quick",
        tuple(SCENARIOS),
        QUICK_KILLED,
        DURABILITIES,
        1,
        "kills and races in durability async and exit; kills in "
        + ", ".join(s for s in KILLED if s not in QUICK_KILLED)
        + "; all but the latest kill point of each kind",
        faulted=("sync",),
    ),
    "pr": Profile(
        "pr",
        tuple(SCENARIOS),
        KILLED,
        DURABILITIES,
        2,
        "all but the latest and the first kill point of each kind in each killed scenario",
    ),
    "full": Profile("full", tuple(SCENARIOS), KILLED, DURABILITIES, 0, "nothing"),
}
DEFAULT = "full"
