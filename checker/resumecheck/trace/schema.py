"""The trace format: one JSON Schema per contract, shipped with the package.

Validation dispatches on the event kind itself, so an unknown event gets a one-line answer that
names the kinds the contract knows, instead of a `oneOf` error listing every alternative.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

import fastjsonschema
from fastjsonschema.draft04 import CodeGeneratorDraft04
from fastjsonschema.draft07 import CodeGeneratorDraft07
from fastjsonschema.ref_resolver import RefResolver

if TYPE_CHECKING:
    import jsonschema

_SCHEMA_FILE = re.compile(r"^([A-Za-z][A-Za-z0-9]*)\.(v[0-9]+)\.json$")


@dataclass(frozen=True)
class TraceSchema:
    """The schema of one contract's traces and a validator per header and event kind."""

    contract: str
    document: dict[str, Any]

    @property
    def format(self) -> str:
        """The header's `format` value this schema accepts, e.g. `resume-check/v2`."""
        return str(self.defs["header"]["properties"]["format"]["const"])

    @property
    def defs(self) -> dict[str, Any]:
        return self.document["$defs"]

    @property
    def event_kinds(self) -> list[str]:
        return sorted(name[3:] for name in self.defs if name.startswith("ev_"))

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """Follows a local `$ref` (one level is all the format uses)."""
        ref = node.get("$ref")
        if ref is None:
            return node
        return self.defs[ref.rsplit("/", 1)[-1]]

    def header_problem(self, header: dict[str, Any]) -> str | None:
        return _first_error(self.contract, "header", header)

    def event_problem(self, event: dict[str, Any]) -> str | None:
        kind = event.get("ev")
        if not isinstance(kind, str) or f"ev_{kind}" not in self.defs:
            return f"unknown event {kind!r}; {self.contract} knows: {', '.join(self.event_kinds)}"
        return _first_error(self.contract, f"ev_{kind}", event)


def _first_error(contract: str, name: str, instance: Any) -> str | None:
    """None when `instance` is valid. The compiled validator decides (it is an order of
    magnitude faster than jsonschema's interpreter, which dominated reading a large batch) with
    the same integers as jsonschema's (see `_strict`); jsonschema is asked only for the message
    of an instance found invalid."""
    try:
        _compiled(contract, name)(instance)
    except fastjsonschema.JsonSchemaValueException as fast:
        fallback = fast.message
    else:
        return None
    import jsonschema  # its messages, only for an instance found invalid (40 ms to import)

    error = jsonschema.exceptions.best_match(_validator(contract, name).iter_errors(instance))
    if error is None:
        # The interpreter accepts what the compiled check refused: the stricter answer stands.
        return f"(top): {fallback}"
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where or '(top)'}: {error.message}"


class _StrictIntegers(CodeGeneratorDraft07):
    """Draft 7, with an integer written as one (1.0 is not an integer, as in `_strict`).

    Draft 6 and later count 1.0 as an integer, and so does fastjsonschema's draft-7 code; its
    draft-4 type check does not, and is the only part taken from draft 4. Before this, every
    event holding a float without a fraction (a `ts` of 1764000000.0) went to jsonschema's
    interpreter for a verdict, and every event was walked to find such floats."""

    generate_type = CodeGeneratorDraft04.generate_type


def _compile_strict(document: dict[str, Any]) -> Callable[[Any], Any]:
    """`fastjsonschema.compile(document, use_default=False)` with `_StrictIntegers`."""
    resolver = RefResolver.from_schema(document, handlers={}, store={})
    generator = _StrictIntegers(document, resolver=resolver, use_default=False)
    state = generator.global_state
    exec(generator.func_code, state)  # what fastjsonschema.compile does with its own code
    return cast(Callable[[Any], Any], state[resolver.get_scope_name()])


@cache
def _schema_files() -> dict[str, str]:
    """Contract -> the file of its one current trace format (`<Contract>.v<N>.json`)."""
    root = resources.files("resumecheck.trace") / "schemas"
    found: dict[str, str] = {}
    for entry in root.iterdir():
        match = _SCHEMA_FILE.match(entry.name)
        if match:
            found[match.group(1)] = entry.name
    return found


def available_contracts() -> tuple[str, ...]:
    return tuple(sorted(_schema_files()))


@cache
def load_schema(contract: str) -> TraceSchema | None:
    """The schema for `contract`, or None when the package ships none."""
    name = _schema_files().get(contract)
    if name is None:
        return None
    path = resources.files("resumecheck.trace") / "schemas" / name
    return TraceSchema(contract, json.loads(path.read_text(encoding="utf-8")))


@cache
def _compiled(contract: str, name: str) -> Callable[[Any], Any]:
    """One definition compiled to Python; it never fills in defaults (the encoder does)."""
    schema = load_schema(contract)
    assert schema is not None
    document = {"$schema": "http://json-schema.org/draft-07/schema#"}
    document |= _inline(schema.defs[name], schema.defs)
    return _compile_strict(document)


@cache
def _validator(contract: str, name: str) -> jsonschema.protocols.Validator:
    """A validator for one definition, its `$ref`s inlined: resolving them costs more than the
    validation itself on traces of a hundred thousand events."""
    import jsonschema

    schema = load_schema(contract)
    assert schema is not None
    document = _inline(schema.defs[name], schema.defs)
    return _strict(jsonschema.validators.validator_for(schema.document))(document)


def _strict(cls: type[jsonschema.protocols.Validator]) -> type[jsonschema.protocols.Validator]:
    """The validator with JSON's own integers: JSON Schema counts 1.0 as an integer, but an
    identifier written 1.0 is a different key from 1 everywhere downstream, and `"index": 1e0`
    is not what a recorder writes for an index. So an integer is written without a fraction or
    an exponent; floats stay valid wherever the schema says "number"."""
    import jsonschema

    checker = cls.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return jsonschema.validators.extend(cls, type_checker=checker)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
            return {**target, **{k: _inline(v, defs) for k, v in node.items() if k != "$ref"}}
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node
