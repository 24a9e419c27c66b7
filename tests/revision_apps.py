"""What the tests of `run revision --app` on a user's graph (tests/test_revision_app*.py) share:
one run of an app with an input revised at a point under a policy, and the whole matrix of an
app (every revised input, policy and point) recorded once and judged in one batch. One place,
so that a cell of one app's matrix means the same as a cell of another's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rctools.langgraph.app import load_factory
from rctools.revision.app import APP_POLICIES, AppOutcome, AppRevisionRun, Point, points_of
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status, Verdict

# (revised input, policy, point label) -> the run and its verdict
Judged = dict[tuple[str, str, str], tuple[AppOutcome, Verdict]]


class RevisedApp:
    """`app` (`FILE:FACTORY`) run on `inputs`, the input `path` revised to `new[path]`."""

    def __init__(self, app: str, inputs: Mapping[str, str], new: Mapping[str, str]) -> None:
        self.app, self.inputs, self.new = app, dict(inputs), dict(new)

    def run(self, folder: Path, path: str, point: Point, policy: str, **patch: Any) -> AppOutcome:
        """One run, its trace and database in `folder` named by the cell; `patch` replaces
        attributes of the run (a planner made blind, say) before it starts."""
        name = f"{path}-{policy}-{point.label}"
        run = AppRevisionRun(
            load_factory(self.app), self.inputs, path, self.new[path], point, policy,
            folder / f"{name}.db",
        )  # fmt: skip
        for attr, value in patch.items():
            setattr(run, attr, value)
        return run.run(folder / f"{name}.jsonl")

    def judged(self, folder: Path, paths: Iterable[str]) -> Judged:
        """Every cell of the matrix: each input of `paths` revised at every point of the
        fault-free run under every policy, judged together."""
        points = points_of(load_factory(self.app), self.inputs)
        runs = {
            (path, policy, point.label): self.run(folder, path, point, policy)
            for path in paths
            for policy in APP_POLICIES
            for point in points
        }
        found = verdicts([r.trace for r in runs.values()])
        return {k: (r, found[r.trace.name]) for k, r in runs.items()}


def run_revised(
    folder: Path,
    app: str,
    inputs: Mapping[str, Any],
    path: str,
    new: str,
    point: Point,
    policy: str,
    **options: Any,
) -> AppOutcome:
    """One run of `app` (`FILE:FACTORY`) on `inputs`, the input `path` revised to `new` at
    `point` and recovered by `policy`; its trace and database in `folder`, named by the cell
    (the new value's length tells two revisions of one input apart). `options` go to
    `AppRevisionRun` (a loop bound, say)."""
    name = f"{path}-{len(new)}-{policy}-{point.label}"
    run = AppRevisionRun(
        load_factory(app), dict(inputs), path, new, point, policy, folder / f"{name}.db",
        **options,
    )  # fmt: skip
    return run.run(folder / f"{name}.jsonl")


def verdicts(traces: list[Path]) -> dict[str, Verdict]:
    """The traces' verdicts by file name (one TLC batch)."""
    return {v.path.name: v for v in judge(traces, spec_paths=default_spec_paths())}


def events(trace: Path) -> list[dict[str, Any]]:
    """A trace's events (its header left out)."""
    return [json.loads(line) for line in trace.read_text().splitlines()[1:]]


def edited(
    trace: Path, out: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> Path:
    """A copy of `trace` at `out` with its events passed through `edit`: a hand-made wrong
    runtime, one event away from a recorded one."""
    lines = trace.read_text().splitlines()
    header, found = lines[0], [json.loads(line) for line in lines[1:]]
    out.write_text("\n".join([header, *(json.dumps(e) for e in edit(found))]) + "\n")
    return out


def recovered(runs: Mapping[str, AppOutcome]) -> dict[str, list[dict[str, Any]]]:
    """Every policy's run judged in one batch: `stale` must be rejected and every recovering
    policy conform; the recovering runs' events, by policy, for what each test asserts next."""
    found = verdicts([r.trace for r in runs.values()])
    recovering = {}
    for policy, run in runs.items():
        verdict = found[run.trace.name]
        if policy == "stale":
            assert verdict.status is Status.VIOLATES
            continue
        assert verdict.status is Status.CONFORMS, (policy, verdict.reason)
        recovering[policy] = events(run.trace)
    return recovering
