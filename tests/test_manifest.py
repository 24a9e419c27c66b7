"""Every committed trace gets exactly the verdict its manifest records for it: the
hand-written examples of traces/ (a manifest per area) and the recorded cells of corpora/ (one
manifest at its root), checked against the manifests' JSON Schema as they are read.

Both folders are judged in one `resume-check --format json traces/ corpora/` run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPORA, ROOT, TRACES, Run, by_name, manifests, run_cli

pytestmark = pytest.mark.corpus

EXPECTED: dict[str, dict[str, Any]] = manifests()
TRACE_SUFFIXES = (".jsonl", ".ndjson")


@pytest.fixture(scope="module")
def judged() -> Run:
    run = run_cli("--format", "json", "--no-progress", "traces/", "corpora/", cwd=ROOT)
    run.assert_no_traceback()
    return run


@pytest.fixture(scope="module")
def verdicts(judged: Run) -> dict[str, dict[str, Any]]:
    """Verdicts keyed like `manifests()`: the path relative to the repository."""
    document = judged.json()
    return {Path(t["path"]).as_posix(): t for t in document["traces"]}


def _trace_files_on_disk() -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for folder in (TRACES, CORPORA)
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in TRACE_SUFFIXES
    }


def test_exit_code_is_1_because_some_examples_violate(judged: Run) -> None:
    assert judged.returncode == 1, judged
    assert judged.json()["exit_code"] == 1
    assert judged.stderr == ""


def test_every_trace_file_has_a_manifest_entry_and_vice_versa() -> None:
    on_disk = _trace_files_on_disk()
    assert on_disk, "no example traces found"
    assert sorted(on_disk - EXPECTED.keys()) == [], "trace files without a manifest entry"
    assert sorted(EXPECTED.keys() - on_disk) == [], "manifest entries without a trace file"


def test_every_manifest_entry_is_judged_exactly_once(judged: Run) -> None:
    paths = [Path(t["path"]).as_posix() for t in judged.json()["traces"]]
    assert len(paths) == len(set(paths))
    assert sorted(paths) == sorted(EXPECTED)


def test_manifest_event_indices_lie_within_their_traces() -> None:
    """Pure data check, no TLC: a violation's event index counts events (header excluded), so it
    is between 1 and the number of events in the file."""
    out_of_range = {}
    for name, entry in EXPECTED.items():
        if entry["status"] != "violates":
            continue
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        events = len([line for line in lines[1:] if line.strip()])
        if not 1 <= entry["event"] <= events:
            out_of_range[name] = (entry["event"], events)
    assert out_of_range == {}, "manifest event index > number of events (event, events)"


def test_summary_counts_match_the_manifest(judged: Run) -> None:
    statuses = [entry["status"] for entry in EXPECTED.values()]
    assert judged.json()["summary"] == {
        "conforms": statuses.count("conforms"),
        "violates": statuses.count("violates"),
        "invalid": 0,
        "error": 0,
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_matches_manifest(name: str, verdicts: dict[str, dict[str, Any]]) -> None:
    expected = EXPECTED[name]
    got = verdicts[name]
    assert got["status"] == expected["status"]
    header = json.loads((ROOT / name).read_text(encoding="utf-8").splitlines()[0])
    assert got["contract"] == header["contract"]
    events = len((ROOT / name).read_text(encoding="utf-8").splitlines()) - 1
    assert got["events"] == events
    if expected["status"] == "conforms":
        assert got["matched"] == events
        assert "event_index" not in got
        assert "properties" not in got
        if "complete" in expected:
            assert got["complete"] is expected["complete"]
    else:
        assert (got["event_index"], set(got["properties"])) == (
            expected["event"],
            set(expected["properties"]),
        )
        assert got["matched"] == expected["event"] - 1
        assert got["line"] == expected["event"] + 1  # the header is line 1
        raw = (ROOT / name).read_text(encoding="utf-8").splitlines()[got["line"] - 1]
        assert got["event"] == json.loads(raw)


def test_folder_of_conformant_examples_exits_0(tmp_path: Path) -> None:
    conformant = sorted(
        n for n, e in EXPECTED.items() if e["status"] == "conforms" and n.startswith("traces/core/")
    )
    assert len(conformant) >= 2
    for name in conformant:
        shutil.copy(ROOT / name, tmp_path / Path(name).name)
    run = run_cli("--format", "json", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 0, run
    document = run.json()
    assert document["exit_code"] == 0
    assert {name: v["status"] for name, v in by_name(document).items()} == {
        Path(n).name: "conforms" for n in conformant
    }
    assert document["summary"] == {
        "conforms": len(conformant),
        "violates": 0,
        "invalid": 0,
        "error": 0,
    }
