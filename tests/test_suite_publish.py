"""The one curator (`rctools.suite.publish`): the folder's traces replaced by those kept, and
their manifest entries written from the checker's verdicts, never by hand."""

from __future__ import annotations

import json
from pathlib import Path

from rctools.suite.publish import publish

OTHER = {"status": "conforms", "meaning": "another folder's", "judged_by": "resume-check"}


def test_a_suite_run_is_kept_with_its_verdicts_and_nothing_else(tmp_path: Path) -> None:
    run = tmp_path / "out" / "traces"
    run.mkdir(parents=True)
    cells, traces = [], []
    for name, verdict in [
        ("broke", {"status": "violates", "event_index": 7, "properties": ["EO", "CO"]}),
        ("fine", {"status": "conforms", "complete": True}),
        ("lost", {"status": "invalid"}),
    ]:
        trace = run / f"{name}.jsonl"
        trace.write_text(f'{{"cell": "{name}"}}\n', encoding="utf-8")
        cells.append({"cell": name, "what": f"{name} cell", "trace": str(trace), "verdict": "-"})
        traces.append({"path": str(trace), **verdict})
    summary = tmp_path / "out" / "summary.json"
    summary.write_text(json.dumps({"cells": cells, "traces": traces}), encoding="utf-8")
    corpora = tmp_path / "corpora"
    (corpora / "mine").mkdir(parents=True)
    (corpora / "mine" / "stale.jsonl").write_text("{}\n", encoding="utf-8")
    (corpora / "manifest.json").write_text(json.dumps({"other/x.jsonl": OTHER}), encoding="utf-8")

    assert publish(summary, corpora / "mine", []) == 2
    assert sorted(p.name for p in (corpora / "mine").iterdir()) == ["broke.jsonl", "fine.jsonl"]
    manifest = json.loads((corpora / "manifest.json").read_text(encoding="utf-8"))
    assert manifest == {
        "mine/broke.jsonl": {
            "status": "violates",
            "meaning": "broke cell",
            "judged_by": "resume-check",
            "event": 7,
            "properties": ["CO", "EO"],
        },
        "mine/fine.jsonl": {
            "status": "conforms",
            "meaning": "fine cell",
            "judged_by": "resume-check",
            "complete": True,
        },
        "other/x.jsonl": OTHER,
    }
    assert publish(summary, corpora / "mine", ["fine"]) == 1
    assert [p.name for p in (corpora / "mine").iterdir()] == ["fine.jsonl"]


def test_traces_of_one_name_in_two_folders_are_two_traces(tmp_path: Path) -> None:
    run = tmp_path / "out" / "traces"
    cells, traces = [], []
    for policy in ("admissible", "native"):
        trace = run / policy / "wf3.jsonl"
        trace.parent.mkdir(parents=True)
        trace.write_text(f'{{"policy": "{policy}"}}\n', encoding="utf-8")
        cells.append({"cell": f"{policy}/wf3", "what": policy, "trace": str(trace), "verdict": "-"})
        traces.append({"path": str(trace), "status": "conforms"})
    summary = tmp_path / "out" / "summary.json"
    summary.write_text(json.dumps({"cells": cells, "traces": traces}), encoding="utf-8")
    corpora = tmp_path / "corpora"
    (corpora / "recovery").mkdir(parents=True)
    (corpora / "manifest.json").write_text("{}", encoding="utf-8")

    assert publish(summary, corpora / "recovery", []) == 2
    kept = sorted((corpora / "recovery").glob("*.jsonl"))
    assert [p.name for p in kept] == ["admissible-wf3.jsonl", "native-wf3.jsonl"]
    assert kept[1].read_text(encoding="utf-8") == '{"policy": "native"}\n'
