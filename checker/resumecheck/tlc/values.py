"""Turn the TLA+ values TLC prints into Python values, and back.

TLC talks to us only in text: ``PrintT`` lines and the states of an error trace. Everything
downstream wants to compare and hash those values, so each TLA+ kind maps to an immutable,
hashable Python type:

========================  ====================================================
TLC prints                Python
========================  ====================================================
``12``, ``-3``            ``int``
``"a\\"b"``               ``str`` (escapes undone)
``TRUE`` / ``FALSE``      ``bool``
``p1`` (model value)      :class:`ModelValue`
``<<1, "a">>``            ``tuple`` (TLC prints any function on ``1..n`` so)
``{1, 2}``                ``frozenset``
``1..3``                  ``frozenset({1, 2, 3})``
``[a |-> 1]``             :class:`FrozenDict` with ``str`` keys
``(1 :> "a" @@ 5 :> "b")``  :class:`FrozenDict` with parsed keys
========================  ====================================================

Caveat inherited from Python: ``True == 1`` and they hash alike, so a set holding both ``TRUE``
and ``1`` collapses. TLC itself refuses to compare booleans with integers, so such sets do not
occur in a well-typed spec.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeAlias, TypeVar, cast

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError

from resumecheck.errors import TLCError

__all__ = [
    "FrozenDict",
    "ModelValue",
    "Value",
    "ValueSyntaxError",
    "format_value",
    "parse_state",
    "parse_value",
]

K = TypeVar("K")
V = TypeVar("V")


class ValueSyntaxError(TLCError, ValueError):
    """TLC printed something that is not a value we understand.

    A :class:`TLCError` because it means TLC's output surprised us (the CLI reports it like any
    other TLC failure); a ``ValueError`` so plain Python callers can catch it idiomatically.
    """


@dataclass(frozen=True, slots=True)
class ModelValue:
    """A TLC model value: an opaque constant equal only to itself.

    Kept distinct from ``str`` because ``p1`` and ``"p1"`` are different TLA+ values and a
    witness shown to a person must keep the difference.
    """

    name: str

    def __str__(self) -> str:
        return self.name


class FrozenDict(Mapping[K, V]):
    """An immutable, hashable mapping: TLA+ records and functions as Python values.

    ``dict`` would do for reading, but TLA+ functions can be set members and function keys, and
    results are compared wholesale, so they must hash. The hash is computed once, lazily.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._data: dict[K, V] = dict(data)
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"


Value: TypeAlias = (
    int | str | bool | ModelValue | tuple["Value", ...] | frozenset["Value"] | FrozenDict[Any, Any]
)
"""Any value TLC can print (see the module docstring for the mapping)."""


# --- strings -------------------------------------------------------------------------------

_UNESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}
_ESCAPES = {v: "\\" + k for k, v in _UNESCAPES.items()}
_ESCAPE_RE = re.compile(r"\\(.)", re.DOTALL)
_NEEDS_ESCAPE_RE = re.compile(r'["\\\n\t\r\f]')


def _unquote(literal: str) -> str:
    """Undo TLC's string escapes; an unknown ``\\x`` stands for ``x`` as in TLA+."""
    body = literal[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE_RE.sub(lambda m: _UNESCAPES.get(m.group(1), m.group(1)), body)


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], text) + '"'


# --- the full parser -----------------------------------------------------------------------


@v_args(inline=True)
class _ToPython(Transformer[Token, Value]):
    """Builds Python values while LALR parses (no tree is ever materialised)."""

    def start(self, value: Value) -> Value:
        return value

    def integer(self, token: Token) -> int:
        return int(token)

    def interval(self, low: Token, high: Token) -> frozenset[Value]:
        return frozenset(range(int(low), int(high) + 1))

    def string(self, token: Token) -> str:
        return _unquote(str(token))

    def true(self) -> bool:
        return True

    def false(self) -> bool:
        return False

    def model_value(self, token: Token) -> ModelValue:
        return ModelValue(str(token))

    def sequence(self, *items: Value) -> tuple[Value, ...]:
        return items

    def set(self, *items: Value) -> frozenset[Value]:
        return frozenset(items)

    def field(self, name: Token, value: Value) -> tuple[str, Value]:
        return str(name), value

    def pair(self, key: Value, value: Value) -> tuple[Value, Value]:
        return key, value

    def record(self, *fields: tuple[str, Value]) -> FrozenDict[str, Value]:
        return FrozenDict(fields)

    def function(self, *pairs: tuple[Value, Value]) -> FrozenDict[Value, Value]:
        return FrozenDict(pairs)


@functools.cache
def _parser() -> Lark:
    """Build the LALR parser once per process: grammar analysis costs milliseconds, parses µs."""
    grammar = resources.files("resumecheck.tlc").joinpath("tla_values.lark").read_text("utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        transformer=_ToPython(),
        maybe_placeholders=False,
    )


# --- fast paths ----------------------------------------------------------------------------
# Trace output is mostly PrintT lines of atoms (ints, strings, booleans, model values) and flat
# tuples, sets or records of atoms. Lark costs ~4 µs per token; these regexes read such lines
# about ten times faster. Anything nested falls through to the grammar, which stays the
# reference: the tests check that both paths agree.

_ATOM = r'(?:-?[0-9]+|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*)'
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FLAT_TUPLE_RE = re.compile(rf"<<\s*(?:{_ATOM}(?:\s*,\s*{_ATOM})*)?\s*>>")
_FLAT_SET_RE = re.compile(rf"\{{\s*(?:{_ATOM}(?:\s*,\s*{_ATOM})*)?\s*\}}")
_FIELD = rf"{_NAME}\s*\|->\s*{_ATOM}"
_FLAT_RECORD_RE = re.compile(rf"\[\s*{_FIELD}(?:\s*,\s*{_FIELD})*\s*\]")
_ATOM_RE = re.compile(_ATOM)
_FIELD_RE = re.compile(rf"({_NAME})\s*\|->\s*({_ATOM})")


def _atom(token: str) -> Value:
    first = token[0]
    if first == '"':
        return _unquote(token)
    if first == "-" or first.isdigit():
        return int(token)
    if token == "TRUE":
        return True
    if token == "FALSE":
        return False
    return ModelValue(token)


# Nested values (an accepted trace's summary, a witness's state): one token pattern and a
# recursive descent, about five times faster than the grammar. It reads exactly the grammar's
# language or gives up (`_NOT_READ`), and then the grammar decides, with its error message.
_TOKEN_RE = re.compile(
    r'\s*(?:(-?[0-9]+)|("(?:[^"\\]|\\.)*")|([A-Za-z_][A-Za-z0-9_]*)|(<<|>>|\|->|:>|@@|\.\.|[{}\[\](),]))'
)
_NOT_READ = object()
_CLOSING = {"<<": ">>", "{": "}", "[": "]", "(": ")"}


class _GiveUp(Exception):
    """The text is not a value the fast reader knows: the grammar reads it."""


class _Nested:
    def __init__(self, text: str) -> None:
        self._tokens: list[tuple[str, str]] = []
        at = 0
        match = _TOKEN_RE.match
        while at < len(text):
            found = match(text, at)
            if found is None:
                if text[at:].isspace():
                    break
                self._tokens = []
                self._bad = True
                return
            number, string, name, mark = found.groups()
            if number is not None:
                self._tokens.append(("int", number))
            elif string is not None:
                self._tokens.append(("str", string))
            elif name is not None:
                self._tokens.append(("name", name))
            else:
                self._tokens.append((mark, mark))
            at = found.end()
        self._bad = not self._tokens
        self._at = 0

    def value_of_all(self) -> object:
        if self._bad:
            return _NOT_READ
        try:
            value = self._value()
        except (_GiveUp, IndexError):
            return _NOT_READ
        return value if self._at == len(self._tokens) else _NOT_READ

    def _next(self) -> tuple[str, str]:
        token = self._tokens[self._at]
        self._at += 1
        return token

    def _expect(self, kind: str) -> None:
        if self._next()[0] != kind:
            raise _GiveUp

    def _value(self) -> Value:
        kind, text = self._next()
        if kind == "int":
            if self._at < len(self._tokens) and self._tokens[self._at][0] == "..":
                self._at += 1
                high_kind, high = self._next()
                if high_kind != "int":
                    raise _GiveUp
                return frozenset(range(int(text), int(high) + 1))
            return int(text)
        if kind == "str":
            return _unquote(text)
        if kind == "name":
            return True if text == "TRUE" else False if text == "FALSE" else ModelValue(text)
        if kind in ("<<", "{"):
            items = self._items(_CLOSING[kind], ",", self._value)
            return tuple(items) if kind == "<<" else frozenset(items)
        if kind == "[":
            return FrozenDict(self._items("]", ",", self._field, empty=False))
        if kind == "(":
            return FrozenDict(self._items(")", "@@", self._pair, empty=False))
        raise _GiveUp

    def _items(self, closing: str, separator: str, item: Any, *, empty: bool = True) -> list[Any]:
        if self._tokens[self._at][0] == closing:
            if not empty:
                raise _GiveUp
            self._at += 1
            return []
        items = [item()]
        while True:
            kind = self._next()[0]
            if kind == closing:
                return items
            if kind != separator:
                raise _GiveUp
            items.append(item())

    def _field(self) -> tuple[str, Value]:
        kind, name = self._next()
        if kind != "name":
            raise _GiveUp
        self._expect("|->")
        return name, self._value()

    def _pair(self) -> tuple[Value, Value]:
        key = self._value()
        self._expect(":>")
        return key, self._value()


def parse_value(text: str) -> Value:
    """Parse one value as TLC prints it (whitespace and line breaks anywhere are fine).

    Raises :class:`ValueSyntaxError` for text that is not a printed value, e.g. ``Nat`` or a
    lazily printed set like ``SUBSET S`` that TLC could not enumerate.
    """
    text = text.strip()
    if _ATOM_RE.fullmatch(text):
        return _atom(text)
    if _FLAT_TUPLE_RE.fullmatch(text):
        return tuple([_atom(token) for token in _ATOM_RE.findall(text, 2, len(text) - 2)])
    if _FLAT_SET_RE.fullmatch(text):
        return frozenset([_atom(token) for token in _ATOM_RE.findall(text, 1, len(text) - 1)])
    if _FLAT_RECORD_RE.fullmatch(text):
        return FrozenDict([(name, _atom(token)) for name, token in _FIELD_RE.findall(text)])
    nested = _Nested(text).value_of_all()
    if nested is not _NOT_READ:
        return cast(Value, nested)
    try:
        return cast(Value, _parser().parse(text))
    except LarkError as exc:
        shown = text if len(text) <= 200 else text[:200] + "..."
        raise ValueSyntaxError(f"cannot read TLC value {shown!r}: {exc}") from exc


_CONJUNCT_RE = re.compile(r"^/\\ ", re.MULTILINE)
_BINDING_RE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s(.*)", re.DOTALL)


def parse_state(text: str) -> dict[str, Value]:
    """Parse a state as TLC prints it: ``/\\ x = 1`` lines, or ``x = 1`` alone for one variable.

    A conjunct's value may continue on indented lines; only ``/\\`` at the very start of a line
    begins a new conjunct (TLC never starts a value's continuation line that way).
    """
    text = text.strip()
    if not text:
        return {}
    chunks = _CONJUNCT_RE.split(text)[1:] if text.startswith("/\\ ") else [text]
    state: dict[str, Value] = {}
    for chunk in chunks:
        match = _BINDING_RE.fullmatch(chunk)
        if match is None:
            raise ValueSyntaxError(f"cannot read TLC state line {chunk.strip()!r}")
        state[match.group(1)] = parse_value(match.group(2))
    return state


# --- printing ------------------------------------------------------------------------------

_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _sort_key(value: Value) -> tuple[int, Any]:
    """Order set members deterministically: ints numerically, strings alphabetically, rest
    by their printed form. (TLC's own order is internal and not reproducible from outside.)"""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, ModelValue):
        return (3, value.name)
    if isinstance(value, tuple):
        return (4, (len(value), format_value(value)))
    return (5, format_value(value))


def format_value(value: Value) -> str:
    """Print a value in TLA+ syntax, the way TLC would, so witnesses read naturally.

    Sets are sorted for stable output. A :class:`FrozenDict` whose keys are all identifier-like
    strings prints as a record; any other one as ``(k :> v @@ ...)``; an empty one as ``<<>>``
    (the empty function is the empty sequence in TLA+).
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, ModelValue):
        return value.name
    if isinstance(value, tuple):
        return "<<" + ", ".join(format_value(item) for item in value) + ">>"
    if isinstance(value, frozenset):
        return "{" + ", ".join(format_value(item) for item in sorted(value, key=_sort_key)) + "}"
    if isinstance(value, FrozenDict):
        if not value:
            return "<<>>"
        keys = list(value)
        if all(isinstance(key, str) and _IDENTIFIER_RE.fullmatch(key) for key in keys):
            return "[" + ", ".join(f"{key} |-> {format_value(value[key])}" for key in keys) + "]"
        return (
            "("
            + " @@ ".join(f"{format_value(key)} :> {format_value(value[key])}" for key in keys)
            + ")"
        )
    raise TypeError(f"not a TLA+ value: {value!r}")


def plain(value: Value) -> Any:
    """TLC values as JSON-friendly Python values."""
    if isinstance(value, FrozenDict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, frozenset):
        return sorted((plain(v) for v in value), key=str)
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value
