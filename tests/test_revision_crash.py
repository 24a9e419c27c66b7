"""Recovery interrupted by a real crash: the runtime process is killed with SIGKILL right after
the revision arrives or inside the recovery's first model call, and a new process restarts
from what was durable. The recovering policies must still conform; `stale` must not. One TLC
run for all traces."""

from __future__ import annotations

from pathlib import Path

import pytest
from rctools.revision.crash import crash_points, record_crash
from rctools.revision.workloads import WORKLOADS
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

pytestmark = pytest.mark.slow

CASES = [
    (w, p, c)
    for w in ("diamond", "route")
    for p in ("full", "suffix", "validity", "stale")
    for c in crash_points(p)
]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], Verdict]:
    out = tmp_path_factory.mktemp("crash")
    traces = {case: record_crash(WORKLOADS[case[0]], case[1], case[2], out) for case in CASES}
    judged = judge(list(traces.values()), spec_paths=default_spec_paths())
    by_path = {v.path.resolve(): v for v in judged}
    return {case: by_path[Path(path).resolve()] for case, path in traces.items()}


def test_every_trace_records_the_crash_and_the_restart(
    verdicts: dict[tuple[str, str, str], Verdict],
) -> None:
    for verdict in verdicts.values():
        text = verdict.path.read_text(encoding="utf-8")
        assert text.count('"ev": "crash"') == 1 and text.count('"ev": "restart"') == 1


@pytest.mark.parametrize("case", [c for c in CASES if c[1] != "stale"], ids="-".join)
def test_recovering_policies_conform_across_a_crash(
    verdicts: dict[tuple[str, str, str], Verdict], case: tuple[str, str, str]
) -> None:
    verdict = verdicts[case]
    assert verdict.status is Status.CONFORMS, (verdict.reason, verdict.properties)


def test_stale_is_caught_across_a_crash(verdicts: dict[tuple[str, str, str], Verdict]) -> None:
    for case in [c for c in CASES if c[1] == "stale"]:
        assert "OracleEquivalence" in verdicts[case].properties, case
