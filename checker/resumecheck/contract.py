"""Find a contract's TLA+ modules and read what its properties mean.

A contract is a base module `<Name>.tla` (the semantics and the `Properties` record) with a
trace-validation module `Trace<Name>.tla` and its configuration `Trace<Name>.cfg`. The checker
reads the one-sentence comment above each property only to explain a verdict to a person; the
property itself is evaluated by TLC, never here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from resumecheck.errors import UsageError

SPEC_PATH_ENV = "RESUME_CHECK_SPEC_PATH"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def default_spec_paths() -> list[Path]:
    """Folders searched for contracts: $RESUME_CHECK_SPEC_PATH, then the project's spec/."""
    paths = [Path(p) for p in os.environ.get(SPEC_PATH_ENV, "").split(os.pathsep) if p]
    bundled = Path(__file__).resolve().parents[2] / "spec"
    if bundled.is_dir():
        paths.append(bundled)
    return paths


@dataclass(frozen=True)
class Contract:
    """One contract area as found on disk."""

    name: str
    folder: Path

    @property
    def base(self) -> Path:
        return self.folder / f"{self.name}.tla"

    @property
    def trace_module(self) -> Path:
        return self.folder / f"Trace{self.name}.tla"

    @property
    def trace_config(self) -> Path:
        return self.folder / f"Trace{self.name}.cfg"

    @cached_property
    def descriptions(self) -> dict[str, str]:
        """Property name -> the comment written above its definition in the base module."""
        return property_comments(self.base.read_text(encoding="utf-8"))

    def describe(self, prop: str) -> str:
        return self.descriptions.get(prop, "")


def find_contract(name: str, spec_paths: list[Path]) -> Contract:
    """The first folder on the spec path that holds all three files of contract `name`."""
    if not _NAME.match(name):
        raise UsageError(f"contract name {name!r} is not a TLA+ module name")
    for folder in spec_paths:
        contract = Contract(name, folder)
        if all(p.is_file() for p in (contract.base, contract.trace_module, contract.trace_config)):
            return contract
    searched = ", ".join(str(p) for p in spec_paths) or "(nothing)"
    raise UsageError(
        f"contract {name}: no folder holds {name}.tla, Trace{name}.tla and Trace{name}.cfg "
        f"(searched {searched}; add one with --spec-path or ${SPEC_PATH_ENV})"
    )


_DEFINITION = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*==", re.M)


def property_comments(text: str) -> dict[str, str]:
    """Maps each top-level definition to the `\\*` comment lines directly above it."""
    lines = text.splitlines()
    found: dict[str, str] = {}
    for index, line in enumerate(lines):
        match = _DEFINITION.match(line)
        if not match:
            continue
        comment: list[str] = []
        back = index - 1
        while back >= 0 and lines[back].lstrip().startswith("\\*"):
            comment.insert(0, lines[back].lstrip()[2:].strip())
            back -= 1
        if comment:
            found[match.group(1)] = " ".join(comment)
    return found
