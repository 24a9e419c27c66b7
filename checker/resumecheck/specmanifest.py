"""`spec/manifest.json`: what `resume-check spec` must find, in one file.

For every MC configuration the outcome TLC must report (`"result"`, one of
:class:`~resumecheck.tlc.output.Outcome`'s values: `"ok"` for all shipped ones) and the number of
distinct states it reaches (`"distinctStates"`); for every simulation configuration (`Sim*.cfg`)
the random walks TLC takes of it (`"walks"`, each at most `"depth"` moves, from `"seed"`) and the
outcome they must give; for every mutant the property it must break (`"property"`). After
tlaplus/Examples' `manifest.json` (`"result"`, `"distinctStates"`), keyed by file name so that
two branches adding entries touch different lines.

It is the one source of these expectations: a mutant file no longer says `expect:`, and a
configuration's outcome is no longer assumed in code. The counts are measurements, not
claims: `resume-check spec --update-manifest` writes them (:func:`refreshed`); the results and
properties are claims, which only a person writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumecheck.jsondoc import load_checked

MANIFEST = "manifest.json"
SCHEMA = Path(__file__).with_name("spec_manifest.schema.json")
"""With the checker, which reads the manifest, not with a spec folder: a folder of one's own
(`--spec-dir`) needs no copy, and a checkout's folder is checked by its own checker's schema."""
SCHEMA_REF = "../checker/resumecheck/spec_manifest.schema.json"  # from spec/, for editors


@dataclass(frozen=True)
class ConfigEntry:
    result: str
    distinct: int | None  # None: not measured yet (fails its row until --update-manifest)


@dataclass(frozen=True)
class WalkEntry:
    """TLC's random walks of a simulation configuration: deeper than any model-checking bound,
    where a bounded model cannot reach (a reference runtime breaking a property 30 moves in)."""

    result: str
    walks: int
    depth: int
    seed: int

    def tlc_args(self) -> list[str]:
        """TLC's options for these walks: the same seed walks the same behaviours on every run."""
        walks, depth, seed = f"num={self.walks}", str(self.depth), str(self.seed)
        return ["-simulate", walks, "-depth", depth, "-seed", seed]


@dataclass
class Manifest:
    configurations: dict[str, ConfigEntry] = field(default_factory=dict)
    mutants: dict[str, str] = field(default_factory=dict)  # mutant name -> property
    walks: dict[str, WalkEntry] = field(default_factory=dict)  # Sim*.cfg -> its walks


def schema() -> dict[str, Any]:
    """The manifest's JSON Schema."""
    loaded: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return loaded


def load(spec_dir: Path) -> Manifest:
    """The folder's manifest; an empty one when there is none, so that every row fails with
    the entry to write instead of the whole command stopping."""
    path = spec_dir / MANIFEST
    if not path.is_file():
        return Manifest()
    data = load_checked(path, schema())
    return Manifest(
        {
            name: ConfigEntry(entry["result"], entry.get("distinctStates"))
            for name, entry in data["configurations"].items()
        },
        {name: entry["property"] for name, entry in data["mutants"].items()},
        {
            name: WalkEntry(entry["result"], entry["walks"], entry["depth"], entry["seed"])
            for name, entry in data.get("walks", {}).items()
        },
    )


def config_entry(name: str, result: str, distinct: int | None) -> str:
    """One configuration's line, exactly as :func:`dump` writes it (also the text a failing
    row tells the author to add)."""
    body: dict[str, Any] = {"result": result}
    if distinct is not None:
        body["distinctStates"] = distinct
    return f"{json.dumps(name)}: {json.dumps(body)}"


def walk_entry(name: str, entry: WalkEntry) -> str:
    """One simulation configuration's line, exactly as :func:`dump` writes it."""
    body = {"result": entry.result, "walks": entry.walks, "depth": entry.depth, "seed": entry.seed}
    return f"{json.dumps(name)}: {json.dumps(body)}"


def mutant_entry(name: str, prop: str) -> str:
    """One mutant's line, exactly as :func:`dump` writes it."""
    return f"{json.dumps(name)}: {json.dumps({'property': prop})}"


def dump(manifest: Manifest) -> str:
    """One entry per line, sorted: a branch adding a mutant adds a line, so two branches that
    add different ones merge without a conflict unless their names sort next to each other."""

    def block(lines: list[str]) -> str:
        return "{\n" + ",\n".join(f"    {line}" for line in lines) + "\n  }" if lines else "{}"

    configurations = [
        config_entry(name, entry.result, entry.distinct)
        for name, entry in sorted(manifest.configurations.items())
    ]
    mutants = [mutant_entry(name, prop) for name, prop in sorted(manifest.mutants.items())]
    walks = [walk_entry(name, entry) for name, entry in sorted(manifest.walks.items())]
    return (
        "{\n"
        f'  "$schema": "{SCHEMA_REF}",\n'
        f'  "configurations": {block(configurations)},\n'
        + (f'  "walks": {block(walks)},\n' if walks else "")
        + f'  "mutants": {block(mutants)}\n'
        "}\n"
    )


def save(spec_dir: Path, manifest: Manifest) -> Path:
    path = spec_dir / MANIFEST
    path.write_text(dump(manifest), encoding="utf-8")
    return path


def refreshed(manifest: Manifest, counts: dict[str, int]) -> Manifest:
    """The manifest with these configurations' distinct-state counts written (a configuration
    not listed yet is added as expected `ok`: every MC configuration is meant to pass, and the
    caller passes only counts of runs that got their expected result). Results and properties
    are left as they are: a count is measured, an expectation is not."""
    configurations = dict(manifest.configurations)
    for name, distinct in counts.items():
        old = configurations.get(name)
        configurations[name] = ConfigEntry(old.result if old else "ok", distinct)
    return Manifest(configurations, dict(manifest.mutants), dict(manifest.walks))
