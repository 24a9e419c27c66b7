"""Model-check the contract and prove that each property can fail.

Every `MC*.cfg` in the spec folder must pass, and TLC's random walks of every `Sim*.cfg` (a
reference runtime walked far deeper than a model checker's bounds reach) must break nothing.
Every `mutants/*.mutant` is a small textual patch to a base module -- a broken variant of the
protocol -- and must make TLC report a violation of exactly the property the mutant names. A
mutant that TLC does not reject shows a property that
cannot fail (or a mutant that no longer means anything): both are failures of the contract.

What each row must find is in the folder's `manifest.json` (:mod:`resumecheck.specmanifest`):
every configuration's outcome and distinct-state count, every mutant's property. A file the
manifest does not list, or an entry with no file, is a failing row that names the entry to
write; `--update-manifest` writes the counts.

Mutant file format::

    # One or more comment lines: what the broken runtime does.
    module: ResumeCore
    config: MCResumeCore.cfg
    --- replace
    <exact text that occurs once in the module>
    --- with
    <its replacement>
    --- end

and in manifest.json, under "mutants": `"<file name without .mutant>": {"property": "PC"}`.

A mutant may instead (or also) add an invariant to its configuration with `invariant: NAME`:
a *witness* that some state the unchanged protocol reaches breaks NAME (e.g. a restore that is
legal for the controller yet inadmissible). TLC must then report exactly NAME (the manifest's
property is NAME).
"""

from __future__ import annotations

import fnmatch
import re
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from resumecheck import specmanifest, tempdirs, texttable
from resumecheck.errors import UsageError
from resumecheck.specmanifest import MANIFEST, Manifest
from resumecheck.tlc import warm
from resumecheck.tlc.output import Outcome, TLCResult
from resumecheck.tlc.warm import Runner

LARGE_SUFFIX = "Large"


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    module: str
    config: str
    patches: tuple[tuple[str, str], ...]
    invariant: str | None = None
    expect: str | None = None  # the property manifest.json names; None: not listed there
    stale_expect: str | None = None  # an `expect:` line left in the file (the manifest's now)


@dataclass(frozen=True)
class Row:
    kind: str  # "config", "walks", "mutant" or "contract"
    name: str
    expected: str  # "ok" or the property the mutant must break ("-": the manifest has none)
    outcome: str
    distinct: int | None
    seconds: float
    passed: bool
    detail: str = ""
    expected_distinct: int | None = None  # a configuration's count in manifest.json


_META = re.compile(r"^(module|config|expect|invariant):\s*(\S+)\s*$", re.M)
_PATCH = re.compile(r"^--- replace\n(.*?)^--- with\n(.*?)^--- end$", re.M | re.S)


def parse_mutant(path: Path, expect: str | None = None) -> Mutant:
    """The mutant in `path`; `expect` is the property manifest.json names for it. An `expect:`
    line (where the property lived before the manifest) is kept as `stale_expect`, so its row
    can say which entry to write instead of silently ignoring it."""
    text = path.read_text(encoding="utf-8")
    head = text.split("--- replace", 1)[0]
    meta = dict(_META.findall(head))
    patches = tuple(_PATCH.findall(text))
    missing = {"module", "config"} - meta.keys()
    if missing or not (patches or "invariant" in meta):
        raise UsageError(
            f"{path}: needs module:, config: and a replace/with/end block (or invariant:)"
        )
    description = " ".join(
        line.lstrip("# ").strip() for line in head.splitlines() if line.startswith("#")
    )
    return Mutant(
        path.stem,
        description,
        meta["module"],
        meta["config"],
        patches,
        meta.get("invariant"),
        expect,
        meta.get("expect"),
    )


def module_for(config: Path) -> Path:
    """`MCFoo.cfg` and `MCFooAsync.cfg` both check `MCFoo.tla`: the longest matching stem (a
    simulation configuration `SimFoo*.cfg` likewise `SimFoo.tla`)."""
    prefix = "Sim" if config.name.startswith("Sim") else "MC"
    candidates = [p for p in config.parent.glob(f"{prefix}*.tla") if config.stem.startswith(p.stem)]
    if not candidates:
        raise UsageError(f"{config}: no {prefix}*.tla module whose name starts its name")
    return max(candidates, key=lambda p: len(p.stem))


def configs(spec_dir: Path, *, large: bool) -> list[Path]:
    found = sorted(spec_dir.glob("MC*.cfg"))
    return [c for c in found if c.stem.endswith(LARGE_SUFFIX) == large]


def walk_configs(spec_dir: Path) -> list[Path]:
    return sorted(spec_dir.glob("Sim*.cfg"))


def mutants(spec_dir: Path, manifest: Manifest | None = None) -> list[Mutant]:
    """Every mutant of the folder, each with the property its manifest names."""
    listed = (manifest or specmanifest.load(spec_dir)).mutants
    return [
        parse_mutant(p, listed.get(p.stem)) for p in sorted((spec_dir / "mutants").glob("*.mutant"))
    ]


def _large(config: Path) -> bool:
    return config.stem.endswith(LARGE_SUFFIX)


def _count(distinct: int | None) -> str:
    return "-" if distinct is None else f"{distinct:,}"


def check_config(
    config: Path, run: Runner, entry: specmanifest.ConfigEntry | None, *, update: bool = False
) -> Row:
    """A configuration gets the manifest's result and count. Only one worker runs (see
    :data:`resumecheck.tlc.warm.Runner`), so TLC's breadth-first search, VIEW and SYMMETRY
    included, reaches the same states in the same order on every run: a count that differs
    means the module or configuration changed, and the row fails until the manifest is
    refreshed (`update`: this run's counts are to be written, and the row passes)."""
    result = run(module_for(config), config)
    expected = entry.result if entry else "ok"
    got_expected = result.outcome.value == expected
    outcome = result.outcome.value + (f" {result.violated}" if result.violated else "")
    distinct = result.distinct_states
    problems = [] if got_expected else [result.error_text.strip() or f"TLC reports {outcome}"]
    if entry is None:
        line = specmanifest.config_entry(config.name, "ok", distinct if got_expected else None)
        problems.append(f'not in {MANIFEST}: add {line} to its "configurations"')
        outcome += " (new)" if update and got_expected else ", not in manifest"
    elif got_expected and entry.distinct is None:
        outcome += " (measured)" if update else ", no count"
        problems.append(
            f"{MANIFEST} has no distinctStates for it ({_count(distinct)} now): run "
            f"`resume-check spec --update-manifest{' --large' if _large(config) else ''}`"
        )
    elif got_expected and distinct != entry.distinct:
        outcome += f" (was {_count(entry.distinct)})" if update else ", states differ"
        problems.append(
            f"{_count(distinct)} distinct states, {MANIFEST} says {_count(entry.distinct)}: if "
            "the module or configuration changed on purpose, run `resume-check spec "
            f"--update-manifest{' --large' if _large(config) else ''}`"
        )
    passed = got_expected and (update or not problems)
    return Row(
        "config",
        config.name,
        expected,
        outcome,
        distinct,
        result.seconds,
        passed,
        "" if passed else "; ".join(problems),
        entry.distinct if entry else None,
    )


def check_walks(config: Path, run: Runner, entry: specmanifest.WalkEntry | None) -> Row:
    """TLC walks the configuration's behaviours at random with the manifest's seed and must
    get its result (ok: no walk broke an invariant). A bounded model explores every behaviour
    up to a few events; the walks go hundreds of moves deep, where the bounds hid a
    reference runtime that breaks its own contract -- a hole in "no false alarm" that no
    hand-written case named."""
    if entry is None:
        line = specmanifest.walk_entry(config.name, specmanifest.WalkEntry("ok", 500, 400, 1))
        return Row("walks", config.name, "ok", "not in manifest", None, 0.0, False,
                   f'not in {MANIFEST}: add {line} to its "walks"')  # fmt: skip
    result = run(module_for(config), config, extra_args=entry.tlc_args())
    passed = result.outcome.value == entry.result
    outcome = result.outcome.value + (f" {result.violated}" if result.violated else "")
    detail = "" if passed else _walk_problem(config, entry, result)
    return Row("walks", config.name, entry.result, f"{outcome}, {entry.walks:,} walks", None,
               result.seconds, passed, detail)  # fmt: skip


def _walk_problem(config: Path, entry: specmanifest.WalkEntry, result: TLCResult) -> str:
    """What TLC said, how long the walk that broke it was and the moves that ended it (a
    walk's states are too large to print whole), and the command that walks it again."""
    said = result.error_text.strip() or f"TLC reports {result.outcome.value}"
    trace = result.error_trace
    if trace:
        last = ", ".join(state.action_name for state in trace[-3:])
        said += f" -- in a walk of {len(trace)} states, ending with {last}"
    again = " ".join(["tlc", *entry.tlc_args(), "-deadlock", "-config", config.name,
                      module_for(config).stem])  # fmt: skip
    return f"{said}; TLC's trace of it: {again} (in {config.parent})"


def _mutant_entry_problem(mutant: Mutant, violated: str) -> str:
    """What to write where a mutant's property is not (only) in the manifest."""
    if mutant.stale_expect and mutant.expect:
        return f"its property is in {MANIFEST} ({mutant.expect}): delete the expect: line"
    if mutant.stale_expect:
        line = specmanifest.mutant_entry(mutant.name, mutant.stale_expect)
        return f'not in {MANIFEST}: add {line} to its "mutants" and delete the expect: line'
    line = specmanifest.mutant_entry(mutant.name, "PROPERTY")
    seen = f" (TLC reports {violated} violated)" if violated else ""
    return f'not in {MANIFEST}: add {line} to its "mutants", the property it must break{seen}'


def check_mutant(
    spec_dir: Path, mutant: Mutant, run: Runner, walks: specmanifest.WalkEntry | None = None
) -> Row:
    """TLC must reject the patched module for exactly the mutant's property: by model checking
    its configuration, or, for a simulation configuration, in the manifest's walks of it."""
    folder = tempdirs.mkdtemp("mutant-")
    try:
        for source in spec_dir.glob("*.tla"):
            shutil.copy(source, folder)
        for source in spec_dir.glob("*.cfg"):
            shutil.copy(source, folder)
        target = folder / f"{mutant.module}.tla"
        text = target.read_text(encoding="utf-8")
        for old, new in mutant.patches:
            if text.count(old) != 1:
                return Row(
                    "mutant",
                    mutant.name,
                    mutant.expect or "-",
                    "patch does not apply",
                    None,
                    0.0,
                    False,
                    f"the text to replace occurs {text.count(old)} times",
                )
            text = text.replace(old, new)
        target.write_text(text, encoding="utf-8")
        config = folder / mutant.config
        if mutant.invariant:
            with config.open("a", encoding="utf-8") as handle:
                handle.write(f"\nINVARIANT {mutant.invariant}\n")
        result = run(module_for(config), config, extra_args=walks.tlc_args() if walks else ())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    violated = result.violated or ""
    listed = mutant.expect is not None and mutant.stale_expect is None
    passed = listed and result.outcome is Outcome.INVARIANT_VIOLATION and violated == mutant.expect
    outcome = f"violates {violated}" if violated else result.outcome.value
    detail = "" if listed else _mutant_entry_problem(mutant, violated)
    if not passed and listed:
        detail = result.error_text.strip()
    if mutant.expect is None:
        outcome += ", not in manifest"
    elif mutant.stale_expect:
        outcome += ", expect: line"
    return Row(
        "mutant",
        mutant.name,
        mutant.expect or "-",
        outcome,
        result.distinct_states,
        result.seconds,
        passed,
        detail,
    )


_PROPERTIES = re.compile(r"^Properties\s*==\s*\[(.*?)\]", re.M | re.S)
_EXTENDS = re.compile(r"^EXTENDS\s+([A-Za-z0-9_, ]+)", re.M)


def property_names(base_text: str) -> list[str]:
    """The names of a base module's `Properties` record, in order."""
    match = _PROPERTIES.search(base_text)
    if not match:
        return []
    return [part.split("|->")[0].strip() for part in match.group(1).split(",") if "|->" in part]


_HISTORY = re.compile(r"^HistoryProperties\s*==\s*\[(.*?)\]", re.M | re.S)


def history_operators(base_text: str) -> dict[str, str] | None:
    """A base module's `HistoryProperties` record: property name -> the operator that states it
    over the observed history. None where the module states no property twice."""
    match = _HISTORY.search(base_text)
    if not match:
        return None
    pairs = (part.split("|->") for part in match.group(1).split(",") if "|->" in part)
    return {name.strip(): operator.strip() for name, operator in pairs}


HISTORY_MODULE = "History"
"""`<Base>History.tla`: where a contract may state its properties' history forms, apart from
the moves, so that judging a trace (which reads only the moves' checks) does not parse them."""

SOUND_SUFFIX = "Sound"


def is_soundness_module(module: Path) -> bool:
    """`MC<Base>Sound.tla` explores every move the checks let through (not the reference)."""
    return module.stem.endswith(SOUND_SUFFIX)


_CFG_KEYWORDS = {
    "CONSTANT",
    "CONSTANTS",
    "INIT",
    "NEXT",
    "SPECIFICATION",
    "INVARIANT",
    "INVARIANTS",
    "PROPERTY",
    "PROPERTIES",
    "CONSTRAINT",
    "CONSTRAINTS",
    "ACTION_CONSTRAINT",
    "ACTION_CONSTRAINTS",
    "SYMMETRY",
    "VIEW",
}


def config_invariants(config_text: str) -> set[str]:
    """The names a TLC configuration lists under INVARIANT(S)."""
    names: set[str] = set()
    section = None
    for line in config_text.splitlines():
        for word in line.split("\\*", 1)[0].split():
            if word in _CFG_KEYWORDS:
                section = word
            elif section in ("INVARIANT", "INVARIANTS"):
                names.add(word)
    return names


def _extends(module: Path, base: Path) -> bool:
    match = _EXTENDS.search(module.read_text(encoding="utf-8"))
    return bool(match) and base.stem in match.group(1).replace(" ", "").split(",")


def check_coverage(spec_dir: Path, manifest: Manifest | None = None) -> list[Row]:
    """For every contract: each property of its `Properties` record has a one-sentence comment,
    is an invariant of every MC configuration of the contract, and has a mutant that must break
    it -- so a spec author's new property cannot stay un-model-checked; `StoreProperties`, if
    declared, names only properties of the record."""
    from resumecheck.contract import property_comments, store_properties

    everything = mutants(spec_dir, manifest)
    rows = []
    for base in sorted(spec_dir.glob("*.tla")):
        text = base.read_text(encoding="utf-8")
        names = property_names(text)
        if not names or base.stem.startswith(("MC", "Trace")):
            continue
        comments = property_comments(text)
        mc_modules = [m for m in spec_dir.glob(f"MC{base.stem}*.tla") if _extends(m, base)]
        all_cfgs = [c for c in spec_dir.glob("MC*.cfg") if module_for(c) in mc_modules]
        cfgs = [c for c in all_cfgs if not is_soundness_module(module_for(c))]
        sound = {c.name for c in all_cfgs if is_soundness_module(module_for(c))}
        problems = []
        for name in names:
            if not comments.get(name):
                problems.append(f"{name} has no comment above its definition")
            missing = sorted(c.name for c in cfgs if name not in config_invariants(c.read_text()))
            if missing:
                problems.append(f"{name} is not an INVARIANT of {', '.join(missing)}")
            if not any(m.module == base.stem and m.expect == name for m in everything):
                problems.append(f"{name} has no mutant that must break it")
        # The history forms in the base module, or in a module of their own beside it
        # (`<Base>History.tla`, which trace validation does not parse: ResumeCore's).
        own = spec_dir / f"{base.stem}{HISTORY_MODULE}.tla"
        forms = own.read_text(encoding="utf-8") if own.is_file() else ""
        history = history_operators(text + forms)
        if history is not None:
            problems += _history_gaps(spec_dir, base.stem, names, history, cfgs, sound, everything)
        if not cfgs:
            problems.append("no MC configuration")
        strays = sorted((store_properties(text) or frozenset()) - set(names))
        if strays:
            problems.append(f"StoreProperties names {', '.join(strays)}, not in Properties")
        rows.append(
            Row(
                "contract",
                base.stem,
                "covered",
                "covered" if not problems else f"{len(problems)} gaps",
                None,
                0.0,
                not problems,
                "; ".join(problems),
            )
        )
    return rows


def _history_gaps(
    spec_dir: Path,
    base: str,
    names: list[str],
    history: dict[str, str],
    cfgs: list[Path],
    sound: set[str],
    everything: list[Mutant],
) -> list[str]:
    """A contract that states its properties twice must state every one twice, check the
    history form on the reference (no false alarm) and on every move the checks let through
    (soundness), and show with a mutant that deleting a check is caught by the history form."""
    problems = []
    if set(history) != set(names):
        problems.append(
            "HistoryProperties names "
            + ", ".join(sorted(set(history) ^ set(names)))
            + " but Properties does not, or the reverse"
        )
    if not sound:
        problems.append(f"no soundness configuration (MC{base}{SOUND_SUFFIX}*.cfg)")
    for name in names:
        operator = history.get(name)
        if operator is None:
            continue
        if not any(operator in config_invariants(c.read_text()) for c in cfgs):
            problems.append(f"{operator} is checked on no configuration of the reference")
        if not any(operator in config_invariants((spec_dir / s).read_text()) for s in sound):
            problems.append(f"{operator} is checked on no soundness configuration")
        if not any(
            m.module == base and m.expect == operator and m.config in sound for m in everything
        ):
            problems.append(f"{operator} has no mutant that deletes a check it must catch")
    return problems


def selected(name: str, only: str | None, skip: Sequence[str] = ()) -> bool:
    """A row runs when its name contains `only` (if given) and matches none of the `skip`
    globs (fnmatch: `MCResumeCoreSound?*.cfg` leaves out the soundness models but the first)."""
    return (not only or only in name) and not any(fnmatch.fnmatchcase(name, g) for g in skip)


def unlisted_entries(
    spec_dir: Path, manifest: Manifest, *, large: bool, only: str | None, skip: Sequence[str] = ()
) -> list[Row]:
    """A failing row for each manifest entry whose file is gone (of the rows this run would
    check): a renamed or deleted configuration or mutant must leave the manifest too."""
    configs_here = {c.name for c in spec_dir.glob("MC*.cfg")}
    walks_here = {c.name for c in walk_configs(spec_dir)}
    mutants_here = {m.stem for m in (spec_dir / "mutants").glob("*.mutant")}
    rows = [
        Row("config", name, entry.result, "no file", None, 0.0, False,
            f"{MANIFEST} lists {name} but {spec_dir} has no such file: remove its entry",
            entry.distinct)
        for name, entry in sorted(manifest.configurations.items())
        if name not in configs_here and Path(name).stem.endswith(LARGE_SUFFIX) == large
    ]  # fmt: skip
    if not large:
        rows += [
            Row("walks", name, entry.result, "no file", None, 0.0, False,
                f"{MANIFEST} lists {name} but {spec_dir} has no such file: remove its entry")
            for name, entry in sorted(manifest.walks.items())
            if name not in walks_here
        ]  # fmt: skip
        rows += [
            Row("mutant", name, prop, "no file", None, 0.0, False,
                f"{MANIFEST} lists {name} but {spec_dir / 'mutants'} has no {name}.mutant: "
                "remove its entry")
            for name, prop in sorted(manifest.mutants.items())
            if name not in mutants_here
        ]  # fmt: skip
    return [row for row in rows if selected(row.name, only, skip)]


def update_manifest(spec_dir: Path, rows: Sequence[Row]) -> Path | None:
    """Writes into the folder's manifest the counts of the configurations that got their
    expected result (a new one: ok); None when nothing changed, so an unchanged manifest is not
    rewritten. Rows of entries with no file, and mutants, change nothing: a person decides."""
    manifest = specmanifest.load(spec_dir)
    counts = {
        row.name: row.distinct
        for row in rows
        if row.kind == "config" and row.passed and row.distinct is not None
    }
    new = specmanifest.refreshed(manifest, counts)
    if new == manifest:
        return None
    return specmanifest.save(spec_dir, new)


def check_all(
    spec_dir: Path,
    *,
    large: bool = False,
    only: str | None = None,
    skip: Sequence[str] = (),
    jobs: int = 2,
    on_row: Callable[[Row], None] | None = None,
    update: bool = False,
) -> list[Row]:
    """Runs every configuration and mutant (in parallel, `jobs` TLC JVMs at a time, each
    running one row after another: :mod:`resumecheck.tlc.warm`) against the folder's
    manifest. With `update` a count that differs does not fail its row, nor does a new
    configuration that passes: the caller then writes them (:func:`update_manifest`)."""
    manifest = specmanifest.load(spec_dir)
    tasks: list[tuple[str, Callable[[Runner], Row]]] = [
        (
            config.name,
            lambda run, c=config: check_config(
                c, run, manifest.configurations.get(c.name), update=update
            ),
        )
        for config in configs(spec_dir, large=large)
    ]
    if not large:
        tasks += [
            (c.name, lambda run, c=c: check_walks(c, run, manifest.walks.get(c.name)))
            for c in walk_configs(spec_dir)
        ]
        tasks += [
            (
                m.name,
                lambda run, m=m: check_mutant(spec_dir, m, run, manifest.walks.get(m.config)),
            )
            for m in mutants(spec_dir, manifest)
        ]
    tasks = [(name, task) for name, task in tasks if selected(name, only, skip)]
    rows: list[Row] = []

    def emit(row: Row) -> None:
        rows.append(row)
        if on_row:
            on_row(row)

    for row in check_coverage(spec_dir, manifest):
        if selected(row.name, only, skip):
            emit(row)
    for row in unlisted_entries(spec_dir, manifest, large=large, only=only, skip=skip):
        emit(row)
    with warm.runner() as run, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for row in pool.map(lambda named: named[1](run), tasks):
            emit(row)
    return rows


def render_table(rows: Sequence[Row]) -> str:
    """The text table of `resume-check spec`: a row per configuration, mutant and contract."""
    right = texttable.right
    columns = ["kind", "name", right("distinct"), right("time"), "outcome", "", "result"]
    return texttable.render(
        columns,
        [
            (
                row.kind,
                row.name,
                f"{row.distinct:,}" if row.distinct is not None else "-",
                f"{row.seconds:.1f}s",
                row.outcome,
                f"expected {row.expected}",
                "PASS" if row.passed else "FAIL",
            )
            for row in rows
        ],
    )
