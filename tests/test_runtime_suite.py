"""The shared suite framework's own promises, fast: every runtime suite lists the same options,
and a suite whose runtime is not installed says which one, with exit code 3, before any cell
starts (no traceback, no worker failing one by one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rctools.suite import testing

pytestmark = pytest.mark.slow  # a CLI start per case

SUITES = (
    "burr",
    "crewai",
    "dbos",
    "llamaindex",
    "pydantic-graph",
    "recovery",
    "revision",
    "restate",
    "sandbox",
    "temporal",
)
OPTIONS = ("--out", "--format", "--progress", "--cells", "--list", "--stride", "--jobs")

# runs the CLI with one module made invisible to importlib, as on a machine without it
HIDE = """
import importlib.util, sys
real = importlib.util.find_spec
hidden = sys.argv.pop(1)
importlib.util.find_spec = lambda name, *a, **k: None if name == hidden else real(name, *a, **k)
from resumecheck.cli import main
sys.argv[0] = "resume-check"
main()
"""


@pytest.mark.parametrize("suite", SUITES)
def test_every_suite_has_the_same_options(suite: str) -> None:
    done = subprocess.run(
        [str(testing.cli()), "run", suite, "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    for option in OPTIONS:
        assert option in done.stdout, (suite, option)
    assert "text|json|junit" in done.stdout


def test_langgraph_has_the_same_options() -> None:
    """Its cells are named once each fault-free run has counted its kill points, and then
    chosen with the same options as every suite's (tests/test_langgraph_selection.py)."""
    done = subprocess.run(
        [str(testing.cli()), "run", "langgraph", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for option in OPTIONS:
        assert option in done.stdout, option
    assert "text|json|junit" in done.stdout


@pytest.mark.parametrize(
    ("suite", "module"), [("crewai", "crewai"), ("llamaindex", "workflows"), ("restate", "restate")]
)
def test_a_missing_runtime_is_named_with_exit_code_3(
    suite: str, module: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HIDE, module, "run", suite, "--out", str(tmp_path), "--list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done
    assert module in done.stderr and "resume-check[runtimes]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
