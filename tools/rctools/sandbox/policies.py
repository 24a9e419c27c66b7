"""The checkpoint policies: what a turn's checkpoint captures, and how file images are stored.

`changed` is the effect inspector's classification of the turn (the kinds whose state differs
from their last checkpoint). Only `effect-aware` reads it; the baselines ignore it, which is
exactly why they lose state on a restore (chat-only, chat-files) or pay for every turn (full).
`full` exists twice so that the traffic saving of effect-aware can be split into its two
causes: `full` stores the whole upper layer every turn (complete snapshots), `full-delta`
stores what changed since the last file image every turn (the same deltas effect-aware
stores, but no turn is skipped). Process images are complete criu dumps in every policy: this
kernel has no soft-dirty memory tracking (`criu check --feature mem_dirty_track`), so criu
cannot dump only the pages changed since the last dump.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("files", "procs")


@dataclass(frozen=True)
class Policy:
    name: str
    summary: str
    # What a turn captures: "nothing", "files", "both" (whatever the turn did) or "changed".
    captures: str
    # "complete": a file image holds the whole upper layer; "delta": what changed since the last.
    file_images: str

    def capture(self, changed: set[str]) -> set[str]:
        if self.captures == "nothing":
            return set()
        if self.captures == "files":
            return {"files"}
        if self.captures == "both":
            return set(KINDS)
        return set(changed)


POLICIES = {
    p.name: p
    for p in (
        Policy(
            "chat-only",
            "keep the conversation only; the sandbox restarts from its base",
            "nothing",
            "",
        ),
        Policy(
            "chat-files",
            "the conversation and a copy of the files every turn",
            "files",
            "complete",
        ),
        Policy(
            "full",
            "files and processes every turn, whatever the turn did; complete snapshots",
            "both",
            "complete",
        ),
        Policy(
            "full-delta",
            "files and processes every turn, whatever the turn did; files as deltas",
            "both",
            "delta",
        ),
        Policy(
            "effect-aware",
            "what the inspector says changed, files as a delta; skip if nothing",
            "changed",
            "delta",
        ),
    )
}
