"""Would a slower store get the same verdict? A metamorphic test of the contract on real traces.

An acknowledgement (an event kind the trace schema marks `x-acknowledges`: ResumeCore's `put`
and `put_writes`) records a call's return. What the call handed over may have reached the store,
and been seen by other processes, at any instant before. A store that answers later gives the
same run with the acknowledgement later among the other processes' events, up to just before
its own process's next event (`mutation.late_acknowledgements`). So every such variant of a
trace the contract accepts must be accepted too; one it flags is a false alarm against a
correct store that is only slower. Three such rules were in the contract and are closed
(docs/contract.md, "A slower store").

Each seed is judged as it is and, where the contract names its `StoreProperties`, with every
other property tolerated (a race of unfenced processes breaks CO in LangGraph itself, and the
store's timing shows only past it); a variant is flagged where its seed conforms at a level and
it does not. A trace that conforms with nothing tolerated conforms with more tolerated, so the
second level judges only what the first did not already show conforming. Python moves events
and compares two statuses; TLC judges every trace.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from resumecheck import escape, tempdirs
from resumecheck.contract import find_contract
from resumecheck.errors import SpecError, UsageError
from resumecheck.inputs import expand, no_traces
from resumecheck.judge import judge
from resumecheck.mutation import Mutant, late_acknowledgements
from resumecheck.trace.reader import RawTrace, read_trace
from resumecheck.trace.schema import load_schema
from resumecheck.verdict import Status, Verdict

AS_IS = "as is"
"""Judged with no property tolerated."""
STORE_ONLY = "store only"
"""Judged with every property but the contract's `StoreProperties` tolerated."""


@dataclass(frozen=True)
class Level:
    """One way of judging a contract's traces: its name and the properties it tolerates."""

    name: str
    tolerate: frozenset[str]


@dataclass(frozen=True)
class Flagged:
    """A variant the contract flags though its seed conforms at that level."""

    mutant: Mutant
    path: Path
    level: str
    variant: Verdict


@dataclass
class SlowerStore:
    """The seeds, how many variants were judged, and the ones flagged."""

    seeds: list[Path] = field(default_factory=list)
    judged: int = 0
    flagged: list[Flagged] = field(default_factory=list)


def slower(
    paths: Sequence[Path],
    *,
    spec_paths: list[Path],
    keep: Path | None = None,
    jobs: int = 1,
    on_line: Callable[[str], None] | None = None,
) -> SlowerStore:
    """Judges the traces below `paths` whose schema marks acknowledgements, and their late
    variants, at each level; returns the variants flagged where their seed conforms. Variants
    are written to `keep` (kept) or to a temporary folder (removed)."""
    files = expand(paths).files
    if not files:
        raise no_traces(paths)
    by_contract: dict[str, list[tuple[RawTrace, list[Mutant]]]] = {}
    for raw in map(read_trace, files):
        name = raw.header.get("contract") if raw.header and not raw.problem else None
        schema = load_schema(name) if isinstance(name, str) else None
        if schema is None or raw.truncation:
            continue
        by_contract.setdefault(name, []).append(  # type: ignore[arg-type]
            (raw, list(late_acknowledgements(raw, schema)))
        )
    result = SlowerStore()
    folder = keep or tempdirs.mkdtemp("slower-")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        for name, seeds in sorted(by_contract.items()):
            seeds = [(raw, variants) for raw, variants in seeds if variants]
            result.seeds += [raw.path for raw, _ in seeds]
            conforming: set[Path] = set()  # seeds and variants shown conforming at a lower level
            for level in _levels(name, spec_paths):
                _judge_level(seeds, level, folder, spec_paths, jobs, on_line, result, conforming)
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return result


def _levels(contract: str, spec_paths: list[Path]) -> list[Level]:
    try:
        found = find_contract(contract, spec_paths)
    except (SpecError, UsageError):
        return []
    store = found.store_properties
    levels = [Level(AS_IS, frozenset())]
    if store:
        levels.append(Level(STORE_ONLY, frozenset(found.descriptions) - store))
    return levels


def _judge_level(
    seeds: list[tuple[RawTrace, list[Mutant]]],
    level: Level,
    folder: Path,
    spec_paths: list[Path],
    jobs: int,
    on_line: Callable[[str], None] | None,
    result: SlowerStore,
    conforming: set[Path],
) -> None:
    """Judges the seeds at `level`, then the variants of those that conform; what a lower
    level showed conforming (`conforming`, which this adds to) is not judged again."""
    unknown = [raw.path for raw, _ in seeds if raw.path not in conforming]
    if unknown:
        verdicts = judge(
            unknown, spec_paths=spec_paths, tolerate=level.tolerate, jobs=jobs, on_line=on_line
        )
        conforming |= {v.path for v in verdicts if v.status is Status.CONFORMS}
    drawn: list[Mutant] = []
    written: list[Path] = []
    for number, (raw, variants) in enumerate(seeds):
        if raw.path not in conforming:
            continue
        for index, mutant in enumerate(variants, start=1):
            path = folder / f"{number:05d}-{index:03d}-{raw.path.stem}.jsonl"
            if path in conforming:
                continue
            path.write_text(mutant.jsonl(), encoding="utf-8")
            drawn.append(mutant)
            written.append(path)
    if not written:
        return
    judged = judge(
        written, spec_paths=spec_paths, tolerate=level.tolerate, jobs=jobs, on_line=on_line
    )
    result.judged += len(written)
    for mutant, path, verdict in zip(drawn, written, judged, strict=True):
        if verdict.status is Status.CONFORMS:
            conforming.add(path)
        else:
            result.flagged.append(Flagged(mutant, path, level.name, verdict))


def render_text(result: SlowerStore, kept: Path | None) -> str:
    """The report for a person: the counts, then each flagged variant with what moved."""
    if not result.seeds:
        return (
            "no trace given has an acknowledgement that another process's event could come "
            "before: nothing to judge again\n"
        )
    lines = [
        f"{result.judged} late-acknowledgement variant(s) of {len(result.seeds)} trace(s), "
        "judged as a slower store would have given them:"
    ]
    for case in result.flagged:
        where = str(case.path) if kept else case.path.name
        lines.append("")
        lines.append(f"false alarm ({case.level}): {where} (from {case.mutant.seed})")
        lines += [f"  {edit}" for edit in case.mutant.edits]
        lines.append(f"  seed: conforms; variant: {case.variant.in_brief}")
    lines.append("")
    n = len(result.flagged)
    lines.append(
        "every variant conforms where its seed does"
        if n == 0
        else f"{n} false alarm(s)" + ("" if kept else "; --keep DIR keeps the variants")
    )
    return "\n".join(escape.text(line) for line in lines) + "\n"
