"""The effect inspector: which kinds of sandbox state a turn changed since their last checkpoint.

Evidence, not guesses. Files: the kernel's file events (`fanotify.py`: every create, delete,
write, attribute change and rename the sandbox made in the overlay's upper layer) name the
paths touched since the last file image; only those entries of the upper layer are compared
with what the image holds, so a temp file created and deleted in between is touched but no
effect. Without an event source (`tree` mode, or where the kernel refuses the mark), or when
an event could not be placed since the last file image, the whole upper layer is compared: the
mark covers the whole disk, and a host that deletes folders fast (a loaded CI machine) makes
some of their handles unresolvable (`open_by_handle_at` fails with ENOMEM while it reconnects a
folder that is gone), so "cannot tell" must not mean "changed" or it costs a needless image.
Processes: the process table of the sandbox's PID namespace against the last process image,
and the kernel's context-switch counters against those taken while the processes were stopped
for that image (`Sandbox.wakeups`): a server that stays alive with the
same command line but was woken -- it served a request -- may hold other memory now, so it is
re-dumped; one that stayed blocked was not woken and is not. A freeze and thaw at each boundary
costs a blocked process exactly two voluntary switches; anything beyond, or any involuntary
switch (a process that computes), counts as a change -- a false alarm at worst. The counters
cannot tell a process blocked when frozen from one caught running that finishes its work after
the thaw and then blocks (two switches too: the stop, the block); so a process the freeze
caught running (state R) counts as changed at that boundary and, if that freeze took its image,
at the next one. (The memory diff of `accuracy.pages_study` once seemed to show such turns; they
were the kernel writing a moved thread's CPU number into its rseq area, no work of the process:
`pages.py`. The check stays because the counters' blind spot is real.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rctools.sandbox.fanotify import Touched, UpperWatch
from rctools.sandbox.namespace import Process, table_digest
from rctools.sandbox.tree import Manifest

MODES = ("fanotify", "tree")


@dataclass
class Inspector:
    """The state the last checkpoint of each kind holds, and the comparison with now."""

    last_upper: Manifest
    last_procs: str
    watch: UpperWatch | None = None
    since: set[str] = field(default_factory=set)  # paths touched since the last file image
    lost: bool = False  # an event could not be resolved since then: compare the whole layer
    events: int = 0  # kernel events since the last file image
    woken: dict[int, tuple[int, int]] = field(default_factory=dict)  # at the last image
    cycles: int = 0  # freezes since then
    unsettled: set[int] = field(default_factory=set)  # running when the last image was taken

    def classify(
        self,
        upper: Manifest,
        table: list[Process],
        woken: dict[int, tuple[int, int]],
        running: set[int] = frozenset(),
    ) -> set[str]:
        """Called once per boundary, with the sandbox frozen; `running`: the processes the
        freeze caught running rather than blocked (`Sandbox.running`)."""
        self.cycles += 1
        changed = set()
        if self._files_changed(upper):
            changed.add("files")
        busy = bool(running) or bool(self.unsettled & woken.keys())
        if table_digest(table) != self.last_procs or busy or self._woken(woken):
            changed.add("procs")
        return changed

    def _woken(self, now: dict[int, tuple[int, int]]) -> bool:
        if now.keys() != self.woken.keys():
            return True
        for pid, (voluntary, involuntary) in now.items():
            before = self.woken[pid]
            if voluntary - before[0] > 2 * self.cycles or involuntary != before[1]:
                return True
        return False

    def _files_changed(self, upper: Manifest) -> bool:
        if self.watch is None:
            return upper != self.last_upper
        self.absorb(self.watch.drain())
        if self.lost:  # an event it could not place: the whole layer decides, exactly
            return upper != self.last_upper
        return any(self._differs(upper, path) for path in self.since)

    def absorb(self, touched: Touched) -> None:
        self.since |= touched.paths - {"."}  # "." is the layer's own folder, not an entry
        self.lost = self.lost or touched.lost
        self.events += touched.events

    def _differs(self, upper: Manifest, path: str) -> bool:
        below = path + "/"
        keys = {k for k in (*upper, *self.last_upper) if k == path or k.startswith(below)}
        return any(upper.get(k) != self.last_upper.get(k) for k in keys)

    def took(self, kinds: set[str], upper: Manifest, table: list[Process]) -> None:
        """A checkpoint of `kinds` was taken now: later turns compare against it."""
        if "files" in kinds:
            self.last_upper = upper
            self.since, self.lost, self.events = set(), False, 0
        if "procs" in kinds:
            self.last_procs = table_digest(table)

    def settled(self, woken: dict[int, tuple[int, int]], running: set[int] = frozenset()) -> None:
        """The processes' switch counters once their image is taken or restored, read while
        they are stopped (criu's own work inside a process wakes it, so after it); `running`:
        those the freeze of that image caught running -- they finish their work after the
        thaw, so the image is behind them from the start."""
        self.woken, self.cycles, self.unsettled = woken, 0, set(running)
