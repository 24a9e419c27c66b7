"""The async API of a saver that has both: `--api both` runs every cell through the sync API
and again through `ainvoke` on `aget_tuple`/`aput`/... (cells named *.ainvoke, judged beside
LangGraph's AsyncSqliteSaver), so a saver whose async API alone is broken is a saver finding
in those cells only, and a correct one has none in either. A saver with only the async API
gets `.ainvoke` cells alone, judged beside the same reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow

ENV = {"PYTHONPATH": str(ROOT / "tests" / "fixtures")}


def _matrix(tmp_path: Path, factory: str, *options: str) -> dict[str, Any]:
    saver = factory if ":" in factory else f"broken_savers:{factory}"
    run = run_cli(
        "run", "langgraph", "--saver", saver, "--scenarios",
        "two-interrupts", "--durability", "sync", "--api", "both", *options,
        "--format", "json", "--no-progress", "--out", tmp_path, env=ENV,
    )  # fmt: skip
    run.assert_no_traceback()
    document: dict[str, Any] = run.json()
    assert document["exit_code"] == run.returncode
    return document


def test_a_saver_whose_async_api_alone_is_broken_is_a_saver_finding_there(
    tmp_path: Path,
) -> None:
    # the fault-free cells: every ainvoke user of this saver meets the bug
    cells = _matrix(tmp_path, "async_drops_pending_writes", "--cells", "*.none.*")["details"][
        "cells"
    ]
    by_api = {api: [c for c in cells if c["api"] == api] for api in ("default", "async")}
    assert by_api["default"] and by_api["async"]
    assert all(c["finding"] != "saver" for c in by_api["default"]), by_api["default"]
    (clean,) = [c for c in by_api["async"] if c["fault"] == "none"]
    assert clean["finding"] == "saver" and "CV" in clean["checks"], clean
    assert clean["tested"]["trace"].endswith(".sync.ainvoke.jsonl")
    assert ", async API)" in Path(clean["tested"]["trace"]).read_text(encoding="utf-8")


def test_a_saver_with_only_the_async_api_is_judged_beside_the_async_reference(
    tmp_path: Path,
) -> None:
    """A saver without the sync API is driven through `ainvoke`: its cells are `.ainvoke`
    cells, and their reference runs the same code path (AsyncSqliteSaver), not `invoke`."""
    document = _matrix(tmp_path, "rctools.langgraph.backends:sqlite_async", "--cells", "*.none.*")
    cells = document["details"]["cells"]
    assert cells and {c["api"] for c in cells} == {"async"}, cells
    for cell in cells:
        assert cell["tested"]["trace"].endswith(".ainvoke.jsonl"), cell
        assert cell["finding"] == "conforms", cell
        reference = Path(cell["reference"]["trace"]).read_text(encoding="utf-8")
        assert ", async API)" in reference.splitlines()[0], cell


@pytest.mark.long
def test_a_correct_saver_has_no_saver_finding_through_either_api(tmp_path: Path) -> None:
    # every fourth kill point of the fault-free runs of both APIs (minutes: `make test-long`)
    document = _matrix(tmp_path, "correct_sqlite", "--no-kill-inside", "--kill-stride", "4")
    cells = document["details"]["cells"]
    assert {c["api"] for c in cells} == {"default", "async"}
    assert not [c for c in cells if c["finding"] in ("saver", "saver-error")], cells
    assert document["exit_code"] == 0
