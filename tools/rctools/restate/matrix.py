"""The Restate crash matrix: deterministic cells, each a script of real processes.

A cell starts a private restate-server (its data under `.services/restate/data/`), a service
process serving the workflow, submits the workflow through the ingress and then does what its
script says: SIGKILL the service at a named point (a `ctx.run` body's start, after its effect,
after its result was journaled) and start a new one on the same port -- Restate retries the
invocation and replays its journal, which is what its docs tell a user to rely on; SIGKILL
restate-server itself and restart it on the same data directory; resolve the workflow's
durable promise from a request handler, again, twice, with another value; resolve an
awakeable, also while no service runs. Restate's fork (`restart-as-new` from a journal entry)
is refused for workflows (422), so no cell forks.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from resumecheck.errors import EnvironmentProblem

from rctools.netns import enter_private_loopback
from rctools.restate.driver import CellFailed, Driver
from rctools.restate.server import VERSION, binary, install_dir
from rctools.restate.worker import WORKFLOWS, nodes
from rctools.services import ServiceError
from rctools.suite.cells import SYNC_AT_LEAST_ONCE, Table
from rctools.suite.command import require
from rctools.suite.matrix import CellByCell, Judged
from rctools.suite.phases import note_effects, recording
from rctools.suite.reports import Cell, CellReport, Figures

require("restate", "hypercorn")


LINEAR = [op[1] for op in WORKFLOWS["linear"]]
POINTS = (
    ("start", "as its body starts"),
    ("effect", "after its effect, before the body returned"),
    ("recorded", "after Restate journaled its result"),
)


def a(do: str, **extra: Any) -> dict[str, Any]:
    """One step of a cell's script: what the driver does (`_play`)."""
    return {"do": do, **extra}


def answer(proc: str, value: str = "approve", **extra: Any) -> dict[str, Any]:
    """A request handler `proc` resolves the promise (`promise=`: another one; `again`: the
    one the previous answer resolved) or the awakeable with `value`."""
    return a("answer", proc=proc, value=value, **extra)


class Script(Table):
    """Restate's cells: a script of the driver's steps, played in order. A chain is the
    service started with its kill point and the workflow submitted once; after each SIGKILL,
    once the process is gone, a new service process, on which Restate retries the invocation."""

    key = "script"

    def chain(self, roles: Sequence[str], points: Sequence[str | None]) -> list[Any]:
        script = []
        for n, at in enumerate(points, start=1):
            if n > 1:
                script.append(a("killed", proc=f"w{n - 1}"))
            script.append(a("serve", proc=f"w{n}", **({"kill_at": at} if at else {})))
            if n == 1:
                script.append(a("submit"))
        return script


START = [a("serve", proc="w1"), a("submit")]
# SIGKILL of the service while the workflow waits (the driver sees it parked first)
DOWN = a("kill", proc="w1")
UP = a("serve", proc="w2")


def table() -> Script:
    t = Script()
    t.clean("linear", "four ctx.run steps, no fault")
    t.kill_every_boundary(
        "linear",
        LINEAR,
        "a new service process, Restate retries the invocation",
        POINTS,
        victim="the service",
    )
    t.kills(
        "linear-kill-returning",
        "linear",
        "SIGKILL of the service after the last step, before the handler returned",
        "workflow.returning",
    )
    t.kills(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect; the retry is SIGKILLed in mail after its effect",
        "charge.effect",
        "mail.effect",
    )
    t.kills(
        "linear-kill-same-step-twice",
        "linear",
        "SIGKILL in charge after its effect, and the retry again there",
        "charge.effect",
        "charge.effect",
    )
    for step, point, words in (
        ("reserve", "effect", "in reserve after its effect"),
        ("charge", "start", "as charge's body starts"),
        ("charge", "effect", "in charge after its effect"),
        ("charge", "recorded", "after charge's result was journaled"),
        ("ship", "effect", "in ship after its effect"),
    ):
        t.add(
            f"linear-server-kill-{step}-{point}",
            "linear",
            f"SIGKILL of restate-server {words}; restarted on its data, it retries the "
            "invocation on the same service process",
            [
                a("serve", proc="w1", pause_at=f"{step}.{point}"),
                a("submit"),
                a("kill-server", when="paused"),
            ],
        )
    t.add(
        "linear-server-kill-done",
        "linear",
        "SIGKILL of restate-server after the workflow completed; restarted, it still has the "
        "result and runs nothing again",
        [*START, a("kill-server", when="done")],
    )
    t.add(
        "linear-server-and-service-kill",
        "linear",
        "SIGKILL of the service in mail after its effect, then of restate-server; both restarted",
        [
            a("serve", proc="w1", kill_at="mail.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("kill-server", when="now"),
            UP,
        ],
    )
    t.add(
        "linear-submit-twice",
        "linear",
        "two clients submit the same workflow id at once: one execution",
        [a("serve", proc="w1"), a("submit-twice")],
    )
    t.add(
        "linear-resubmit-after-done",
        "linear",
        "the same workflow id is submitted again after it completed",
        [*START, a("output"), a("resubmit")],
    )

    t.add(
        "approval-live",
        "approval",
        "the workflow waits for its promise; a request handler resolves it",
        [*START, answer("h1")],
    )
    t.kills(
        "approval-kill-quote-effect",
        "approval",
        "SIGKILL in quote after its effect; a new service process; then the answer",
        "quote.effect",
        then=[answer("h1")],
    )
    t.add(
        "approval-kill-waiting",
        "approval",
        "SIGKILL of the service while the workflow waits; a new one; then the answer",
        [*START, DOWN, UP, answer("h1")],
    )
    for point, words in (
        ("promise.consumed", "after the workflow took the answer"),
        ("book.start", "as book starts"),
        ("book.effect", "in book after its effect"),
    ):
        t.add(
            f"approval-kill-{point.replace('.', '-')}",
            "approval",
            f"SIGKILL of the service {words}; a new one",
            [
                a("serve", proc="w1", kill_at=point),
                a("submit"),
                answer("h1"),
                a("killed", proc="w1"),
                UP,
            ],
        )
    again = answer("h2", again=True)
    t.add(
        "approval-double-answer",
        "approval",
        "the answer is sent twice (a second click): Restate refuses the second resolve",
        [*START, answer("h1"), again],
    )
    t.add(
        "approval-two-values",
        "approval",
        "two different answers, one after the other, while the workflow waits",
        [*START, answer("h1"), answer("h2", "reject", again=True)],
    )
    t.add(
        "approval-reanswer-after-kill",
        "approval",
        "SIGKILL of the service while it waits; a new one; answered, and answered again",
        [*START, DOWN, UP, answer("h1"), again],
    )
    t.add(
        "approval-reanswer-after-done",
        "approval",
        "the promise is resolved again after the workflow completed",
        [*START, answer("h1"), a("output"), again],
    )
    t.add(
        "approval-server-kill-waiting",
        "approval",
        "SIGKILL of restate-server while the workflow waits; restarted; then the answer",
        [*START, a("kill-server", when="parked"), answer("h1")],
    )
    t.add(
        "approval-server-kill-after-answer",
        "approval",
        "SIGKILL of restate-server after the answer was taken, in book after its effect",
        [
            a("serve", proc="w1", pause_at="book.effect"),
            a("submit"),
            answer("h1"),
            a("kill-server", when="paused"),
        ],
    )
    t.add(
        "approval-server-and-service-kill-waiting",
        "approval",
        "SIGKILL of the service, then of restate-server, while the workflow waits; both "
        "restarted; then the answer",
        [*START, DOWN, a("kill-server", when="now"), UP, answer("h1")],
    )
    t.add(
        "approval-kill-quote-then-consumed",
        "approval",
        "SIGKILL in quote after its effect; the retry takes the answer and is SIGKILLed "
        "right after; a third process",
        [
            a("serve", proc="w1", kill_at="quote.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("serve", proc="w2", kill_at="promise.consumed"),
            answer("h1"),
            a("killed", proc="w2"),
            a("serve", proc="w3"),
        ],
    )
    t.add(
        "awakeable-live",
        "awakeable",
        "the workflow waits for an awakeable; a request handler resolves it through the ingress",
        [*START, answer("h1")],
    )
    t.add(
        "awakeable-answer-while-down",
        "awakeable",
        "SIGKILL of the service while it waits; the awakeable is resolved while no service "
        "runs; then a new one",
        [*START, DOWN, answer("h1"), UP],
    )
    # Answers while no service runs: their order against the workflow's own progress is
    # fixed (a live second click could land before or after the workflow stored the first).
    for name, second, words in (
        ("double-answer", "approve", "twice with the same value"),
        ("two-values", "reject", "twice, with two different values"),
    ):
        t.add(
            f"awakeable-{name}-while-down",
            "awakeable",
            f"SIGKILL of the service while it waits; the awakeable is resolved {words} while "
            "no service runs; then a new one",
            [*START, DOWN, answer("h1"), answer("h2", second, again=True), UP],
        )
    t.add(
        "awakeable-reanswer-after-done",
        "awakeable",
        "the awakeable is resolved again after the workflow completed",
        [*START, answer("h1"), a("output"), again],
    )
    second = answer("h2", "approve-2", promise="approval-2")
    t.add(
        "two-approvals-live",
        "two-approvals",
        "two promises, each resolved once",
        [*START, answer("h1"), second],
    )
    t.add(
        "two-approvals-double-click",
        "two-approvals",
        "the first approval is sent twice; the second promise is its own, so nothing reaches it",
        [*START, answer("h1"), again, answer("h3", "approve-2", promise="approval-2")],
    )
    t.add(
        "two-approvals-kill-book",
        "two-approvals",
        "SIGKILL in book after its effect; a new service process; the second approval",
        [
            a("serve", proc="w1", kill_at="book.effect"),
            a("submit"),
            answer("h1"),
            a("killed", proc="w1"),
            UP,
            second,
        ],
    )
    return t


def _play(driver: Driver, step: dict[str, Any]) -> None:
    do = step["do"]
    if do == "serve":
        driver.serve(step["proc"], step.get("kill_at"), step.get("pause_at"))
    elif do == "submit":
        driver.submit()
    elif do == "submit-twice":
        driver.submit_twice()
    elif do == "resubmit":
        driver.resubmit()
    elif do == "killed":
        driver.wait_killed(step["proc"])
    elif do == "kill":
        driver.parked()
        driver.kill(step["proc"])
    elif do == "kill-server":
        driver.kill_server(step["when"])
    elif do == "answer":
        driver.answer(
            step["proc"], step["value"], step.get("promise", "approval"), again=step.get("again")
        )
    elif do == "output":
        driver.output()
    else:
        raise ValueError(f"unknown step {do}")


class RestateSuite(CellByCell):
    """The suite's matrix: the cells of `table()`, each played by the driver against a
    restate-server of its own, in a network namespace cut off from all but loopback."""

    DOCS = "docs/runtimes/restate.md"
    # What Restate documents (docs/runtimes/restate.md quotes and cites the pages): the result
    # of a `ctx.run` is persisted in the journal before the handler continues (sync); an action
    # that failed or whose process died before its result was persisted is retried
    # (at-least-once); a workflow's shared handlers run concurrently with its run handler, so a
    # thread has no lease a second process could be refused by (none).
    DECLARED = SYNC_AT_LEAST_ONCE

    def __init__(self) -> None:
        self.network = "host"  # where this run's processes are: set by prepare()

    def cells(self) -> list[Cell]:
        return table().cells

    def prepare(self) -> None:
        """Installs restate-server (npm needs the registry), then cuts the run off from all but
        loopback: restate-server asks GitHub for its latest release at every start, and no
        setting turns that off (rctools.netns). Called in the main thread before any cell."""
        try:
            binary()
        except ServiceError as exc:
            raise EnvironmentProblem(f"cannot install restate-server: {exc}") from exc
        why = enter_private_loopback()
        self.network = "private (loopback only)" if why is None else f"host: {why}"

    def figures(self, judged: Judged) -> Figures:
        """Where the servers ran: in the private namespace, or on the host and why."""
        return Figures(
            {"network": self.network}, f"network namespace of the servers: {self.network}"
        )

    def runtime(self) -> dict[str, str]:
        return {
            "name": "restate",
            "version": f"server {VERSION}, sdk {importlib.metadata.version('restate-sdk')}",
        }

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        """Records one cell into traces/<cell>.jsonl; the server's data lives under
        `.services/restate/data/` and is removed afterwards."""
        graph = cell.params["graph"]
        key = f"wf-{cell.name}"
        data = install_dir() / "data" / f"{os.getpid()}-{cell.name}"
        shutil.rmtree(data, ignore_errors=True)
        meta = {
            "runtime": "restate",
            "version": self.runtime()["version"],
            "backend": "restate-server",
            "nodes": nodes(graph),
            **self.DECLARED,
        }
        with recording(cell, traces, scratch, thread=key, meta=meta) as (report, trace, work):
            driver = Driver(work, data, trace, key, graph)
            try:
                driver.server.start()
                for step in cell.params["script"]:
                    _play(driver, step)
                report.notes["results"] = {"output": driver.output()}
                driver.close_answerers()
            except (CellFailed, ServiceError, OSError) as exc:
                report.problem = f"{type(exc).__name__}: {exc}"
            finally:
                report.workers = driver.stop()
                note_effects(report, work)
                report.notes.update({k: v for k, v in driver.notes.items() if v})
                broken = [w for w in report.workers if w.exit == "error"]
                if broken and report.problem is None:
                    report.problem = "; ".join(f"{w.proc}: {w.error}" for w in broken)
                shutil.rmtree(data, ignore_errors=True)
        return report


SUITE = RestateSuite()
