"""Do the contract's two statements agree on mutants of real traces?

A contract that declares `HistoryProperties` states every property twice: as the moves' named
checks (what `resume-check` judges by) and declaratively over the observed history (what its
history oracle, `Trace<Name>History`, judges by). `resume-check spec` shows on small models that
the two agree. This asks the same question of real material: it mutates recorded traces
(`resumecheck.mutation`), has TLC judge every mutant both ways, and reports each mutant on which
the verdicts differ -- the checker calls `conforms` what the history forms call broken (a hole
in the checks), or flags what they accept (a false alarm, or a history form that says too
little). Python compares two statuses; it decides nothing about what a trace means.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from resumecheck import escape, tempdirs, texttable
from resumecheck.contract import find_contract
from resumecheck.errors import SpecError, UsageError
from resumecheck.inputs import expand, no_traces
from resumecheck.judge import judge
from resumecheck.mutation import Mutant, mutants
from resumecheck.trace.reader import RawTrace, read_trace
from resumecheck.verdict import Status, Verdict

MISSED = "missed"
"""The history forms call the mutant broken; the checker says it conforms."""
FALSE_ALARM = "false alarm"
"""The checker flags the mutant; the history forms accept it."""
UNJUDGED = "unjudged"
"""TLC could not judge it one of the two ways."""


@dataclass(frozen=True)
class Case:
    """One mutant, judged by the checker and by the history oracle."""

    mutant: Mutant
    path: Path
    checker: Verdict
    oracle: Verdict

    @property
    def disagreement(self) -> str | None:
        statuses = {self.checker.status, self.oracle.status}
        if Status.ERROR in statuses:
            return UNJUDGED
        if self.checker.status is Status.CONFORMS and self.oracle.status is Status.VIOLATES:
            return MISSED
        if self.checker.status is Status.VIOLATES and self.oracle.status is Status.CONFORMS:
            return FALSE_ALARM
        return None

    @property
    def differs(self) -> bool:
        """Both say violates, but not at the same event or not of the same properties: the
        verdicts agree, the explanations do not (reported, not failed)."""
        c, o = self.checker, self.oracle
        return (
            c.status is Status.VIOLATES
            and o.status is Status.VIOLATES
            and (c.event_index, sorted(c.properties)) != (o.event_index, sorted(o.properties))
        )


@dataclass
class Agreement:
    """Every mutant judged both ways, and the seeds they came from."""

    seeds: list[Path]
    cases: list[Case] = field(default_factory=list)

    @property
    def disagreements(self) -> list[Case]:
        return [case for case in self.cases if case.disagreement is not None]

    def tally(self) -> Counter[str]:
        """How many mutants each pair of outcomes (checker/oracle) got; "unmatched" is a
        violation at an event no move allows (the same moves both ways, so both say it)."""
        return Counter(f"{_outcome(c.checker)}/{_outcome(c.oracle)}" for c in self.cases)


def _outcome(verdict: Verdict) -> str:
    if verdict.status is Status.VIOLATES and not verdict.properties:
        return "unmatched"
    return verdict.status.value


def agree(
    paths: Sequence[Path],
    *,
    count: int,
    seed: int,
    spec_paths: list[Path],
    max_seed_events: int | None = None,
    keep: Path | None = None,
    jobs: int = 1,
    on_line: Callable[[str], None] | None = None,
) -> Agreement:
    """Draws `count` mutants of the traces below `paths` whose contract has a history oracle
    (those longer than `max_seed_events` left out: the oracle's cost grows quickly with length),
    judges each both ways, and pairs the verdicts. Mutants are written to `keep` (kept) or to a
    temporary folder (removed)."""
    files = expand(paths).files
    if not files:
        raise no_traces(paths)
    oracles: dict[str, bool] = {}
    seeds = [
        raw
        for raw in map(read_trace, files)
        if _judgeable(raw, spec_paths, max_seed_events, oracles)
    ]
    if not seeds:
        raise UsageError(
            "no trace given has a contract with a history oracle (Trace<Name>History.tla)"
            + (f" and at most {max_seed_events} events" if max_seed_events else "")
        )
    folder = keep or tempdirs.mkdtemp("agree-")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        drawn = list(mutants(seeds, count, seed))
        written = []
        for index, mutant in enumerate(drawn, start=1):
            path = folder / f"mutant-{index:05d}-{mutant.seed.stem}.jsonl"
            path.write_text(mutant.jsonl(), encoding="utf-8")
            written.append(path)
        result = Agreement([raw.path for raw in seeds])
        if not written:
            return result
        checker = judge(written, spec_paths=spec_paths, jobs=jobs, on_line=on_line)
        oracle = judge(written, spec_paths=spec_paths, jobs=jobs, on_line=on_line, oracle=True)
        result.cases = [
            Case(m, p, c, o) for m, p, c, o in zip(drawn, written, checker, oracle, strict=True)
        ]
        return result
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)


def _judgeable(
    raw: RawTrace, spec_paths: list[Path], max_events: int | None, oracles: dict[str, bool]
) -> bool:
    """A seed: read cleanly, short enough, of a contract that has a history oracle
    (`oracles` remembers the answer per contract name for one call of `agree`)."""
    if raw.problem or raw.header is None or raw.truncation:
        return False
    if max_events is not None and len(raw.events) > max_events:
        return False
    name = raw.header.get("contract")
    if not isinstance(name, str):
        return False
    if name not in oracles:
        try:
            find_contract(name, spec_paths, oracle=True)
            oracles[name] = True
        except (SpecError, UsageError):
            oracles[name] = False
    return oracles[name]


def render_text(agreement: Agreement, kept: Path | None) -> str:
    """The report for a person: the tally, then each disagreement with what made the mutant."""
    lines = [
        f"{len(agreement.cases)} mutant(s) of {len(agreement.seeds)} recorded trace(s), "
        "judged by the checker and by the history oracle (checker/oracle):"
    ]
    tally = sorted(agreement.tally().items())
    if tally:
        table = texttable.render(
            ["pair", texttable.right("mutants")], tally, header=False, indent=2
        )
        lines += table.splitlines()  # a line each: escaping a joined table shows its "\n"
    for case in agreement.disagreements:
        lines.append("")
        where = str(case.path) if kept else case.path.name
        lines.append(f"{case.disagreement}: {where} (from {case.mutant.seed})")
        lines += [f"  {edit}" for edit in case.mutant.edits]
        lines.append(f"  checker: {case.checker.in_brief}")
        lines.append(f"  oracle:  {case.oracle.in_brief}")
    differ = [case for case in agreement.cases if case.differs]
    if differ:
        lines.append("")
        lines.append(
            f"{len(differ)} mutant(s) both call broken, at another event or of other "
            "properties (not a disagreement), e.g.:"
        )
        for case in differ[:3]:
            checker, oracle = case.checker.in_brief, case.oracle.in_brief
            lines.append(f"  {case.path.name}: checker {checker}; oracle {oracle}")
    n = len(agreement.disagreements)
    lines.append("")
    lines.append(
        "the two statements agree on every mutant"
        if n == 0
        else f"{n} disagreement(s)" + ("" if kept else "; --keep DIR keeps the mutants")
    )
    # Paths and reasons may quote a file name or a trace: nothing reaches a terminal raw.
    return "\n".join(escape.text(line) for line in lines) + "\n"
