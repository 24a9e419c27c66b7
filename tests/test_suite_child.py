"""The one child harness (`rctools.suite.child.run_worker`): a worker started fresh or forked
from a preloaded server ends the same way -- SIGKILLed at the n-th time it reaches its kill
point and not a step later, returned with its result, an error with its stderr, timed out."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from rctools.suite.child import run_worker

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from rctools.suite.crash import KillPoints

    def main(job):
        spec = json.loads(Path(job).read_text())
        points = KillPoints()
        steps = Path(spec["steps"])
        for label in ("a", "b", "b", "c"):
            points.hit(label)
            with steps.open("a") as f:
                f.write(label + "\\n")
        if spec.get("fail"):
            print("it went wrong here", file=sys.stderr)
            return 4
        if spec.get("hang"):
            time.sleep(600)
        Path(spec["result"]).write_text(json.dumps({"steps": 4}))
        return 0

    if __name__ == "__main__":
        sys.exit(main(sys.argv[1]))
    """
)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A worker module on the children's path (named per test: a fork server per name)."""
    name = f"rc_child_worker_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(WORKER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return name


def _job(tmp_path: Path, **extra: object) -> Path:
    job = tmp_path / "job.json"
    spec = {"steps": str(tmp_path / "steps"), "result": str(tmp_path / "result.json"), **extra}
    job.write_text(json.dumps(spec), encoding="utf-8")
    return job


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_killed_at_the_nth_time_it_reaches_its_point_and_not_a_step_later(
    tmp_path: Path, module: str, forked: bool
) -> None:
    preload = (module,) if forked else ()
    job = _job(tmp_path)
    report = run_worker(module, job, proc="w1", role="run", kill_at="b#2", preload=preload)
    assert (report.exit, report.point, report.returncode) == ("killed", "b#2", -9)
    assert (tmp_path / "steps").read_text().split() == ["a", "b"]  # stopped before the 2nd b ran
    assert not (tmp_path / "result.json").exists()


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_returned_error_and_timeout_are_told_apart(
    tmp_path: Path, module: str, forked: bool
) -> None:
    preload = (module,) if forked else ()
    result = tmp_path / "result.json"
    done = run_worker(
        module, _job(tmp_path), proc="w1", role="run", result_file=result, preload=preload
    )
    assert (done.exit, done.result, done.point) == ("returned", {"steps": 4}, None)
    failed = run_worker(module, _job(tmp_path, fail=True), proc="w2", role="run", preload=preload)
    assert (failed.exit, failed.returncode) == ("error", 4)
    assert failed.error is not None and "it went wrong here" in failed.error
    hung = run_worker(
        module, _job(tmp_path, hang=True), proc="w3", role="run", timeout=0.5, preload=preload
    )
    assert (hung.exit, hung.error) == ("error", "timed out after 0.5 s")
