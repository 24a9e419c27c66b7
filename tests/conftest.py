"""Shared helpers: where things are, how to run the real CLI, how to read and write traces."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import services
from click.testing import CliRunner
from resumecheck import tracemanifest
from resumecheck.trace.schema import load_schema

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"
CORPORA = ROOT / "corpora"
CORE = TRACES / "core"
SPEC = ROOT / "spec"
# LangGraph matrices in the tests record two cells at once (each its own process, its own
# database): a cell is mostly interpreter start-up and waiting on SQLite, so two at a time
# take about a third less wall time on CI's two cores, and --jobs is exercised on every one.
JOBS = ("--jobs", "2")


def manifests(*roots: Path) -> dict[str, dict[str, Any]]:
    """The expected verdicts of the traces below `roots` (default: traces/ and corpora/), keyed
    by the trace's path relative to the repository: traces/ keeps a manifest per area (written
    by hand), corpora/ one at its root (written by the curators); `tracemanifest` reads both."""
    found = tracemanifest.expected(*(roots or (TRACES, CORPORA)))
    return {path.relative_to(ROOT).as_posix(): entry for path, entry in found.items()}


def judgeable_traces() -> list[tuple[Path, dict[str, Any]]]:
    """The traces of traces/ and corpora/ (with their manifest entries) that are in their
    contract's current format, smallest first: seeds that follow the trace formats as they
    change."""
    found = []
    for name, entry in manifests().items():
        path = ROOT / name
        header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        schema = load_schema(str(header.get("contract")))
        if schema is not None and header.get("format") == schema.format:
            found.append((path, entry))
    return sorted(found, key=lambda item: (item[0].stat().st_size, str(item[0])))


def _cli() -> Path:
    beside = Path(sys.executable).parent / "resume-check"
    return beside if beside.exists() else ROOT / ".venv" / "bin" / "resume-check"


CLI = _cli()


@dataclass
class Run:
    """One finished `resume-check` process."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    def assert_no_traceback(self) -> None:
        assert "Traceback" not in self.stdout, self.stdout
        assert "Traceback" not in self.stderr, self.stderr

    def __str__(self) -> str:
        return (
            f"resume-check {' '.join(self.args)} -> {self.returncode}\n{self._findings()}"
            f"--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
        )

    __repr__ = __str__

    def _findings(self) -> str:
        """A matrix report's cells that did not conform, first: a CI log keeps only the
        start of a failing assertion's message."""
        try:
            cells = json.loads(self.stdout)["details"]["cells"]
        except (ValueError, KeyError, TypeError):
            return ""
        lines = [
            f"  {c.get('scenario')} {c.get('fault')}: {c.get('finding')} checks={c.get('checks')}"
            f" runtime={c.get('runtime')} tested={(c.get('tested') or {}).get('verdict')}"
            for c in cells
            if isinstance(c, dict) and c.get("finding") != "conforms"
        ]
        return "--- cells that do not conform\n" + "\n".join(lines) + "\n" if lines else ""


def run_cli(
    *args: str | Path,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> Run:
    """Runs the installed console script as a user would, with a predictable spec path."""
    full_env = {k: v for k, v in os.environ.items() if k != "RESUME_CHECK_SPEC_PATH"}
    full_env.update(env or {})
    argv = tuple(str(a) for a in args)
    proc = subprocess.run(
        [str(CLI), *argv],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    return Run(argv, proc.returncode, proc.stdout, proc.stderr)


def run_langgraph(
    out: Path,
    *options: str,
    backend: str = "sqlite",
    scenarios: str | None = None,
    durability: str | None = None,
    stride: int | None = None,
    fmt: str | None = "json",
    progress: bool = False,
    env: dict[str, str] | None = None,
) -> Run:
    """`resume-check run langgraph` on `backend` into `out`, as a user records a matrix: the
    options every LangGraph test names, spelled once (`fmt=None`: the text report), then
    `options` as they are."""
    argv: list[str | Path] = ["run", "langgraph", "--backend", backend]
    for flag, value in (("--scenarios", scenarios), ("--durability", durability)):
        if value is not None:
            argv += [flag, value]
    if stride is not None:
        argv += ["--kill-stride", str(stride)]
    if fmt is not None:
        argv += ["--format", fmt]
    argv += ["--out", out, "--progress" if progress else "--no-progress", *options]
    return run_cli(*argv, env=env)


def invoke(*args: str | Path, env: dict[str, str | None] | None = None) -> Run:
    """Runs `resume-check` in this process through click's CliRunner, as `main` would: the
    fast tier's way to reach the CLI without starting an interpreter per call. TLC still runs
    for real. The spec path is cleared like `run_cli` does; `None` in `env` unsets a variable."""
    from resumecheck.cli import main

    argv = [str(a) for a in args]
    with CliRunner().isolation(env={"RESUME_CHECK_SPEC_PATH": None, **(env or {})}) as streams:
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        stdout, stderr = streams[0].getvalue(), streams[1].getvalue()
    return Run(tuple(argv), code, stdout.decode("utf-8"), stderr.decode("utf-8"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the `services` fixture starts PostgreSQL and redis: mark it so
    (`-m "not services"`), whichever module it is in."""
    for item in items:
        if "services" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.services)


def pytest_configure(config: pytest.Config) -> None:
    services.configure(config)


# A test skipped for this reason prefix found the machine unable to run what it tests (a kernel
# that refuses criu, say): the session then exits 3, the documented "could not run" code,
# instead of passing with the feature untested.
ENVIRONMENT_SKIP = "environment: "
_environment_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if reason.removeprefix("Skipped: ").startswith(ENVIRONMENT_SKIP):
            _environment_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _environment_skips and exitstatus == 0:
        session.exitstatus = 3


def pytest_unconfigure(config: pytest.Config) -> None:
    services.finish(config)  # on the xdist controller: after every worker's last test


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _environment_skips:
        terminalreporter.write_line(
            f"exit code 3: {len(_environment_skips)} test(s) could not run here, e.g. "
            + _environment_skips[0]
        )


def read_trace_file(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A well-formed example trace as (header, events)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def write_trace_file(
    path: Path,
    header: dict[str, Any],
    events: list[dict[str, Any]],
    *,
    ascii_only: bool = False,
) -> Path:
    """Writes a trace as JSON Lines (one header, one event per line, final newline)."""
    lines = [json.dumps(item, ensure_ascii=ascii_only) for item in [header, *events]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_co_then_cv(path: Path) -> Path:
    """traces/core/co-answer-of-other-task.jsonl (CO at event 16), then a crash and a reader
    handed content the store never held (CV at event 18), written to `path`: a trace that
    breaks a runtime property first and a store property after it."""
    lines = (CORE / "co-answer-of-other-task.jsonl").read_text(encoding="utf-8").splitlines()
    lines += [
        json.dumps({"ev": "crash", "proc": "w2"}),
        json.dumps(
            {
                "ev": "load",
                "proc": "w3",
                "thread": "t1",
                "asked": None,
                "checkpoint": "c0",
                "parent": None,
                "digest": "not-what-was-put",
                "writes": [],
                "answers": [],
            }
        ),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def patched_spec(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """A copy of spec/ in which `old`, occurring exactly once in `module`, reads `new`."""
    folder = tmp_path / "spec"
    shutil.copytree(SPEC, folder)
    path = folder / module
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{module} changed shape ({old!r}); update this test"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return folder


def by_name(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The verdicts of a `--format json` report keyed by file name."""
    return {Path(t["path"]).name: t for t in document["traces"]}


def nodes_started(trace: Path, *, crash: str) -> set[str]:
    """The nodes whose tasks started `before` or `after` the trace's first crash.

    LangGraph's loop does not wait for a step's `put_writes` (its background writer) before it
    stores the next checkpoint, so on a loaded machine a kill inside A's write can come after
    B's step was stored and B started: a cell killed inside a write ends one of two ways, and
    a test checks the one the trace shows."""
    events = read_trace_file(trace)[1]
    at = next(i for i, e in enumerate(events) if e["ev"] == "crash")
    part = events[:at] if crash == "before" else events[at:]
    return {e["node"] for e in part if e["ev"] == "task_start"}
