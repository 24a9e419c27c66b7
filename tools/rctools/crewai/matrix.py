"""The CrewAI Flows crash matrix: a four-method line and a flow with an asynchronous human
review, class-level `@persist` on `SQLiteFlowPersistence`, SIGKILL at every method's start,
after its effect, before and after its state was saved; resume by `kickoff(inputs={"id": ...})`
as the docs show, fork by `kickoff(restore_from_state_id=...)`, answers by
`Flow.from_pending(...).resume(value)`, re-answered and answered by two processes at once."""

from __future__ import annotations

from rctools.crewai.worker import nodes
from rctools.suite.cells import SYNC_ONLY, CellTable, RuntimeSuite
from rctools.suite.cells import answer as ans
from rctools.suite.cells import worker as w
from rctools.suite.command import require

require("crewai")


def table() -> CellTable:
    t = CellTable()
    add = t.add
    t.clean("linear", "four methods, no fault")
    t.kill_every_boundary("linear", nodes("linear"), "kickoff(inputs={'id': ...}) resumes")
    t.kills(
        "linear-kill-returned",
        "linear",
        "SIGKILL after the flow returned; kickoff(inputs={'id': ...}) again",
        "returned",
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect, the resume in reserve after its effect; again",
        "charge.effect",
        "reserve.effect",
    )
    t.resumers(
        "linear-two-resumers",
        "linear",
        "SIGKILL after charge was saved; two processes resume the flow id at once",
        "charge.saved",
        barrier=True,
    )
    for method in nodes("linear"):
        add(
            f"linear-fork-after-{method}",
            "linear",
            f"the flow ran to the end; kickoff(restore_from_state_id=...) forks it after {method}"
            if method == "ship"
            else f"SIGKILL after {method} was saved; kickoff(restore_from_state_id=...) forks it",
            [
                [w("run", "w1", kill_at=None if method == "ship" else f"{method}.saved")],
                [w("fork", "w2")],
            ],
        )
    add(
        "linear-fork-killed",
        "linear",
        "SIGKILL after charge was saved; the fork is SIGKILLed after its first effect",
        [
            [w("run", "w1", kill_at="charge.saved")],
            [w("fork", "w2", kill_at="reserve.effect")],
        ],
    )

    # the review flow: quote, approve (@human_feedback, asynchronous provider), book
    t.answered(
        "approval-clean",
        "approval",
        "the flow parks at the review; another process answers with from_pending().resume()",
        "approved",
    )
    t.kill_before_answer(
        "approval",
        (
            ("quote", "effect", "after quote's effect"),
            ("quote", "saved", "after quote was saved"),
            ("approve", "start", "as approve starts"),
            ("approve", "effect", "after approve's effect, before it asked"),
            ("approve", "parking", "after it asked, before the pending review was saved"),
            ("approve", "parked", "after the pending review was saved, before the flow returned"),
        ),
        "the application resumes the flow id, then answers if it parked",
    )
    t.kill_answerer(
        "approval",
        (
            ("loaded", "after from_pending loaded the review"),
            ("answered", "after it took the answer, before resume()"),
            ("approve.saving", "inside resume(), before approve's completion was saved"),
            ("approve.saved", "after approve's completion was saved"),
            ("clearing", "after approve's completion was saved, before the review was cleared"),
            ("book.effect", "after book's effect"),
        ),
    )
    t.answered(
        "approval-reanswer-after-done",
        "approval",
        "answered and finished; the same answer is sent again",
        "approved",
        "approved",
    )
    t.answered(
        "approval-two-values",
        "approval",
        "answered 'approved', then 'rejected' to the same review",
        "approved",
        "rejected",
    )
    t.answerers(
        "approval-two-answerers",
        "approval",
        "two processes answer the pending review at once (both load it before either resumes)",
    )
    add(
        "approval-resume-parked",
        "approval",
        "parked at the review; kickoff(inputs={'id': ...}) instead of an answer",
        [[w("run", "w1")], [w("recover", "w2")]],
    )
    add(
        "approval-fork-parked",
        "approval",
        "parked at the review; kickoff(restore_from_state_id=...) forks it",
        [[w("run", "w1")], [w("fork", "w2")]],
    )
    add(
        "approval-fork-after-done",
        "approval",
        "answered and finished; kickoff(restore_from_state_id=...) forks the finished flow",
        [[w("run", "w1")], [ans("w2")], [w("fork", "w3")]],
    )
    return t


SUITE = RuntimeSuite(
    name="crewai",
    backend="sqlite",
    # @persist saves the state after each method completes, before its listeners run (sync);
    # CrewAI documents no level for a method's side effects (the strictest applies) and no
    # lease on a flow id (docs/runtimes/crewai.md cites the pages).
    declared=SYNC_ONLY,
    nodes=nodes,
    table=table,
    thread="flow",
    store=("db", "crewai.sqlite"),
    # importing crewai alone takes ~3 CPU-s (it loads its agents, LLM clients, telemetry): the
    # workers are forked from a server that imported it once
    timeout=300.0,
    preload=("rctools.crewai.preload",),
)
