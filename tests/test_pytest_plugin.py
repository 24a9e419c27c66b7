"""The pytest plugin for saver authors: one pytest test per matrix cell, judged for real.

A test file in a folder of its own (as in a saver author's repository) marks tests with the
broken savers of tests/fixtures/broken_savers.py (imported, not copied) and a correct one;
pytest runs it in a subprocess, so the plugin is loaded from its entry point as an author's
pytest would, and the JUnit file and the terminal show per-cell results: the broken saver's
cells fail with the property and the trace file, the correct one's pass, and a runtime finding
LangGraph itself has is an xfail, or a failure under --resume-check-strict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

# Every test starts pytest in a subprocess that imports LangGraph (seconds each).
pytestmark = pytest.mark.slow

FIXTURES = ROOT / "tests" / "fixtures"

SAVER_TESTS = """
import os
from pathlib import Path

import pytest
import broken_savers
from langgraph.checkpoint.conformance import checkpointer_test
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver


@checkpointer_test(name="AsyncSqlite")
async def registered():
    # as registered for langgraph-checkpoint-conformance: an async generator yielding a saver
    path = Path(os.environ["RESUME_CHECK_STORE"]) / "async.sqlite"
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


def raising():
    raise RuntimeError("the store is not there")


@pytest.mark.resume_check(saver=registered, scenarios="chain", durability="sync", kill_stride=40)
def test_registered(resume_check_cell):
    pass


@pytest.mark.resume_check(raising, scenarios="chain", durability="sync", kill_stride=40)
def test_raising(resume_check_cell):
    pass

@pytest.mark.resume_check(
    saver=broken_savers.parent_as_latest, scenarios=["chain"], durability="sync", kill_stride=40,
    api="sync",
)
def test_broken(resume_check_cell):
    pass

@pytest.mark.resume_check(
    saver="broken_savers:correct_sqlite",
    scenarios=["chain", "pinned-twice"],
    durability=["sync"],
    kill_stride=40,
    api="sync",
)
def test_correct(resume_check_cell):
    # the body may look at the cell; the verdict is enforced after it
    assert resume_check_cell.trace.is_file()
"""


@dataclass
class Session:
    returncode: int
    output: str
    cases: dict[str, ET.Element]  # test name -> JUnit testcase
    out: Path = Path()  # --resume-check-out


def run_pytest(folder: Path, *args: str, env: dict[str, str] | None = None) -> Session:
    """pytest in a subprocess, in `folder`, with the fixtures importable and a JUnit file."""
    junit = folder / f"junit-{len(list(folder.glob('junit-*')))}.xml"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RESUME_CHECK_")}
    env = {**clean, "PYTHONPATH": str(FIXTURES), **(env or {})}
    options = ["-p", "no:cacheprovider", "-rxXf", "-v", "--strict-markers", f"--junitxml={junit}"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    cases = {}
    if junit.exists():
        cases = {case.get("name", ""): case for case in ET.parse(junit).iter("testcase")}
    return Session(done.returncode, output, cases)


def _folder(tmp_path_factory: pytest.TempPathFactory, text: str) -> Path:
    folder = tmp_path_factory.mktemp("saver-repo")
    (folder / "test_my_saver.py").write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    session = run_pytest(folder, f"--resume-check-out={folder / 'out'}")
    session.out = folder / "out"
    return session


def test_a_broken_saver_fails_its_cells_with_the_property_and_the_trace(session: Session) -> None:
    broken = {n: c for n, c in session.cases.items() if n.startswith("test_broken[")}
    assert "test_broken[chain.none.sync]" in broken, session.output
    assert len(broken) >= 2, session.output  # the clean cell and at least one kill cell
    failed = 0
    for name, case in broken.items():
        failure = case.find("failure")
        if failure is None:
            # a kill cell whose runs LangGraph's background writer left at different instants
            # (writes acknowledged on one side only) is inconclusive: skipped, never passed
            skipped = case.find("skipped")
            assert skipped is not None, f"{name} did not fail\n{session.output}"
            assert "inconclusive" in skipped.get("message", ""), skipped.get("message")
            assert not name.endswith(".none.sync]"), name
            continue
        failed += 1
        message = failure.get("message", "")
        assert message.startswith("Failed: CV at event "), message
        assert "saver finding" in message.splitlines()[0], message
        trace = next(
            line.split("trace: ", 1)[1]
            for line in (failure.text or "").splitlines()
            if line.strip().startswith("trace: ")
        )
        assert Path(trace).is_file() and "test_broken" not in trace, trace
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["resume_check_finding"] == "saver", props
        assert float(case.get("time", "0")) > 0
    assert failed >= 2, session.output  # the clean cell and at least one kill cell
    assert session.returncode == 1, session.output


def test_a_correct_saver_passes_and_a_runtime_finding_is_reported_not_failed(
    session: Session,
) -> None:
    correct = {n: c for n, c in session.cases.items() if n.startswith("test_correct[")}
    chain = [c for n, c in correct.items() if n.startswith("test_correct[chain.")]
    assert len(chain) >= 2, session.output
    assert all(len(c) == 1 and c[0].tag == "properties" for c in chain), session.output
    pinned = correct["test_correct[pinned-twice.none.sync]"]
    skipped = pinned.find("skipped")
    assert skipped is not None and skipped.get("type") == "pytest.xfail", session.output
    assert "runtime finding" in skipped.get("message", ""), skipped.get("message")
    assert "XFAIL test_my_saver.py::test_correct[pinned-twice.none.sync]" in session.output


def test_a_checkpointer_registered_for_the_conformance_package_runs_as_it_is(
    session: Session,
) -> None:
    cells = {n: c for n, c in session.cases.items() if n.startswith("test_registered[")}
    # an async saver (only the async API): driven through ainvoke, its cells say so
    assert "test_registered[chain.none.sync.ainvoke]" in cells, session.output
    assert all(c.find("failure") is None for c in cells.values()), session.output
    assert any(p.name.startswith("AsyncSqlite-") for p in session.out.iterdir())


def test_a_factory_that_raises_fails_its_cell_with_the_error(session: Session) -> None:
    cells = {n: c for n, c in session.cases.items() if n.startswith("test_raising[")}
    assert cells, session.output
    for name, case in cells.items():
        failure = case.find("failure")
        assert failure is not None, f"{name} did not fail\n{session.output}"
        assert "the store is not there" in (failure.text or ""), failure.text


def test_strict_fails_a_runtime_finding_and_options_override_the_marker(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    done = run_pytest(
        folder,
        "--resume-check-strict",
        "--resume-check-scenarios=pinned-twice",
        "test_my_saver.py::test_correct",
    )
    assert set(done.cases) == {"test_correct[pinned-twice.none.sync]"}, done.output
    failure = done.cases["test_correct[pinned-twice.none.sync]"].find("failure")
    assert failure is not None, done.output
    assert failure.get("message", "").startswith("Failed: PC at event "), failure.get("message")
    # test_broken was not named: its matrix was not even planned
    assert "the matrix of broken_savers:correct_sqlite" in done.output
    assert "the matrix of broken_savers:parent_as_latest" not in done.output
    assert done.returncode == 1


def test_k_and_node_ids_choose_the_cells_before_any_is_recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Collection records only the fault-free runs that name the cells; of the cells, only
    those `-k` or a node id leaves selected are recorded and judged, together, and one cell
    runs again alone by its id."""
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    out = folder / "out"

    def recorded() -> set[str]:
        return {p.stem for p in out.glob("*/traces/broken_savers-correct_sqlite/*.jsonl")}

    chosen = run_pytest(
        folder,
        f"--resume-check-out={out}",
        "test_my_saver.py::test_correct",
        "-k",
        "kill or pinned",
    )
    ran = {name.split("[", 1)[1].rstrip("]") for name in chosen.cases}
    assert len(ran) >= 2 and "chain.none.sync" not in ran, chosen.output
    assert recorded() == ran, chosen.output  # chain's fault-free cell ran to plan, not recorded
    assert f"recording {len(ran)} cell(s) of broken_savers:correct_sqlite" in chosen.output
    one = sorted(ran)[0]
    again = run_pytest(
        folder, f"--resume-check-out={out}", f"test_my_saver.py::test_correct[{one}]"
    )
    assert set(again.cases) == {f"test_correct[{one}]"}, again.output
    assert recorded() == {one}, again.output
    # summary.json beside the traces, as `run langgraph --format json` writes it
    (summary,) = out.glob("*/summary.json")
    document = json.loads(summary.read_text(encoding="utf-8"))
    assert [row["cell"] for row in document["cells"]] == [one], document
    assert document["details"]["cells"][0]["finding"] in ("conforms", "runtime"), document


def test_xdist_workers_share_the_plan_and_record_each_cell_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """`pytest -n 2`: every worker collects, but they share one plan (the first worker to
    plan leaves it beside the folder, the other takes it), and each cell is recorded and
    judged by the worker that runs its test, into the one folder."""
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    out = folder / "out"
    done = run_pytest(
        folder, "-n", "2", f"--resume-check-out={out}", "test_my_saver.py::test_correct"
    )
    assert done.returncode == 0, done.output  # pinned-twice's runtime finding is an xfail
    ran = {name.split("[", 1)[1].rstrip("]") for name in done.cases}
    assert len(ran) >= 3, done.output
    assert "[gw0]" in done.output and "[gw1]" in done.output, done.output
    (matrix,) = out.glob("broken_savers-correct_sqlite-*/")
    assert len(list(out.glob("*.plan-*.pickle"))) == 1  # one plan, shared (under a file lock)
    tested = sorted(p.stem for p in (matrix / "traces" / "broken_savers-correct_sqlite").iterdir())
    assert tested == sorted(ran), done.output  # every cell recorded, into the one folder
    for cell in ran:
        runs = matrix / "cells" / "broken_savers-correct_sqlite" / cell
        assert runs.is_dir(), cell


def test_collect_only_records_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    done = run_pytest(folder, "--collect-only", f"--resume-check-out={folder / 'out'}")
    assert done.returncode == 0, done.output
    assert "test_broken[not-recorded]" in done.output
    assert not (folder / "out").exists()


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('saver="broken_savers:correct_sqlite", scenarios=["nope"]', "unknown scenario(s) nope"),
        ('saver="broken_savers:correct_sqlite", durability="never"', "durability takes"),
        ('saver="broken_savers:no_such_factory"', "has no callable 'no_such_factory'"),
        ('saver="no_such_module:f"', "cannot import 'no_such_module'"),
        ("", "no saver: give @pytest.mark.resume_check(saver=factory)"),
        ('saver="broken_savers:correct_sqlite", kill_strid=3', "unknown argument(s) kill_strid"),
        ('saver="broken_savers:correct_sqlite", profile="fast"', "profile takes quick, pr, full"),
    ],
)
def test_a_misconfigured_marker_is_a_collection_error_that_says_why(
    tmp_path_factory: pytest.TempPathFactory, marker: str, message: str
) -> None:
    folder = _folder(
        tmp_path_factory,
        f"""
        import pytest

        @pytest.mark.resume_check({marker})
        def test_resume(resume_check_cell):
            pass
        """,
    )
    done = run_pytest(folder)
    assert done.returncode == 2, done.output
    assert message in done.output, done.output
    assert "Traceback" not in done.output, done.output


def test_the_fixture_without_a_marker_is_a_collection_error_that_says_what_to_add(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = _folder(
        tmp_path_factory,
        """
        def test_resume(resume_check_cell):
            pass
        """,
    )
    done = run_pytest(folder)
    assert done.returncode == 2, done.output
    assert "no saver: give @pytest.mark.resume_check(saver=factory)" in done.output, done.output


def test_without_java_one_test_fails_with_the_reason_before_anything_is_recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    out = folder / "out"
    done = run_pytest(
        folder,
        "test_my_saver.py::test_correct",
        f"--resume-check-out={out}",
        env={"RESUME_CHECK_JAVA": str(folder / "no-java")},
    )
    assert set(done.cases) == {"test_correct[matrix]"}, done.output
    failure = done.cases["test_correct[matrix]"].find("failure")
    assert failure is not None and "ToolchainError" in failure.get("message", ""), done.output
    assert "no-java" in failure.get("message", "")
    assert not out.exists()
    assert done.returncode == 1


def test_no_temporary_folder_is_left_behind_by_a_green_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Without the pytest cache and --resume-check-out the traces go to a temporary folder:
    a green run removes it; a failing run keeps it (its messages name the traces in it) and
    says where -- alone and under pytest-xdist, whose workers share one folder."""
    folder = _folder(tmp_path_factory, SAVER_TESTS)
    temp = folder / "tmp"
    temp.mkdir()
    env = {"TMPDIR": str(temp)}
    green = run_pytest(folder, "test_my_saver.py::test_correct[chain.none.sync]", env=env)
    assert green.returncode == 0, green.output
    assert not list(temp.glob("resume-check-pytest-*")), green.output
    both = run_pytest(folder, "-n", "2", "test_my_saver.py::test_correct[chain.none.sync]", env=env)
    assert both.returncode == 0, both.output
    assert not list(temp.glob("resume-check-pytest-*")), both.output
    red = run_pytest(folder, "test_my_saver.py::test_broken[chain.none.sync]", env=env)
    assert red.returncode == 1, red.output
    (kept,) = temp.glob("resume-check-pytest-*")
    assert f"resume-check: traces kept in {kept.resolve()}" in red.output, red.output
