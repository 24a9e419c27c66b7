"""Third-party checkpointers on real local servers: a graph SIGKILLed mid-run resumes elsewhere.

For each backend a real LangGraph graph (prepare -> slow -> ask, `ask` interrupts) runs in a
subprocess on the saver; the test SIGKILLs it while `slow` runs, then a fresh process continues
the thread up to the interrupt, and a third one answers it. The final state must hold each
node's output once: `prepare` must not run again (its checkpoint was durable before the kill).
The servers are the project's own (tests/services.py, rctools.services): MariaDB, redis-server
(for the Valkey savers), moto's DynamoDB server.

The storage-API conformance package (langgraph-checkpoint-conformance, async API only) is run
against each saver as well; `python tests/test_third_party_savers.py conformance BACKEND`
prints its per-test results as JSON (docs/backends.md records them). Run as a script, this
module is also the worker process of the crash test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import operator
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from resumecheck.waiting import poll

with contextlib.suppress(ImportError):  # absent when this module runs as the worker
    from services import services  # noqa: F401  (session fixture: the real servers)

# Savers with the sync and the async API: their matrix cells here run through the sync one
# (test_langgraph_async.py drives the async API).
BOTH_APIS = ("dynamodb", "dynamodb-checkpoint")
THIRD_PARTY = (
    "mysql",
    "mysql-async",
    "valkey",
    "valkey-async",
    "dynamodb",
    "dynamodb-checkpoint",
)
THREAD = "crash-1"
CONFIG = {"configurable": {"thread_id": THREAD}}
WORKER_TIMEOUT = 45.0


# --------------------------------------------------------------------------- the graph


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _mark(node: str) -> None:
    """Appends the node's name to the run log: one line per real execution."""
    with (Path(os.environ["RESUME_CHECK_STORE"]) / "executions").open("a") as handle:
        handle.write(node + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def prepare(state: State) -> dict[str, list[str]]:
    _mark("prepare")
    return {"log": ["prepare"]}


def slow(state: State) -> dict[str, list[str]]:
    """The first time, waits to be killed (after telling the test it started)."""
    _mark("slow")
    started = Path(os.environ["RESUME_CHECK_STORE"]) / "slow-started"
    if not started.exists():
        started.write_text("1\n")
        time.sleep(600)
    return {"log": ["slow"]}


def ask(state: State) -> dict[str, list[str]]:
    from langgraph.types import interrupt

    _mark("ask")
    return {"log": [f"answer:{interrupt('question')}"]}


def build() -> Any:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(State)
    builder.add_sequence([prepare, slow, ask])
    builder.add_edge(START, "prepare")
    builder.add_edge("ask", END)
    return builder


def _snapshot(snapshot: Any) -> dict[str, Any]:
    return {
        "values": snapshot.values,
        "next": list(snapshot.next),
        "interrupts": [i.value for i in snapshot.interrupts],
    }


async def _work(action: str, backend: str) -> dict[str, Any]:
    """One worker process: `start` runs the graph from the beginning (and is killed), `continue`
    resumes the thread after the crash, `answer` resumes the interrupt."""
    from langgraph.types import Command
    from rctools.langgraph.backends import aopen_saver, api_of, resolve

    async with aopen_saver(resolve(backend)) as saver:
        graph = build().compile(checkpointer=saver)
        value = {"start": {"log": []}, "continue": None, "answer": Command(resume="yes")}[action]
        if "sync" in api_of(saver):
            # A sync saver is driven through the sync API, off the loop (as a user would).
            def run() -> dict[str, Any]:
                graph.invoke(value, CONFIG, durability="sync")
                return _snapshot(graph.get_state(CONFIG))

            return await asyncio.to_thread(run)
        await graph.ainvoke(value, CONFIG, durability="sync")
        return _snapshot(await graph.aget_state(CONFIG))


# --------------------------------------------------------------------------- conformance

_SUITE_METHODS = (
    "put",
    "put_writes",
    "get_tuple",
    "list",
    "delete_thread",
    "delete_for_runs",
    "copy_thread",
    "prune",
)


def _async_view(saver: Any) -> Any:
    """The conformance suite drives the async API only. A sync-only saver (its async methods
    raise NotImplementedError) is shown to it through a thin adapter that runs each method the
    saver implements in a worker thread, so the suite tests the saver's own sync code; a method
    the saver leaves to BaseCheckpointSaver stays undetected, as it would be on the saver."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    def forward(name: str) -> Any:
        method = getattr(saver, name)
        if name == "list":

            async def alist(self: Any, *args: Any, **kwargs: Any) -> Any:
                for item in await asyncio.to_thread(lambda: list(method(*args, **kwargs))):
                    yield item

            return alist

        async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call

    body: dict[str, Any] = {
        "get_next_version": lambda self, current, channel: saver.get_next_version(current, channel)
    }
    for name in _SUITE_METHODS:
        if getattr(type(saver), name) is not getattr(BaseCheckpointSaver, name):
            body[f"a{name}"] = forward(name)
    return type(f"AsyncView[{type(saver).__name__}]", (BaseCheckpointSaver,), body)(
        serde=saver.serde
    )


async def _conformance(backend: str) -> dict[str, Any]:
    """The conformance package's async suite on the backend: every test's outcome."""
    from langgraph.checkpoint.conformance import checkpointer_test, validate
    from langgraph.checkpoint.conformance.report import ProgressCallbacks
    from rctools.langgraph.backends import STORE_VAR, aopen_saver, api_of, resolve

    root = Path(os.environ[STORE_VAR])
    made = iter(range(1_000_000))
    adapted = False

    @checkpointer_test(name=backend)
    async def make():  # type: ignore[no-untyped-def]
        # Each capability suite gets a fresh namespace: a store folder (so a token) of its own.
        os.environ[STORE_VAR] = str(root / f"suite-{next(made)}")
        nonlocal adapted
        async with aopen_saver(resolve(backend)) as saver:
            adapted = "async" not in api_of(saver)
            yield _async_view(saver) if adapted else saver

    results: list[dict[str, Any]] = []

    def on_test(capability: str, test: str, passed: bool, error: str | None) -> None:
        results.append(
            {
                "capability": capability,
                "test": test,
                "passed": passed,
                # The exception line of the traceback: what the suite saw go wrong.
                "error": None if error is None else error.strip().splitlines()[-1][:300],
            }
        )

    progress = ProgressCallbacks(on_test_result=on_test)
    report = await validate(make, progress=progress)
    return {
        "backend": backend,
        "through": "a to_thread adapter over the sync API" if adapted else "the async API",
        "level": report.conformance_level(),
        "capabilities": {
            name: {
                "detected": result.detected,
                "passed": result.passed,
                "tests_passed": result.tests_passed,
                "tests_failed": result.tests_failed,
            }
            for name, result in report.results.items()
        },
        "passed": sum(r["passed"] for r in results),
        "failed": sum(not r["passed"] for r in results),
        "tests": results,
    }


# --------------------------------------------------------------------------- the tests


def _worker(action: str, backend: str, store: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, action, backend],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RESUME_CHECK_STORE": str(store)},
    )


def _finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=WORKER_TIMEOUT)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def store(tmp_path: Path, services: dict[str, str]) -> Path:
    """A fresh cell folder; `services` puts the servers' URLs into the environment."""
    folder = tmp_path / "store"
    folder.mkdir()
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("backend", THIRD_PARTY)
def test_a_sigkilled_run_resumes_in_a_fresh_process(backend: str, store: Path) -> None:
    started = time.monotonic()
    first = _worker("start", backend, store)
    try:

        def reached_slow() -> bool:
            assert first.poll() is None, first.communicate()[1]
            return (store / "slow-started").exists()

        reached = poll(reached_slow, timeout=WORKER_TIMEOUT, every=0.05)
        assert reached, "the graph never reached `slow`"
        # `slow` runs: the checkpoint after `prepare` was saved before it started (sync).
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == -signal.SIGKILL

    parked = _finish(_worker("continue", backend, store))
    assert parked == {
        "values": {"log": ["prepare", "slow"]},
        "next": ["ask"],
        "interrupts": ["question"],
    }
    done = _finish(_worker("answer", backend, store))
    assert done == {
        "values": {"log": ["prepare", "slow", "answer:yes"]},
        "next": [],
        "interrupts": [],
    }
    # prepare once; slow twice (killed, then run again); ask twice (interrupted, then answered).
    assert (store / "executions").read_text().split() == [
        "prepare",
        "slow",
        "slow",
        "ask",
        "ask",
    ]
    assert time.monotonic() - started < 60


@pytest.mark.slow
@pytest.mark.parametrize("backend", THIRD_PARTY)
def test_the_conformance_suite_runs_against_the_saver(backend: str, store: Path) -> None:
    """The async storage-API suite runs to its end on each saver. What fails is the saver's
    business and is recorded in docs/backends.md; here it must run, and pass the basics."""
    pytest.importorskip("langgraph.checkpoint.conformance")
    proc = subprocess.run(
        [sys.executable, __file__, "conformance", backend],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "RESUME_CHECK_STORE": str(store)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["passed"] > 0
    basics = [
        t for t in result["tests"] if t["capability"] in ("put", "get_tuple") and not t["passed"]
    ]
    assert basics == [], basics


@pytest.mark.parametrize("factory", ["django", "django_async"])
def test_the_django_savers_still_cannot_save_on_this_checkpoint_api(
    factory: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """langgraph-checkpoint-django 0.1.1 serialises metadata with JsonPlusSerializer.dumps
    (saver.py:192, aio.py:183), gone from langgraph-checkpoint 4.x. When a release fixes it
    this fails: then add `django` / `django-async` to BACKENDS and THIRD_PARTY."""
    pytest.importorskip("langgraph.checkpoint.django")
    from langgraph.checkpoint.base import empty_checkpoint
    from rctools.langgraph.backends import STORE_VAR, aopen_saver, resolve

    monkeypatch.setenv(STORE_VAR, str(tmp_path / "store"))
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

    async def put() -> None:
        async with aopen_saver(resolve(f"rctools.langgraph.backends:{factory}")) as saver:
            if factory == "django":
                await asyncio.to_thread(saver.put, config, empty_checkpoint(), {}, {})
            else:
                await saver.aput(config, empty_checkpoint(), {}, {})

    with pytest.raises(
        AttributeError, match="'JsonPlusSerializer' object has no attribute 'dumps'"
    ):
        asyncio.run(put())


@pytest.mark.slow
@pytest.mark.services
def test_services_start_mariadb_and_moto_in_a_fresh_folder_and_reuse_them() -> None:
    """What `python -m rctools.services up` does on a fresh machine, in a folder of its own:
    mariadb-install-db, mariadbd on 127.0.0.1 with the saver's user, moto's server; a second
    `up` reuses both, `down` stops them."""
    import shutil
    import socket
    import tempfile
    from urllib.parse import urlsplit

    import pymysql
    from rctools import services as rcservices

    rcservices.ensure_installed(install=True, names=["mysql"])
    folder = Path(tempfile.mkdtemp(prefix="rc-services-", dir="/var/tmp"))
    folder.chmod(0o755)  # the mysql user must reach its datadir
    names = ["mysql", "dynamodb"]
    try:
        first = rcservices.up(folder, names=names)
        assert sorted(first.started) == sorted(names)
        mysql = urlsplit(first.env[rcservices.MYSQL_URL_VAR])
        dynamodb = urlsplit(first.env[rcservices.DYNAMODB_URL_VAR])
        assert mysql.hostname == dynamodb.hostname == "127.0.0.1"
        with (
            pymysql.connect(
                host=mysql.hostname,
                port=mysql.port,
                user=mysql.username,
                password=mysql.password,
                database=mysql.path.lstrip("/"),
            ) as conn,
            conn.cursor() as cursor,
        ):
            cursor.execute("SELECT VERSION()")
            assert "MariaDB" in cursor.fetchone()[0]
        assert rcservices.Moto._ready(dynamodb.port or 0)

        again = rcservices.up(folder, names=names)
        assert again.started == []
        assert again.env == first.env
        assert {k: v for k, v in rcservices.env(folder).items() if k in again.env} == again.env
    finally:
        stopped = rcservices.down(names, folder=folder)
        shutil.rmtree(folder, ignore_errors=True)
    assert sorted(stopped) == sorted(names)
    for url in (mysql, dynamodb):
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", url.port), timeout=1):
            pass


def _matrix(backend: str, scenarios: str, out: Path, *extra: str) -> dict[str, Any]:
    """`resume-check run langgraph` on the backend, sync durability, as JSON."""
    from conftest import run_cli

    run = run_cli(
        "run", "langgraph", "--backend", backend, "--scenarios", scenarios,
        "--durability", "sync", *(("--api", "sync") if backend in BOTH_APIS else ()),
        "--format", "json", "--no-progress", "--out", out, *extra,
    )  # fmt: skip
    run.assert_no_traceback()
    document = run.json()
    assert document["details"]["counts"]["failed"] == 0, run
    return document


# `make test` records the matrix cells on one API of the MariaDB saver; its other API (the same
# store behind the async wrapper) and the other savers' cells under `make test-long`: the two
# DynamoDB savers (the slowest: a moto server per call) and Valkey. Each keeps a test of its own
# in `make test` (a killed run resumed in a fresh process; dynamodb-checkpoint's finding).
LONG_MATRIX = ("dynamodb", "dynamodb-checkpoint", "valkey")
MATRIX_SAVERS = [
    pytest.param(b, marks=pytest.mark.long) if b.endswith("-async") or b in LONG_MATRIX else b
    for b in THIRD_PARTY
]


@pytest.mark.slow
@pytest.mark.services
@pytest.mark.parametrize("backend", MATRIX_SAVERS)
def test_a_few_matrix_cells_conform_on_the_saver(
    backend: str, services: dict[str, str], tmp_path: Path
) -> None:
    """chain and node-error, fault-free and SIGKILLed at every 6th point, on each third-party
    saver: every cell conforms (the full matrices are `make record-langgraph`'s) -- but where
    dynamodb-checkpoint drops writes with an empty value (below)."""
    document = _matrix(
        backend, "chain,node-error", tmp_path, "--kill-stride", "6", "--no-reference"
    )
    cells = document["details"]["cells"]
    assert len([c for c in cells if c["fault"] != "none"]) >= 4
    broken = [c for c in cells if c["finding"] != "conforms"]
    if backend == "dynamodb-checkpoint" and _none_serializes_empty():
        assert broken and all(c["tested"]["properties"] == ["CV"] for c in broken), broken
    else:
        assert [c["tested"]["trace"] for c in broken] == []


def _none_serializes_empty() -> bool:
    """langgraph-dynamodb-checkpoint (0.4-0.5) loads a pending write only if its stored value
    is non-empty (`_load_writes`: `if data["type"] and data["value"]`); a serializer that
    writes None as no bytes (langgraph-checkpoint 4.3) makes every `branch:to:NODE` write
    (value None) vanish on load. A run resumed after a node then finds the node's result
    without its branch and ends early: CV at the load, whose result content differs from the
    one handed over."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer().dumps_typed(None)[1] == b""


@pytest.mark.slow
@pytest.mark.services
def test_dynamodb_checkpoint_returns_a_subgraph_checkpoint_as_the_thread_latest(
    services: dict[str, str], tmp_path: Path
) -> None:
    """The saver finding of docs/backends.md: langgraph-dynamodb-checkpoint 0.5.0 finds the
    latest checkpoint by a key prefix (`checkpoint$<thread>$<ns>`) that, for the root
    namespace "", also matches every subgraph's keys (dynamodbSaver.py:700-702, :738), so once
    a subgraph has saved, the thread's latest checkpoint is the subgraph's. The fault-free
    subgraph-interrupt cell breaks CV on it and not on SqliteSaver. When a release fixes it
    this fails: update docs/backends.md."""
    document = _matrix(
        "dynamodb-checkpoint", "subgraph-interrupt", tmp_path, "--kill-stride", "1000"
    )
    cell = next(c for c in document["details"]["cells"] if c["fault"] == "none")
    assert cell["finding"] == "saver", cell
    assert cell["tested"]["properties"] == ["CV"], cell
    assert cell["reference"]["status"] == "conforms", cell


def test_every_third_party_backend_is_bundled() -> None:
    from rctools.langgraph.backends import BACKENDS, DURABLE

    assert set(THIRD_PARTY) <= set(BACKENDS)
    assert set(THIRD_PARTY) <= DURABLE


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    action, backend = sys.argv[1], sys.argv[2]
    if action == "conformance":
        with contextlib.redirect_stdout(sys.stderr):
            outcome = asyncio.run(_conformance(backend))
        print(json.dumps(outcome))
    else:
        print(json.dumps(asyncio.run(_work(action, backend))))
