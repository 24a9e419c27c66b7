"""The one child harness (`rctools.suite.child`): a worker started fresh, forked from a
preloaded server, run as a command line (`run_command`) or forked from this process with a
callable (`start_forked`) ends the same way -- SIGKILLed at the n-th time it reaches its kill
point and not a step later (the processes it names to die first killed before it), returned
with its result, an error with its stderr, timed out -- with the CPU it used where it is this
process's child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rctools.suite.child import run_command, run_worker, start_forked
from rctools.suite.crash import (
    KILL_ENV,
    KillMessage,
    KillPoints,
    kill_message,
    parse_kill_message,
    tell_and_stop,
)
from resumecheck.waiting import poll

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from rctools.suite.crash import KillPoints

    def main(job):
        spec = json.loads(Path(job).read_text())
        points = KillPoints()
        steps = Path(spec["steps"])
        for label in ("a", "b", "b", "c"):
            points.hit(label)
            with steps.open("a") as f:
                f.write(label + "\\n")
        if spec.get("fail"):
            print("it went wrong here", file=sys.stderr)
            return 4
        if spec.get("hang"):
            time.sleep(600)
        Path(spec["result"]).write_text(json.dumps({"steps": 4}))
        return 0

    if __name__ == "__main__":
        sys.exit(main(sys.argv[1]))
    """
)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A worker module on the children's path (named per test: a fork server per name)."""
    name = f"rc_child_worker_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(WORKER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return name


def _job(tmp_path: Path, **extra: object) -> Path:
    job = tmp_path / "job.json"
    spec = {"steps": str(tmp_path / "steps"), "result": str(tmp_path / "result.json"), **extra}
    job.write_text(json.dumps(spec), encoding="utf-8")
    return job


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_killed_at_the_nth_time_it_reaches_its_point_and_not_a_step_later(
    tmp_path: Path, module: str, forked: bool
) -> None:
    preload = (module,) if forked else ()
    job = _job(tmp_path)
    report = run_worker(module, job, proc="w1", role="run", kill_at="b#2", preload=preload)
    assert (report.exit, report.point, report.returncode) == ("killed", "b#2", -9)
    assert (tmp_path / "steps").read_text().split() == ["a", "b"]  # stopped before the 2nd b ran
    assert not (tmp_path / "result.json").exists()


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_returned_error_and_timeout_are_told_apart(
    tmp_path: Path, module: str, forked: bool
) -> None:
    preload = (module,) if forked else ()
    result = tmp_path / "result.json"
    done = run_worker(
        module, _job(tmp_path), proc="w1", role="run", result_file=result, preload=preload
    )
    assert (done.exit, done.result, done.point) == ("returned", {"steps": 4}, None)
    failed = run_worker(module, _job(tmp_path, fail=True), proc="w2", role="run", preload=preload)
    assert (failed.exit, failed.returncode) == ("error", 4)
    assert failed.error is not None and "it went wrong here" in failed.error
    hung = run_worker(
        module, _job(tmp_path, hang=True), proc="w3", role="run", timeout=0.5, preload=preload
    )
    assert (hung.exit, hung.error) == ("error", "timed out after 0.5 s")


def _steps(path: Path, told: bool = False) -> Callable[[int], dict[str, int]]:
    """A callable for `start_forked`: reaches a, b, b, c (each written to `path` after its
    point), telling with its kill point what it has done so far when `told`."""

    def work(kill_fd: int) -> dict[str, int]:
        points = KillPoints(fd=kill_fd)
        for n, label in enumerate(("a", "b", "b", "c")):
            if (
                told
                and label == points.label
                and points.seen.get(label, 0) + 1 == points.occurrence
            ):
                tell_and_stop(kill_fd, kill_message(f"{label}#{points.occurrence}", {"done": n}))
            points.hit(label)
            with path.open("a") as f:
                f.write(label + "\n")
        return {"steps": 4}

    return work


@pytest.mark.parametrize("told", [False, True], ids=["named", "told"])
def test_a_forked_callable_is_killed_at_its_point_and_tells_what_it_knew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: bool
) -> None:
    """LangGraph's way in (`start_forked`): a callable in a fork of this process, under the
    same supervision; what it told with its point comes back as `told`."""
    monkeypatch.setenv(KILL_ENV, "b#2")
    steps = tmp_path / "steps"
    ended = start_forked(_steps(steps, told), proc="w1", role="run").wait()
    assert (ended.exit, ended.point, ended.returncode) == ("killed", "b#2", -9)
    assert ended.told == ({"done": 2} if told else None)
    assert steps.read_text().split() == ["a", "b"]
    assert "told" not in ended.to_json() or told


def test_a_forked_callable_returned_failed_or_hung(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KILL_ENV, raising=False)
    log = tmp_path / "workers.log"
    done = start_forked(_steps(tmp_path / "steps"), proc="w1", role="run", log=log).wait()
    assert (done.exit, done.result, done.point) == ("returned", {"steps": 4}, None)

    def fails(_fd: int) -> None:
        raise RuntimeError("it went wrong here")

    failed = start_forked(fails, proc="w2", role="run", log=log).wait()
    assert (failed.exit, failed.returncode) == ("error", 1)
    assert failed.error is not None and "it went wrong here" in failed.error

    def hangs(_fd: int) -> None:
        time.sleep(600)

    hung = start_forked(hangs, proc="w3", role="run", timeout=0.5).wait()
    assert (hung.exit, hung.error, hung.returncode) == ("error", "timed out after 0.5 s", -9)


def test_workers_of_one_phase_are_killed_whichever_is_waited_for_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two forked workers started together: the second stops at its point and is killed
    while the caller still waits for the first, which waits for the second to be gone."""
    monkeypatch.setenv(KILL_ENV, "a#1")
    gone = tmp_path / "gone"

    def second(kill_fd: int) -> None:
        (tmp_path / "pid").write_text(str(os.getpid()))
        (tmp_path / "pid").rename(gone)  # whole, or not there
        KillPoints(fd=kill_fd).hit("a")

    def first(_fd: int) -> dict[str, bool]:
        met = poll(
            lambda: gone.exists() and not _alive(int(gone.read_text())), timeout=30, every=0.01
        )
        return {"met": met}

    one = start_forked(first, proc="w1", role="run")
    two = start_forked(second, proc="w2", role="run")
    assert one.wait().result == {"met": True}
    assert two.wait().exit == "killed"


def _alive(pid: int) -> bool:
    """Whether `pid` is still a process that has not been killed (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_kill_message_names_its_point_what_was_told_and_what_dies_first() -> None:
    for told, first in ((None, []), ({"done": 2}, []), (None, [41, 42]), ({"x": "a\tb"}, [7])):
        line = kill_message("b#2", told, first).decode()
        assert line.endswith("\n") and line.count("\n") == 1
        assert parse_kill_message(line.rstrip("\n")) == KillMessage("b#2", told, first)
    assert kill_message("b#2") == b"b#2\n"  # the line every suite sent before `first`


COMPANION = textwrap.dedent(
    """
    import os, subprocess, sys
    from pathlib import Path
    from rctools.suite.crash import KillPoints

    # a process of the worker's that must die with it (as the sandbox agent's PID 1 must)
    companion = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    Path(sys.argv[1]).write_text(str(companion.pid))
    sum(range(3_000_000))  # some CPU of its own
    KillPoints(first=lambda: [companion.pid]).hit("point")
    companion.kill()
    """
)


def test_a_command_line_worker_is_killed_with_the_processes_it_names_first(
    tmp_path: Path,
) -> None:
    """`run_command` (the sandbox agent's way in): the worker names a process of its own at
    its point; the harness kills it before the worker, and reports the worker's CPU."""
    script, pid_file = tmp_path / "companion.py", tmp_path / "pid"
    script.write_text(COMPANION, encoding="utf-8")
    argv = [sys.executable, str(script), str(pid_file)]
    stderr = tmp_path / "worker.stderr"
    ended = run_command(argv, proc="w1", role="run", stderr=stderr, kill_at="point#1")
    assert (ended.exit, ended.point, ended.returncode) == ("killed", "point#1", -9)
    assert _gone(int(pid_file.read_text()))
    assert ended.cpu_seconds is not None and ended.cpu_seconds > 0
    assert ended.to_json()["cpu_seconds"] == ended.cpu_seconds
    done = run_command(argv, proc="w2", role="run", stderr=stderr)  # no point: it returns
    assert (done.exit, done.point, done.result) == ("returned", None, None)


def test_with_no_harness_a_worker_kills_what_it_names_and_itself(tmp_path: Path) -> None:
    """Run by hand (`$RC_KILL_AT`, no kill pipe), the worker carries out its kill itself."""
    script, pid_file = tmp_path / "companion.py", tmp_path / "pid"
    script.write_text(COMPANION, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "RC_KILL_FD"}
    ran = subprocess.run(
        [sys.executable, str(script), str(pid_file)],
        env={**env, KILL_ENV: "point#1"},
        check=False,
        timeout=60,
    )
    assert ran.returncode == -9
    assert _gone(int(pid_file.read_text()))


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_the_cpu_a_worker_used_is_reported_where_this_process_reaps_it(
    tmp_path: Path, module: str, forked: bool
) -> None:
    """A fresh worker and a `start_forked` one are this process's children (wait4 says their
    CPU); a fork server's is not."""
    preload = (module,) if forked else ()
    done = run_worker(module, _job(tmp_path), proc="w1", role="run", preload=preload)
    assert done.exit == "returned"
    if forked:
        assert done.cpu_seconds is None and "cpu_seconds" not in done.to_json()
    else:
        assert done.cpu_seconds is not None and done.cpu_seconds > 0
    spun = start_forked(lambda _fd: sum(range(3_000_000)), proc="w2", role="run").wait()
    assert spun.exit == "returned" and spun.cpu_seconds is not None and spun.cpu_seconds > 0


def _gone(pid: int) -> bool:
    """Whether the SIGKILLed `pid` has died (a signal's delivery is not instant)."""
    return poll(lambda: not _alive(pid), timeout=30, every=0.01)


def test_a_worker_is_awaited_whatever_its_descriptors_are_numbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long matrix in one process once held more than 1,024 descriptors, and select() cannot
    wait on one numbered past that: the run ended in an internal error. The harness waits with
    poll, which can."""
    import resource

    monkeypatch.delenv(KILL_ENV, raising=False)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        pytest.skip(f"this process may open only {soft} descriptors")
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        done = start_forked(_steps(tmp_path / "steps"), proc="w1", role="run").wait()
        assert (done.exit, done.result) == ("returned", {"steps": 4})
        hung = start_forked(lambda _fd: time.sleep(600), proc="w2", role="run", timeout=0.5)
        assert hung.wait().exit == "error"
    finally:
        for fd in held:
            os.close(fd)


def test_a_trace_writer_dropped_unclosed_gives_its_descriptor_back(tmp_path: Path) -> None:
    """A driver writes a header or a crash line through a writer it then drops; thousands of
    cells in one process must not keep a descriptor each."""
    from rctools.suite.trace import TraceWriter

    before = len(os.listdir("/proc/self/fd"))
    for n in range(200):
        TraceWriter(tmp_path / "trace.jsonl", "w1").event("crash", n=n)
    with TraceWriter(tmp_path / "trace.jsonl", "w2") as writer:
        writer.event("crash")
    writer.close()  # closing twice is harmless
    assert len(os.listdir("/proc/self/fd")) <= before + 1
    assert len((tmp_path / "trace.jsonl").read_text().splitlines()) == 201
