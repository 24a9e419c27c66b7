"""`--executor`: shards judged by TLC on Dask workers give the report of a local run, and a
cluster that cannot judge ends in exit code 3 with a message, never a hang or a traceback.

Real Dask (a LocalCluster of worker processes, or `dask scheduler` and `dask worker` started
here on 127.0.0.1), real TLC on the workers, a worker really killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CLI, ROOT, SPEC, invoke, run_cli
from resumecheck.waiting import poll

# One folder per contract area (ResumeCore, DagRevision, SemanticRecovery, SandboxCR).
AREAS = ("traces/core", "traces/revision", "traces/recovery", "traces/sandbox")
DASK = Path(sys.executable).parent / "dask"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _report(stdout: str) -> dict[str, Any]:
    """A JSON report without what differs between any two runs (when, how long)."""
    document = json.loads(stdout)
    for name in ("started", "seconds"):
        document.pop(name)
    for trace in document["traces"]:
        trace.pop("seconds", None)
    return document


@pytest.mark.slow
def test_a_local_two_worker_cluster_gives_the_report_of_a_local_run(tmp_path: Path) -> None:
    # A spec folder of one module before the bundled ones: the workers get both folders'
    # files, and the report names the client's files, the override first.
    override = tmp_path / "override"
    override.mkdir()
    shutil.copy(SPEC / "ResumeCore.tla", override / "ResumeCore.tla")
    args = ("--format", "json", "--spec-path", override, *AREAS)
    local = run_cli(*args, "--no-progress")
    cluster = run_cli(*args, "--executor", "local:2")
    for run in (local, cluster):
        run.assert_no_traceback()
        assert run.returncode == 1, run  # traces/ keeps violating examples on purpose
    assert _report(cluster.stdout) == _report(local.stdout)
    assert _report(local.stdout)["spec_files"]["ResumeCore"][0] == str(
        (override / "ResumeCore.tla").resolve()
    )
    # Two workers, so two shards per contract, each reported on stderr when done.
    for contract in ("ResumeCore", "DagRevision", "SemanticRecovery", "SandboxCR"):
        for shard in ("1/2", "2/2"):
            assert f"executor: shard {shard} of {contract} done on tcp://127.0.0.1:" in (
                cluster.stderr
            ), cluster


def test_an_address_that_is_not_one_is_a_usage_error() -> None:
    for bad in ("scheduler:8786", "tcp://127.0.0.1", "http://127.0.0.1:8786", "local:0", "local:"):
        run = invoke("--executor", bad, ROOT / "traces/core/ok-crash-resume.jsonl")
        assert run.returncode == 2, run
        assert f"--executor {bad!r}: " in run.stderr and "local:N" in run.stderr, run
        run.assert_no_traceback()


def test_a_scheduler_nobody_listens_at_is_exit_3_within_the_wait() -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    run = run_cli(
        "--executor",
        address,
        "traces/core/ok-crash-resume.jsonl",
        env={"RESUME_CHECK_EXECUTOR_WAIT": "2"},
        timeout=120,
    )
    assert run.returncode == 3, run
    assert f"--executor {address}: cannot reach the Dask scheduler" in run.stderr, run
    run.assert_no_traceback()


def test_without_dask_it_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    run = invoke("--executor", "local:1", ROOT / "traces/core/ok-crash-resume.jsonl")
    assert run.returncode == 3, run
    assert "pip install 'resume-check[cluster]'" in run.stderr, run
    run.assert_no_traceback()


def _start(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(a) for a in args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.fixture
def scheduler_and_worker(tmp_path: Path) -> Iterator[str]:
    """`dask scheduler` (no retry of a shard whose worker died) and one `dask worker` with one
    thread, on 127.0.0.1, as docs/scale.md starts them; stopped after the test."""
    address = f"tcp://127.0.0.1:{_free_port()}"
    port = address.rsplit(":", 1)[1]
    no_retry = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
    started = [
        _start(DASK, "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard",
               env=no_retry),
        _start(DASK, "worker", address, "--nthreads", "1", "--no-dashboard", "--host",
               "127.0.0.1", "--local-directory", tmp_path),
    ]  # fmt: skip
    try:
        yield address
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.mark.slow
def test_a_worker_killed_while_judging_is_exit_3(scheduler_and_worker: str) -> None:
    import distributed

    address = scheduler_and_worker
    with distributed.Client(address, timeout=30, set_as_default=False) as client:
        client.wait_for_workers(1, timeout=60)
        ((worker, pid),) = client.run(os.getpid).items()
        judging = subprocess.Popen(
            [str(CLI), "--executor", address, "--no-progress", *AREAS],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Killed once a shard is on the worker: TLC's start alone takes longer than this
            # loop's step, so the kill lands while the shard is judged.
            busy = poll(
                lambda: client.processing().get(worker) or judging.poll() is not None,
                timeout=120,
                every=0.05,
            )
            assert busy, "no shard reached the worker"
            os.kill(pid, signal.SIGKILL)
            stdout, stderr = judging.communicate(timeout=180)
        finally:
            judging.kill()
    assert judging.returncode == 3, (stdout, stderr)
    assert f"--executor {address}: the worker judging shard 1/1 of" in stderr, stderr
    assert "died" in stderr and "Traceback" not in stderr + stdout, stderr
    assert stdout == ""  # no report, so never a false "conforms"
