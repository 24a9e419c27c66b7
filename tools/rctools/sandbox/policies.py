"""The four checkpoint policies: what a turn's checkpoint captures.

`changed` is the effect inspector's classification of the turn (the kinds whose state differs
from their last checkpoint). Only `effect-aware` reads it; the baselines ignore it, which is
exactly why they lose state on a restore (chat-only, chat-files) or pay for every turn (full).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("files", "procs")


@dataclass(frozen=True)
class Policy:
    name: str
    summary: str
    # "complete": a file image holds the whole upper layer; "delta": what changed since the last.
    file_images: str

    def capture(self, changed: set[str]) -> set[str]:
        if self.name == "chat-only":
            return set()
        if self.name == "chat-files":
            return {"files"}
        if self.name == "full":
            return set(KINDS)
        return set(changed)


POLICIES = {
    p.name: p
    for p in (
        Policy("chat-only", "keep the conversation only; the sandbox restarts from its base", ""),
        Policy("chat-files", "the conversation and a copy of the files every turn", "complete"),
        Policy("full", "files and processes every turn, whatever the turn did", "complete"),
        Policy(
            "effect-aware", "what the inspector says changed, as a delta; skip if nothing", "delta"
        ),
    )
}
