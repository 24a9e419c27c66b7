"""The built wheel works outside the checkout: contracts included, overrides per module.

Builds the wheel, installs it into a fresh virtual environment under tmp_path and, from a
folder that is not the checkout, judges traces, model-checks a mutant with `resume-check spec`
and overrides one base module through $RESUME_CHECK_SPEC_PATH. A second venv with the `sqlite`
extra and pytest runs the pytest plugin and `run langgraph --saver` on a saver module that
lives in that folder, as a saver author would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT, SPEC, TRACES

pytestmark = pytest.mark.slow

OK = "ok-effect-aware.jsonl"
VIOLATES = "ap-publish-before-job-done.jsonl"


def _run(argv: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RESUME_CHECK_", "PYTHON"))}
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode in (0, 1), f"{argv} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


# What a build must not see: a stale `build/lib` from an earlier build would be packed into the
# wheel beside the current files (a renamed schema file then ships twice).
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "out", ".services", "__pycache__", ".*_cache"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the working tree's sources, as a release build would."""
    base = tmp_path_factory.mktemp("wheel-build")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", source, "-w", base / "dist"],
        cwd=base,
    )
    (built,) = (base / "dist").glob("resume_check-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `resume-check` script of a fresh venv holding only the wheel and its dependencies."""
    base = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "venv", base / "venv"], cwd=base)
    _run([base / "venv" / "bin" / "python", "-m", "pip", "install", "-q", wheel], cwd=base)
    return base / "venv" / "bin" / "resume-check"


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("elsewhere")
    for name in (OK, VIOLATES):
        shutil.copy(TRACES / "sandbox" / name, folder / name)
    return folder


def test_installed_package_judges_traces_with_its_own_contracts(
    installed: Path, elsewhere: Path
) -> None:
    document = json.loads(_run([installed, "--format", "json", "."], cwd=elsewhere))
    statuses = {Path(t["path"]).name: t["status"] for t in document["traces"]}
    assert statuses == {OK: "conforms", VIOLATES: "violates"}
    files = document["spec_files"]["SandboxCR"]
    bundled = installed.parent.parent / "lib"
    assert all(Path(f).is_relative_to(bundled) and "resumecheck_spec" in f for f in files), files
    assert not any(Path(f).is_relative_to(ROOT) for f in files)


def test_installed_package_model_checks_a_mutant(installed: Path, elsewhere: Path) -> None:
    out = _run([installed, "spec", "--only", "sandbox-chat-only-policy"], cwd=elsewhere)
    assert out.splitlines()[-1] == "1 checked, 0 failed", out


def test_a_folder_with_one_edited_module_overrides_the_bundled_one(
    installed: Path, elsewhere: Path, tmp_path: Path
) -> None:
    text = (SPEC / "SandboxCR.tla").read_text(encoding="utf-8")
    old = "    insp # None => insp.truly \\subseteq insp.said\n"
    assert text.count(old) == 1, "SandboxCR.tla changed shape; update this test"
    (tmp_path / "SandboxCR.tla").write_text(text.replace(old, "    FALSE\n"), encoding="utf-8")
    out = _run([installed, OK], cwd=elsewhere, env={"RESUME_CHECK_SPEC_PATH": str(tmp_path)})
    lines = out.splitlines()
    assert lines[0] == f"{OK}: violates SandboxCR: InspectorSound", out
    footer = lines[-2]
    assert footer.startswith(f"spec SandboxCR: SandboxCR.tla from {tmp_path.resolve()}; "), footer
    assert "TraceSandboxCR.tla" in footer and "resumecheck_spec" in footer


SAVER_MODULE = '''
"""A saver author's own checkpointer: LangGraph's SQLite saver in the cell's store folder."""
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver


@contextmanager
def make_saver():
    store = Path(os.environ["RESUME_CHECK_STORE"])
    # Python's default transactions: not autocommit, which would tear a task's writes
    conn = sqlite3.connect(store / "mine.sqlite", check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
    finally:
        conn.close()
'''

SAVER_TEST = """
import pytest
from my_saver import make_saver


@pytest.mark.resume_check(saver=make_saver, scenarios=["chain"], durability="sync", kill_stride=40)
def test_resume(resume_check_cell):
    pass
"""


@pytest.fixture(scope="module")
def installed_for_savers(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` folder of a fresh venv with the wheel's `sqlite` extra and pytest: what a
    saver author installs to test a checkpointer from their own test suite."""
    base = tmp_path_factory.mktemp("wheel-sqlite")
    _run([sys.executable, "-m", "venv", base / "venv"], cwd=base)
    pip = [base / "venv" / "bin" / "python", "-m", "pip", "install", "-q"]
    _run([*pip, f"{wheel}[sqlite]", "pytest>=8"], cwd=base)
    return base / "venv" / "bin"


def test_the_pytest_plugin_runs_a_matrix_from_a_test_file_outside_the_checkout(
    installed_for_savers: Path, tmp_path: Path
) -> None:
    (tmp_path / "my_saver.py").write_text(SAVER_MODULE, encoding="utf-8")
    (tmp_path / "test_my_saver.py").write_text(SAVER_TEST, encoding="utf-8")
    junit = tmp_path / "report.xml"
    out = _run(
        [
            installed_for_savers / "python",
            *("-m", "pytest", "-v", "--strict-markers", f"--junitxml={junit}"),
            f"--resume-check-out={tmp_path / 'traces'}",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert "test_my_saver.py::test_resume[chain.none.sync] PASSED" in out, out
    # kill cells are named by their kill point (killpoints.py), e.g. chain.kill-end-A_1.sync
    assert re.search(r"test_my_saver\.py::test_resume\[chain\.kill-[^\]]+\.sync\] PASSED", out), out
    cases = {c.get("name"): c for c in ET.parse(junit).iter("testcase")}
    assert len(cases) >= 2 and all(len(c.findall("failure")) == 0 for c in cases.values())
    traces = list((tmp_path / "traces").rglob("chain.none.sync.jsonl"))
    assert len(traces) == 2, traces  # the saver under test's and the reference's


def test_run_langgraph_judges_a_saver_module_outside_the_checkout(
    installed_for_savers: Path, tmp_path: Path
) -> None:
    (tmp_path / "my_saver.py").write_text(SAVER_MODULE, encoding="utf-8")
    document = json.loads(
        _run(
            [
                installed_for_savers / "resume-check",
                *("run", "langgraph", "--saver", "my_saver:make_saver", "--scenarios", "chain"),
                *("--durability", "sync", "--kill-stride", "40", "--format", "json"),
                *("--out", tmp_path / "out"),
            ],
            cwd=tmp_path,
            env={"PYTHONPATH": str(tmp_path)},
        )
    )
    cells = document["details"]["cells"]
    assert cells and {c["finding"] for c in cells} == {"conforms"}, cells


BROKEN_SAVER = '''
from langgraph.checkpoint.sqlite import SqliteSaver


class MySaver(SqliteSaver):
    """Asked for the latest checkpoint, returns the one before it (an off-by-one in ORDER BY)."""

    def get_tuple(self, config):
        latest = super().get_tuple(config)
        if config["configurable"].get("checkpoint_id") or latest is None:
            return latest
        return super().get_tuple(latest.parent_config) if latest.parent_config else latest
'''


@pytest.mark.long
@pytest.mark.parametrize("saver", ["correct", "broken"])
def test_the_documented_pytest_example_runs_verbatim_from_the_wheel(
    installed_for_savers: Path, tmp_path: Path, saver: str
) -> None:
    """docs/pytest.md's worked example, copied from the page, run by the pytest of a fresh venv
    that holds only the wheel (its `sqlite` extra) and pytest: green on LangGraph's own
    SqliteSaver; on one with a bug, exit 1 and every failure's first line naming the check and
    the cell (tests/test_pytest_docs_example.py runs it in the checkout's venv)."""
    from test_pytest_docs_example import CHECKS, example

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_resume.py").write_text(example(), encoding="utf-8")
    my_pkg = (
        "from langgraph.checkpoint.sqlite import SqliteSaver as MySaver\n"
        if saver == "correct"
        else BROKEN_SAVER
    )
    (tmp_path / "my_pkg.py").write_text(my_pkg, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    narrow = [] if saver == "correct" else ["--resume-check-scenarios=chain"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RESUME_CHECK_", "PYTHON"))}
    done = subprocess.run(
        [installed_for_savers / "python", "-m", "pytest", "tests/test_resume.py", "-v",
         "-p", "no:cacheprovider", f"--junitxml={junit}", *narrow],
        cwd=tmp_path, env={**clean, "PYTHONPATH": str(tmp_path)}, capture_output=True,
        text=True, timeout=1200, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    cases = {c.get("name", ""): c for c in ET.parse(junit).iter("testcase")}
    failures = {n: c.find("failure") for n, c in cases.items() if c.find("failure") is not None}
    if saver == "correct":
        assert done.returncode == 0 and len(cases) > 20 and not failures, output
        return
    assert done.returncode == 1 and failures, output
    for name, failure in failures.items():
        cell = name.split("[", 1)[1].rstrip("]")
        first = failure.get("message", "").removeprefix("Failed: ").splitlines()[0]
        assert re.match(rf"{CHECKS}\b.* in cell {re.escape(cell)}: saver", first), first
