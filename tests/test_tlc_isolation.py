"""Concurrent TLC runs must not share files.

TLC run from its jar extracts the standard modules (TLC.tla, Naturals.tla, ...) into
`java.io.tmpdir` -- /tmp for every process on the machine -- and deletes them when the JVM exits
(tlaplus/tlaplus#378). Two runs at once (`resume-check spec` runs two by default; CI machines
run several jobs) then read each other's half-written or deleted copies and fail with "Lexical
error ... <EOF>" or "Cannot find source file for module TLC": a spec error that is no fault of
the spec, and a flaky verdict.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from resumecheck.tlc.output import Outcome
from resumecheck.tlc.runner import run_tlc

pytestmark = pytest.mark.slow

MODULE = """\
---- MODULE Tiny ----
EXTENDS TLC, Naturals, Sequences, FiniteSets
VARIABLE x
Init == x = 0
Next == x' = (x + 1) % 3
Inv == x \\in 0..2 /\\ Len(<<x>>) = 1 /\\ Cardinality({x}) = 1
====
"""
CONFIG = "INIT Init\nNEXT Next\nINVARIANT Inv\n"


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    module, config = tmp_path / "Tiny.tla", tmp_path / "Tiny.cfg"
    module.write_text(MODULE, encoding="utf-8")
    config.write_text(CONFIG, encoding="utf-8")
    return module, config


def test_standard_modules_are_not_read_from_the_shared_temp_folder(
    tiny: tuple[Path, Path],
) -> None:
    result = run_tlc(*tiny)
    assert result.outcome is Outcome.OK
    shared = Path(tempfile.gettempdir()).resolve()
    parsed = [
        Path(line.split("Parsing file ", 1)[1].strip())
        for line in result.stdout.splitlines()
        if "Parsing file " in line
    ]
    assert {p.name for p in parsed} >= {"Tiny.tla", "TLC.tla", "Naturals.tla"}
    in_shared = sorted(p.name for p in parsed if p.parent.resolve() == shared)
    assert in_shared == []


def test_concurrent_runs_all_succeed(tiny: tuple[Path, Path]) -> None:
    """Probabilistic but cheap (~10 s): with shared standard modules, a few of these 32 runs
    typically fail; with private ones none can."""

    def one(_: int) -> str:
        result = run_tlc(*tiny)
        return (
            "ok"
            if result.outcome is Outcome.OK
            else f"{result.outcome.value}: " + (result.error_text.strip().splitlines() or [""])[0]
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(one, range(32)))
    assert [o for o in outcomes if o != "ok"] == []
