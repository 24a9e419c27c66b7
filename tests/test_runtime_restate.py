"""`resume-check run restate` on a few cells: a real restate-server (installed from the npm
registry into .services/restate on first use), a real service process, real SIGKILL, real TLC.

A SIGKILL of the service inside a `ctx.run` body re-runs that body once
after Restate's retry (at-least-once, as it documents) and nothing journaled; a SIGKILL of
restate-server itself loses nothing it journaled; a second resolve of the same promise is
refused (409), so the double click CO forbids never reaches the workflow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import runtime_cells
from rctools.suite import testing

if shutil.which("npm") is None:
    pytest.skip("restate-server is installed with npm", allow_module_level=True)

pytestmark = pytest.mark.slow

# three cells keep the file under a minute of wall time (most of it Restate's retry backoff
# and TLC); `resume-check run restate` records all 47
CELLS = (
    "linear-kill-charge-effect",
    "linear-server-kill-charge-recorded",
    "approval-double-answer",
)

summary = runtime_cells.recorded("restate", CELLS, code=0, needs=("restate", "hypercorn"))


def test_every_cell_is_recorded_and_conforms(summary: dict) -> None:
    assert [c["cell"] for c in summary["cells"]] == list(CELLS)
    assert summary["runtime"]["name"] == "restate"
    assert summary["declared"]["effects_default"] == "at-least-once"
    for row in summary["cells"]:
        assert row["status"] == "conforms" and row.get("complete") is True, row


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root")
def test_the_run_reached_loopback_only(summary: dict) -> None:
    # restate-server's own call to GitHub at start must not leave the machine (rctools.netns)
    assert summary["figures"]["network"] == "private (loopback only)"


def test_the_killed_body_ran_again_and_only_it(summary: dict) -> None:
    runtime_cells.assert_killed_step_ran_again(summary, "linear-kill-charge-effect", "charge")


def test_a_server_kill_loses_nothing_journaled(summary: dict) -> None:
    row = testing.row(summary, "linear-server-kill-charge-recorded")
    assert row["notes"]["server_kills"] == 1
    assert row["notes"]["fired_per_intent"] == runtime_cells.LINEAR_ONCE
    # the attempt the dead server drove crashed; the retry ran on the same service process
    assert testing.crashes(summary, row["cell"]) == 1
    assert '"proc": "w1.2"' in Path(row["trace"]).read_text(encoding="utf-8")


def test_a_second_resolve_is_refused(summary: dict) -> None:
    row = testing.row(summary, "approval-double-answer")
    assert [a["status"] for a in row["notes"]["answers"]] == [200, 409]
    assert row["notes"]["fired_per_intent"] == {"quote": 1, "book": 1}


def test_the_same_run_breaks_eo_if_effects_were_declared_exactly_once(
    summary: dict, tmp_path: Path
) -> None:
    """The conforming verdict rests on the declared level: the very trace of the killed body,
    declared exactly-once, violates EO at the second firing of charge."""
    lines = (
        Path(testing.row(summary, "linear-kill-charge-effect")["trace"]).read_text().splitlines()
    )
    head = json.loads(lines[0])
    head["guarantees"]["effects"]["default"] = "exactly-once"
    strict = tmp_path / "strict.jsonl"
    strict.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    done = subprocess.run(
        [str(testing.cli()), "--format", "json", str(strict)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    (verdict,) = json.loads(done.stdout)["traces"]
    assert verdict["properties"] == ["EO"], verdict
    assert verdict["event"]["ev"] == "effect" and verdict["event"]["proc"] == "w2", verdict
