"""What a backend's committed corpus keeps (`rctools.langgraph.publish.curate`): the reference
keeps its curated corpus; another backend only its saver findings (a violating verdict other
than the reference's on the same cell) and one fault-free cell per scenario. Pure data, no TLC:
the verdicts are the committed ones, which tests/test_manifest.py re-judges."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPORA, ROOT
from rctools.langgraph.publish import curate, main, reference_verdicts, trace_name
from rctools.langgraph.recurate import committed_cells
from rctools.langgraph.tables import load, recount
from resumecheck import tracemanifest

LANGGRAPH = CORPORA / "langgraph"
REFERENCE_SUMMARY = LANGGRAPH / "sqlite" / "summary.json"
CORPORA = sorted(p.parent for p in LANGGRAPH.glob("*/MATRIX.md"))
# a row of docs/backends.md's matrix table: | `backend` | API driven | ... | kept |
THIRD_PARTY_ROW = re.compile(r"^\| `([a-z-]+)` \| (?:sync|async) \|.* \| (\d+) \|$", re.M)


def cell(
    scenario: str, fault: str, durability: str, status: str = "conforms", *props: str
) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "fault": fault,
        "durability": durability,
        "tested": {
            "trace": f"/run/traces/x/{scenario}.{fault}.{durability}.jsonl",
            "status": status,
            "properties": list(props),
            "killed_at": None if fault == "none" else "w1: put entry",
        },
    }


def names(cells: list[dict[str, Any]]) -> list[str]:
    return [trace_name(c) for c in cells]


def test_another_backend_keeps_its_saver_findings_and_one_fault_free_cell_per_scenario() -> None:
    cells = [
        cell("chain", "none", "async"),
        cell("chain", "none", "sync"),
        cell("chain", "kill@1", "sync"),
        cell("chain", "kill@2", "sync", "violates", "CO"),  # the reference conforms: kept
        cell("chain", "kill@3", "sync", "violates", "PC"),  # the reference's verdict: dropped
        cell("chain", "kill@4", "sync"),  # the reference violates, this conforms: dropped
        cell("chain", "kill@9", "sync", "violates", "EO"),  # no such reference cell: kept
        cell("fork", "none", "exit", "violates", "FD"),
        cell("fork", "none", "async", "violates", "PC"),  # no sync cell: async is the example
    ]
    reference = {
        "chain.kill@2.sync.jsonl": ("conforms", ()),
        "chain.kill@3.sync.jsonl": ("violates", ("PC",)),
        "chain.kill@4.sync.jsonl": ("violates", ("CO",)),
        "fork.none.async.jsonl": ("violates", ("PC",)),
        "fork.none.exit.jsonl": ("violates", ("FD",)),
    }
    assert names(curate(cells, reference)) == [
        "chain.none.sync.jsonl",
        "chain.kill@2.sync.jsonl",
        "chain.kill@9.sync.jsonl",
        "fork.none.async.jsonl",
    ]


def test_a_cells_own_reference_side_and_the_matrixs_saver_finding_win() -> None:
    same = cell("chain", "kill@2", "sync", "violates", "CO")
    same["reference"] = {"status": "violates", "properties": ["CO"]}
    state = cell("chain", "kill@3", "sync")  # a runner check (STATE) the matrix attributed
    state["finding"] = "saver"
    clean = cell("chain", "none", "sync")
    summary_says = {"chain.kill@2.sync.jsonl": ("conforms", ())}
    assert names(curate([clean, same, state], summary_says)) == [
        "chain.none.sync.jsonl",
        "chain.kill@3.sync.jsonl",
    ]


def test_the_reference_keeps_its_violations_fault_free_cells_and_a_kill() -> None:
    cells = [
        cell("chain", "none", "sync"),
        cell("chain", "none", "exit"),
        cell("chain", "kill@2", "sync"),
        cell("chain", "kill@1", "sync"),
        cell("chain", "kill@3", "sync", "violates", "CO"),
    ]
    assert names(curate(cells)) == [
        "chain.none.sync.jsonl",
        "chain.none.exit.jsonl",
        "chain.kill@1.sync.jsonl",
        "chain.kill@3.sync.jsonl",
    ]


@pytest.mark.parametrize("folder", CORPORA, ids=lambda p: p.name)
def test_each_committed_corpus_is_what_the_rule_keeps(folder: Path) -> None:
    """`python -m rctools.langgraph.recurate` would change nothing: the committed traces are
    the rule's, from the folder's summary.json or, without one, from its manifest."""
    reference = None if folder.name == "sqlite" else reference_verdicts(load(REFERENCE_SUMMARY))
    manifest = tracemanifest.folder_entries(folder)
    assert sorted(names(curate(committed_cells(folder), reference))) == sorted(manifest)
    table = (folder / "MATRIX.md").read_text(encoding="utf-8")
    assert recount(table, len(manifest)) == table


def test_the_third_party_table_counts_the_kept_traces() -> None:
    """docs/backends.md's `kept` column (those backends have no committed summary.json to
    generate it from) says how many traces each folder keeps."""
    text = (ROOT / "docs" / "backends.md").read_text(encoding="utf-8")
    rows = THIRD_PARTY_ROW.findall(text)
    assert len(rows) == 6
    for backend, kept in rows:
        assert int(kept) == len(tracemanifest.folder_entries(LANGGRAPH / backend)), backend


def test_another_backend_without_a_reference_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.json"
    document = {"details": {"backend": "postgres", "cells": [cell("chain", "none", "sync")]}}
    summary.write_text(json.dumps(document), encoding="utf-8")
    folder = tmp_path / "postgres"
    assert main([str(summary), str(folder), "--reference", str(tmp_path / "none.json")]) == 2
    assert "recorded without the reference" in capsys.readouterr().err
    assert not folder.exists()
