"""The safety audit: restore policies on many generated workflows, every run judged by the spec.

Each generated workflow (generate.py) runs once per policy on real LangGraph; all traces are
judged in one TLC run. What is counted comes from the contract's verdicts and summaries, not
from Python's own idea of admissibility:

- an admitted restore is a run whose policy restored an instance locally (each run has one
  injected failure, so at most one restore);
- it is unsafe when the contract rejects that run for RestoreSound, BlockWhenNone or
  PreserveCommitted (the properties that judge a restore);
- a block is necessary when the spec's summary counts no needless block (none was taken
  although an admissible checkpoint existed), needless otherwise;
- a mislocalization is a run whose controller blamed another instance than the injector made
  fail (the injector's answer is in the trace's `fail` event; the controller never saw it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from resumecheck import texttable

from rctools.recovery.matrix import Judged

RESTORE_PROPERTIES = ("RestoreSound", "BlockWhenNone", "PreserveCommitted")


def domain_of(workload: str) -> str:
    return workload.rsplit("-", 1)[-1]


@dataclass
class Row:
    """One policy's counts over the audited workflows."""

    policy: str
    runs: int = 0
    completed: int = 0
    restores: int = 0
    unsafe_restores: int = 0
    blocks: int = 0
    necessary_blocks: int = 0
    needless_blocks: int = 0
    reruns: int = 0
    resurrected: int = 0  # runs rejected for NoResurrectedEffect
    mislocalized: int = 0
    ambiguous: int = 0
    through_langgraph: int = 0  # restores resumed from LangGraph's own checkpoint
    to_point: int = 0  # restores to a restore point, not to entry, commit or exit
    broken: Counter[str] = field(default_factory=Counter)  # property -> runs rejected for it
    unsafe_by_domain: Counter[str] = field(default_factory=Counter)

    def add(self, j: Judged) -> None:
        run, verdict = j.run, j.verdict
        self.runs += 1
        self.completed += run.outcome == "completed"
        self.broken.update(verdict.properties)
        if run.restores:
            self.restores += 1
            self.through_langgraph += bool(run.through_langgraph)
            self.to_point += bool(run.to_point)
            if set(verdict.properties) & set(RESTORE_PROPERTIES):
                self.unsafe_restores += 1
                self.unsafe_by_domain[domain_of(run.workload)] += 1
        if run.blocks:
            self.blocks += 1
            needless = verdict.summary.get("needless_blocks")
            if j.conforms and needless == 0:
                self.necessary_blocks += 1
            elif needless:
                self.needless_blocks += 1
        self.reruns += bool(run.reruns)
        self.resurrected += "NoResurrectedEffect" in verdict.properties
        self.mislocalized += run.mislocalized
        self.ambiguous += len(run.candidates) > 1

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "runs": self.runs,
            "completed": self.completed,
            "restores": self.restores,
            "unsafe_restores": self.unsafe_restores,
            "blocks": self.blocks,
            "necessary_blocks": self.necessary_blocks,
            "needless_blocks": self.needless_blocks,
            "reruns": self.reruns,
            "resurrected_effects": self.resurrected,
            "mislocalized": self.mislocalized,
            "ambiguous_localizations": self.ambiguous,
            "restores_through_langgraph": self.through_langgraph,
            "restores_to_point": self.to_point,
            "properties": dict(sorted(self.broken.items())),
            "unsafe_restores_by_domain": dict(sorted(self.unsafe_by_domain.items())),
        }


def tabulate(judged: Sequence[Judged], policies: Sequence[str]) -> list[Row]:
    rows = {p: Row(p) for p in policies}
    for j in judged:
        rows[j.run.policy].add(j)
    return list(rows.values())


def audit_figures(
    judged: Sequence[Judged], policies: Sequence[str], workflows: int, seed: int
) -> dict[str, Any]:
    """summary.json's `figures.audit`: the generator's arguments, the domains, one row of
    counts per policy."""
    rows = tabulate(judged, policies)
    domains = Counter(domain_of(j.run.workload) for j in judged if j.run.policy == policies[0])
    return {
        "workflows": workflows,
        "seed": seed,
        "domains": dict(sorted(domains.items())),
        "policies": [r.to_json() for r in rows],
    }


def audit_table(
    judged: Sequence[Judged], policies: Sequence[str], workflows: int, seed: int
) -> str:
    rows = tabulate(judged, policies)
    domains = Counter(domain_of(j.run.workload) for j in judged if j.run.policy == policies[0])
    right = texttable.right
    columns = [
        "policy",
        right("runs"),
        right("restores"),
        right("unsafe"),
        right("blocks"),
        right("necessary"),
        right("needless"),
        right("reruns"),
        right("misloc"),
        right("via LG"),
        right("to point"),
        right("done"),
        "properties broken (runs)",
    ]
    table = [
        (
            r.policy,
            r.runs,
            r.restores,
            r.unsafe_restores,
            r.blocks,
            r.necessary_blocks,
            r.needless_blocks,
            r.reruns,
            r.mislocalized,
            r.through_langgraph,
            r.to_point,
            r.completed,
            ", ".join(f"{p} {n}" for p, n in sorted(r.broken.items())) or "-",
        )
        for r in rows
    ]
    lines = [
        f"audit: {workflows} generated workflow(s), seed {seed}, domains "
        + ", ".join(f"{d} {n}" for d, n in sorted(domains.items())),
        texttable.render(columns, table),
    ]
    lines.append(
        "unsafe: admitted restores the contract rejects (RestoreSound, BlockWhenNone, "
        "PreserveCommitted); necessary: blocks the spec counts as not needless; misloc: the "
        "controller blamed another instance than the injector made fail; via LG: restores resumed "
        "from LangGraph's own checkpoint; to point: restores to a restore point saved at an "
        "action boundary (not entry, commit or exit)"
    )
    return "\n".join(lines)
