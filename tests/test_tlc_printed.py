"""`resumecheck.tlc.printed`: the one decoder of the tuples the trace-validation modules print."""

from __future__ import annotations

from resumecheck.tlc.printed import Accepted, Broken, Expected, Progress, decode, records, tag
from resumecheck.tlc.values import FrozenDict


def test_each_tuple_of_trace_validation_is_a_record() -> None:
    assert decode('<<"rc-progress", 3, 17>>') == Progress(3, 17)
    assert decode('<<"rc-violation", 1, 4, {"CV", "PC"}>>') == Broken(
        1, 4, frozenset({"CV", "PC"}), tolerated=False
    )
    assert decode('<<"rc-tolerated", 2, 5, {"CV"}>>') == Broken(
        2, 5, frozenset({"CV"}), tolerated=True
    )
    assert decode('<<"rc-accepted", 1, [runs |-> 2, seen |-> {}]>>') == Accepted(
        1, {"runs": 2, "seen": []}
    )
    assert decode('<<"rc-expected", 4, {[ev |-> "put"]}>>') == Expected(
        4, frozenset({FrozenDict({"ev": "put"})})
    )


def test_a_value_tlc_printed_over_several_lines_is_read() -> None:
    line = '<< "rc-accepted",\n   3,\n   [ end |-> "done",\n     complete |-> TRUE ] >>'
    assert decode(line) == Accepted(3, {"end": "done", "complete": True})


def test_the_tag_is_read_from_the_first_line_of_a_value_alone() -> None:
    assert tag('<< "rc-accepted",') == "rc-accepted"
    assert tag('<<"rc-progress", 3, 17>>') == "rc-progress"
    assert tag("<<1, 2>>") is None


def test_progress_read_by_the_grammar_when_it_is_not_printed_as_usual() -> None:
    # the fast path is a regular expression of TLC's usual spacing; anything else is parsed
    assert decode('<<"rc-progress",3,17>>') == Progress(3, 17)


def test_other_lines_are_none() -> None:
    assert decode("Parsing file /tmp/x/TraceBatch.tla") is None
    assert decode('<<"rc-unknown", 1>>') is None
    assert decode('<<"rc-progress", 1>>') is None  # the wrong arity is not a record
    assert decode('<<"not-ours", 1, 2>>') is None
    lines = ["a spec author's Print", '<<"rc-progress", 1, 2>>', '<<"rc-accepted", 1, [a |-> 1]>>']
    assert records(lines) == [Progress(1, 2), Accepted(1, {"a": 1})]
