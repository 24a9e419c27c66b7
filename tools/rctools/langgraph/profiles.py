"""How much of the matrix a run records: `quick`, `pr` or `full`.

A profile chooses cells by what they carry, not by thinning: every scenario's fault-free run
(where a saver that mixes threads, namespaces or checkpoint ids is already wrong), and of the
kill points of each killed scenario a few of each *kind* (`killpoints.kind`: node start and
end, each saver call's entry and exit, between two statements of a write, an instant inside
it) instead of every one. Options given on the command line win over the profile's choice:
`--scenarios`, `--durability`, and `--kill-stride` (which keeps every N-th point instead of
a few of each kind). Budgets and what each profile catches are measured in
`bench/profiles.py` (results in `bench/README.md`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rctools.langgraph.matrix import DURABILITIES, KILLED
from rctools.langgraph.scenarios import ALL as SCENARIOS


@dataclass(frozen=True)
class Profile:
    """`scenarios` every scenario recorded (fault-free, and killed where `killed` says),
    `killed` the scenarios killed at `per_kind` points of each kind (0: every point),
    `durabilities` the modes; `left_out` says in a sentence what a full run would add."""

    name: str
    scenarios: tuple[str, ...]
    killed: tuple[str, ...]
    durabilities: tuple[str, ...]
    per_kind: int
    left_out: str


# Killed in `quick`: the writes and checkpoints of a plain chain, answers to interrupts, a
# subgraph's namespace under a kill, and edits (update_state) -- one scenario per thing a
# saver stores.
QUICK_KILLED = ("chain", "two-interrupts", "subgraph-interrupt", "update-state")

PROFILES: dict[str, Profile] = {
    "quick": Profile(
        "quick",
        tuple(SCENARIOS),
        QUICK_KILLED,
        ("sync",),
        1,
        "durability async and exit; kills in "
        + ", ".join(s for s in KILLED if s not in QUICK_KILLED)
        + "; all but the latest kill point of each kind",
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
