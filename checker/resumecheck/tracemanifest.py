"""The expected verdicts of committed traces: `manifest.json` files, one JSON Schema.

A manifest lists the traces below its folder, keyed by their paths relative to it. `traces/`
(hand-written examples a reader learns from) keeps one per area; `corpora/` (cells recorded
from real runtimes, re-recordable with one command) keeps one at its root, which each curator
updates for the folder it publishes. Tests, the bench and the curators all read them here, so
the format is checked in one place (`trace_manifest.schema.json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from filelock import FileLock

from resumecheck.errors import UsageError
from resumecheck.jsondoc import load_checked

__all__ = ["MANIFEST", "expected", "folder_entries", "load", "owner", "replace_folder", "schema"]

MANIFEST = "manifest.json"
SCHEMA_FILE = "trace_manifest.schema.json"

Entry = dict[str, Any]


@cache
def schema() -> dict[str, Any]:
    text = resources.files("resumecheck").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return dict(json.loads(text))


def load(path: Path) -> dict[str, Entry]:
    """The entries of one manifest (keys relative to its folder), checked against the schema;
    an empty one when the file does not exist yet."""
    return {name: entry for name, entry in _document(path).items() if name != "$schema"}


def _document(path: Path) -> dict[str, Any]:
    return dict(load_checked(path, schema())) if path.is_file() else {}


def expected(*roots: Path) -> dict[Path, Entry]:
    """Every trace listed by a manifest below `roots`, by its resolved path. A trace two
    manifests list is refused: which verdict holds would depend on reading order."""
    found: dict[Path, Entry] = {}
    for root in roots:
        for manifest in sorted(root.rglob(MANIFEST)):
            for name, entry in load(manifest).items():
                path = (manifest.parent / name).resolve()
                if path in found:
                    raise UsageError(f"{manifest}: {name} is listed by another manifest too")
                found[path] = entry
    return found


def owner(folder: Path) -> Path:
    """The manifest that lists `folder`'s traces: the nearest `manifest.json` in the folder or
    above it (corpora/manifest.json for corpora/langgraph/sqlite), else a new one in it."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / MANIFEST).is_file():
            return candidate / MANIFEST
    return folder / MANIFEST


def folder_entries(folder: Path) -> dict[str, Entry]:
    """The entries of the traces directly in `folder`, keyed by file name."""
    manifest = owner(folder)
    prefix = _prefix(manifest, folder)
    return {
        name[len(prefix) :]: entry
        for name, entry in load(manifest).items()
        if _directly_in(name, prefix)
    }


def replace_folder(folder: Path, entries: Mapping[str, Entry]) -> Path:
    """Writes `entries` (keyed by file names in `folder`) into the folder's manifest
    (`owner`), replacing every entry it had for the traces directly in that folder; other
    folders' entries (its subfolders' too) stay. Curators of two corpora may run at once
    (`make record-langgraph` publishes backend after backend, a user may publish a runtime
    beside it), so the read-modify-write holds a lock. Returns the manifest written."""
    manifest = owner(folder)
    prefix = _prefix(manifest, folder)
    with FileLock(str(manifest) + ".lock"):
        old = _document(manifest)
        kept = {n: e for n, e in old.items() if n != "$schema" and not _directly_in(n, prefix)}
        kept |= {prefix + name: dict(entry) for name, entry in entries.items()}
        # The `$schema` an editor validates with stays as written (the checker validates
        # against the package's copy).
        document = {k: v for k, v in old.items() if k == "$schema"}
        document |= dict(sorted(kept.items()))
        manifest.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return manifest


def _prefix(manifest: Path, folder: Path) -> str:
    """`folder`'s key prefix in `manifest`: '' for its own folder, 'langgraph/sqlite/' below."""
    relative = folder.resolve().relative_to(manifest.parent.resolve()).as_posix()
    return "" if relative == "." else relative + "/"


def _directly_in(name: str, prefix: str) -> bool:
    return name.startswith(prefix) and "/" not in name[len(prefix) :]
