"""A warm judge (`resumecheck.judge.warm`): judge calls inside it run TLC in drivers kept
between calls, and every verdict is the one a JVM per run gives -- over traces/core, whole
and trace by trace (one driver running many runs after one another), with `--jobs 2` (two
drivers at once, each run with its own trace data file), with witnesses, and after the
driver was killed between calls (the run is done again alone).

Why this many shapes: a driver keeps SANY and its intern table between runs and sets each
run's trace data file as a system property, so what must not leak is one run's state or data
into the next or into a concurrent one; the corpus has conforming and violating traces of
every property, and one whose verdict needs the store re-run (`_store_kept_if_possible`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import CORE
from resumecheck import explain
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge, warm
from resumecheck.tlc import override, printed
from resumecheck.tlc import warm as warm_tlc
from resumecheck.verdict import Status, Verdict

pytestmark = pytest.mark.slow

BUILT = override.classes()
needs_driver = pytest.mark.skipif(BUILT.folder is None, reason=BUILT.problem)

STORE_RERUN = "co-answer-again-not-cv-when-the-cut-write-is-absent.jsonl"


def _fields(verdict: Verdict) -> dict[str, Any]:
    """Every field of a verdict but the wall time it took."""
    fields = dataclasses.asdict(verdict)
    del fields["seconds"]
    return fields


def _core() -> list[Path]:
    manifest = json.loads((CORE / "manifest.json").read_text(encoding="utf-8"))
    return sorted(CORE / name for name in manifest)


def _sample() -> list[Path]:
    """The smallest conforming and violating traces, and the one a store re-run decides."""
    manifest = json.loads((CORE / "manifest.json").read_text(encoding="utf-8"))
    by_size = sorted(manifest, key=lambda name: ((CORE / name).stat().st_size, name))
    conforming = [n for n in by_size if manifest[n]["status"] == "conforms"][:3]
    violating = [n for n in by_size if manifest[n]["status"] == "violates"][:3]
    return [CORE / name for name in [*conforming, *violating, STORE_RERUN]]


@pytest.fixture(scope="module")
def cold() -> dict[Path, dict[str, Any]]:
    """traces/core judged the plain way (a JVM per TLC run), in one call (per-run: so even
    when a warm block is held around the session, e.g. by the pytest plugin)."""
    files = _core()
    before = os.environ.get(warm_tlc.MODE_ENV)
    os.environ[warm_tlc.MODE_ENV] = "per-run"
    try:
        verdicts = judge(files, spec_paths=default_spec_paths())
    finally:
        if before is None:
            del os.environ[warm_tlc.MODE_ENV]
        else:
            os.environ[warm_tlc.MODE_ENV] = before
    return {path: _fields(v) for path, v in zip(files, verdicts, strict=True)}


def _idle(pool: warm_tlc.Pool | None) -> list[warm_tlc.WarmTLC]:
    assert pool is not None
    return pool.drivers


@needs_driver
def test_warm_verdicts_are_the_cold_ones(
    cold: dict[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(warm_tlc.MODE_ENV, raising=False)
    fresh = warm_tlc._held is None  # else a block around the session holds older drivers
    files = _core()
    statuses = {v["status"] for v in cold.values()}
    assert statuses == {Status.CONFORMS, Status.VIOLATES}
    with warm() as pool:
        whole = judge(files, spec_paths=default_spec_paths())
        assert {p: _fields(v) for p, v in zip(files, whole, strict=True)} == cold
        # Two shards at once: two drivers, each run with its own data file.
        shared = judge(files, spec_paths=default_spec_paths(), jobs=2)
        assert {p: _fields(v) for p, v in zip(files, shared, strict=True)} == cold
        assert len(_idle(pool)) == 2 or not fresh
        # One call per trace: run after run in the same drivers.
        for path in _sample():
            (alone,) = judge([path], spec_paths=default_spec_paths())
            assert _fields(alone) == cold[path], path.name
        drivers = _idle(pool)
        assert all(d.fallbacks == 0 and d.restarts == 0 for d in drivers)
        pids = [d.pid for d in drivers]
    for pid in pids if fresh else ():  # ended with the block
        assert pid is not None and not Path(f"/proc/{pid}").exists()


@needs_driver
def test_warm_witnesses_are_the_cold_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    files = [_sample()[0], _sample()[3]]  # a conforming trace, a violating one
    monkeypatch.setenv(warm_tlc.MODE_ENV, "per-run")
    plain = judge(files, spec_paths=default_spec_paths())
    explain.add_witnesses(plain, default_spec_paths())
    monkeypatch.delenv(warm_tlc.MODE_ENV)
    with warm():
        hot = judge(files, spec_paths=default_spec_paths())
        explain.add_witnesses(hot, default_spec_paths())
    assert all(v.witness is not None for v in plain)
    assert [_fields(v) for v in hot] == [_fields(v) for v in plain]


@needs_driver
def test_a_driver_killed_between_calls_is_replaced(
    cold: dict[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(warm_tlc.MODE_ENV, raising=False)
    path = _sample()[3]
    with warm() as pool:
        (first,) = judge([path], spec_paths=default_spec_paths())
        (driver,) = _idle(pool)
        killed = driver.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)  # the driver this test started
        # Found dead before the run (a new driver), or under it (the run again alone).
        (again,) = judge([path], spec_paths=default_spec_paths())
        (third,) = judge([path], spec_paths=default_spec_paths())
        assert driver.pid not in (None, killed) and driver.restarts <= 1
    assert _fields(first) == _fields(again) == _fields(third) == cold[path]


@needs_driver
def test_progress_comes_from_the_driver_that_stays(
    cold: dict[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a progress reader (the CLI always has one) each warm run is answered in a thread
    of its own while the caller reads TLC's lines: the driver must still be the caller's (a
    JVM dies with the thread that started it), so the next run, an explanation with no heap
    of its own, finds it up."""
    monkeypatch.delenv(warm_tlc.MODE_ENV, raising=False)
    path = CORE / "unmatched-put-of-unknown-checkpoint.jsonl"  # no move matches an event
    with warm() as pool:
        for _ in range(2):
            lines: list[str] = []
            (verdict,) = judge([path], spec_paths=default_spec_paths(), on_line=lines.append)
            assert _fields(verdict) == cold[path]
            assert any(printed.tag(line) == "rc-progress" for line in lines)
        (driver,) = _idle(pool)
        pid = driver.pid
        explain.add_expected([verdict], default_spec_paths())
        assert verdict.expected  # the moves a correct runtime could have made instead
        (after,) = _idle(pool)
        assert after is driver and driver.pid == pid
        assert (driver.fallbacks, driver.restarts, driver.retired) == (0, 0, 0)


def test_blocks_nest_and_share_one_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(warm_tlc.MODE_ENV, raising=False)
    before = warm_tlc._held  # a block around this session (the plugin's), or none
    with warm() as outer:
        with warm() as inner:
            assert inner is outer is warm_tlc._held is (before or outer)
        assert warm_tlc._held is outer  # the outer block still holds it
    assert warm_tlc._held is before
    if before is None:
        monkeypatch.setenv(warm_tlc.MODE_ENV, "per-run")
        with warm() as none:
            assert none is None
