"""The saver-call coverage of `run langgraph` (rctools.langgraph.coverage), in this process:
each call's shape as the recording saver counts it, a cell's tally carried to the matrix's
`details.coverage`, the shapes never reached, the text report's table. The slow matrix test
(test_langgraph_matrix.py) checks a real run's counts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
from conftest import ROOT
from langgraph.checkpoint.memory import InMemorySaver
from rctools.langgraph.coverage import (
    EXPECTED,
    Shape,
    add,
    coverage,
    list_shape,
    load_shape,
    put_shape,
    render,
    writes_shape,
)
from rctools.langgraph.driver import CellRun
from rctools.langgraph.matrix import Cell, CellKey, Matrix, Side, to_json
from rctools.langgraph.record import Recording
from rctools.langgraph.report import render_text
from rctools.langgraph.scenarios import _chain
from rctools.suite.child import start_forked
from rctools.suite.crash import kill_message, tell_and_stop

ROOT_CONF = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
SUB_CONF = {"configurable": {"thread_id": "t1", "checkpoint_ns": "S:1", "checkpoint_id": "c2"}}


def _tup(checkpoint_id: str) -> Any:
    return SimpleNamespace(config={"configurable": {"checkpoint_id": checkpoint_id}})


def test_each_call_has_its_argument_shape_and_a_load_what_it_got() -> None:
    assert (
        load_shape("get_tuple", ROOT_CONF, None, True).key == "get_tuple load latest root -> none"
    )
    assert load_shape("aget_tuple", SUB_CONF, _tup("c2"), False).key == (
        "aget_tuple read pinned subgraph -> found"
    )
    # a pinned load answered with another checkpoint is told apart
    assert load_shape("get_tuple", SUB_CONF, _tup("c9"), True).got == "another"
    given = {"before": ROOT_CONF, "limit": 1, "filter": None}
    assert list_shape("list", SUB_CONF, given, []).key == "list load subgraph before limit -> none"
    assert list_shape("alist", None, {"filter": {"source": "loop"}}, None).key == (
        "alist history all-threads filter"
    )
    assert put_shape("put", ROOT_CONF, {"source": "update"}).key == "put root update"
    writes = [("__interrupt__", 1), ("x", 2), ("__resume__", 3)]
    assert writes_shape("aput_writes", SUB_CONF, writes).key == (
        "aput_writes subgraph __interrupt__ __resume__"
    )
    shape = Shape.parse("aget_tuple load pinned root -> found")
    assert (shape.base, shape.api, shape.args, shape.got) == (
        "get_tuple",
        "async",
        ("load", "pinned", "root"),
        "found",
    )
    assert Shape.parse(shape.key) == shape


def test_the_recording_saver_counts_a_real_runs_calls(tmp_path: Path) -> None:
    """A chain run on InMemorySaver, its history listed and its thread deleted through the
    recorded app: every call the wrapper saw, by shape."""
    os.environ.pop("RESUME_CHECK_WORLD", None)
    recording = Recording(tmp_path / "trace.jsonl", "w1")
    recording.header(_chain(), backend="memory", scenario="chain", thread="t1")
    app = recording.attach(_chain(), InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    recording.invoke(app, {"log": []}, config)
    assert len(list(app.get_state_history(config, limit=2))) == 2
    app.checkpointer.delete_thread("t1")
    recording.close()
    calls = recording.calls.to_json()
    assert calls["get_tuple load latest root -> none"] == 1
    assert calls["put root input"] == 1 and calls["put root loop"] == 4  # __start__, A, B, C
    assert calls["put_writes root values"] == 4
    assert calls["list history root limit"] == 1 and calls["delete_thread"] == 1


def test_a_kill_message_longer_than_a_pipe_holds_comes_back_whole() -> None:
    """A killed worker's saver calls travel in its kill message (it sends no report), which
    can outgrow a read and the pipe's buffer: the harness reads it to its newline."""
    calls = {f"k{i}": i for i in range(20000)}

    def work(kill_fd: int) -> None:
        tell_and_stop(kill_fd, kill_message("put entry#1", {"saver_calls": calls}))

    ended = start_forked(work, proc="w1", role="run").wait()
    assert (ended.exit, ended.point) == ("killed", "put entry#1")
    assert ended.told is not None and ended.told["saver_calls"] == calls


def _side(trace: Path, *tallies: dict[str, int]) -> Side:
    run = CellRun(trace)
    for tally in tallies:  # a cell's processes, summed as the driver does
        add(run.saver_calls, tally)
    return Side(run)


WORKER = {"get_tuple load latest root -> none": 1, "put root loop": 2, "put_writes root values": 2}
KILLED = {"get_tuple load latest root -> found": 1, "put root loop": 1}
ASYNC = {"aget_tuple load latest root -> none": 1, "aput root loop": 3}


def _matrix(tmp_path: Path) -> Matrix:
    trace = tmp_path / "t.jsonl"
    clean = Cell(CellKey("chain", "none", "sync"), _side(trace, WORKER), _side(trace, WORKER))
    killed = Cell(
        CellKey("chain", "kill:put entry#1", "sync"),
        _side(trace, KILLED, WORKER),
        _side(trace, ASYNC),
    )
    return Matrix("mine", [clean, killed])


def test_the_cells_calls_are_summed_per_saver_with_what_was_never_reached(
    tmp_path: Path,
) -> None:
    details = to_json(_matrix(tmp_path))
    schema = json.loads((ROOT / "docs" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(details, {"$ref": "#/$defs/langgraph", "$defs": schema["$defs"]})
    assert details["cells"][1]["tested"]["saver_calls"]["put root loop"] == 3
    tested = details["coverage"]["tested"]
    assert (tested["saver"], tested["cells"]) == ("mine", 2)
    rows = {(r["method"], tuple(r["args"]), r["got"]): r for r in tested["calls"]}
    put = rows["put", ("root", "loop"), None]
    assert (put["calls"], put["cells"]) == (5, 2)
    never = {n["shape"] for n in tested["never"]}
    assert {"list(before=)", "delete_thread", "the async API (aget_tuple, aput...)"} <= never
    assert "get_tuple(latest) -> none" not in never
    reference = details["coverage"]["reference"]
    assert "the async API (aget_tuple, aput...)" not in {n["shape"] for n in reference["never"]}


def test_the_table_has_a_row_per_shape_and_says_what_was_never_called(tmp_path: Path) -> None:
    text = render_text(_matrix(tmp_path), tmp_path)
    table = text[text.index("Saver calls:") :]
    assert "tested mine (sync)" in table and "reference sqlite (sync / async)" in table
    # one row per shape whichever API called it: the reference's sync / async counts
    rows = [line.split() for line in table.splitlines()]
    assert ["put", "root", "loop", "5", "(2)", "2", "(1)", "/", "3", "(1)"] in rows, table
    assert "list(before=): never called -- only time travel past a subgraph" in table
    assert "Never called on reference sqlite (sync / async): as on the tested saver" in table


def test_a_saver_that_reaches_every_expected_shape_has_none_left() -> None:
    everything = [
        {
            " ".join((e.method or "put", *e.args)) + (f" -> {e.got}" if e.got else ""): 1
            for e in EXPECTED
            if e.api != "async"
        },
        {"aput root loop": 1},
    ]
    found = coverage("all", everything)
    assert found.never == () and found.calls("put") >= 2
    assert render(found)[-1] == "Never called on tested all (sync / async): nothing expected"
