"""`resumecheck.tracemanifest`: one format for every manifest of expected verdicts, a root
manifest that curators update folder by folder, and a clear error for a damaged one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPORA, TRACES
from resumecheck import tracemanifest
from resumecheck.errors import UsageError

OK = {"status": "conforms", "judged_by": "resume-check"}
BAD = {"status": "violates", "event": 3, "properties": ["CO"], "judged_by": "resume-check"}


def _corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpora"
    for folder in ("a", "b", "b/findings"):
        (root / folder).mkdir(parents=True)
    (root / "manifest.json").write_text(
        json.dumps({"$schema": "x.json", "a/one.jsonl": OK, "b/two.jsonl": BAD}) + "\n",
        encoding="utf-8",
    )
    return root


def test_a_folder_is_listed_by_the_nearest_manifest_above_it(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    assert tracemanifest.owner(root / "b" / "findings") == root / "manifest.json"
    assert tracemanifest.folder_entries(root / "b") == {"two.jsonl": BAD}
    alone = tmp_path / "elsewhere"
    assert tracemanifest.owner(alone) == alone / "manifest.json"


def test_publishing_a_folder_replaces_its_entries_and_keeps_the_others(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "b" / "findings" / "manifest.json").unlink(missing_ok=True)
    written = tracemanifest.replace_folder(root / "b" / "findings", {"three.jsonl": OK})
    assert written == root / "manifest.json"
    tracemanifest.replace_folder(root / "b", {"four.jsonl": OK})
    document = json.loads(written.read_text(encoding="utf-8"))
    assert document == {
        "$schema": "x.json",
        "a/one.jsonl": OK,
        "b/findings/three.jsonl": OK,
        "b/four.jsonl": OK,
    }
    assert list(document) == sorted(document)  # stable diffs


@pytest.mark.parametrize(
    "entry, where",
    [
        ({"status": "maybe"}, "x.jsonl/status"),
        ({"status": "violates", "properties": ["CO"]}, "x.jsonl"),  # no event
        ({"status": "conforms", "event": 4}, "x.jsonl"),  # an event on a conforming trace
        ({"status": "conforms", "note": "?"}, "x.jsonl"),  # a field nobody reads
    ],
)
def test_a_damaged_manifest_is_a_usage_error_naming_the_entry(
    tmp_path: Path, entry: dict[str, object], where: str
) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"x.jsonl": entry}), encoding="utf-8")
    with pytest.raises(UsageError, match=rf"manifest.json: {where}: "):
        tracemanifest.load(tmp_path / "manifest.json")


def test_a_trace_listed_twice_is_refused(tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    (root / "b" / "manifest.json").write_text(json.dumps({"two.jsonl": OK}), encoding="utf-8")
    with pytest.raises(UsageError, match="listed by another manifest"):
        tracemanifest.expected(root)


def test_the_committed_manifests_follow_the_schema() -> None:
    """Hand-written areas keep one each; corpora/ exactly one, at its root."""
    assert [p.relative_to(CORPORA).as_posix() for p in CORPORA.rglob("manifest.json")] == [
        "manifest.json"
    ]
    found = tracemanifest.expected(TRACES, CORPORA)
    assert len(found) > 500
    assert all(path.is_file() for path in found)
