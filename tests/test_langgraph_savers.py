"""Savers the project has never seen, through `--saver MODULE:FACTORY`: broken ones are caught
as saver findings with the property named, a correct one conforms.

Each broken saver (tests/fixtures/broken_savers.py) is LangGraph's own saver with one bug.
The write-behind cache also passes LangGraph's storage-API conformance package at its highest
level: a class of bug only runs with crashes can show.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow

FIXTURES = ROOT / "tests" / "fixtures"
ENV = {"PYTHONPATH": str(FIXTURES)}


def _matrix(
    tmp_path: Path, factory: str, scenarios: str = "chain,two-interrupts", stride: int = 3
) -> dict:
    run = run_cli(
        "run",
        "langgraph",
        "--saver",
        f"broken_savers:{factory}",
        "--scenarios",
        scenarios,
        "--durability",
        "sync",
        "--kill-stride",
        str(stride),
        "--format",
        "json",
        "--out",
        tmp_path,
        "--no-progress",
        env=ENV,
    )
    run.assert_no_traceback()
    document = run.json()
    document["exit_code"] = run.returncode
    return document


@pytest.mark.parametrize(
    ("factory", "prop", "stride"),
    [
        # Every kill point: a lost write shows only when the kill lands between the
        # acknowledgement and the next checkpoint, a few points of each run.
        ("drops_pending_writes", "CV", 1),
        # wrong from the first resume on: its runs never finish, so few kill points suffice
        ("parent_as_latest", "CV", 40),
        ("writes_kept_in_memory", "CV", 1),
        ("write_behind_objectstorage", "CV", 1),
    ],
)
def test_a_broken_saver_is_a_saver_finding_with_the_property_named(
    tmp_path: Path, factory: str, prop: str, stride: int
) -> None:
    document = _matrix(tmp_path, factory, "chain", stride)
    assert document["exit_code"] == 1
    saver = [c for c in document["cells"] if c["finding"] == "saver"]
    assert saver, "the broken saver was not caught"
    assert all(c["reference"]["status"] == "conforms" for c in saver)
    assert {p for c in saver for p in c["tested"]["properties"]} == {prop}


def test_a_correct_saver_never_seen_before_conforms(tmp_path: Path) -> None:
    document = _matrix(tmp_path, "correct_sqlite")
    assert document["exit_code"] == 0
    assert document["counts"]["saver"] == 0
    assert document["counts"]["conforms"] >= 20


def test_the_storage_api_conformance_package_passes_the_write_behind_saver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bug the matrix catches above is invisible to an in-process storage-API suite."""
    conformance = pytest.importorskip("langgraph.checkpoint.conformance")
    monkeypatch.setenv("RESUME_CHECK_STORE", str(tmp_path))
    monkeypatch.syspath_prepend(str(FIXTURES))
    import broken_savers

    @conformance.checkpointer_test(name="write-behind objectstorage")
    async def make():  # type: ignore[no-untyped-def]
        yield broken_savers.write_behind_objectstorage()

    report = asyncio.run(conformance.validate(make))
    assert report.conformance_level() == "FULL"
    assert report.passed_all()
    del sys.modules["broken_savers"]
