"""What the tests of every runtime suite (`tests/test_runtime_*.py`) share: a module's cells
recorded once through the real command line, and the checks they make of a conforming cell and
of a step killed after its effect. One place, so that a conforming cell means the same in every
suite's tests (complete, not only unbroken) and no suite's copy drifts from the others.

Use it as `summary = runtime_cells.recorded("burr", CELLS, code=1, needs=("burr",))` at module
level: pytest finds the returned fixture under the name `summary` (the module is skipped where
a module it `needs` is not installed), and `test_... = runtime_cells.conforming(CELLS[:3])`
for the cells that must conform.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from rctools.suite import testing

# the four actions of every suite's linear workflow, each fired once
LINEAR_ONCE = {"reserve": 1, "charge": 1, "mail": 1, "ship": 1}


def recorded(suite: str, cells: Sequence[str], *, code: int, needs: Sequence[str]) -> Any:
    """A module fixture: `cells` of `suite` recorded once by `resume-check run` (exit `code`,
    checked with the summary by `testing.record`) and its summary.json, for the module's tests;
    the calling module is skipped where a module the runtime `needs` is not installed."""
    for module in needs:
        pytest.importorskip(module)

    @pytest.fixture(scope="module")
    def summary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
        return testing.record(suite, cells, tmp_path_factory.mktemp(suite), code=code)

    return summary


def conforming(cells: Sequence[str]) -> Callable[..., None]:
    """A test, one case a cell, that each of `cells` conforms (`assert_conforms`); bind it to a
    `test_...` name of the module that says why they must."""

    @pytest.mark.parametrize("name", cells)
    def test(summary: dict[str, Any], name: str) -> None:
        assert_conforms(summary, name)

    return test


def assert_conforms(summary: dict[str, Any], name: str) -> None:
    """Cell `name` conforms, and over its whole trace (a cut-short trace is not a conformance)."""
    row = testing.row(summary, name)
    assert row["status"] == "conforms" and row.get("complete") is True, row


def assert_killed_step_ran_again(summary: dict[str, Any], name: str, intent: str) -> None:
    """Cell `name` killed its first worker and a second one finished the linear workflow; the
    effect of `intent` fired twice, every other action once, and the harness logged one crash."""
    row = testing.row(summary, name)
    assert [w["exit"] for w in row["workers"]] == ["killed", "returned"], row
    assert row["notes"]["fired_per_intent"] == {**LINEAR_ONCE, intent: 2}, row
    assert testing.crashes(summary, name) == 1, row


def violation(
    summary: dict[str, Any], name: str, prop: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cell `name` violates exactly property `prop`: its row and the event the checker named."""
    row = testing.row(summary, name)
    assert row["status"] == "violates" and row["properties"] == [prop], row
    return row, testing.verdict(summary, name)["event"]
