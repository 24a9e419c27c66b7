"""The HTML report's checkpoint picture: built from a trace's own events, escaped, and drawn
only where the events name checkpoints."""

from __future__ import annotations

from resumecheck.checkpointgraph import _layout, checkpoint_graph, checkpoints_of

FORK = [
    {"ev": "step", "proc": "w1", "thread": "t1", "checkpoint": "c0", "parent": None},
    {
        "ev": "schedule",
        "proc": "w1",
        "thread": "t1",
        "checkpoint": "c0",
        "tasks": [{"task": "k1", "node": "A", "path": "A"}],
    },
    {"ev": "step", "proc": "w1", "thread": "t1", "checkpoint": "c1", "parent": "c0"},
    {"ev": "schedule", "proc": "w1", "thread": "t1", "checkpoint": "c1", "tasks": []},
    {"ev": "fork", "proc": "w2", "thread": "t1", "checkpoint": "f1", "parent": "c0"},
    {"ev": "put", "proc": "w2", "checkpoint": "f1", "digest": "d"},
]


def test_a_fork_opens_a_row_of_its_own_and_the_bad_events_checkpoint_is_red() -> None:
    made = checkpoints_of(FORK)
    assert _layout(made) == 2
    assert [(c.name, c.parent, c.row) for c in made.values()] == [
        ("c0", None, 0),
        ("c1", "c0", 0),
        ("f1", "c0", 1),
    ]
    svg = checkpoint_graph(FORK, 6, ["A", "B"])
    made = checkpoints_of(FORK)
    assert made["c0"].scheduled == ["A"] and made["c1"].scheduled == []
    assert made["f1"].scheduled is None
    assert svg.count("<rect") == 3 and svg.count("marker-end") == 2
    assert 'stroke="#b00020" stroke-width="3"' in svg  # f1, the bad put's checkpoint
    assert "workflow's nodes: A, B" in svg


def test_text_from_the_trace_is_escaped() -> None:
    hostile = [dict(FORK[0], checkpoint="<script>x</script>")]
    svg = checkpoint_graph(hostile, 1, ["<img src=x>"])
    assert "<script>" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg  # in the tooltip, whole and escaped


def test_no_checkpoints_no_picture() -> None:
    events = [{"ev": "turn_start", "turn": 1}, {"ev": "command", "turn": 1, "cmd": "ls"}]
    assert checkpoint_graph(events, 2, []) == ""
