"""bench/revision_app_bench.py on the fan-out app: what its fan-out rows and their prose say,
on two points of the run (inside the planner's model call, and the joiner ended, not yet
committed) rather than the bench's twelve. The figures are the bench's own: the model calls
summed over those points, the Send tasks before and after, and why validity saves nothing over
suffix, read from the nodes each re-ran."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from resumecheck.verdict import Status

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import revision_app_bench as bench  # noqa: E402  (bench/ is not a package)

GROWS, STYLE = bench.FANOUT.revisions[0], bench.FANOUT.revisions[3]
APP = dataclasses.replace(bench.FANOUT, revisions=(GROWS, STYLE))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[bench.Probed, list[bench.Measured]]:
    every = bench._probe(APP)
    points = [every.points[0], next(p for p in every.points if p.label == every.last)]
    probed = dataclasses.replace(every, points=points)
    runs = bench._measure(tmp_path_factory.mktemp("bench"), [APP], {APP.name: probed})
    bench._judge(runs)
    return probed, runs


def test_the_fan_out_rows_count_what_the_runs_did(
    measured: tuple[bench.Probed, list[bench.Measured]],
) -> None:
    probed, runs = measured
    assert [p.label for p in probed.points] == ["call-1", "commit-write"]
    assert all(m.status is Status.CONFORMS for m in runs if m.policy != "stale")
    assert bench._shape(APP, GROWS, probed) == ("1 of 5", "2 → 3")
    assert bench._shape(APP, STYLE, probed) == ("5 of 5", "2")
    rows = bench._rows(APP, GROWS, runs, probed)
    assert rows[1].startswith("| fanout | request: the topic list grows | 1 of 5 | 2 → 3 |")
    assert rows[1].endswith("| 9.0 | 9.0 | 9.0 | 4.0 | +0.0 % | +0.0 % | 52 / 52 / 52 | 1 of 1 |")


def test_the_prose_says_why_validity_saves_nothing_over_suffix(
    measured: tuple[bench.Probed, list[bench.Measured]],
) -> None:
    probed, runs = measured
    grows, style = bench._why(APP, runs, probed)
    assert "15 / 15 / 15 model calls validity / suffix / full over the 2 points" in grows
    assert "the same nodes at 2 of 2 points (at 2 of them validity re-ran any" in grows
    assert "starting with plan" in grows and "costs a full restart" in grows
    assert "9 / 9 / 13 model calls" in style
    assert "starting with write" in style and "the last node, alone in its superstep" in style
