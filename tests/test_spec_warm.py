"""`resume-check spec` runs several TLC runs per JVM (`resumecheck.tlc.warm`): the rows and
their verdicts are the same as with a JVM per run, the shared parser keeps nothing of one run
for the next, a run that kills the driver or needs a class the shared parser does not own is
run again alone without touching the others, and without the driver every run gets a JVM of
its own.

Cheap on purpose: a few mutant rows and toy specs (`test_spec.py` runs the whole spec once).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import SPEC, run_cli
from resumecheck import speccheck
from resumecheck.errors import ToolchainError
from resumecheck.tlc import override, warm
from resumecheck.tlc.output import Outcome, TLCResult
from resumecheck.tlc.runner import run_tlc

pytestmark = pytest.mark.slow

BUILT = override.classes()
needs_driver = pytest.mark.skipif(BUILT.folder is None, reason=BUILT.problem)

# Rows of two contracts (SemanticRecovery and SandboxCR), so that two modules of different
# content but the same kind of names follow each other in one JVM.
ONLY = "-restore-"


def _rows(mode: str) -> list[tuple[object, ...]]:
    run = run_cli(
        "spec", "--only", ONLY, "--jobs", "2", "--format", "json", "--no-progress",
        env={warm.MODE_ENV: mode},
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    rows = json.loads(run.stdout)["rows"]
    keys = ("kind", "name", "expected", "outcome", "distinct", "passed")
    return sorted(tuple(row[key] for key in keys) for row in rows)


@needs_driver
def test_every_jvm_mode_gives_identical_rows() -> None:
    shared = _rows("shared")
    assert len(shared) >= 4 and {row[1] for row in shared} >= {
        "recovery-restore-when-none-admissible",
        "sandbox-restore-keeps-history",
    }
    assert shared == _rows("loader-per-run") == _rows("per-run")


_TOY = """---- MODULE {name} ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < {top} /\\ x' = x + 1
Small == x < {bound}
====
"""


def _toy(folder: Path, name: str, top: int, bound: int) -> tuple[Path, Path]:
    folder.mkdir()
    module = folder / f"{name}.tla"
    module.write_text(_TOY.format(name=name, top=top, bound=bound), encoding="utf-8")
    config = folder / f"{name}.cfg"
    config.write_text("INIT Init\nNEXT Next\nINVARIANT Small\n", encoding="utf-8")
    return module, config


def _verdict(result: TLCResult) -> tuple[object, ...]:
    return (result.outcome, result.violated, result.distinct_states, result.exit_code)


@needs_driver
def test_a_run_that_kills_the_driver_is_run_again_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver dies under the second run (SIGKILL once the run is handed to it, as a
    System.exit or a JVM crash would end it): that run's answer is a plain TLC's, the first
    and third runs keep theirs, and the third gets a new driver."""
    assert BUILT.warm is not None
    first = _toy(tmp_path / "a", "Toy", top=5, bound=10)  # passes, 6 states
    second = _toy(tmp_path / "b", "Toy", top=9, bound=4)  # violates Small at x = 4
    third = _toy(tmp_path / "c", "Other", top=3, bound=10)
    driver = warm.WarmTLC(BUILT.warm)
    try:
        ok = driver.run(*first)
        killed = driver.pid
        assert killed is not None
        alive = driver._driver

        def dying() -> subprocess.Popen[str]:
            process = alive()
            os.kill(process.pid, signal.SIGKILL)
            return process

        monkeypatch.setattr(driver, "_driver", dying)
        violated = driver.run(*second)
        monkeypatch.undo()
        assert driver.restarts == 1 and driver.pid is None
        other = driver.run(*third)
        assert driver.pid not in (None, killed)
    finally:
        driver.close()
    assert _verdict(ok) == (Outcome.OK, None, 6, 0)
    assert _verdict(violated) == _verdict(run_tlc(*second)) == (
        Outcome.INVARIANT_VIOLATION, "Small", 5, 12,
    )  # fmt: skip
    assert [state.variables["x"] for state in violated.error_trace] == [0, 1, 2, 3, 4]
    assert _verdict(other) == (Outcome.OK, None, 4, 0)


# Two modules of one name whose variables and definitions trade places: TLC gives every
# variable and definition a slot by name, kept on SANY's interned names, which the shared
# parser keeps from run to run. A slot left from the run before would make the second
# module's Inc read the first one's (or `y` read `x`'s value).
_FIRST = """---- MODULE Swap ----
EXTENDS Naturals
VARIABLES x, y
Inc(v) == v + 1
Init == x = 0 /\\ y = 10
Next == x < 3 /\\ x' = Inc(x) /\\ y' = y
Fine == y = 10
====
"""
_SECOND = """---- MODULE Swap ----
EXTENDS Naturals
VARIABLES y, z, x
Lim == 2
Inc(v) == v + 2
Init == y = 0 /\\ z = 5 /\\ x = 7
Next == y < 6 /\\ y' = Inc(y) /\\ UNCHANGED <<z, x>>
Fine == y <= 2 * Lim
====
"""


def _module(folder: Path, text: str, invariant: str) -> tuple[Path, Path]:
    folder.mkdir()
    module = folder / "Swap.tla"
    module.write_text(text, encoding="utf-8")
    config = folder / "Swap.cfg"
    config.write_text(f"INIT Init\nNEXT Next\nINVARIANT {invariant}\n", encoding="utf-8")
    return module, config


@needs_driver
def test_the_shared_parser_keeps_nothing_of_a_run(tmp_path: Path) -> None:
    """Runs of one module name with other contents, one after another in one driver, each
    answer a plain TLC's: the parser shared between runs carries nothing over."""
    assert BUILT.warm is not None
    first = _module(tmp_path / "a", _FIRST, "Fine")  # passes: x 0..3, 4 states
    second = _module(tmp_path / "b", _SECOND, "Fine")  # breaks Fine at y = 6, 4 states
    order = [first, second, first, second]
    driver = warm.WarmTLC(BUILT.warm)
    try:
        answers = [_verdict(driver.run(*runs)) for runs in order]
        assert driver.restarts == driver.fallbacks == 0
    finally:
        driver.close()
    assert answers[:2] == [_verdict(run_tlc(*runs)) for runs in order[:2]] == [
        (Outcome.OK, None, 4, 0), (Outcome.INVARIANT_VIOLATION, "Fine", 4, 12),
    ]  # fmt: skip
    assert answers[2:] == answers[:2]


# TLC orders strings by when they were first interned; the order of a set's elements decides
# which successor is checked first, so the distinct states counted at the violation show it.
_ORDER = """---- MODULE Order ----
VARIABLE x
{first} == "{first_value}"
{second} == "{second_value}"
Init == x = "s"
Next == x' \\in {{P, Q}}
NotQ == x # Q
====
"""


@needs_driver
def test_a_run_sees_names_in_the_order_a_fresh_jvm_would(tmp_path: Path) -> None:
    """A run that interned "p" before "q" leaves no trace on the next run, which mentions "q"
    first: as in a fresh JVM, its set {P, Q} starts with "q" and NotQ fails at the first
    successor (2 distinct states); in the order the earlier run left, at the second (3)."""
    assert BUILT.warm is not None
    runs = []
    for name, first, second in (("pq", "P", "Q"), ("qp", "Q", "P")):
        folder = tmp_path / name
        folder.mkdir()
        module = folder / "Order.tla"
        text = _ORDER.format(
            first=first, first_value=first.lower(), second=second, second_value=second.lower()
        )
        module.write_text(text, encoding="utf-8")
        config = folder / "Order.cfg"
        config.write_text("INIT Init\nNEXT Next\nINVARIANT NotQ\n", encoding="utf-8")
        runs.append((module, config))
    driver = warm.WarmTLC(BUILT.warm)
    try:
        answers = [_verdict(driver.run(*run)) for run in runs]
        assert driver.fallbacks == 0
    finally:
        driver.close()
    assert answers == [_verdict(run_tlc(*run)) for run in runs]
    assert answers == [
        (Outcome.INVARIANT_VIOLATION, "NotQ", 3, 12), (Outcome.INVARIANT_VIOLATION, "NotQ", 2, 12),
    ]  # fmt: skip


@needs_driver
def test_a_class_the_shared_parser_does_not_own_sends_the_run_to_a_jvm_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With util.FileUtil taken out of the partition (a test hook), SANY's file resolver asks
    for it in every run: the run is answered by a plain TLC and the driver retires."""
    assert BUILT.warm is not None
    monkeypatch.setenv("RESUME_CHECK_JAVA_OPTS", "-Dresumecheck.unshared=util.FileUtil")
    toy = _toy(tmp_path / "a", "Toy", top=9, bound=4)
    driver = warm.WarmTLC(BUILT.warm)
    try:
        answer = driver.run(*toy)
        assert (driver.fallbacks, driver.retired, driver.pid) == (1, 1, None)
    finally:
        driver.close()
    assert _verdict(answer) == (Outcome.INVARIANT_VIOLATION, "Small", 5, 12)


@needs_driver
def test_a_jar_the_partition_does_not_fit_gets_a_driver_without_the_shared_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With util.UniqueString taken out of the partition (as a TLC whose SANY the partition
    was not written for), the driver cannot take its snapshot: it loads SANY for every run
    instead, and its runs are answered there, none run again alone."""
    assert BUILT.warm is not None
    monkeypatch.setenv("RESUME_CHECK_JAVA_OPTS", "-Dresumecheck.unshared=util.UniqueString")
    toy = _toy(tmp_path / "a", "Toy", top=9, bound=4)
    driver = warm.WarmTLC(BUILT.warm)
    try:
        answers = [_verdict(driver.run(*toy)) for _ in range(2)]
        assert (driver.fallbacks, driver.restarts, driver.retired) == (0, 0, 0)
    finally:
        driver.close()
    assert answers == [(Outcome.INVARIANT_VIOLATION, "Small", 5, 12)] * 2


def test_without_the_driver_every_run_has_a_jvm_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No javac: the runner is the plain one, and the row still gets its verdict."""
    monkeypatch.setattr(override, "classes", lambda: override.Classes(None, "no javac"))
    started = []
    monkeypatch.setattr(warm.WarmTLC, "_driver", lambda self: started.append(self))
    rows = speccheck.check_all(SPEC, only="recovery-restore-when-none")
    assert not started
    assert [(r.name, r.outcome, r.passed) for r in rows] == [
        ("recovery-restore-when-none-admissible", "violates BlockWhenNone", True)
    ]


def test_the_jvm_mode_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(warm.MODE_ENV, "per-run")
    with warm.runner() as run:
        assert run is warm.plain
    monkeypatch.setenv(warm.MODE_ENV, "pooled")
    with pytest.raises(ToolchainError, match="shared, loader-per-run, per-run"), warm.runner():
        pass
