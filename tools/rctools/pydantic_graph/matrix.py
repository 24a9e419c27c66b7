"""The pydantic-graph crash matrix: a four-node line and a loop, SIGKILL at every node's start,
after its effect, after its `success` was written, and after its successor's snapshot;
recovery by `Graph.iter_from_persistence` as the docs show; two resumers at once."""

from __future__ import annotations

from rctools.suite.cells import SYNC_ONLY, CellTable, RuntimeSuite
from rctools.suite.command import require

require("pydantic_graph")

NODES = {"linear": ["Reserve", "Charge", "Mail", "Ship"], "loop": ["Plan", "Work", "Report"]}
POINTS = (
    ("start", "after its run was marked running"),
    ("effect", "after its effect"),
    ("recorded", "after its success was written, before its successor's snapshot"),
    ("snapshotted", "after its successor's snapshot was written"),
)
RESUME = "iter_from_persistence"


def table() -> CellTable:
    t = CellTable()
    for graph in ("linear", "loop"):
        t.clean(graph)
        t.kills(
            f"{graph}-kill-initialized",
            graph,
            f"SIGKILL after initialize, before the first node; {RESUME}",
            "initialized",
        )
        if graph == "linear":
            t.kill_every_boundary(graph, NODES[graph], RESUME, POINTS)
        else:
            t.kill_loop(graph, NODES[graph], RESUME, POINTS, loop="Work", visits=3)
    t.resumers(
        "linear-two-resumers",
        "linear",
        "SIGKILL after Charge's successor snapshot; two processes resume at once",
        "Charge.snapshotted",
        barrier=False,
    )
    t.resumers(
        "loop-two-resumers",
        "loop",
        "SIGKILL after the 2nd Work's successor snapshot; two processes resume at once",
        "Work.snapshotted#2",
        barrier=False,
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL after Reserve's successor snapshot, the recovery after Mail's; resume again",
        "Reserve.snapshotted",
        "Mail.snapshotted",
    )
    t.kills(
        "loop-double-kill",
        "loop",
        "SIGKILL after the 1st Work's successor snapshot, the recovery after its 1st; again",
        "Work.snapshotted#1",
        "Work.snapshotted#1",
    )
    t.kills(
        "linear-kill-charge-effect-retry",
        "linear",
        "SIGKILL in Charge after its effect; the user resumes twice",
        "Charge.effect",
        None,
    )
    return t


SUITE = RuntimeSuite(
    name="pydantic-graph",
    backend="file",
    # pydantic-graph documents snapshots written before the next node runs (sync) and nothing
    # about effects or exclusion: the strictest levels for what it does not say, no lease.
    declared=SYNC_ONLY,
    nodes=NODES.__getitem__,
    table=table,
    thread="run",
    store=("store", "run.json"),
)
