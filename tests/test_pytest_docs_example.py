"""The worked example of docs/pytest.md, taken from the page verbatim and run as a saver author
would: `pytest tests/test_resume.py` in a repository of their own, the plugin loaded from its
entry point.

`my_pkg.MySaver` is the author's saver; here it is LangGraph's own `SqliteSaver` (correct),
then `SqliteSaver` with one bug (`ParentAsLatest` of tests/fixtures/broken_savers.py). The
correct one must be green -- every cell passed, a runtime finding (LangGraph's own) xfailed,
nothing failed -- with the example's connection as printed: a page that builds a broken saver
(an autocommit connection commits a task's writes row by row) teaches the bug the tool is
for. The broken one must fail, each failure's first line naming the check and the cell.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT

# Minutes of real LangGraph runs: `make test-long`, not `make test`.
pytestmark = [pytest.mark.slow, pytest.mark.long]

DOC = ROOT / "docs" / "pytest.md"
FIXTURES = ROOT / "tests" / "fixtures"
CORRECT = "from langgraph.checkpoint.sqlite import SqliteSaver as MySaver\n"
BROKEN = "from broken_savers import ParentAsLatest as MySaver\n"
CHECKS = r"(CV|CO|EO|PC|FD|END|STATE|VALID|RUNS|no action matches)"


def example() -> str:
    """The first python block of the page's "A worked example" section, as printed."""
    section = DOC.read_text(encoding="utf-8").split("## A worked example", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "docs/pytest.md has no python block under 'A worked example'"
    return match.group(1)


def _run(
    tmp_path: Path, my_pkg: str, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, ET.Element]]:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_resume.py").write_text(example(), encoding="utf-8")
    (tmp_path / "my_pkg.py").write_text(my_pkg, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESUME_CHECK_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(FIXTURES)])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_resume.py", "-v", "-rxXfs",
         "-p", "no:cacheprovider", f"--junitxml={junit}", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    cases = {}
    if junit.exists():
        cases = {c.get("name", ""): c for c in ET.parse(junit).iter("testcase")}
    return done, cases


def test_the_documented_example_is_green_on_a_correct_saver(tmp_path: Path) -> None:
    code = [line.split("#", 1)[0] for line in example().splitlines()]
    assert not any("isolation_level" in line for line in code)  # autocommit: torn writes
    done, cases = _run(tmp_path, CORRECT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert len(cases) > 20, output
    failed = [n for n, c in cases.items() if c.find("failure") is not None or c.find("error")]
    assert not failed, output
    assert "passed" in output.splitlines()[-1], output


def test_the_documented_example_fails_a_broken_saver_naming_the_check_and_the_cell(
    tmp_path: Path,
) -> None:
    # the same file; one scenario and mode are enough to see the failures' first lines
    done, cases = _run(
        tmp_path, BROKEN, "--resume-check-scenarios=chain", "--resume-check-durability=sync"
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    failures = {n: c.find("failure") for n, c in cases.items() if c.find("failure") is not None}
    assert failures, output
    for name, failure in failures.items():
        cell = name.split("[", 1)[1].rstrip("]")
        first = failure.get("message", "").removeprefix("Failed: ").splitlines()[0]
        assert re.match(rf"{CHECKS}\b.* in cell {re.escape(cell)}: saver", first), first
