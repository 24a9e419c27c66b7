"""The DBOS crash matrix: deterministic cells, each a sequence of phases of real processes.

A phase starts its workers together (concurrent resumers) and waits for all of them; a worker
may be SIGKILLed at a named point. Resuming is what DBOS's docs tell a user to do: restart the
application (`DBOS.launch()` recovers its pending workflows), or call the workflow again with
the same workflow id; an answer is `DBOS.send`; a fork is `DBOS.fork_workflow`.
"""

from __future__ import annotations

from typing import Any

from rctools.dbos.worker import WORKFLOWS, nodes
from rctools.suite.cells import SYNC_AT_LEAST_ONCE, CellTable, RuntimeSuite
from rctools.suite.cells import worker as w
from rctools.suite.command import require

require("dbos")

LINEAR = [op[1] for op in WORKFLOWS["linear"]]
POINTS = (
    ("start", "after it started, before its effect"),
    ("effect", "after its effect, before it returned"),
    ("recorded", "after DBOS recorded its output"),
)


def ans(
    value: str, topic: str = "approval", *, again: bool = False, remember: int | None = None
) -> dict[str, Any]:
    """An answer to the recv the sender sees waiting; `again`: to the one the previous answer
    saw; `remember`: to the recv with that task index, from memory (it is no longer waiting)."""
    return {"topic": topic, "value": value, "again": again, "remember": remember}


def table() -> CellTable:
    t = CellTable()
    add = t.add
    t.clean("linear", "four steps, no fault")
    t.kill_every_boundary(
        "linear", LINEAR, "restart, DBOS.launch() recovers", POINTS, suffix="-recover"
    )
    for step in ("charge", "ship"):
        t.kills(
            f"linear-kill-{step}-effect-rerun",
            "linear",
            f"SIGKILL in {step} after its effect; the caller starts the same workflow id again",
            f"{step}.effect",
            role="rerun",
        )
    t.kills(
        "linear-kill-returning-recover",
        "linear",
        "SIGKILL after the last step, before the workflow returned; restart",
        "workflow.returning",
    )
    t.kills(
        "linear-kill-returned-rerun",
        "linear",
        "SIGKILL after the workflow returned; the caller starts the same id again",
        "returned",
        role="rerun",
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect; the recovery is SIGKILLed in mail; restart again",
        "charge.effect",
        "mail.effect",
    )
    t.kills(
        "linear-kill-same-step-twice",
        "linear",
        "SIGKILL in charge after its effect, and the recovery again there; restart again",
        "charge.effect",
        "charge.effect",
    )
    for step in ("charge", "mail"):
        add(
            f"linear-kill-{step}-two-resumers",
            "linear",
            f"SIGKILL in {step} after its effect; two processes restart at once",
            [
                [w("run", "w1", kill_at=f"{step}.effect")],
                [w("recover", "w2"), w("recover", "w3", executor="local")],
            ],
        )
    add(
        "linear-recover-and-rerun-at-once",
        "linear",
        "SIGKILL in mail after its effect; one process restarts while the caller reruns the id",
        [[w("run", "w1", kill_at="mail.effect")], [w("recover", "w2"), w("rerun", "w3")]],
    )
    t.forks_at(
        "linear-fork-at",
        "linear",
        "after a clean run, fork_workflow from the step after the {j}th",
        (1, 2, 3),
    )
    t.fork_after_crash(
        "linear-fork-after-crash",
        "linear",
        "SIGKILL in mail after its effect, restart, then fork from the 2nd step's checkpoint",
        "mail.effect",
        1,
    )
    t.fork_twice(
        "linear-fork-twice", "linear", "two forks of the same checkpoint, one after the other", 2
    )
    t.fork_killed(
        "linear-fork-killed-recover",
        "linear",
        "a fork is SIGKILLed in its first step after its effect; restart recovers the fork",
        2,
        "mail.effect",
        "recover-forks",
    )

    yes = ans("approve")
    t.sent("approval-live", "approval", "recv waits; the same process sends the answer", yes)
    t.kill_waiting(
        "approval",
        (
            ("quote.effect", "in quote after its effect"),
            ("recv.start", "while recv waits"),
            ("answer.before-send", "just before it sends the answer"),
        ),
        "restart and answer",
        yes,
        resend=True,
    )
    t.kill_waiting(
        "approval",
        (
            ("recv.recorded", "after recv consumed the answer"),
            ("book.effect", "in book after its effect"),
        ),
        "restart",
        yes,
        resend=False,
    )
    t.kill_handler(
        "approval-kill-handler-after-send",
        "approval",
        "the worker is SIGKILLed while recv waits; a request handler answers and is SIGKILLed "
        "after the send; restart",
        "recv.waiting",
        yes,
        "answer.sent",
    )
    t.kill_handler(
        "approval-kill-handler-before-send",
        "approval",
        "the worker is SIGKILLed while recv waits; the handler is SIGKILLed before its send; "
        "restart and answer",
        "recv.waiting",
        yes,
        "answer.before-send",
        yes,
    )
    t.kill_handler(
        "approval-kill-handler-reanswer",
        "approval",
        "as approval-kill-handler-after-send, but the restarted worker answers again",
        "recv.waiting",
        yes,
        "answer.sent",
        yes,
    )
    t.reanswered(
        "approval-reanswer-after-done",
        "approval",
        "the approval is sent again after the workflow finished",
        yes,
        ans("approve", remember=2),
    )
    t.sent(
        "approval-double-send",
        "approval",
        "the answer is sent twice while recv waits",
        yes,
        ans("approve", again=True),
    )
    t.sent(
        "approval-two-values",
        "approval",
        "two different answers sent while recv waits",
        yes,
        ans("reject", again=True),
    )
    t.sent(
        "two-approvals-live",
        "two-approvals",
        "two recvs on one topic, each answered once",
        yes,
        ans("approve-2"),
    )
    t.sent(
        "two-approvals-double-click",
        "two-approvals",
        "the first approval is sent twice; the second recv consumes the duplicate",
        yes,
        ans("approve", again=True),
    )
    add(
        "two-approvals-kill-book",
        "two-approvals",
        "SIGKILL in book after its effect; restart; the second approval answered",
        [
            [w("run", "w1", answers=[ans("approve")], kill_at="book.effect")],
            [w("recover", "w2", answers=[ans("approve-2")])],
        ],
    )
    add(
        "two-approvals-double-click-handler",
        "two-approvals",
        "a request handler sends the first approval twice; the second recv consumes it",
        [
            [
                w("run", "w1", answers=[]),
                w("answer", "w2", answers=[ans("approve"), ans("approve", again=True)]),
            ]
        ],
    )
    add(
        "approval-answer-handler",
        "approval",
        "a request handler in another process answers and waits for the result",
        [[w("run", "w1", answers=[]), w("answer", "w2", answers=[ans("approve")])]],
    )
    add(
        "approval-fork-before-recv",
        "approval",
        "after a clean run, fork from recv's checkpoint and answer the fork",
        [
            [w("run", "w1", answers=[ans("approve")])],
            [w("fork", "w2", fork_at=1, answers=[ans("reject")])],
        ],
    )
    return t


SUITE = RuntimeSuite(
    name="dbos",
    backend="sqlite",
    # What DBOS documents (docs/runtimes/dbos.md cites the pages): a step's output is written to
    # the system database before the workflow continues (sync); a step interrupted before its
    # output was recorded runs again (at-least-once); no lease keeps two executors off one
    # workflow (none).
    declared=SYNC_AT_LEAST_ONCE,
    nodes=nodes,
    table=table,
    thread="wf",
    store=("db", "dbos.sqlite"),
    graph_key="workflow",
    timeout=90,
)
