"""What every runtime suite's tests do: record a few cells through the real command line, read
the summary it wrote, find a cell's row and its verdict. One helper, so that the tests of every
suite hold the command to the same contract (exit code = summary's exit code, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def cli() -> Path:
    """The `resume-check` console script of the interpreter that runs the tests."""
    return Path(sys.executable).with_name("resume-check")


def record(
    suite: str, cells: Sequence[str], out: Path, *, code: int, cwd: Path | None = None
) -> dict[str, Any]:
    """Runs `resume-check run SUITE --out OUT --cells C...` as a user would and returns its
    summary.json; asserts the exit code, that the summary says the same, and no traceback."""
    argv = [str(cli()), "run", suite, "--out", str(out), "--format", "json", "--no-progress"]
    for cell in cells:
        argv += ["--cells", cell]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=1800, check=False)
    shown = f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert "Traceback" not in done.stdout + done.stderr, shown
    document: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert done.returncode == document["exit_code"] == code, shown
    assert sorted(c["cell"] for c in document["cells"]) == sorted(cells), shown
    return document


def row(summary: dict[str, Any], name: str) -> dict[str, Any]:
    """The summary's row of cell `name`."""
    return next(c for c in summary["cells"] if c["cell"] == name)


def verdict(summary: dict[str, Any], name: str) -> dict[str, Any]:
    """The checker's verdict of cell `name`'s trace (the `check` envelope's entry)."""
    trace = row(summary, name)["trace"]
    return next(t for t in summary["traces"] if t["path"] == trace)


def crashes(summary: dict[str, Any], name: str) -> int:
    """How many `crash` events the harness logged in cell `name`'s trace."""
    return Path(row(summary, name)["trace"]).read_text(encoding="utf-8").count('"ev": "crash"')
