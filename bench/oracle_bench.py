"""What the history oracle costs beside the checker, on the recorded ResumeCore traces.

Every recorded ResumeCore trace below traces/ is judged by the checker (`TraceResumeCore`,
named checks) and by the history oracle (`TraceResumeCoreHistory`, the history forms), side by
side in one run, alternating, ROUNDS times; then `resume-check agree` draws MUTANTS mutants of
them. Wall time and CPU-seconds (this process and its children, TLC included) per judgement;
medians and the oracle/checker ratio.

    python bench/oracle_bench.py --out bench/oracle-results.md
"""

from __future__ import annotations

import statistics
from pathlib import Path

import click
from clock import timed
from resumecheck.agreement import agree
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge

ROOT = Path(__file__).resolve().parent.parent


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--rounds", type=int, default=3)
@click.option("--mutants", "count", type=int, default=2000)
@click.option("--out", type=click.Path(path_type=Path))
def main(rounds: int, count: int, out: Path | None) -> None:
    spec = default_spec_paths()
    files = sorted(
        p
        for folder in (ROOT / "traces", ROOT / "corpora")
        for p in folder.rglob("*.jsonl")
        if '"ResumeCore"' in p.read_text(encoding="utf-8").split("\n", 1)[0]
    )
    events = sum(len(p.read_text(encoding="utf-8").splitlines()) - 1 for p in files)
    runs: dict[str, list[tuple[float, float]]] = {"checker": [], "oracle": []}
    for _ in range(rounds):
        runs["checker"].append(timed(lambda: judge(files, spec_paths=spec, jobs=1)))
        runs["oracle"].append(timed(lambda: judge(files, spec_paths=spec, jobs=1, oracle=True)))
    mutants = timed(
        lambda: agree(
            [ROOT / "traces", ROOT / "corpora"],
            count=count,
            seed=20261202,
            spec_paths=spec,
            max_seed_events=60,
            jobs=1,
        )
    )
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in runs.items()
    }
    lines = [
        f"{len(files)} recorded ResumeCore traces, {events} events; one TLC worker; "
        f"medians of {rounds} alternating rounds",
        "",
        "| judged by | wall s | CPU-s | events per CPU-s |",
        "|---|---|---|---|",
    ]
    for name, (wall, cpu) in med.items():
        lines.append(f"| {name} | {wall:.1f} | {cpu:.1f} | {events / cpu:,.0f} |")
    lines += [
        "",
        f"oracle/checker CPU ratio: {med['oracle'][1] / med['checker'][1]:.2f}",
        "",
        f"`agree`, {count} mutants (seed 20261202, seeds of at most 60 events), both "
        f"judgements: {mutants[0]:.1f} s wall, {mutants[1]:.1f} CPU-s",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(
            "# History oracle against the checker\n\n"
            "`python bench/oracle_bench.py --out bench/oracle-results.md`\n\n" + text,
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
