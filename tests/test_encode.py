"""trace/encode.py: the schema-driven TLA+ encoding of a validated trace (no TLC)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from resumecheck.trace.encode import (
    EncodeError,
    InternTables,
    SchemaDesignError,
    constructor_name,
    encode_trace,
    event_constructors,
    event_fields,
    tla_string,
)
from resumecheck.trace.schema import TraceSchema, load_schema

HEADER: dict[str, Any] = {
    "format": "resume-check/v1",
    "contract": "ResumeCore",
    "runtime": {"name": "example", "version": "0"},
    "scenario": "free text never reaches TLA+",
    "guarantees": {"durability": "async", "effects": "at-least-once"},
    "workflow": {"nodes": ["A", "B"], "edges": [["A", "B"]]},
}


@pytest.fixture(scope="module")
def schema() -> TraceSchema:
    loaded = load_schema("ResumeCore")
    assert loaded is not None
    return loaded


def header(**changes: Any) -> dict[str, Any]:
    h = copy.deepcopy(HEADER)
    h.update(changes)
    return h


def events_part(tla: str) -> str:
    return tla.split("events |-> ", 1)[1]


def test_header_encoding(schema: TraceSchema) -> None:
    encoded = encode_trace(schema, header(), [])
    assert encoded.tla == (
        '[header |-> [guarantees |-> [durability |-> "async", effects |-> "at-least-once"], '
        "workflow |-> [edges |-> {<<1, 2>>}, nodes |-> {1, 2}]],\n events |-> <<>>]"
    )
    assert encoded.ids.tables == {"node": {"A": 1, "B": 2}}


def test_missing_guarantees_get_the_schema_defaults(schema: TraceSchema) -> None:
    h = header()
    del h["guarantees"]
    assert encode_trace(schema, h, []).tla.startswith(
        '[header |-> [guarantees |-> [durability |-> "sync", effects |-> "exactly-once"], '
    )


def test_partial_guarantees_get_the_other_default(schema: TraceSchema) -> None:
    tla = encode_trace(schema, header(guarantees={"durability": "exit"}), []).tla
    assert '[guarantees |-> [durability |-> "exit", effects |-> "exactly-once"]' in tla
    tla = encode_trace(schema, header(guarantees={"effects": "at-least-once"}), []).tla
    assert '[guarantees |-> [durability |-> "sync", effects |-> "at-least-once"]' in tla


def test_ids_are_numbered_by_first_appearance(schema: TraceSchema) -> None:
    events = [
        {"ev": "load", "proc": "zeta", "checkpoint": None, "parent": None,
         "done": [], "ok": [], "values": []},
        {"ev": "step", "proc": "zeta", "checkpoint": "z-last-alphabetically", "parent": None,
         "done": []},
        {"ev": "step", "proc": "alpha", "checkpoint": "a-first-alphabetically",
         "parent": "z-last-alphabetically", "done": ["B"]},
        {"ev": "put", "proc": "alpha", "checkpoint": "z-last-alphabetically"},
    ]  # fmt: skip
    encoded = encode_trace(schema, header(), events)
    assert encoded.ids.tables == {
        "node": {"A": 1, "B": 2},
        "proc": {"zeta": 1, "alpha": 2},
        "checkpoint": {"z-last-alphabetically": 1, "a-first-alphabetically": 2},
    }
    assert events_part(encoded.tla) == (
        "<<TraceEvent_load(0, {}, {}, 0, 1, {}),\n"
        "  TraceEvent_step(1, {}, 0, 1),\n"
        "  TraceEvent_step(2, {2}, 1, 2),\n"
        "  TraceEvent_put(1, 2)>>]"
    )


def test_nodes_are_numbered_in_declaration_order(schema: TraceSchema) -> None:
    h = header(workflow={"nodes": ["Z", "M", "A"], "edges": [["A", "Z"], ["M", "Z"]]})
    encoded = encode_trace(schema, h, [{"ev": "task_start", "proc": "p", "node": "A"}])
    assert encoded.ids.tables["node"] == {"Z": 1, "M": 2, "A": 3}
    assert "edges |-> {<<3, 1>>, <<2, 1>>}" in encoded.tla
    assert "nodes |-> {1, 2, 3}" in encoded.tla
    assert events_part(encoded.tla) == "<<TraceEvent_task_start(3, 1)>>]"


def test_null_is_zero_and_defaults_fill_missing_fields(schema: TraceSchema) -> None:
    events = [
        {"ev": "put_writes", "proc": "w", "checkpoint": "c", "node": None, "kind": "resume",
         "index": 0, "value": "v"},
        {"ev": "put_writes", "proc": "w", "checkpoint": "c", "node": "A", "kind": "ok"},
        {"ev": "interrupt", "proc": "w", "node": "B", "index": 2, "value": None},
    ]  # fmt: skip
    encoded = encode_trace(schema, header(), events)
    # put_writes(checkpoint, index, kind, node, proc, value)
    assert events_part(encoded.tla) == (
        '<<TraceEvent_put_writes(1, 0, "resume", 0, 1, 1),\n'
        '  TraceEvent_put_writes(1, 0, "ok", 1, 1, 0),\n'
        "  TraceEvent_interrupt(2, 2, 1, 0)>>]"
    )
    assert encoded.ids.tables["value"] == {"v": 1}


def test_arrays_are_sets_and_edges_are_tuples(schema: TraceSchema) -> None:
    events = [
        {"ev": "load", "proc": "w", "checkpoint": "c0", "parent": None,
         "done": ["B", "A"], "ok": ["A"], "values": ["v2", "v1"]},
    ]  # fmt: skip
    tla = encode_trace(schema, header(), events).tla
    assert events_part(tla) == "<<TraceEvent_load(1, {2, 1}, {1}, 0, 1, {1, 2})>>]"
    assert "edges |-> {<<1, 2>>}" in tla


def test_skipped_fields_never_reach_tla(schema: TraceSchema) -> None:
    h = header(backend="sqlite", thread="t-1")
    events = [{"ev": "finish", "proc": "w", "seq": 7, "ts": 1.5}]
    tla = encode_trace(schema, h, events).tla
    for text in ("example", "free text", "sqlite", "t-1", "ResumeCore", "resume-check", "1.5"):
        assert text not in tla
    assert events_part(tla) == "<<TraceEvent_finish(1)>>]"


def test_integer_and_string_process_ids_stay_apart(schema: TraceSchema) -> None:
    events = [
        {"ev": "finish", "proc": 1},
        {"ev": "finish", "proc": "1"},
        {"ev": "finish", "proc": 1},
    ]
    encoded = encode_trace(schema, header(), events)
    assert events_part(encoded.tla) == (
        "<<TraceEvent_finish(1),\n  TraceEvent_finish(2),\n  TraceEvent_finish(1)>>]"
    )
    assert encoded.ids.count("proc") == 2
    assert encoded.ids.name("proc", 1) == 1
    assert encoded.ids.name("proc", 2) == "1"


def test_same_text_in_different_namespaces_numbers_independently(schema: TraceSchema) -> None:
    h = header(workflow={"nodes": ["x"], "edges": []})
    events = [
        {"ev": "step", "proc": "x", "checkpoint": "x", "parent": None, "done": ["x"]},
        {"ev": "effect", "proc": "x", "node": "x", "intent": "x"},
    ]
    encoded = encode_trace(schema, h, events)
    assert encoded.ids.tables == {
        "node": {"x": 1},
        "proc": {"x": 1},
        "checkpoint": {"x": 1},
        "intent": {"x": 1},
    }


def test_undeclared_node_in_an_event(schema: TraceSchema) -> None:
    with pytest.raises(EncodeError) as caught:
        encode_trace(schema, header(), [{"ev": "task_start", "proc": "w", "node": "C"}])
    assert str(caught.value) == "event 1.node: node 'C' was not declared in the header"


def test_undeclared_node_in_a_set(schema: TraceSchema) -> None:
    event = {"ev": "step", "proc": "w", "checkpoint": "c", "parent": None, "done": ["A", "Q"]}
    with pytest.raises(EncodeError) as caught:
        encode_trace(schema, header(), [event])
    assert str(caught.value) == "event 1.done[1]: node 'Q' was not declared in the header"


def test_undeclared_node_in_an_edge(schema: TraceSchema) -> None:
    h = header(workflow={"nodes": ["A"], "edges": [["A", "B"]]})
    with pytest.raises(EncodeError) as caught:
        encode_trace(schema, h, [])
    assert "node 'B' was not declared in the header" in str(caught.value)


def test_integer_out_of_tlc_range(schema: TraceSchema) -> None:
    """The schema bounds indices; the encoder refuses anything TLC cannot hold regardless."""
    from resumecheck.trace.encode import _Encoder

    encoder = _Encoder(schema, InternTables())
    assert encoder.value({"type": "integer"}, 2**31 - 1, "x") == str(2**31 - 1)
    with pytest.raises(EncodeError):
        encoder.value({"type": "integer"}, 2**31, "x")


def test_unconstrained_string_is_a_schema_design_error(schema: TraceSchema) -> None:
    from resumecheck.trace.encode import _Encoder

    encoder = _Encoder(schema, InternTables())
    with pytest.raises(SchemaDesignError):
        encoder.value({"type": "string"}, "anything", "x")


def test_tla_string_accepts_only_printable_ascii() -> None:
    assert tla_string("exactly-once") == '"exactly-once"'
    assert tla_string('a"b\\c') == '"a\\"b\\\\c"'
    for bad in ("line\nbreak", "tab\t", "ünï"):
        with pytest.raises(SchemaDesignError):
            tla_string(bad)


def test_constructor_names() -> None:
    assert constructor_name("put_writes") == "TraceEvent_put_writes"
    for bad in ("put-writes", "1put", "a b", ""):
        with pytest.raises(SchemaDesignError):
            constructor_name(bad)


def test_event_constructors_match_field_order(schema: TraceSchema) -> None:
    assert event_fields(schema, "put_writes") == [
        "checkpoint",
        "index",
        "kind",
        "node",
        "proc",
        "value",
    ]
    assert event_fields(schema, "finish") == ["proc"]
    lines = event_constructors(schema).splitlines()
    assert len(lines) == 12
    assert 'TraceEvent_put(a0, a1) == [checkpoint |-> a0, ev |-> "put", proc |-> a1]' in lines
    assert 'TraceEvent_finish(a0) == [ev |-> "finish", proc |-> a0]' in lines


def test_encoding_does_not_mutate_its_input(schema: TraceSchema) -> None:
    h = header()
    del h["guarantees"]
    events = [{"ev": "put_writes", "proc": "w", "checkpoint": "c", "node": "A", "kind": "ok"}]
    before = (copy.deepcopy(h), copy.deepcopy(events))
    encode_trace(schema, h, events)
    assert (h, events) == before


def test_schema_valid_integral_float_does_not_break_the_encoder(schema: TraceSchema) -> None:
    """JSON Schema counts 1.0 as an integer, so validation lets `"index": 1.0` through; the
    encoder must then encode it as 1 or refuse it as bad input (EncodeError), never treat it as
    a bug in the package's schema."""
    event = {"ev": "interrupt", "proc": "w", "node": "A", "index": 1.0, "value": None}
    assert schema.event_problem(event) is None
    try:
        tla = encode_trace(schema, header(), [event]).tla
    except EncodeError:
        return
    assert events_part(tla) == "<<TraceEvent_interrupt(1, 1, 1, 0)>>]"
