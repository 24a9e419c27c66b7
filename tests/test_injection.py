"""Traces are untrusted: no identifier in a trace may change a verdict or reach the TLA+ text.

Every example trace is rewritten with hostile names (TLA+ syntax, module delimiters, newlines,
unicode, strings at the schema's maximum length) for every node, checkpoint, process, intent and
resume value; plain and hostile copies are judged in one TLC run and must get the same verdicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import CORE, SPEC, Run, by_name, read_trace_file, run_cli, write_trace_file
from resumecheck.batch import write_batch
from resumecheck.contract import find_contract
from resumecheck.trace.encode import encode_trace
from resumecheck.trace.schema import load_schema

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

MAX_ID = 200  # the schema's maxLength for every identifier

HOSTILE = [
    'A" /\\ FALSE \\* ',
    "====\n---- MODULE Evil ----\n",
    "}] >> \\/ TRUE",
    "(* unterminated comment",
    'line\nbreak\r\ttab "quoted"',
    "ünïcødé ✓ 日本語 \U0001f600",
    "TraceLog == <<>>",
    '\\" \\\\ \\n',
    "LET x == 1 IN x",
    "'; DROP TABLE traces; --",
]

# Which namespace each id field belongs to, at any depth (writes, answers, tasks, resumed).
ID_FIELDS = {
    "node": "node",
    "checkpoint": "checkpoint",
    "parent": "checkpoint",
    "asked": "checkpoint",
    "before": "checkpoint",
    "into": "checkpoint",
    "proc": "proc",
    "thread": "thread",
    "ns": "ns",
    "task": "task",
    "by": "task",
    "under": "task",
    "path": "path",
    "interrupt": "interrupt",
    "intent": "intent",
    "value": "value",
    "digest": "digest",
}
NESTED = ("writes", "answers", "tasks", "resumed")


class Renamer:
    """Maps each plain id to a distinct hostile one, per namespace, in first-seen order (so the
    numbering of first appearance, and with it checkpoint order, is unchanged)."""

    def __init__(self) -> None:
        self.maps: dict[str, dict[Any, str]] = {}

    def __call__(self, namespace: str, name: Any) -> Any:
        if name is None or (namespace == "ns" and name == ""):
            return name  # null, and the root namespace, which a trace may write or leave out
        table = self.maps.setdefault(namespace, {})
        if name not in table:
            i = len(table)
            text = f"{HOSTILE[i % len(HOSTILE)]} {namespace}#{i}"
            if i % 3 == 1:  # some ids exactly at the schema's maximum length
                text = (text + "\u00e9" * MAX_ID)[:MAX_ID]
            table[name] = text
        return table[name]

    def injected(self) -> list[str]:
        return [name for table in self.maps.values() for name in table.values()]


def _rename(item: dict[str, Any], renamer: Renamer) -> dict[str, Any]:
    item = dict(item)
    for field, namespace in ID_FIELDS.items():
        if field in item:
            item[field] = renamer(namespace, item[field])
    if item.get("ev") == "effect" and "kind" in item:
        item["kind"] = renamer("effectkind", item["kind"])
    for field in NESTED:
        if field in item:
            item[field] = [_rename(x, renamer) for x in item[field]]
    return item


def hostile_copy(
    header: dict[str, Any], events: list[dict[str, Any]], renamer: Renamer
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header = json.loads(json.dumps(header))
    if "graph" in header:
        header["graph"]["nodes"] = [renamer("node", n) for n in header["graph"]["nodes"]]
    for entry in header.get("guarantees", {}).get("effects", {}).get("kinds", []):
        entry["kind"] = renamer("effectkind", entry["kind"])
    return header, [_rename(event, renamer) for event in events]


EXAMPLES = sorted(CORE.glob("*.jsonl"))


@pytest.fixture(scope="module")
def judged_pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, list[str]]:
    """One run over plain/ and hostile/ copies of every example."""
    root = tmp_path_factory.mktemp("injection")
    (root / "plain").mkdir()
    (root / "hostile").mkdir()
    injected: list[str] = []
    for path in EXAMPLES:
        header, events = read_trace_file(path)
        write_trace_file(root / "plain" / path.name, header, events)
        renamer = Renamer()
        write_trace_file(root / "hostile" / path.name, *hostile_copy(header, events, renamer))
        injected += renamer.injected()
    run = run_cli("--format", "json", root / "plain", root / "hostile")
    run.assert_no_traceback()
    return run, injected


def _split(run: Run) -> tuple[dict[str, dict], dict[str, dict]]:
    traces = run.json()["traces"]
    plain = {Path(t["path"]).name: t for t in traces if Path(t["path"]).parent.name == "plain"}
    hostile = {Path(t["path"]).name: t for t in traces if Path(t["path"]).parent.name == "hostile"}
    return plain, hostile


def test_hostile_names_pass_the_schema(judged_pairs: tuple[Run, list[str]]) -> None:
    run, injected = judged_pairs
    assert max(len(name) for name in injected) == MAX_ID
    assert any("\n" in name for name in injected)
    assert run.json()["summary"]["invalid"] == 0
    assert run.json()["summary"]["error"] == 0


def test_every_hostile_copy_gets_the_plain_verdict(judged_pairs: tuple[Run, list[str]]) -> None:
    run, _ = judged_pairs
    plain, hostile = _split(run)
    assert sorted(plain) == sorted(hostile) == sorted(p.name for p in EXAMPLES)
    keys = ("status", "events", "matched", "event_index", "line", "properties")
    differ = {
        name: ({k: plain[name].get(k) for k in keys}, {k: hostile[name].get(k) for k in keys})
        for name in plain
        if any(plain[name].get(k) != hostile[name].get(k) for k in keys)
    }
    assert differ == {}


def test_hostile_linear_trace_conforms(judged_pairs: tuple[Run, list[str]]) -> None:
    _, hostile = _split(judged_pairs[0])
    verdict = hostile["ok-linear-sync.jsonl"]
    assert (verdict["status"], verdict["events"], verdict["matched"]) == ("conforms", 18, 18)


def test_hostile_violating_traces_violate_as_plain_ones(
    judged_pairs: tuple[Run, list[str]],
) -> None:
    _, hostile = _split(judged_pairs[0])
    got = {
        name: (hostile[name]["status"], hostile[name]["event_index"], hostile[name]["properties"])
        for name in (
            "pc-rd-rerun-under-other-node.jsonl",
            "pc-sync-runs-ahead.jsonl",
            "unmatched-put-of-unknown-checkpoint.jsonl",
        )
    }
    assert got == {
        "pc-rd-rerun-under-other-node.jsonl": ("violates", 10, ["PC", "RD"]),
        "pc-sync-runs-ahead.jsonl": ("violates", 10, ["PC"]),
        "unmatched-put-of-unknown-checkpoint.jsonl": ("violates", 5, []),
    }


def test_report_quotes_the_hostile_event_verbatim(judged_pairs: tuple[Run, list[str]]) -> None:
    run, _ = judged_pairs
    for verdict in run.json()["traces"]:
        if verdict["status"] != "violates":
            continue
        lines = Path(verdict["path"]).read_text(encoding="utf-8").splitlines()
        assert verdict["event"] == json.loads(lines[verdict["line"] - 1])


def test_id_one_past_the_maximum_length_is_invalid(tmp_path: Path) -> None:
    header, events = read_trace_file(CORE / "ok-linear-sync.jsonl")
    long = "n" * (MAX_ID + 1)
    header["graph"]["nodes"][0] = long
    path = write_trace_file(tmp_path / "long.jsonl", header, events)
    run = run_cli("--format", "json", path)
    run.assert_no_traceback()
    assert run.returncode == 2
    verdict = run.json()["traces"][0]
    assert verdict["status"] == "invalid"
    assert verdict["reason"].startswith("line 1 (header): graph/nodes/0: ")
    assert "is too long" in verdict["reason"]


# --- the generated TLA+ ----------------------------------------------------------------------

_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _schema_words(node: Any) -> set[str]:
    """Every string the schema itself allows as a value (enums, consts) and every event kind."""
    words: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("const"), str):
            words.add(node["const"])
        words |= {v for v in node.get("enum", []) if isinstance(v, str)}
        for value in node.values():
            words |= _schema_words(value)
    elif isinstance(node, list):
        for value in node:
            words |= _schema_words(value)
    return words


def test_generated_trace_data_holds_no_trace_text(tmp_path: Path) -> None:
    schema = load_schema("ResumeCore")
    assert schema is not None
    contract = find_contract("ResumeCore", [SPEC])
    encoded = []
    injected: list[str] = []
    for path in EXAMPLES:
        header, events = read_trace_file(path)
        renamer = Renamer()
        encoded.append(encode_trace(schema, *hostile_copy(header, events, renamer)))
        injected += renamer.injected()
    write_batch(tmp_path, contract, schema, encoded)
    text = (tmp_path / "TraceData.tla").read_text(encoding="utf-8")
    found = [name for name in injected if name in text]
    assert found == []
    # (FALSE alone is the schema's own boolean; the hostile name puts it after a conjunction.)
    for fragment in ("Evil", "/\\ FALSE", "DROP", "(*", "LET", "\n\r", "#"):
        assert fragment not in text
    assert text.isascii()
    # The only string literals are the schema's own words.
    literals = set(_STRING.findall(text))
    assert literals <= _schema_words(schema.document)
    assert literals >= {"load", "step", "put", "sync", "exactly-once"}
    # One module, one end.
    assert text.startswith("---- MODULE TraceData ----\n")
    assert text.count("MODULE") == 1
    assert [line for line in text.splitlines() if line.startswith("====")] == ["===="]
    assert text.endswith("====\n")


def test_hostile_and_plain_traces_encode_identically() -> None:
    """The encoding depends on the order ids first appear, never on their text."""
    schema = load_schema("ResumeCore")
    assert schema is not None
    for path in EXAMPLES:
        header, events = read_trace_file(path)
        plain = encode_trace(schema, header, events)
        hostile = encode_trace(schema, *hostile_copy(header, events, Renamer()))
        assert hostile.tla == plain.tla, path.name


def test_junit_stays_well_formed_with_unusual_unicode(tmp_path: Path) -> None:
    """U+FFFE and U+FFFF are valid JSON and UTF-8 but not XML characters: a violating event that
    names such a node must not make the JUnit report unparseable. One TLC run."""
    from xml.etree import ElementTree as ET

    header, events = read_trace_file(CORE / "pc-rd-rerun-under-other-node.jsonl")
    renamer = Renamer()
    renamer.maps["node"] = {"A": "A\ufffe", "B": "B\uffff"}
    path = write_trace_file(tmp_path / "fffe.jsonl", *hostile_copy(header, events, renamer))
    run = run_cli("--format", "junit", path)
    run.assert_no_traceback()
    assert run.returncode == 1
    root = ET.fromstring(run.stdout.encode("utf-8"))
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 1
    assert cases[0].find("failure").get("type") == "PC,RD"


def test_text_and_json_reports_name_the_trace_by_path(tmp_path: Path) -> None:
    """An odd but legal file name reaches the reports unchanged (no TLC: the trace is invalid)."""
    path = tmp_path / 'odd "name" ünï.jsonl'
    path.write_text("nope\n", encoding="utf-8")
    run = run_cli("--format", "json", path)
    run.assert_no_traceback()
    assert by_name(run.json())[path.name]["status"] == "invalid"
