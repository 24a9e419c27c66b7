"""No false alarm: the full matrix on every bundled correct saver, zero saver findings required.

    python -m rctools.langgraph.no_false_alarm --out out/no-false-alarm --write docs/langgraph.md
    python -m rctools.langgraph.no_false_alarm --savers correct_sqlite --stride 5 --out out/nfa

`make no-false-alarm` runs it at stride 1 (every kill point) on LangGraph's own savers and the
project's correct wrappers: hours on two cores, so not in CI, which runs a stride covering every
kill-point kind on `correct_sqlite` (tests/test_langgraph_savers.py). Each saver is a child
`resume-check run langgraph` with the reference on, its summary kept under `--out` (its text
report beside, SAVER.txt); a saver with any saver finding (or a cell that could not run) fails
the run (exit 1). Inconclusive cells are counted, not failed: they are no finding
(docs/langgraph.md, "Whose fault").

`--write FILE` puts the figures between `<!-- no-false-alarm -->` and
`<!-- end no-false-alarm -->` in FILE: a row per saver run now, the rows of savers not run kept
as they were (a run of one saver does not erase the others' figures).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click

from rctools.langgraph.matrix import is_reference_saver

# LangGraph's own savers (the bundled backends that are correct) and the project's correct
# wrappers of tests/fixtures/broken_savers.py (a --saver the project has never tuned to).
BUNDLED = ("sqlite", "sqlite-async", "memory", "postgres", "redis", "lmdb")
# Bundled backends that are not correct as the project runs them: run on request (`--savers`),
# never by default, and their rows never written into the table of correct savers.
NOT_CORRECT = {
    "objectstorage": "on a file:// folder it writes each object in place (fsspec's pipe_file, no "
    "temporary file and rename), so a kill mid-write leaves a torn object (docs/langgraph.md)",
}
FIXTURES = (
    "correct_sqlite",
    "table_saver",
    "file_dict_saver",
    "slow_ack_sqlite",
    "log_dir_saver",
)
SERVERS = {"postgres": "postgres", "redis": "redis"}  # backend -> the server it needs
BEGIN, END = "<!-- no-false-alarm -->", "<!-- end no-false-alarm -->"
BLOCK = re.compile(re.escape(BEGIN) + r"\n(?P<body>.*?)" + re.escape(END), re.S)
HEAD = (
    "| saver | stride | cells | saver findings | inconclusive | runtime | could not run "
    "| wall | CPU-s | LangGraph | run |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|\n"
)
ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Row:
    """One saver's figures, as the docs table shows them."""

    saver: str
    stride: int
    counts: dict[str, int]
    wall: float
    cpu: float
    langgraph: str
    day: str

    @property
    def clean(self) -> bool:
        """No saver finding and every cell run: the saver passed."""
        counts = self.counts
        return not (counts.get("saver") or counts.get("saver-error") or counts.get("failed"))

    def markdown(self) -> str:
        c = self.counts
        findings = c.get("saver", 0) + c.get("saver-error", 0)
        return (
            f"| `{self.saver}` | {self.stride} | {c.get('cells', 0)} | **{findings}** "
            f"| {c.get('inconclusive', 0)} | {c.get('runtime', 0)} | {c.get('failed', 0)} "
            f"| {self.wall / 60:.0f} min | {self.cpu:.0f} | {self.langgraph} | {self.day} |"
        )


def command(saver: str, stride: int, out: Path, jobs: int, scenarios: str | None) -> list[str]:
    """The child run of one saver: every durability, both APIs, the reference on."""
    if is_reference_saver(saver):  # as --backend it would be its own reference: every break
        # LangGraph's; as a --saver it is measured against the reference like any other
        which = ["--saver", f"rctools.langgraph.backends:{saver.replace('-', '_')}"]
    elif saver in BUNDLED or saver in NOT_CORRECT:
        which = ["--backend", saver]
    else:
        which = ["--saver", f"broken_savers:{saver}"]
    tool = Path(sys.executable).with_name("resume-check")  # this environment's entry point
    argv = [str(tool), "run", "langgraph", *which]
    argv += ["--kill-stride", str(stride), "--api", "both", "--jobs", str(jobs)]
    argv += ["--no-progress", "--out", str(out)]
    return argv + (["--scenarios", scenarios] if scenarios else [])


def run_one(saver: str, stride: int, out: Path, jobs: int, scenarios: str | None) -> Row:
    """Runs the matrix on one saver and reads its figures from the summary it wrote."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(_path())}
    before, clock = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    with (out.parent / f"{out.name}.txt").open("w", encoding="utf-8") as report:
        done = subprocess.run(
            command(saver, stride, out, jobs, scenarios), env=env, stdout=report, check=False
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = out / "summary.json"
    if not summary.exists():
        raise SystemExit(f"{saver}: the run wrote no summary (exit {done.returncode})")
    details = json.loads(summary.read_text(encoding="utf-8")).get("details") or {}
    return Row(
        saver,
        stride,
        dict(details.get("counts") or {}),
        time.monotonic() - clock,
        cpu,
        _langgraph(),
        datetime.now(UTC).date().isoformat(),
    )


def _path() -> list[str]:
    """tests/fixtures for the correct wrappers, before what the environment had."""
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [str(ROOT / "tests" / "fixtures"), *kept]


def _langgraph() -> str:
    from importlib.metadata import version

    return version("langgraph")


def merge(text: str, rows: list[Row]) -> str:
    """`text` with the rows put into its no-false-alarm block: a row per saver, those run now
    replacing their earlier rows, sorted by saver. A text without the block is an error."""
    match = BLOCK.search(text)
    if match is None:
        raise SystemExit(f"no {BEGIN} ... {END} block to write the figures into")
    kept: dict[str, str] = {}
    for line in match["body"].splitlines():
        name = re.match(r"\| `([^`]+)` \|", line)
        if name:
            kept[name[1]] = line
    kept.update({row.saver: row.markdown() for row in rows})
    body = HEAD + "".join(kept[name] + "\n" for name in sorted(kept))
    return text[: match.start("body")] + body + text[match.end("body") :]


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    help=(__doc__ or "").split("\n")[0],
)
@click.option(
    "--savers",
    default=",".join((*BUNDLED, *FIXTURES)),
    show_default=True,
    help="Comma-separated correct savers of the project.",
)
@click.option("--stride", default=1, show_default=True, help="--kill-stride (1: every point).")
@click.option("--scenarios", help="Only these scenarios (default: the whole matrix).")
@click.option("--jobs", default=2, show_default=True, help="Cells recorded at once.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("out/no-false-alarm"))
@click.option(
    "--write", type=click.Path(path_type=Path), help="The Markdown file to put the figures in."
)
def main(
    savers: str, stride: int, scenarios: str | None, jobs: int, out: Path, write: Path | None
) -> None:
    """Exit 1 when a saver has a saver finding or a cell that could not run."""
    chosen = [s for s in savers.split(",") if s]
    unknown = sorted(set(chosen) - set(BUNDLED) - set(FIXTURES) - set(NOT_CORRECT))
    if unknown:
        raise click.UsageError(f"not a correct saver of the project: {', '.join(unknown)}")
    servers = sorted({SERVERS[s] for s in chosen if s in SERVERS})
    if servers:
        from rctools.services import up

        os.environ.update(up(names=servers).env)
    rows = []
    for saver in chosen:
        if saver in NOT_CORRECT:
            click.echo(
                f"{saver}: not a correct saver here, its row is not written: {NOT_CORRECT[saver]}"
            )
        row = run_one(saver, stride, out / saver, jobs, scenarios)
        click.echo(row.markdown())
        rows.append(row)
    correct = [row for row in rows if row.saver not in NOT_CORRECT]
    if write is not None and not scenarios:  # a part of the matrix is no figure
        write.write_text(merge(write.read_text(encoding="utf-8"), correct), "utf-8")
    failed = [row.saver for row in rows if not row.clean]
    if failed:
        click.echo(f"saver findings or cells that could not run on: {', '.join(failed)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
