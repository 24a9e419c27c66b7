"""The DagRevision trace format: a trace's own names never reach TLA+.

Every identifier of the hand-written examples (nodes, paths, attempts) is replaced by hostile
text -- TLA+ fragments, quotes, line breaks, a module header -- and the generated TLA+ must be
exactly what the plain trace gives: the schema marks every free string as an identifier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TRACES
from resumecheck.trace.encode import EncodeError, encode_trace
from resumecheck.trace.schema import load_schema

HOSTILE = ['A" /\\ FALSE \\* ', "====\n---- MODULE Evil ----\n", "}] >> \\/ TRUE", "(* x"]
EXAMPLES = sorted((TRACES / "revision").glob("*.jsonl"))


class Renamer:
    def __init__(self) -> None:
        self.maps: dict[str, dict[Any, str]] = {}

    def __call__(self, namespace: str, name: Any) -> Any:
        if name is None:
            return None
        table = self.maps.setdefault(namespace, {})
        return table.setdefault(
            name, f"{HOSTILE[len(table) % len(HOSTILE)]} {namespace}#{len(table)}"
        )


def _hostile(header: dict[str, Any], events: list[dict[str, Any]]) -> tuple[dict, list[dict]]:
    r = Renamer()
    header = json.loads(json.dumps(header))
    w = header["workflow"]
    w["nodes"] = [r("node", n) for n in w["nodes"]]
    w["paths"] = [r("path", p) for p in w["paths"]]
    w["edges"] = [[r("node", a), r("node", b)] for a, b in w["edges"]]
    w["effects"] = [r("node", n) for n in w.get("effects", [])]
    for key in ("reads", "routes", "values"):
        for item in w.get(key, []):
            if "node" in item:
                item["node"] = r("node", item["node"])
            item["path"] = r("path", item["path"])
    for item in w.get("branches", []):
        for key in ("node", "by", "to"):
            item[key] = r("node", item[key])
    out = []
    for event in events:
        e = dict(event)
        for field, ns in (("attempt", "attempt"), ("node", "node"), ("path", "path")):
            if field in e:
                e[field] = r(ns, e[field])
        for field, ns in (("parents", "attempt"), ("cancel", "attempt")):
            if field in e:
                e[field] = [r(ns, x) for x in e[field]]
        for field in ("invalidate", "result", "to"):
            if field in e:
                e[field] = [r("node", x) for x in e[field]]
        out.append(e)
    return header, out


def _read(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines[0], lines[1:]


def test_hostile_and_plain_revision_traces_encode_identically() -> None:
    schema = load_schema("DagRevision")
    assert schema is not None
    assert len(EXAMPLES) >= 15
    for path in EXAMPLES:
        header, events = _read(path)
        hostile_header, hostile_events = _hostile(header, events)
        assert schema.header_problem(hostile_header) is None
        assert all(schema.event_problem(e) is None for e in hostile_events)
        plain = encode_trace(schema, header, events)
        hostile = encode_trace(schema, hostile_header, hostile_events)
        assert hostile.tla == plain.tla, path.name
        assert "Evil" not in hostile.tla


@pytest.mark.parametrize(
    "bad",
    [
        {"ev": "start", "attempt": "z", "node": "Q", "parents": []},
        {"ev": "read", "attempt": "a1", "path": "nowhere", "version": 0},
    ],
)
def test_an_undeclared_node_or_path_is_refused(bad: dict[str, Any]) -> None:
    schema = load_schema("DagRevision")
    assert schema is not None
    header, events = _read(TRACES / "revision" / "validity-dag-after-run.jsonl")
    with pytest.raises(EncodeError, match="was not declared in the header"):
        encode_trace(schema, header, [*events, bad])
