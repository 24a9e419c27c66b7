"""Kill-point planning (`rctools.langgraph.killpoints`), without running LangGraph: the plan
is a function of what the fault-free run reached, so the same run gives the same cells."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

from rctools.langgraph.killpoints import KillPoint, KillSwitch, for_reference, hook_statements, plan
from rctools.suite.child import start_forked

SEEN = {
    "start A": 1,
    "end A": 1,
    "put entry": 2,
    "put exit": 2,
    "put sql 2 INSERT": 2,
    "put_writes A entry": 1,
    "put_writes A sql 2 INSERT": 1,
}
LINES = {"put": [120, 80], "put_writes A": [60]}


def test_the_plan_is_the_same_for_the_same_fault_free_run_in_any_order() -> None:
    shuffled = dict(reversed(list(SEEN.items())))
    assert plan(SEEN, LINES) == plan(shuffled, LINES)
    faults = [p.fault for p in plan(SEEN, LINES)]
    assert len(faults) == len(set(faults)) == sum(SEEN.values()) + 3
    assert "kill:put sql 2 INSERT#2" in faults


def test_a_seeded_instant_is_named_by_its_seed_not_by_the_call_s_length() -> None:
    """The line count of a call may differ a little from run to run; the cell's name must
    not: it carries the seeded fraction, the line is computed from the count."""
    one = [p for p in plan(SEEN, LINES) if "@" in p.label]
    other = [p for p in plan(SEEN, {"put": [121, 79], "put_writes A": [61]}) if "@" in p.label]
    assert [p.fault for p in one] == [p.fault for p in other]
    assert all(1 <= p.line <= LINES[p.call or ""][p.occurrence - 1] for p in one)
    reseeded = [p.fault for p in plan(SEEN, LINES, seed=7) if "@" in p.label]
    assert reseeded != [p.fault for p in one]


def test_inside_call_points_can_be_left_out_and_the_stride_thins_a_sorted_list() -> None:
    outside = plan(SEEN, LINES, inside=False)
    assert all(" sql " not in p.label and "@" not in p.label for p in outside)
    assert plan(SEEN, LINES, stride=3) == plan(SEEN, LINES)[::3]


def test_a_fault_names_its_point_and_parses_back() -> None:
    point = KillPoint("put_writes push 0000000001 sql 3 INSERT", 2)
    assert KillPoint.parse(point.fault) == point
    assert point.call == "put_writes push 0000000001"
    assert KillPoint.parse("kill@12") is None and KillPoint.parse("none") is None
    assert KillPoint("put @0.250", 3).counted_as == "put entry"


def test_the_reference_is_killed_at_the_edge_of_the_call_whose_store_the_kill_left() -> None:
    """A statement point is the tested saver's own; the reference saver (atomic) is killed
    at the edge of the same call that leaves its store as the tested saver's was found:
    the exit when the call had taken effect (or when that is not known: the cell is then
    inconclusive), the entry when the store held nothing of it."""
    inside = KillPoint("put sql 2 UPDATE", 3)
    assert for_reference(inside, ("put", 3), "all") == KillPoint("put exit", 3)
    assert for_reference(inside, ("put", 3), "none") == KillPoint("put entry", 3)
    assert for_reference(inside, ("put", 3)) == KillPoint("put exit", 3)
    assert for_reference(KillPoint("end A", 1), None) == KillPoint("end A", 1)


def test_statements_of_a_write_call_are_points_counted_even_while_events_are_held() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")

    class Saver:
        def __init__(self) -> None:
            self.conn = conn

    kill = KillSwitch(measure=True)
    assert hook_statements(Saver(), kill) == ["sqlite3"]
    with kill.call("put_writes A"):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (2)")
    kill.paused = lambda: True  # held events: still counted, so numbering is timing-free
    with kill.call("put"):
        conn.execute("INSERT INTO t VALUES (3)")
        conn.execute("UPDATE t SET x = 4")
    with kill.call("get_tuple"):
        conn.execute("SELECT 1").fetchall()
        conn.execute("SELECT 2").fetchall()
    assert kill.seen == {
        "put_writes A entry": 1,
        "put_writes A sql 2 INSERT": 1,
        "put_writes A exit": 1,
        "put entry": 1,
        "put sql 2 UPDATE": 1,
        "put exit": 1,
        "get_tuple entry": 1,
        "get_tuple exit": 1,
    }
    assert set(kill.lines) == {"put_writes A", "put"}
    assert all(n > 0 for counts in kill.lines.values() for n in counts)


def test_an_async_call_s_seeded_instant_is_a_timer_from_its_fault_free_duration() -> None:
    """A coroutine's thread runs other tasks while it awaits, so its instant is a delay after
    entry (the fraction of the fault-free duration); the worker reports where it stopped."""
    points = plan({"put entry": 1, "put exit": 1}, {}, {"put": [0.2]})
    instant = next(p for p in points if "@" in p.label)
    assert instant.line == 0 and 0 < instant.delay < 0.2

    def work(kill_fd: int) -> None:  # the kill stops the whole process: a worker of its own
        kill = KillSwitch(kill_fd, instant.label, 1, delay=0.01)
        with kill.call("put", inside=False):
            time.sleep(5)  # the call is still running when the timer fires

    ended = start_forked(work, proc="w1", role="run").wait()
    assert ended.exit == "killed" and ended.told is not None
    report = ended.told
    assert report["label"] == instant.label and report["call"] == ["put", 1]
    assert KillPoint(instant.label, 1).call == "put"


def test_statements_inside_one_open_transaction_are_no_points_of_their_own() -> None:
    """Killed between two statements of one transaction, the store is as at the call's
    entry: only once the connection has committed something is a statement a point."""
    conn = sqlite3.connect(":memory:")  # Python's implicit BEGIN ... COMMIT
    conn.execute("CREATE TABLE t (x)")
    conn.commit()

    class Saver:
        def __init__(self) -> None:
            self.conn = conn

    kill = KillSwitch()
    hook_statements(Saver(), kill)
    with kill.call("put"):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("INSERT INTO t VALUES (2)")
        conn.commit()
        conn.execute("INSERT INTO t VALUES (3)")  # after a commit: part of the call is durable
        conn.commit()
    inside = [label for label in kill.seen if " sql " in label]
    assert inside and all(label.split(" sql ")[1].split()[0] not in ("2", "3") for label in inside)
    assert any(" INSERT" in label for label in inside)


def test_at_the_kill_point_every_thread_of_the_process_stops_until_the_kill(tmp_path: Path) -> None:
    """A thread beside the one at the point (LangGraph's background writer) must not run on
    while the parent is on its way to send SIGKILL: it could store the next checkpoint, and
    the same cell would end differently on a loaded machine. The child's other thread counts
    without pause; once the parent was told, the process is stopped and the count holds."""
    import subprocess
    import sys
    import textwrap

    from resumecheck.waiting import poll

    child_code = textwrap.dedent(
        """
        import os, sys, threading
        from rctools.suite.crash import KillPoints
        count = open(sys.argv[1], "w")
        def busy():
            n = 0
            while True:
                n += 1
                count.seek(0); count.write(str(n)); count.flush()
        threading.Thread(target=busy, daemon=True).start()
        points = KillPoints()
        while True:
            points.hit("tick")
        """
    )
    read_fd, write_fd = os.pipe()
    counter = tmp_path / "count"
    env = dict(os.environ, RC_KILL_AT="tick#200000", RC_KILL_FD=str(write_fd))
    child = subprocess.Popen(
        [sys.executable, "-c", child_code, str(counter)], env=env, pass_fds=(write_fd,)
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            assert pipe.readline() == b"tick#200000\n"
        assert poll(lambda: _state(child.pid) == "T", timeout=30, every=0.01)
        held = counter.read_text()
        time.sleep(0.3)  # the busy thread would count thousands in this time
        assert counter.read_text() == held and _state(child.pid) == "T"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL


def _state(pid: int) -> str:
    """The process's state letter from /proc (`T`: stopped)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]
