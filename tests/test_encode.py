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
    "format": "resume-check/v2",
    "contract": "ResumeCore",
    "runtime": {"name": "example", "version": "0"},
    "scenario": "free text never reaches TLA+",
    "guarantees": {"durability": "async", "effects": {"default": "at-least-once"}},
    "graph": {"nodes": ["A", "B"], "edges": [["A", "B"]]},
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
        '[header |-> [guarantees |-> [durability |-> "async", effects |-> [default |-> '
        '"at-least-once", kinds |-> {}], fencing |-> "lease"]],\n events |-> <<>>]'
    )
    # The optional graph reaches TLA+ only as the closed numbering of its nodes.
    assert encoded.ids.tables == {"node": {"A": 1, "B": 2}}
    assert encoded.ids.closed == {"node"}


def test_missing_guarantees_get_the_schema_defaults(schema: TraceSchema) -> None:
    h = header()
    del h["guarantees"]
    assert encode_trace(schema, h, []).tla.startswith(
        '[header |-> [guarantees |-> [durability |-> "sync", effects |-> [default |-> '
        '"exactly-once", kinds |-> {}], fencing |-> "lease"]]'
    )


def test_effect_levels_per_kind_are_a_set_of_records(schema: TraceSchema) -> None:
    h = header(guarantees={"effects": {"kinds": [{"kind": "payment", "level": "exactly-once"}]}})
    encoded = encode_trace(schema, h, [])
    assert 'kinds |-> {[kind |-> 1, level |-> "exactly-once"]}' in encoded.tla
    assert encoded.ids.tables["effectkind"] == {"payment": 1}


def test_without_a_graph_any_node_is_accepted(schema: TraceSchema) -> None:
    h = header()
    del h["graph"]
    event = {"ev": "task_start", "proc": "p", "thread": "t", "task": "k", "node": "Q", "path": "Q"}
    encoded = encode_trace(schema, h, [event])
    assert encoded.ids.tables["node"] == {"Q": 1}


def test_ids_are_numbered_by_first_appearance(schema: TraceSchema) -> None:
    events = [
        {"ev": "load", "proc": "zeta", "thread": "t", "checkpoint": None, "parent": None,
         "writes": [], "answers": []},
        {"ev": "step", "proc": "zeta", "thread": "t", "checkpoint": "z-last", "parent": None},
        {"ev": "step", "proc": "alpha", "thread": "t", "checkpoint": "a-first", "parent": "z-last"},
        {"ev": "put", "proc": "alpha", "checkpoint": "z-last"},
    ]  # fmt: skip
    encoded = encode_trace(schema, header(), events)
    assert encoded.ids.tables["proc"] == {"zeta": 1, "alpha": 2}
    assert encoded.ids.tables["checkpoint"] == {"z-last": 1, "a-first": 2}
    # load(answers, asked, before, checkpoint, digest, into, nested, parent, proc, refused,
    # thread, under, writes); step(checkpoint, digest, parent, proc, thread)
    assert events_part(encoded.tla) == (
        "<<TraceEvent_load({}, 0, 0, 0, 0, 0, FALSE, 0, 1, FALSE, 1, 0, {}),\n"
        "  TraceEvent_step(1, 0, 0, 1, 1),\n"
        "  TraceEvent_step(2, 0, 1, 2, 1),\n"
        "  TraceEvent_put(1, 0, 2)>>]"
    )


def test_a_thread_is_scoped_by_its_namespace(schema: TraceSchema) -> None:
    """The same thread id in two namespaces is two chains; the default namespace is ""."""
    base = {"ev": "step", "proc": "w", "parent": None}
    events = [
        {**base, "checkpoint": "c1", "thread": "t1"},
        {**base, "checkpoint": "c2", "thread": "t1", "ns": ""},
        {**base, "checkpoint": "c3", "thread": "t1", "ns": "sub:1"},
        {**base, "checkpoint": "c4", "thread": "t2", "ns": "sub:1"},
    ]
    encoded = encode_trace(schema, header(), events)
    assert encoded.ids.count("chain") == 3
    assert [encoded.ids.name("chain", n) for n in (1, 2, 3)] == ["t1", "t1 ns=sub:1", "t2 ns=sub:1"]


def test_a_delete_names_the_chain_of_its_thread_and_namespace(schema: TraceSchema) -> None:
    """LangGraph deletes every namespace of a thread: one `delete` per chain, each reaching
    TLA+ as the chain its thread and namespace name elsewhere in the trace (not the thread)."""
    step = {"ev": "step", "proc": "w", "parent": None}
    events = [
        {**step, "checkpoint": "c1", "thread": "t1"},
        {**step, "checkpoint": "c2", "thread": "t1", "ns": "sub:1"},
        {"ev": "delete", "proc": "app", "thread": "t1", "ns": "sub:1"},
        {"ev": "delete", "proc": "app", "thread": "t1"},
    ]
    encoded = encode_trace(schema, header(), events)
    assert encoded.ids.count("chain") == 2
    assert "TraceEvent_delete(2, 2)" in encoded.tla
    assert "TraceEvent_delete(2, 1)" in encoded.tla


def test_nodes_are_numbered_in_declaration_order(schema: TraceSchema) -> None:
    h = header(graph={"nodes": ["Z", "M", "A"]})
    event = {"ev": "task_start", "proc": "p", "thread": "t", "task": "k", "node": "A", "path": "A"}
    encoded = encode_trace(schema, h, [event])
    assert encoded.ids.tables["node"] == {"Z": 1, "M": 2, "A": 3}
    # task_start(by, node, path, proc, task, thread): by null is 0
    assert events_part(encoded.tla) == "<<TraceEvent_task_start(0, 3, 1, 1, 1, 1)>>]"


def test_null_is_zero_and_defaults_fill_missing_fields(schema: TraceSchema) -> None:
    events = [
        {"ev": "put_writes", "proc": "w", "thread": "t", "checkpoint": "c", "task": None,
         "kind": "resume"},
        {"ev": "task_end", "proc": "w", "thread": "t", "task": "k", "outcome": "ok"},
        {"ev": "effect", "proc": "w", "thread": "t", "task": "k", "intent": "mail"},
    ]  # fmt: skip
    encoded = encode_trace(schema, header(), events)
    assert events_part(encoded.tla) == (
        '<<TraceEvent_put_writes(1, 0, 0, "resume", 1, 0, 1),\n'
        '  TraceEvent_task_end(0, 0, "ok", 1, {}, 1, 1),\n'
        '  TraceEvent_effect(1, 0, 1, "fired", 1, 1)>>]'
    )


def test_arrays_are_sets_of_records(schema: TraceSchema) -> None:
    events = [
        {"ev": "load", "proc": "w", "thread": "t", "checkpoint": "c0", "parent": None,
         "writes": [{"task": "k2", "kind": "ok"}, {"task": "k1", "kind": "interrupt",
                                                   "interrupt": "i"}],
         "answers": [{"interrupt": "i", "value": "v"}]},
    ]  # fmt: skip
    tla = encode_trace(schema, header(), events).tla
    assert events_part(tla) == (
        "<<TraceEvent_load({[interrupt |-> 1, value |-> 1]}, 0, 0, 1, 0, 0, FALSE, 0, 1, FALSE, "
        "1, 0, "
        '{[digest |-> 0, interrupt |-> 0, kind |-> "ok", task |-> 1], '
        '[digest |-> 0, interrupt |-> 1, kind |-> "interrupt", task |-> 2]})>>]'
    )


def test_skipped_fields_never_reach_tla(schema: TraceSchema) -> None:
    h = header(backend="sqlite", thread="t-1")
    events = [{"ev": "finish", "proc": "w", "outcome": "done", "seq": 7, "ts": 1.5}]
    tla = encode_trace(schema, h, events).tla
    for text in ("example", "free text", "sqlite", "t-1", "ResumeCore", "resume-check", "1.5"):
        assert text not in tla
    assert events_part(tla) == '<<TraceEvent_finish("done", 1)>>]'


def test_integer_and_string_process_ids_stay_apart(schema: TraceSchema) -> None:
    events = [{"ev": "crash", "proc": 1}, {"ev": "crash", "proc": "1"}, {"ev": "crash", "proc": 1}]
    encoded = encode_trace(schema, header(), events)
    assert events_part(encoded.tla) == (
        "<<TraceEvent_crash(1),\n  TraceEvent_crash(2),\n  TraceEvent_crash(1)>>]"
    )
    assert encoded.ids.count("proc") == 2
    assert encoded.ids.name("proc", 1) == 1
    assert encoded.ids.name("proc", 2) == "1"


def test_same_text_in_different_namespaces_numbers_independently(schema: TraceSchema) -> None:
    h = header(graph={"nodes": ["x"]})
    events = [
        {"ev": "step", "proc": "x", "thread": "x", "checkpoint": "x", "parent": None},
        {"ev": "effect", "proc": "x", "thread": "x", "task": "x", "intent": "x", "kind": "x"},
    ]
    encoded = encode_trace(schema, h, events)
    assert encoded.ids.tables == {
        "node": {"x": 1},
        "proc": {"x": 1},
        "chain": encoded.ids.tables["chain"],
        "checkpoint": {"x": 1},
        "task": {"x": 1},
        "intent": {"x": 1},
        "effectkind": {"x": 1},
    }
    assert encoded.ids.count("chain") == 1


def test_undeclared_node_in_an_event(schema: TraceSchema) -> None:
    event = {"ev": "task_start", "proc": "w", "thread": "t", "task": "k", "node": "C", "path": "C"}
    with pytest.raises(EncodeError) as caught:
        encode_trace(schema, header(), [event])
    assert str(caught.value) == "event 1.node: node 'C' was not declared in the header"


def test_undeclared_node_in_a_schedule(schema: TraceSchema) -> None:
    event = {"ev": "schedule", "proc": "w", "thread": "t", "checkpoint": "c",
             "tasks": [{"task": "k1", "node": "A", "path": "A"},
                       {"task": "k2", "node": "Q", "path": "Q"}]}  # fmt: skip
    with pytest.raises(EncodeError) as caught:
        encode_trace(schema, header(), [event])
    assert "node 'Q' was not declared in the header" in str(caught.value)


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
        "digest",
        "interrupt",
        "kind",
        "proc",
        "task",
        "thread",
    ]
    assert event_fields(schema, "crash") == ["proc"]
    lines = event_constructors(schema).splitlines()
    assert len(lines) == 16
    assert (
        'TraceEvent_put(a0, a1, a2) == [checkpoint |-> a0, digest |-> a1, ev |-> "put", '
        "proc |-> a2]" in lines
    )
    assert 'TraceEvent_crash(a0) == [ev |-> "crash", proc |-> a0]' in lines
    assert 'TraceEvent_delete(a0, a1) == [ev |-> "delete", proc |-> a0, thread |-> a1]' in lines


def test_encoding_does_not_mutate_its_input(schema: TraceSchema) -> None:
    h = header()
    del h["guarantees"]
    events = [{"ev": "put_writes", "proc": "w", "thread": "t", "checkpoint": "c", "task": "k",
               "kind": "ok"}]  # fmt: skip
    before = (copy.deepcopy(h), copy.deepcopy(events))
    encode_trace(schema, h, events)
    assert (h, events) == before
