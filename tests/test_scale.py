"""Sharding a batch (--max-heap, --jobs) changes how many TLC runs judge it, never a verdict."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ROOT, run_cli
from resumecheck.batch import events_per_run, parse_heap, shards


def test_heap_sizes_read_like_java() -> None:
    assert parse_heap("2g") == 2 << 30
    assert parse_heap("512M") == 512 << 20
    assert parse_heap("300000k") == 300000 << 10
    for bad in ("", "g", "2x", "-1g", "100m"):
        with pytest.raises(ValueError):
            parse_heap(bad)
    assert events_per_run(parse_heap("2g")) > events_per_run(parse_heap("1g")) > 100_000


def test_shards_stay_within_the_budget_and_cover_the_batch_in_order() -> None:
    sizes = [100, 5, 250, 40, 40, 999, 1, 1, 300]
    for budget in (1, 100, 300, 10_000):
        for parts in (1, 2, 3, 20):
            got = shards(sizes, budget, parts)
            assert [i for part in got for i in part] == list(range(len(sizes)))
            for part in got:
                held = sum(sizes[i] for i in part)
                assert held <= budget or len(part) == 1  # a longer trace alone
            if parts >= len(sizes):
                assert len(got) == len(sizes)
    for parts in (1, 2, 3, 7):
        assert len(shards([50] * 21, 10_000, parts)) == parts
    assert shards([100] * 10, 1000) == [range(10)]
    assert shards([100] * 10, 1000, 2) == [range(5), range(5, 10)]
    assert shards([], 100) == [range(0)]


def _verdicts(*options: str) -> dict[str, tuple[Any, ...]]:
    run = run_cli("--format", "json", "--no-progress", *options, "traces/core", cwd=ROOT)
    run.assert_no_traceback()
    assert run.returncode == 1, run
    fields = ("status", "matched", "event_index", "properties", "reason")
    return {t["path"]: tuple(str(t.get(f)) for f in fields) for t in run.json()["traces"]}


@pytest.mark.slow
def test_shards_and_jobs_give_the_verdicts_of_one_run() -> None:
    one = _verdicts()
    # 256m leaves room for ~43,000 events per run; --jobs 3 makes at least three shards.
    assert _verdicts("--jobs", "3", "--max-heap", "256m") == one
    assert _verdicts("--jobs", "2") == one


def test_a_bad_heap_is_a_usage_error() -> None:
    run = run_cli("--max-heap", "lots", "traces/core/ok-crash-resume.jsonl", cwd=ROOT)
    assert run.returncode == 2
    assert "--max-heap" in run.stderr
    run.assert_no_traceback()
