"""Real process checkpoint/restore: criu 4.1 dumps a sandbox's processes, a restore brings back
what they held in memory, and rollbacks and forks go back to earlier turns -- all judged.

The server under test counts requests in memory only. A criu image taken at a turn boundary
must answer, after a SIGKILL of the whole sandbox and a restore into a new one, exactly what it
answered before; the re-spawn baseline restarts it at zero, and the contract says so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ENVIRONMENT_SKIP, run_cli
from rctools.sandbox import pages
from rctools.sandbox.command import missing_criu, missing_privileges
from rctools.sandbox.namespace import CommandResult, Sandbox
from rctools.sandbox.processes import CriuImager, imager
from rctools.sandbox.recorder import RunSpec, record
from rctools.sandbox.store import Store
from rctools.sandbox.workloads import WORKLOADS
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status
from resumecheck.waiting import poll

# Without root the sandbox itself is out of reach (a plain skip); as root, a kernel that
# refuses criu is an environment problem: the session exits 3 (conftest.ENVIRONMENT_SKIP).
WHY = missing_privileges() or (f"{ENVIRONMENT_SKIP}criu unavailable: {missing_criu()}")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(missing_criu() is not None, reason=WHY),
]

SERVER = "python3 memserver.py </dev/null >/dev/null 2>&1 &"


def _query(box: Sandbox, request: str) -> str:
    result = box.run(f"python3 client.py {request}")
    assert result.exit == 0, result.output
    return result.output.strip()


@pytest.mark.parametrize(("mode", "after"), [("criu", "hits=2"), ("respawn", "hits=0")])
def test_a_restored_server_answers_what_it_answered_before(
    tmp_path: Path, mode: str, after: str
) -> None:
    base = tmp_path / "base"
    WORKLOADS["memory-server"].build_base(base)
    store, processes = Store(tmp_path / "store"), imager(mode)
    box = Sandbox(base, tmp_path / "upper", tmp_path / "work")
    box.start()
    try:
        box.run(SERVER)
        assert _query(box, "ping") == "pong"
        _query(box, "hit")
        assert _query(box, "hit") == "hits=2"
        before = box.processes()
        inner = [Sandbox.inner_pid(pid) for pid in box.pids()]
        frozen = box.freeze()  # the turn boundary
        image = store.write_procs_image(1, before, box, processes)
        Sandbox.thaw(frozen)
    finally:
        box.kill()  # SIGKILL of PID 1: the server dies with its sandbox
    assert image.bytes > (1_000_000 if mode == "criu" else 0)  # a real dump: memory pages
    again = Sandbox(base, tmp_path / "upper", tmp_path / "work2")
    again.start(restoring=True)
    try:
        assert again.init_pid != box.init_pid
        table = store.restore_procs(1, again, processes)
        assert table == before
        if mode == "criu":
            # the same process, not a new one: same PID in the new sandbox's namespace
            assert [Sandbox.inner_pid(pid) for pid in again.pids()] == inner
        assert _query(again, "count") == after
        assert _query(again, "hit") == ("hits=3" if mode == "criu" else "hits=1")
    finally:
        again.kill()


def _blocked_on(pid: int, cpu: int) -> bool:
    """The process sleeps (state S) and last ran on `cpu` (/proc/PID/stat, fields 3 and 39)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] == "S" and int(fields[36]) == cpu


def _image(box: Sandbox, folder: Path) -> Path:
    """A turn boundary's process image: freeze, criu dump, thaw."""
    frozen = box.freeze()
    folder.mkdir()
    CriuImager().dump(box, folder)
    Sandbox.thaw(frozen)
    return folder


def _raw(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("pages-*.img")))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to move a process")
def test_a_server_moved_to_another_cpu_differs_only_in_the_kernels_rseq_words(
    tmp_path: Path,
) -> None:
    """The page study's 4 "misses", made on purpose: a blocked server that only moves to another
    CPU between two images, and is frozen and thawed there, has other page bytes (the kernel
    wrote its new CPU number into the thread's rseq area) but the same memory by `pages.memory`;
    a request it serves changes that memory."""
    first, second = sorted(os.sched_getaffinity(0))[:2]
    base = tmp_path / "base"
    WORKLOADS["memory-server"].build_base(base)
    box = Sandbox(base, tmp_path / "upper", tmp_path / "work")
    box.start()
    try:
        box.run(SERVER)
        [server] = box.pids()
        os.sched_setaffinity(server, {first})
        assert _query(box, "hit") == "hits=1"
        assert poll(lambda: _blocked_on(server, first), timeout=10, every=0.01)
        before = _image(box, tmp_path / "before")
        os.sched_setaffinity(server, {second})
        frozen = box.freeze()  # the next boundary: the stop and the thaw run it on `second`
        Sandbox.thaw(frozen)
        assert poll(lambda: _blocked_on(server, second), timeout=10, every=0.01)
        moved = _image(box, tmp_path / "moved")
        assert _query(box, "hit") == "hits=2"
        served = _image(box, tmp_path / "served")
    finally:
        box.kill()
    assert _raw(before) != _raw(moved)  # what the study counted as a miss
    assert pages.memory(before) == pages.memory(moved)
    assert pages.memory(moved) != pages.memory(served)


def _judged(specs: list[RunSpec], tmp_path: Path) -> dict[str, object]:
    traces = [t for s in specs for t in record(s, tmp_path, tmp_path / "scratch", latency=0.01)]
    verdicts = judge([t.trace for t in traces], spec_paths=default_spec_paths())
    return {v.path.name: v for v in verdicts}


def test_a_crash_is_recovered_with_criu_and_not_by_respawn(tmp_path: Path) -> None:
    """A full checkpoint every turn; SIGKILL in turn 3's checkpoint job. With criu the re-run
    hit prints what it printed first; re-spawned, the server forgot the first hit."""
    runs = [
        RunSpec("memory-server", "full", (3, "checkpoint"), mode) for mode in ("criu", "respawn")
    ]
    verdicts = _judged(runs, tmp_path)
    criu = verdicts["memory-server--full--crash-t3-checkpoint.jsonl"]
    respawn = verdicts["memory-server--full--respawn--crash-t3-checkpoint.jsonl"]
    assert criu.status is Status.CONFORMS, criu
    assert respawn.status is Status.VIOLATES and respawn.properties == ["RestoreConsistency"]
    assert '"ev": "cmd_end"' in (respawn.event or "")


def _outputs(path: Path) -> list[str]:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    return [e["out"] for e in events if e["ev"] == "cmd_end"]


def test_rollback_and_both_rollouts_of_a_fork_conform_and_keep_the_servers_memory(
    tmp_path: Path,
) -> None:
    workload = WORKLOADS["memory-server"]
    specs = [
        RunSpec("memory-server", "full", None, rollback=workload.rollback),
        RunSpec("memory-server", "full", None, fork=workload.fork_at),
    ]
    verdicts = _judged(specs, tmp_path)
    assert len(verdicts) == 3  # the rollback run and two rollouts
    assert {v.status for v in verdicts.values()} == {Status.CONFORMS}, verdicts
    hits = {n: CommandResult(0, f"hits={n}\n").digest for n in range(1, 6)}
    rollback = tmp_path / "memory-server--full--rollback-t4-to-t2--no-crash.jsonl"
    # hit, hit, count; rolled back to turn 2 (one hit): hit, count again from there
    assert _outputs(rollback)[-4:] == [hits[2], hits[2], hits[2], hits[2]]
    events = rollback.read_text(encoding="utf-8")
    assert events.count('"ev": "rollback"') == 1 and '"ev": "restore"' not in events
    fork = "memory-server--full--fork-t2--no-crash--"
    # both rollouts start from the one hit before the fork
    assert _outputs(tmp_path / f"{fork}memory-server.jsonl")[-2:] == [hits[2], hits[2]]
    alt = _outputs(tmp_path / f"{fork}memory-server-alt.jsonl")
    assert alt[-4:] == [hits[2], hits[3], hits[4], hits[4]]


def test_a_kernel_that_refuses_criu_is_an_environment_problem(tmp_path: Path) -> None:
    """`criu check` failing (here: a criu folder whose loader says so) stops the suite with
    exit code 3 and the reason, before any run."""
    fake = tmp_path / "criu"
    loader = fake / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    loader.parent.mkdir(parents=True)
    (fake / "usr/sbin").mkdir(parents=True)
    (fake / "usr/sbin/criu").write_text("")
    loader.write_text(
        "#!/bin/sh\necho 'Error (criu/cr-check.c:1): no seccomp filters' >&2\nexit 1\n"
    )
    loader.chmod(0o755)
    run = run_cli(
        "run", "sandbox", "--out", tmp_path / "out", env={"RESUME_CHECK_CRIU_DIR": str(fake)}
    )
    run.assert_no_traceback()
    assert run.returncode == 3, run
    assert "`criu check` fails on this kernel" in run.stderr
    assert "no seccomp filters" in run.stderr
    assert not (tmp_path / "out" / "traces").exists()
