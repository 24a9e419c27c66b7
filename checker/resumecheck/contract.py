"""Find a contract's TLA+ modules and read what its properties mean.

A contract is a base module `<Name>.tla` (the semantics and the `Properties` record) with a
trace-validation module `Trace<Name>.tla` and its configuration `Trace<Name>.cfg`. The checker
reads the one-sentence comment above each property only to explain a verdict to a person; the
property itself is evaluated by TLC, never here.

Where the files come from: the contracts ship inside the package (`resumecheck_spec`, the
repository's spec/ folder), found with importlib.resources so an installed resume-check needs
no checkout. Folders from --spec-path and $RESUME_CHECK_SPEC_PATH come first, and the search is
per file: a folder holding only an edited `ResumeCore.tla` overrides that module and keeps every
other bundled one. TLC resolves `EXTENDS` the same way because the same folders, in the same
order, are its library path.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from resumecheck.errors import SpecError, UsageError

SPEC_PATH_ENV = "RESUME_CHECK_SPEC_PATH"
BUNDLED_PACKAGE = "resumecheck_spec"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def bundled_spec_dir() -> Path:
    """The contracts installed with resume-check (in a checkout: its spec/ folder)."""
    try:
        root = importlib.resources.files(BUNDLED_PACKAGE)
    except ModuleNotFoundError:
        raise SpecError(
            f"the bundled contracts (package {BUNDLED_PACKAGE}) are not installed; "
            "reinstall resume-check (in a checkout: pip install -e .)"
        ) from None
    # TLC reads modules from disk, so the contracts must be real files: an installed wheel or
    # an editable checkout are; a zipped import location is not.
    if not isinstance(root, Path) or not root.is_dir():
        raise SpecError(f"the bundled contracts ({root}) are not a folder on disk")
    return root


def env_spec_paths() -> list[Path]:
    """The folders $RESUME_CHECK_SPEC_PATH names, in order."""
    return [Path(p) for p in os.environ.get(SPEC_PATH_ENV, "").split(os.pathsep) if p]


def default_spec_paths(first: Iterable[Path] = ()) -> list[Path]:
    """The search order for contract files: `first` (--spec-path), $RESUME_CHECK_SPEC_PATH,
    then the bundled contracts.

    A folder that does not exist is an error rather than skipped: a typo in the spec path would
    otherwise judge every trace against the bundled contract without a word.
    """
    folders = [*first, *env_spec_paths()]
    for folder in folders:
        if not folder.is_dir():
            raise SpecError(
                f"spec folder {folder} (--spec-path or ${SPEC_PATH_ENV}) is not a folder"
            )
    return list(dict.fromkeys(p.resolve() for p in [*folders, bundled_spec_dir()]))


def find_file(name: str, folders: Sequence[Path]) -> Path | None:
    """The first folder's `name`, as TLC's library path would pick it."""
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


@dataclass(frozen=True)
class Contract:
    """One contract area: its three files, each from the first folder on the path holding it,
    and that path, which TLC searches in the same order for every module the files extend."""

    name: str
    base: Path
    trace_module: Path
    trace_config: Path
    search: tuple[Path, ...]

    @cached_property
    def descriptions(self) -> dict[str, str]:
        """Property name -> the comment written above its definition in the base module."""
        return property_comments(self.base.read_text(encoding="utf-8"))

    def describe(self, prop: str) -> str:
        return self.descriptions.get(prop, "")

    @cached_property
    def store_properties(self) -> frozenset[str] | None:
        """The base module's `StoreProperties`, or None where it declares none."""
        return store_properties(self.base.read_text(encoding="utf-8"))


HISTORY_ORACLE = "History"
"""The suffix of a contract's history oracle: `Trace<Name>History.tla/.cfg` judge a trace by the
history forms of the properties (`HistoryProperties`) instead of the moves' named checks."""


def find_contract(name: str, spec_paths: Sequence[Path], *, oracle: bool = False) -> Contract:
    """Contract `name` with each of its files from the first folder on `spec_paths` holding it.

    With `oracle`, the trace module and configuration are the contract's history oracle
    (`HISTORY_ORACLE`): the same events through the same moves, judged by the other statement
    of each property. Only the mutation test and a spec author ask for it."""
    if not _NAME.match(name):
        raise UsageError(f"contract name {name!r} is not a TLA+ module name")
    folders = tuple(spec_paths)
    trace = f"Trace{name}{HISTORY_ORACLE if oracle else ''}"
    wanted = (f"{name}.tla", f"{trace}.tla", f"{trace}.cfg")
    found = [find_file(file, folders) for file in wanted]
    missing = [file for file, path in zip(wanted, found, strict=True) if path is None]
    if missing:
        searched = ", ".join(str(p) for p in folders) or "(nothing)"
        raise SpecError(
            f"contract {name}: no folder holds {', '.join(missing)} (searched {searched}; "
            f"add one with --spec-path or ${SPEC_PATH_ENV})"
        )
    base, trace_module, trace_config = (path for path in found if path is not None)
    return Contract(name, base, trace_module, trace_config, folders)


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


_STORE = re.compile(r"^StoreProperties\s*==\s*\{([^}]*)\}", re.M)
_NAME_LITERAL = re.compile(r'"([A-Za-z][A-Za-z0-9_]*)"')


def store_properties(base_text: str) -> frozenset[str] | None:
    """The names in a base module's `StoreProperties == {"CV", ...}`: the properties a store
    breaks by how it answers, whoever else misbehaved (a saver matrix's race cells compare
    only these past the runtime's first break). None when the module declares none."""
    match = _STORE.search(base_text)
    if match is None:
        return None
    return frozenset(_NAME_LITERAL.findall(match.group(1)))
