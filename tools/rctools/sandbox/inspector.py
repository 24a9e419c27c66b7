"""The effect inspector: which kinds of sandbox state a turn changed since their last checkpoint.

Evidence, not guesses: the overlay's upper layer lists every file that differs from the base
(a deletion is a whiteout; a temp file created and deleted in between leaves nothing), compared
with the upper layer the last file image holds; the process table is read from the sandbox's PID
namespace and compared with the last process image. A process that stays alive with the same
command line counts as unchanged: a re-spawn restore would bring it back the same way (what it
keeps only in memory is lost, and the contract sees that when a re-run command prints something
else).
"""

from __future__ import annotations

from dataclasses import dataclass

from rctools.sandbox.namespace import Process, table_digest
from rctools.sandbox.tree import Manifest


@dataclass
class Inspector:
    """The state the last checkpoint of each kind holds, and the comparison with now."""

    last_upper: Manifest
    last_procs: str

    def classify(self, upper: Manifest, table: list[Process]) -> set[str]:
        changed = set()
        if upper != self.last_upper:
            changed.add("files")
        if table_digest(table) != self.last_procs:
            changed.add("procs")
        return changed

    def took(self, kinds: set[str], upper: Manifest, table: list[Process]) -> None:
        """A checkpoint of `kinds` was taken now: later turns compare against it."""
        if "files" in kinds:
            self.last_upper = upper
        if "procs" in kinds:
            self.last_procs = table_digest(table)
