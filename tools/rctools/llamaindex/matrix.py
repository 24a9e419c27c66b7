"""The LlamaIndex Workflows crash matrix: a four-step line and a flow whose middle step waits for
a human answer (`ctx.wait_for_event`), `ctx.to_dict()` stored in SQLite at every step boundary;
SIGKILL at every step's start, after its effect, before and after its snapshot was stored;
resume by `workflow.run(ctx=Context.from_dict(workflow, snapshot))` as the docs show, the answer
by `ctx.send_event(HumanResponseEvent(...))`, forks from older snapshots, resumers at once."""

from __future__ import annotations

from rctools.llamaindex.worker import nodes
from rctools.suite.cells import SYNC_ONLY, CellTable, RuntimeSuite
from rctools.suite.cells import answer as ans
from rctools.suite.cells import worker as w
from rctools.suite.command import require

require("workflows")

POINTS = (
    ("start", "as it starts"),
    ("effect", "after its effect"),
    ("saving", "after it returned, before its snapshot was stored"),
    ("saved", "after its snapshot was stored"),
)


def table() -> CellTable:
    t = CellTable()
    add = t.add
    t.clean("linear", "four steps, no fault")
    t.kill_every_boundary(
        "linear", nodes("linear"), "run(ctx=Context.from_dict(latest snapshot))", POINTS
    )
    t.kills(
        "linear-kill-returned",
        "linear",
        "SIGKILL after the run returned; restored from the latest snapshot again",
        "returned",
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect, the resume in mail after its effect; again",
        "charge.effect",
        "mail.effect",
    )
    t.resumers(
        "linear-two-resumers",
        "linear",
        "SIGKILL after charge's snapshot; two processes restore the latest snapshot at once",
        "charge.saved",
        barrier=True,
    )
    for index, after in enumerate(["start", "reserve", "charge", "mail"]):
        add(
            f"linear-fork-{after}",
            "linear",
            f"the run finished; a new run starts from the snapshot after {after}",
            [[w("run", "w1")], [w("fork", "w2", **{"from": index})]],
        )
    add(
        "linear-fork-killed",
        "linear",
        "a fork from the snapshot after reserve is SIGKILLed after charge's effect; forked again",
        [
            [w("run", "w1")],
            [w("fork", "w2", kill_at="charge.effect", **{"from": 1})],
            [w("fork", "w3", **{"from": 1})],
        ],
    )

    # quote, approve (wait_for_event for a HumanResponseEvent), book
    t.answered(
        "approval-clean",
        "approval",
        "the run parks in approve; another process restores the snapshot and sends the answer",
        "approved",
    )
    t.kill_before_answer(
        "approval",
        (
            ("quote", "effect", "after quote's effect"),
            ("quote", "saved", "after quote's snapshot"),
            ("approve", "start", "as approve starts, before it waits"),
            ("approve", "parking", "after it asked, before the waiting snapshot was stored"),
            ("approve", "parked", "after the waiting snapshot was stored"),
        ),
        "restored from the latest snapshot, then answered",
    )
    t.kill_answerer(
        "approval",
        (
            ("loaded", "after it loaded the waiting snapshot"),
            ("answered", "after it took the answer, before send_event"),
            ("approve.effect", "in approve's replay, after its effect (it fires after the answer)"),
            ("approve.saving", "after approve returned, before its snapshot"),
            ("approve.saved", "after approve's snapshot"),
            ("book.effect", "after book's effect"),
        ),
    )
    t.answered(
        "approval-reanswer-after-done",
        "approval",
        "answered and finished; the latest snapshot is restored and answered again",
        "approved",
        "approved",
    )
    t.answerers(
        "approval-two-answerers",
        "approval",
        "two processes restore the waiting snapshot at once and answer differently",
    )
    add(
        "approval-fork-before-answer",
        "approval",
        "answered and finished; a new run from the first snapshot is answered 'rejected'",
        [[w("run", "w1")], [ans("w2")], [w("fork", "w3", value="rejected", **{"from": 0})]],
    )
    # the same flow with approve's effect before wait_for_event: the docs say the step replays
    t.answered(
        "approval-early-clean",
        "approval-early",
        "approve fires its effect, then waits; another process answers (the step replays)",
        "approved",
    )
    add(
        "approval-early-answered-in-process",
        "approval-early",
        "approve fires its effect, then waits; the waiting process itself answers",
        [[w("run", "w1", value="approved")]],
    )
    return t


SUITE = RuntimeSuite(
    name="llama-index-workflows",
    backend="sqlite",
    # The application stores a snapshot at every step boundary before the next step starts
    # (sync); LlamaIndex documents that a step waiting for an event replays from its top, and
    # no level for a step's side effects otherwise (the strictest applies); no lease on a
    # stored run.
    declared=SYNC_ONLY,
    nodes=nodes,
    table=table,
    thread="run",
    store=("db", "snapshots.sqlite"),
)
