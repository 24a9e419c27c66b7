"""Turn a validated trace into TLA+ text that no trace content can change.

The schema alone says how each field is encoded: identifiers (`x-intern`) become small integers
numbered per trace in order of first appearance (so checkpoint ids grow with creation time, as
uuid6 ids do), strings only ever come from the schema's own enums, arrays become sets unless the
schema asks for a tuple, fields marked `x-tla: skip` stay out. A string the schema does not
constrain can never reach TLA+: the encoder refuses the schema instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from resumecheck.trace.schema import TraceSchema

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_SAFE_STRING = re.compile(r"^[\x20-\x7e]*$")
_TLC_INT = 2**31 - 1


class EncodeError(ValueError):
    """The trace refers to something it never declared (e.g. a node not in its workflow)."""


class SchemaDesignError(RuntimeError):
    """The schema lets a value through that has no safe TLA+ encoding: a bug in the package."""


@dataclass
class InternTables:
    """Per-trace numbering of identifiers; 0 stands for null."""

    tables: dict[str, dict[Any, int]] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    made: dict[str, dict[Any, str]] = field(default_factory=dict)  # namespace -> id -> where

    def make(self, namespace: str, key: Any, where: str) -> None:
        """An event makes the identifier (a step, fork or edit makes its checkpoint): an id
        names one thing across the whole trace, so one made twice -- by two threads counting
        their own, or by a re-creation reusing a lost id -- cannot be judged."""
        made = self.made.setdefault(namespace, {})
        if key in made:
            raise EncodeError(
                f"{where}: {namespace} {_plain_key(key)!r} is made again (first at {made[key]}); "
                "an id names one thing across the trace (docs/trace-format.md, Identifiers)"
            )
        made[key] = where

    def number(self, namespace: str, key: Any, where: str) -> int:
        if key is None:
            return 0
        table = self.tables.setdefault(namespace, {})
        if key not in table:
            if namespace in self.closed:
                raise EncodeError(f"{where}: {namespace} {key!r} was not declared in the header")
            table[key] = len(table) + 1
        return table[key]

    def name(self, namespace: str, number: int) -> Any:
        """The trace's own name for an interned number (for reports)."""
        for key, value in self.tables.get(namespace, {}).items():
            if value == number:
                return _plain_key(key)
        return None if number == 0 else number

    def count(self, namespace: str) -> int:
        return len(self.tables.get(namespace, {}))


@dataclass
class EncodedTrace:
    """A trace as a TLA+ record expression, with the numbering used to write it."""

    tla: str
    ids: InternTables


def encode_trace(
    schema: TraceSchema, header: dict[str, Any], events: list[dict[str, Any]]
) -> EncodedTrace:
    """Encodes a trace already validated against `schema`."""
    ids = InternTables()
    encoder = _Encoder(schema, ids)
    head = encoder.value(schema.defs["header"], header, "header")
    body = [encoder.event(event, f"event {i}") for i, event in enumerate(events, start=1)]
    events_tla = "<<" + ",\n  ".join(body) + ">>" if body else "<<>>"
    return EncodedTrace(f"[header |-> {head},\n events |-> {events_tla}]", ids)


def constructor_name(kind: str) -> str:
    """The generated TLA+ operator that builds an event of `kind` (see `event_constructors`)."""
    if not _IDENT.match(kind):
        raise SchemaDesignError(f"event kind {kind!r} is not a TLA+ identifier")
    return f"TraceEvent_{kind}"


def event_fields(schema: TraceSchema, kind: str) -> list[str]:
    """The fields of an event kind that reach TLA+, in constructor-argument order."""
    props = schema.defs[f"ev_{kind}"]["properties"]
    return sorted(
        name
        for name, prop in props.items()
        if schema.resolve(prop).get("x-tla") != "skip"
        and prop.get("x-tla") != "skip"
        and name != "ev"
    )


def event_constructors(schema: TraceSchema) -> str:
    """One TLA+ operator per event kind that builds its record from positional arguments.

    Writing `TraceEvent_put(7, 1)` instead of `[checkpoint |-> 7, ev |-> "put", proc |-> 1]`
    makes the generated module a third of the size, and SANY's parse time with it.
    """
    lines = []
    for kind in schema.event_kinds:
        fields = event_fields(schema, kind)
        params = ", ".join(f"a{i}" for i in range(len(fields)))
        parts = [f"ev |-> {tla_string(kind)}"] + [f"{f} |-> a{i}" for i, f in enumerate(fields)]
        head = f"{constructor_name(kind)}({params})" if fields else constructor_name(kind)
        lines.append(f"{head} == [{', '.join(sorted(parts))}]")
    return "\n".join(lines)


def vocabulary(schema: TraceSchema) -> str:
    """`TraceVocabulary`: every field name and string of the schema, first in the module.

    TLC orders strings and record fields by when it first met them. Naming them all before
    any trace makes that order the schema's, whether the traces reach TLC as this module or
    through the Java override (which meets them after SANY): both explore in one order."""
    fields: set[str] = set()
    words: set[str] = set()
    todo: list[Any] = [schema.document]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                if isinstance(prop, dict) and prop.get("x-tla") != "skip" and _IDENT.match(name):
                    fields.add(name)
            for key in ("const", "enum"):
                found = node.get(key)
                for word in found if isinstance(found, list) else [found]:
                    if isinstance(word, str) and _SAFE_STRING.match(word):
                        words.add(word)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    record = ", ".join(f"{name} |-> 0" for name in sorted(fields))
    strings = ", ".join(tla_string(word) for word in sorted(words))
    return f"TraceVocabulary == <<[{record}], {{{strings}}}>>"


def tla_string(text: str) -> str:
    """A TLA+ string literal for text from the schema's own vocabulary."""
    if not _SAFE_STRING.match(text):
        raise SchemaDesignError(f"string {text!r} is not printable ASCII")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Encoder:
    def __init__(self, schema: TraceSchema, ids: InternTables) -> None:
        self.schema = schema
        self.ids = ids

    def value(self, node: dict[str, Any], value: Any, where: str) -> str:
        target = self.schema.resolve(node)
        if "x-intern" in target:
            return str(self.ids.number(target["x-intern"], _key(value), where))
        if "const" in target or "enum" in target:
            return self._literal(value, target, where)
        kind = target.get("type")
        if kind == "object":
            return self._record(target, value, where)
        if kind == "array":
            return self._array(target, value, where)
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema counts 1.0 as an integer; so do we
        if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > _TLC_INT:
                raise EncodeError(f"{where}: integer {value} out of range")
            return str(value)
        if kind == "boolean" and isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        raise SchemaDesignError(f"{where}: no safe TLA+ encoding for schema {target!r}")

    def event(self, event: dict[str, Any], where: str) -> str:
        head, plan = _event_plan(self.schema, event["ev"])
        args = []
        number = self.ids.number
        tables = self.ids.tables
        for name, default, namespace, scope, fast, makes in plan:
            if name in event:
                item = event[name]
            elif default is _MISSING:
                raise SchemaDesignError(f"{where}: optional field {name!r} has no default")
            else:
                item = default
            if namespace is not None and scope is None:
                # An identifier: the common case, without the generic walk; one met before
                # is looked up directly (a batch's events name ~5 each).
                key = _key(item)
                if makes and item is not None:
                    self.ids.make(namespace, key, where)
                known = tables.get(namespace)
                found = None if known is None or key is None else known.get(key)
                args.append(
                    str(found if found is not None else number(namespace, key, f"{where}.{name}"))
                )
            elif fast is not None and (text := fast.get(_literal_key(item))) is not None:
                args.append(text)  # an enum word or a boolean, encoded once per schema
            elif scope is not None and all(f in event or d is not _MISSING for f, d in scope):
                # A scoped identifier (a thread with its namespace), its scope read directly.
                key = (_SCOPED, _key(item), *[_key(event.get(f, d)) for f, d in scope])
                known = tables.get(namespace)
                found = None if known is None else known.get(key)
                args.append(
                    str(found if found is not None else number(namespace, key, f"{where}.{name}"))
                )
            else:
                props = self.schema.defs[f"ev_{event['ev']}"]["properties"]
                args.append(self._field(props, event, name, where))
        return f"{head}({', '.join(args)})" if args else head

    @staticmethod
    def _unique(name: str, value: list[Any], where: str) -> None:
        """`x-unique`: no two items of the list share field `name` (a schedule names each
        task id once: the id is one task instance, with one node and one path, and a
        step's writes are keyed by it -- two entries under one id cannot be judged)."""
        first: dict[Any, int] = {}
        for i, item in enumerate(value):
            if not isinstance(item, dict) or item.get(name) is None:
                continue
            key = _key(item[name])
            if key in first:
                raise EncodeError(
                    f"{where}[{i}]: {name} {item[name]!r} is named again (first at "
                    f"[{first[key]}]); one list names each {name} once "
                    "(docs/trace-format.md, Identifiers)"
                )
            first[key] = i

    def _field(self, props: dict[str, Any], value: dict[str, Any], name: str, where: str) -> str:
        prop = props[name]
        item = self._item(prop, value, name, where)
        target = self.schema.resolve(prop)
        if "x-intern" in target and "x-intern-with" in target:
            # An identifier scoped by sibling fields (a thread with its namespace): the key is
            # the tuple of all of them, so equal names in two scopes stay two identifiers.
            scope = [self._item(props[f], value, f, where) for f in target["x-intern-with"]]
            key = (_SCOPED, _key(item), *(_key(x) for x in scope))
            return str(self.ids.number(target["x-intern"], key, f"{where}.{name}"))
        return self.value(prop, item, f"{where}.{name}")

    def _item(self, prop: dict[str, Any], value: dict[str, Any], name: str, where: str) -> Any:
        """The field's value, or its schema default when the trace leaves it out."""
        if name in value:
            return value[name]
        if "default" in prop:
            return prop["default"]
        if "default" in self.schema.resolve(prop):
            return self.schema.resolve(prop)["default"]
        raise SchemaDesignError(f"{where}: optional field {name!r} has no default")

    def _literal(self, value: Any, target: dict[str, Any], where: str) -> str:
        allowed = [target["const"]] if "const" in target else target["enum"]
        if value not in allowed:
            raise EncodeError(f"{where}: {value!r} is not one of {allowed}")
        if isinstance(value, str):
            return tla_string(value)
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int):
            return str(value)
        raise SchemaDesignError(f"{where}: enum value {value!r} has no TLA+ encoding")

    def _record(self, target: dict[str, Any], value: dict[str, Any], where: str) -> str:
        props: dict[str, Any] = target.get("properties", {})
        fields = []
        for name, prop, skip, declares in _record_plan(target):
            if skip:
                self._declare_only(prop, value.get(name), f"{where}.{name}")
                continue
            fields.append((name, self._field(props, value, name, where)))
            if declares is not None:
                self.ids.closed.add(declares)
        fields.sort()
        return "[" + ", ".join(f"{name} |-> {text}" for name, text in fields) + "]"

    def _declare_only(self, prop: dict[str, Any], value: Any, where: str) -> None:
        """Numbers the identifiers a skipped field declares (the header's optional graph), so
        that they close their namespace without reaching TLA+ -- unless the field says the
        list is `open` (a program whose tasks are named only when they run)."""
        if not isinstance(value, dict):
            return
        for name, sub in prop.get("properties", {}).items():
            if "x-declares" in sub and name in value:
                self.value(sub, value[name], f"{where}.{name}")
                if value.get("open") is not True:
                    self.ids.closed.add(sub["x-declares"])

    def _array(self, target: dict[str, Any], value: list[Any], where: str) -> str:
        if "x-unique" in target:
            self._unique(target["x-unique"], value, where)
        items = [self.value(target["items"], item, f"{where}[{i}]") for i, item in enumerate(value)]
        if target.get("x-tla") == "tuple":
            return "<<" + ", ".join(items) + ">>"
        return "{" + ", ".join(items) + "}"


_MISSING = object()
_PLANS: dict[tuple[int, str], tuple[str, list[tuple[Any, ...]]]] = {}


def _event_plan(schema: TraceSchema, kind: str) -> tuple[str, list[tuple[Any, ...]]]:
    """Per event kind, what `event` needs of the schema, looked up once: the constructor and,
    per field in argument order, its name, default (or _MISSING), the namespace of an
    identifier (None otherwise), the fields scoping it with their defaults (or None), for
    an enum or a boolean the TLA+ text of each value it allows (or None), and whether the
    event makes that identifier (`x-made`: it may be made only once in a trace).
    The schemas are loaded once per process (`load_schema` caches them), so their ids last.
    """
    key = (id(schema), kind)
    plan = _PLANS.get(key)
    if plan is None:
        props = schema.defs[f"ev_{kind}"]["properties"]
        fields = []
        for name in event_fields(schema, kind):
            prop = props[name]
            target = schema.resolve(prop)
            default = prop.get("default", target.get("default", _MISSING))
            namespace = target.get("x-intern")
            scope = None
            if namespace is not None and "x-intern-with" in target:
                scope = tuple((f, _default(schema, props[f])) for f in target["x-intern-with"])
            makes = bool(prop.get("x-made")) and namespace is not None and scope is None
            fields.append((name, default, namespace, scope, _literals(target), makes))
        plan = _PLANS[key] = (constructor_name(kind), fields)
    return plan


_RECORD_PLANS: dict[int, tuple[dict[str, Any], list[tuple[str, Any, bool, str | None]]]] = {}


def _record_plan(target: dict[str, Any]) -> list[tuple[str, Any, bool, str | None]]:
    """Per record schema, looked up once: its fields in the order `_record` encodes them
    (those that declare a namespace first, so later fields may refer to it), each with its
    schema, whether it stays out of TLA+, and the namespace it declares. The entry keeps the
    schema node, so its id cannot be another node's while the entry lasts."""
    entry = _RECORD_PLANS.get(id(target))
    if entry is not None and entry[0] is target:
        return entry[1]
    props: dict[str, Any] = target.get("properties", {})
    plan = []
    for name in sorted(props, key=lambda name: "x-declares" not in props[name]):
        prop = props[name]
        skip = prop.get("x-tla") == "skip"
        if not skip and not _IDENT.match(name):
            raise SchemaDesignError(f"field name {name!r} is not a TLA+ identifier")
        plan.append((name, prop, skip, prop.get("x-declares")))
    _RECORD_PLANS[id(target)] = (target, plan)
    return plan


def _default(schema: TraceSchema, prop: dict[str, Any]) -> Any:
    return prop.get("default", schema.resolve(prop).get("default", _MISSING))


def _literals(target: dict[str, Any]) -> dict[Any, str] | None:
    """The TLA+ text of every value an enum of strings (or a boolean) allows, keyed by
    `_literal_key`: what `_Encoder.value` would write for each, computed once."""
    if "x-intern" in target:
        return None
    if "enum" in target or "const" in target:
        allowed = [target["const"]] if "const" in target else target["enum"]
        if all(isinstance(v, str) for v in allowed):
            return {_literal_key(v): tla_string(v) for v in allowed}
        return None
    if target.get("type") == "boolean":
        return {_literal_key(True): "TRUE", _literal_key(False): "FALSE"}
    return None


def _literal_key(value: Any) -> Any:
    """Tells True from 1 and "a" from a list: only a hashable scalar of its own type matches."""
    return (type(value), value) if isinstance(value, str | bool) else None


_SCOPED = object()
"""The first item of the key of an identifier scoped by sibling fields, e.g. (_SCOPED, thread,
namespace): equal to nothing a trace holds, so a scoped key never equals a plain one, and a
tuple, so that hashing and comparing keys stays in C (a dataclass key cost a tenth of
encoding)."""


def _plain_key(key: Any) -> Any:
    """An interned key as the trace wrote it: `t1` or, scoped, `t1 ns=child:3`."""
    if isinstance(key, tuple) and key and key[0] is _SCOPED:
        head, *scope = (_plain_key(part) for part in key[1:])
        return " ".join([str(head), *(f"ns={s}" for s in scope if s not in ("", None))])
    return key[1] if isinstance(key, tuple) else key


def _key(value: Any) -> Any:
    """A hashable identity for a JSON scalar used as an identifier (1 and "1" stay apart)."""
    if value is None:
        return None
    return (type(value).__name__, value) if not isinstance(value, str) else value
