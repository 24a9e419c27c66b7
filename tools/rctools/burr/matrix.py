"""The Burr crash matrix: a four-action line and a loop on SQLitePersister, SIGKILL at every
action's start, after its effect, before and after its state was saved; recovery by
`initialize_from(persister, resume_at_next_action=True)` as the docs show; resumers at once."""

from __future__ import annotations

from rctools.burr.worker import GRAPHS
from rctools.suite.cells import BOUNDARY_POINTS as POINTS
from rctools.suite.cells import SYNC_ONLY, CellTable, RuntimeSuite
from rctools.suite.command import require

require("burr")

RESUME = "initialize_from(resume_at_next_action=True)"


def table() -> CellTable:
    t = CellTable()
    t.clean("linear")
    t.kill_every_boundary("linear", GRAPHS["linear"], RESUME, POINTS)
    t.clean("loop")
    t.kill_loop("loop", GRAPHS["loop"], RESUME, POINTS, loop="work", visits=3)
    t.kills(
        "linear-kill-returned-recover",
        "linear",
        "SIGKILL after the run returned; the application is built again from the persister",
        "returned",
    )
    t.kills(
        "linear-kill-recovery-loaded",
        "linear",
        "SIGKILL in charge after its effect; the recovery is SIGKILLed right after it loaded",
        "charge.effect",
        "loaded",
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect, the recovery in mail after its effect; again",
        "charge.effect",
        "mail.effect",
    )
    t.kills(
        "loop-double-kill",
        "loop",
        "SIGKILL after the 1st work was saved, the recovery after its 1st work; again",
        "work.saved#1",
        "work.saved#1",
    )
    t.resumers(
        "linear-two-resumers",
        "linear",
        "SIGKILL after charge was saved; two processes resume at once, both through the next "
        "action's effect before either saves",
        "charge.saved",
        barrier=True,
    )
    t.resumers(
        "loop-two-resumers",
        "loop",
        "SIGKILL after the 2nd work was saved; two processes resume at once, both through the "
        "next action's effect before either saves",
        "work.saved#2",
        barrier=True,
    )
    return t


SUITE = RuntimeSuite(
    name="burr",
    distribution="apache-burr",
    backend="sqlite",
    # Burr saves after every step before the next one starts (sync); it documents nothing
    # about an action's side effects (strictest level) and no lease on an app id.
    declared=SYNC_ONLY,
    nodes=GRAPHS.__getitem__,
    table=table,
    thread="app",
    store=("db", "burr.sqlite"),
    job={"default_state": {"done": [], "made_by": "init", "loops": 0}},
)
