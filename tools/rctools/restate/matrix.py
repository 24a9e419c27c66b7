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
import tempfile
from pathlib import Path
from typing import Any

from resumecheck.errors import EnvironmentProblem

from rctools.netns import enter_private_loopback
from rctools.restate.driver import CellFailed, Driver
from rctools.restate.server import VERSION, binary, install_dir
from rctools.restate.worker import WORKFLOWS, nodes
from rctools.services import ServiceError
from rctools.suite.command import Figures, Judged, require
from rctools.suite.phases import effects_fired
from rctools.suite.reports import Cell, CellReport
from rctools.suite.trace import TraceWriter, header

require("restate", "hypercorn")

DOCS = "docs/runtimes/restate.md"
# What Restate documents (docs/runtimes/restate.md quotes and cites the pages): the result of a
# `ctx.run` is persisted in the journal before the handler continues (sync); an action that
# failed or whose process died before its result was persisted is retried (at-least-once); a
# workflow's shared handlers run concurrently with its run handler, so a thread has no lease a
# second process could be refused by (none).
DECLARED = {"durability": "sync", "effects_default": "at-least-once", "fencing": "none"}

LINEAR = [op[1] for op in WORKFLOWS["linear"]]


def a(do: str, **extra: Any) -> dict[str, Any]:
    return {"do": do, **extra}


def cells() -> list[Cell]:
    out: list[Cell] = []

    def add(name: str, workflow: str, what: str, script: list[dict[str, Any]]) -> None:
        if any(c.name == name for c in out):
            raise ValueError(f"cell {name!r} twice")
        out.append(Cell(name, workflow, what, {"workflow": workflow, "script": script}))

    start = [a("serve", proc="w1"), a("submit")]
    add("linear-clean", "linear", "four ctx.run steps, no fault", start)
    for step in LINEAR:
        for point, words in (
            ("start", "as its body starts"),
            ("effect", "after its effect, before the body returned"),
            ("recorded", "after Restate journaled its result"),
        ):
            add(
                f"linear-kill-{step}-{point}",
                "linear",
                f"SIGKILL of the service in {step} {words}; a new service process, "
                "Restate retries the invocation",
                [
                    a("serve", proc="w1", kill_at=f"{step}.{point}"),
                    a("submit"),
                    a("killed", proc="w1"),
                    a("serve", proc="w2"),
                ],
            )
    add(
        "linear-kill-returning",
        "linear",
        "SIGKILL of the service after the last step, before the handler returned",
        [
            a("serve", proc="w1", kill_at="workflow.returning"),
            a("submit"),
            a("killed", proc="w1"),
            a("serve", proc="w2"),
        ],
    )
    add(
        "linear-double-kill",
        "linear",
        "SIGKILL in charge after its effect; the retry is SIGKILLed in mail after its effect",
        [
            a("serve", proc="w1", kill_at="charge.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("serve", proc="w2", kill_at="mail.effect"),
            a("killed", proc="w2"),
            a("serve", proc="w3"),
        ],
    )
    add(
        "linear-kill-same-step-twice",
        "linear",
        "SIGKILL in charge after its effect, and the retry again there",
        [
            a("serve", proc="w1", kill_at="charge.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("serve", proc="w2", kill_at="charge.effect"),
            a("killed", proc="w2"),
            a("serve", proc="w3"),
        ],
    )
    for step, point, words in (
        ("reserve", "effect", "in reserve after its effect"),
        ("charge", "start", "as charge's body starts"),
        ("charge", "effect", "in charge after its effect"),
        ("charge", "recorded", "after charge's result was journaled"),
        ("ship", "effect", "in ship after its effect"),
    ):
        add(
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
    add(
        "linear-server-kill-done",
        "linear",
        "SIGKILL of restate-server after the workflow completed; restarted, it still has the "
        "result and runs nothing again",
        [*start, a("kill-server", when="done")],
    )
    add(
        "linear-server-and-service-kill",
        "linear",
        "SIGKILL of the service in mail after its effect, then of restate-server; both restarted",
        [
            a("serve", proc="w1", kill_at="mail.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("kill-server", when="now"),
            a("serve", proc="w2"),
        ],
    )
    add(
        "linear-submit-twice",
        "linear",
        "two clients submit the same workflow id at once: one execution",
        [a("serve", proc="w1"), a("submit-twice")],
    )
    add(
        "linear-resubmit-after-done",
        "linear",
        "the same workflow id is submitted again after it completed",
        [*start, a("output"), a("resubmit")],
    )

    ap = [a("serve", proc="w1"), a("submit")]
    add(
        "approval-live",
        "approval",
        "the workflow waits for its promise; a request handler resolves it",
        [*ap, a("answer", proc="h1", value="approve")],
    )
    add(
        "approval-kill-quote-effect",
        "approval",
        "SIGKILL in quote after its effect; a new service process; then the answer",
        [
            a("serve", proc="w1", kill_at="quote.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("serve", proc="w2"),
            a("answer", proc="h1", value="approve"),
        ],
    )
    add(
        "approval-kill-waiting",
        "approval",
        "SIGKILL of the service while the workflow waits; a new one; then the answer",
        [
            *ap,
            a("kill", proc="w1"),
            a("serve", proc="w2"),
            a("answer", proc="h1", value="approve"),
        ],
    )
    for point, words in (
        ("promise.consumed", "after the workflow took the answer"),
        ("book.start", "as book starts"),
        ("book.effect", "in book after its effect"),
    ):
        add(
            f"approval-kill-{point.replace('.', '-')}",
            "approval",
            f"SIGKILL of the service {words}; a new one",
            [
                a("serve", proc="w1", kill_at=point),
                a("submit"),
                a("answer", proc="h1", value="approve"),
                a("killed", proc="w1"),
                a("serve", proc="w2"),
            ],
        )
    add(
        "approval-double-answer",
        "approval",
        "the answer is sent twice (a second click): Restate refuses the second resolve",
        [
            *ap,
            a("answer", proc="h1", value="approve"),
            a("answer", proc="h2", value="approve", again=True),
        ],
    )
    add(
        "approval-two-values",
        "approval",
        "two different answers, one after the other, while the workflow waits",
        [
            *ap,
            a("answer", proc="h1", value="approve"),
            a("answer", proc="h2", value="reject", again=True),
        ],
    )
    add(
        "approval-reanswer-after-kill",
        "approval",
        "SIGKILL of the service while it waits; a new one; answered, and answered again",
        [
            *ap,
            a("kill", proc="w1"),
            a("serve", proc="w2"),
            a("answer", proc="h1", value="approve"),
            a("answer", proc="h2", value="approve", again=True),
        ],
    )
    add(
        "approval-reanswer-after-done",
        "approval",
        "the promise is resolved again after the workflow completed",
        [
            *ap,
            a("answer", proc="h1", value="approve"),
            a("output"),
            a("answer", proc="h2", value="approve", again=True),
        ],
    )
    add(
        "approval-server-kill-waiting",
        "approval",
        "SIGKILL of restate-server while the workflow waits; restarted; then the answer",
        [*ap, a("kill-server", when="parked"), a("answer", proc="h1", value="approve")],
    )
    add(
        "approval-server-kill-after-answer",
        "approval",
        "SIGKILL of restate-server after the answer was taken, in book after its effect",
        [
            a("serve", proc="w1", pause_at="book.effect"),
            a("submit"),
            a("answer", proc="h1", value="approve"),
            a("kill-server", when="paused"),
        ],
    )
    add(
        "approval-server-and-service-kill-waiting",
        "approval",
        "SIGKILL of the service, then of restate-server, while the workflow waits; both "
        "restarted; then the answer",
        [
            *ap,
            a("kill", proc="w1"),
            a("kill-server", when="now"),
            a("serve", proc="w2"),
            a("answer", proc="h1", value="approve"),
        ],
    )
    add(
        "approval-kill-quote-then-consumed",
        "approval",
        "SIGKILL in quote after its effect; the retry takes the answer and is SIGKILLed "
        "right after; a third process",
        [
            a("serve", proc="w1", kill_at="quote.effect"),
            a("submit"),
            a("killed", proc="w1"),
            a("serve", proc="w2", kill_at="promise.consumed"),
            a("answer", proc="h1", value="approve"),
            a("killed", proc="w2"),
            a("serve", proc="w3"),
        ],
    )
    aw = [a("serve", proc="w1"), a("submit")]
    add(
        "awakeable-live",
        "awakeable",
        "the workflow waits for an awakeable; a request handler resolves it through the ingress",
        [*aw, a("answer", proc="h1", value="approve")],
    )
    add(
        "awakeable-answer-while-down",
        "awakeable",
        "SIGKILL of the service while it waits; the awakeable is resolved while no service "
        "runs; then a new one",
        [*aw, a("kill", proc="w1"), a("answer", proc="h1", value="approve"), a("serve", proc="w2")],
    )
    # Answers while no service runs: their order against the workflow's own progress is
    # fixed (a live second click could land before or after the workflow stored the first).
    for name, second, words in (
        ("double-answer", "approve", "twice with the same value"),
        ("two-values", "reject", "twice, with two different values"),
    ):
        add(
            f"awakeable-{name}-while-down",
            "awakeable",
            f"SIGKILL of the service while it waits; the awakeable is resolved {words} while "
            "no service runs; then a new one",
            [
                *aw,
                a("kill", proc="w1"),
                a("answer", proc="h1", value="approve"),
                a("answer", proc="h2", value=second, again=True),
                a("serve", proc="w2"),
            ],
        )
    add(
        "awakeable-reanswer-after-done",
        "awakeable",
        "the awakeable is resolved again after the workflow completed",
        [
            *aw,
            a("answer", proc="h1", value="approve"),
            a("output"),
            a("answer", proc="h2", value="approve", again=True),
        ],
    )
    tw = [a("serve", proc="w1"), a("submit")]
    add(
        "two-approvals-live",
        "two-approvals",
        "two promises, each resolved once",
        [
            *tw,
            a("answer", proc="h1", value="approve"),
            a("answer", proc="h2", value="approve-2", promise="approval-2"),
        ],
    )
    add(
        "two-approvals-double-click",
        "two-approvals",
        "the first approval is sent twice; the second promise is its own, so nothing reaches it",
        [
            *tw,
            a("answer", proc="h1", value="approve"),
            a("answer", proc="h2", value="approve", again=True),
            a("answer", proc="h3", value="approve-2", promise="approval-2"),
        ],
    )
    add(
        "two-approvals-kill-book",
        "two-approvals",
        "SIGKILL in book after its effect; a new service process; the second approval",
        [
            a("serve", proc="w1", kill_at="book.effect"),
            a("submit"),
            a("answer", proc="h1", value="approve"),
            a("killed", proc="w1"),
            a("serve", proc="w2"),
            a("answer", proc="h2", value="approve-2", promise="approval-2"),
        ],
    )
    return out


# where this run's processes are: set by prepare(), reported in the summary's figures
NETWORK: dict[str, str] = {}


def prepare() -> None:
    """Installs restate-server (npm needs the registry), then cuts the run off from all but
    loopback: restate-server asks GitHub for its latest release at every start, and no
    setting turns that off (rctools.netns). Called in the main thread before any cell."""
    try:
        binary()
    except ServiceError as exc:
        raise EnvironmentProblem(f"cannot install restate-server: {exc}") from exc
    why = enter_private_loopback()
    NETWORK["network"] = "private (loopback only)" if why is None else f"host: {why}"


def figures(judged: Judged) -> Figures:
    network = NETWORK.get("network", "host")
    return Figures({"network": network}, f"network namespace of the servers: {network}")


def runtime() -> dict[str, str]:
    return {
        "name": "restate",
        "version": f"server {VERSION}, sdk {importlib.metadata.version('restate-sdk')}",
    }


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


def record_cell(cell: Cell, traces: Path, scratch: Path) -> CellReport:
    """Records one cell into traces/<cell>.jsonl; the server's data lives under
    `.services/restate/data/` and is removed afterwards."""
    key = f"wf-{cell.name}"
    trace = traces / f"{cell.name}.jsonl"
    work = Path(tempfile.mkdtemp(prefix=f"{cell.name}-", dir=scratch))
    data = install_dir() / "data" / f"{os.getpid()}-{cell.name}"
    shutil.rmtree(data, ignore_errors=True)
    meta = {
        "runtime": "restate",
        "version": runtime()["version"],
        "backend": "restate-server",
        "nodes": nodes(cell.params["workflow"]),
        **DECLARED,
    }
    writer = TraceWriter(trace, "driver")
    writer.header(header(scenario=f"{cell.scenario}: {cell.what}", thread=key, **meta))
    writer.close()
    report = CellReport(cell, trace.name)
    driver = Driver(work, data, trace, key, cell.params["workflow"])
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
        fired = effects_fired(work / "effects.jsonl")
        report.notes["effects_fired"] = sum(fired.values())
        report.notes["fired_per_intent"] = fired
        report.notes.update({k: v for k, v in driver.notes.items() if v})
        broken = [w for w in report.workers if w.exit == "error"]
        if broken and report.problem is None:
            report.problem = "; ".join(f"{w.proc}: {w.error}" for w in broken)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)
    return report
