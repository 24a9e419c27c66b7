"""Class data sharing for the warm driver (`resumecheck.tlc.cds`): the first driver writes the
archive when it exits, the next one maps it, and the answers are the same.

Why: an archive that a driver maps but that does not fit (another JDK, another class path) must
cost nothing but time, and a driver killed while writing must never leave a half-written archive
in use. The evidence that a driver uses the archive is the kernel's: the file is mapped into the
driver process (/proc/PID/maps), not a flag we set.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from resumecheck.tlc import cds, override
from resumecheck.tlc import warm as warm_tlc
from resumecheck.tlc.locate import find_java, java_major

pytestmark = pytest.mark.slow

BUILT = override.classes()
needs_sharing = pytest.mark.skipif(
    BUILT.folder is None or (java_major(find_java()) or 0) < cds.FIRST_JAVA,
    reason=BUILT.problem or f"java before {cds.FIRST_JAVA} writes no dynamic archive",
)

SPEC = """---- MODULE Count ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 5 /\\ x' = x + 1
====
"""


@pytest.fixture
def classes(tmp_path: Path) -> Path:
    """A copy of the compiled driver in a cache folder of the test's own, without archive."""
    assert BUILT.folder is not None
    copy = tmp_path / "override"
    shutil.copytree(BUILT.folder, copy, ignore=shutil.ignore_patterns("*.jsa", "*.jar"))
    return copy / override.WARM


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "Count.tla").write_text(SPEC, encoding="utf-8")
    (tmp_path / "Count.cfg").write_text("INIT Init\nNEXT Next\n", encoding="utf-8")
    return tmp_path / "Count.tla"


def _mapped(pid: int | None, folder: Path) -> set[str]:
    """The archives of `folder` mapped into process `pid` (the JDK's own one always is)."""
    assert pid is not None
    maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8")
    return {
        line.split()[-1]
        for line in maps.splitlines()
        if line.endswith(".jsa") and line.split()[-1].startswith(str(folder))
    }


@pytest.fixture
def archiving(classes: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], warm_tlc.WarmTLC]:
    """Starts drivers that archive their classes (none told not to by the environment)."""
    monkeypatch.delenv(cds.ENV, raising=False)
    return lambda: warm_tlc.WarmTLC(classes, archive=True)


@needs_sharing
def test_the_first_driver_writes_the_archive_the_next_maps_it(
    classes: Path, spec: Path, archiving: Callable[[], warm_tlc.WarmTLC]
) -> None:
    first = archiving()
    answer = first.run(spec, spec.with_suffix(".cfg"))
    assert not any(p.suffix == ".jsa" for p in classes.parent.iterdir())  # written at its exit
    first.close()
    (archive,) = classes.parent.glob("warm-*.jsa")
    assert not [p for p in classes.parent.iterdir() if p.name.startswith(".warm-")]

    second = archiving()
    try:
        again = second.run(spec, spec.with_suffix(".cfg"))
        assert _mapped(second.pid, classes.parent) == {str(archive)}
        assert (again.outcome, again.distinct_states) == (answer.outcome, answer.distinct_states)
        assert again.distinct_states == 6 and second.fallbacks == 0
    finally:
        second.close()


@needs_sharing
def test_a_driver_killed_before_its_exit_leaves_no_archive(
    classes: Path, spec: Path, archiving: Callable[[], warm_tlc.WarmTLC]
) -> None:
    driver = archiving()
    driver.run(spec, spec.with_suffix(".cfg"))
    assert driver.pid is not None
    os.kill(driver.pid, signal.SIGKILL)
    driver.close()
    assert list(classes.parent.glob("*.jsa")) == []
    assert [p for p in classes.parent.iterdir() if p.name.startswith(".")] == []


@needs_sharing
def test_turned_off_a_driver_neither_writes_nor_maps_one(
    classes: Path, spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cds.ENV, "off")
    driver = warm_tlc.WarmTLC(classes, archive=True)
    try:
        answer = driver.run(spec, spec.with_suffix(".cfg"))
        assert answer.distinct_states == 6 and _mapped(driver.pid, classes.parent) == set()
    finally:
        driver.close()
    assert list(classes.parent.glob("*.jsa")) == []


@needs_sharing
def test_a_driver_for_many_runs_starts_without_the_archive(
    classes: Path, spec: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default: drivers held across calls (the pytest plugin, a suite, `spec`) give many
    runs, for which the archive costs more than it saves (warm.held's docstring)."""
    monkeypatch.delenv(cds.ENV, raising=False)
    driver = warm_tlc.WarmTLC(classes)
    try:
        driver.run(spec, spec.with_suffix(".cfg"))
        assert _mapped(driver.pid, classes.parent) == set()
    finally:
        driver.close()
    assert list(classes.parent.glob("*.jsa")) == []
