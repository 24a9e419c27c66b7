"""A trace on which TLC cannot evaluate the contract gets `error`; the rest of its batch is still
judged. (Each trace of a failed batch is re-run alone to find which one broke the evaluation.)

The fault is planted in a copy of the contract: the fork action fails with Assert.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORE, by_name, patched_spec, run_cli

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

FORK_LINE = '    \\/ e.ev = "fork" /\\ Fork('


def test_evaluation_error_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    spec = patched_spec(
        tmp_path,
        "TraceResumeCore.tla",
        FORK_LINE,
        '    \\/ e.ev = "fork" /\\ Assert(FALSE, "planted") /\\ Fork(',
    )
    run = run_cli(
        "--format",
        "json",
        "--spec-path",
        spec,
        CORE / "ok-fork-refires-on-new-branch.jsonl",
        CORE / "ok-loop-reruns-node.jsonl",
    )
    run.assert_no_traceback()
    assert run.returncode == 3, run  # TLC could not judge one trace: not the trace's fault
    verdicts = by_name(run.json())
    assert verdicts["ok-loop-reruns-node.jsonl"]["status"] == "conforms"
    broken = verdicts["ok-fork-refires-on-new-branch.jsonl"]
    assert broken["status"] == "error"
    assert "planted" in broken["reason"]
