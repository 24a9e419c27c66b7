"""The fast reader of nested TLC values (`values._Nested`) against the grammar, the reference.

It reads what TLC prints for an accepted trace's summary and a witness's states, most of the
values a judge run reads that are not flat; the grammar (lark) stays the reference and the
only source of error messages. So: on every value TLC can print, both give the same Python
value, and on text the grammar refuses the fast reader gives up instead of guessing.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resumecheck.tlc import values
from resumecheck.tlc.values import FrozenDict, ModelValue, Value, format_value, parse_value

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
_atoms = st.one_of(
    st.integers(-(2**31), 2**31 - 1),
    st.text(st.characters(codec="ascii"), max_size=8),
    st.booleans(),
    _names.filter(lambda n: n not in ("TRUE", "FALSE")).map(ModelValue),
)


def _extend(inner: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
    return st.one_of(
        st.lists(inner, max_size=4).map(tuple),
        st.frozensets(inner, max_size=4),
        st.dictionaries(_names, inner, min_size=1, max_size=4).map(FrozenDict),
        st.dictionaries(_atoms, inner, min_size=2, max_size=3).map(FrozenDict),
    )


_values = st.recursive(_atoms, _extend, max_leaves=20)


def _fast(text: str) -> object:
    return values._Nested(text).value_of_all()


@settings(max_examples=400, deadline=None)
@given(_values)
def test_the_fast_reader_reads_what_the_grammar_reads(value: Value) -> None:
    text = format_value(value)
    reference = values._parser().parse(text)
    assert reference == value
    assert _fast(text) == reference
    assert parse_value(text) == reference


@pytest.mark.parametrize(
    "text",
    [
        "<< [a |-> 1],\n   [a |-> 2] >>",
        "[f |-> [g |-> <<1>>]]",
        "(a :> {-2, -1} @@ b :> {})",
        "({} :> 0 @@ {1} :> 1)",
        "<<1..3, -2..1, 3..1>>",
        '[end |-> "done", complete |-> TRUE, repeats |-> <<[because |-> 12, event |-> 20]>>]',
    ],
)
def test_nested_values_take_the_fast_road(text: str) -> None:
    assert _fast(text) is not values._NOT_READ
    assert _fast(text) == values._parser().parse(text)


@pytest.mark.parametrize(
    "bad",
    ["<<1,", "[a |-> ]", "[]", "()", "{1 2}", "<<1 >> >>", "[1 |-> 2]", "(1 :> 2 @@)", "1..x"],
)
def test_the_fast_reader_gives_up_where_the_grammar_refuses(bad: str) -> None:
    assert _fast(bad) is values._NOT_READ
    with pytest.raises(values.ValueSyntaxError):
        parse_value(bad)
