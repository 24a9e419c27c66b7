"""`run langgraph --langgraph VERSION[,VERSION...]`: the matrix at other LangGraph releases, each
in an environment built from the package registry (rctools.langgraph.versions), and the
recorder's shims for what moved between minor releases (rctools.langgraph.compat)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import ROOT, invoke, read_trace_file, run_cli
from packaging.version import Version
from rctools.langgraph import compat
from rctools.langgraph.versions import SUPPORTED, VersionRun, args_again, combined

PUBLISHING = f"{ROOT / 'tests' / 'fixtures' / 'apps' / 'publishing.py'}:make_graph"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("0.5.4", "below 0.6 the Pregel loop's modules have other names"),
        ("1.3.0", "resume-check records LangGraph"),
        ("1.x", "exact releases"),
        (",", "one or more"),
    ],
)
def test_a_version_the_recorder_cannot_record_is_refused_before_anything_runs(
    tmp_path: Path, given: str, said: str
) -> None:
    run = invoke("run", "langgraph", "--backend", "sqlite", "--langgraph", given, "--out", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert said in run.stderr
    assert not list(tmp_path.glob("langgraph-*"))


def test_the_child_runs_get_the_options_the_user_gave_and_no_others() -> None:
    seen: list[list[str]] = []

    @click.command()
    @click.option("--app")
    @click.option("--reference/--no-reference", default=True)
    @click.option("--strict", is_flag=True)
    @click.option("--cells", multiple=True)
    @click.option("--jobs", default=1)
    @click.option("--langgraph")
    def cmd(**_: object) -> None:
        seen.append(args_again(click.get_current_context(), ("langgraph",)))

    argv = [
        "--app",
        "m:f",
        "--no-reference",
        "--cells",
        "a*",
        "--cells",
        "b*",
        "--langgraph",
        "1.1.10",
    ]
    assert CliRunner().invoke(cmd, argv).exit_code == 0
    assert seen == [["--app", "m:f", "--no-reference", "--cells", "a*", "--cells", "b*"]]


def test_reports_of_several_versions_are_one_document_and_a_finding_anywhere_is_exit_1() -> None:
    suite = '<testsuites><testsuite name="run langgraph" tests="1"/></testsuites>'
    runs = [
        VersionRun(Version("1.1.10"), 1, suite),
        VersionRun(Version("1.2.24"), 3, suite),
    ]
    xml, code = combined(runs, "junit")
    assert code == 1
    names = [s.get("name") for s in ET.fromstring(xml).iter("testsuite")]
    assert names == ["langgraph 1.1.10: run langgraph", "langgraph 1.2.24: run langgraph"]
    runs = [VersionRun(Version("1.1.10"), 0, '{"a": 1}'), VersionRun(Version("1.2.24"), 3, "?")]
    text, code = combined(runs, "json")
    assert code == 3
    versions = json.loads(text)["versions"]
    assert [v["langgraph"] for v in versions] == ["1.1.10", "1.2.24"]
    assert versions[0]["report"] == {"a": 1} and "unreadable" in versions[1]["report"]


def test_the_installed_langgraph_is_one_the_recorder_records() -> None:
    assert compat.VERSION in SUPPORTED


@pytest.mark.slow
def test_an_app_at_an_older_langgraph_is_recorded_there_and_judged(tmp_path: Path) -> None:
    """LangGraph 1.0.10 and 1.1.10 (no task-status reader, interrupt ids without an answer
    count, no delta channels) record in environments of their own: the traces say which
    release ran, every fault-free cell of a subgraph app that asks conforms there, and the
    installed release runs beside them (0.6.11: make test-long, below)."""
    run = run_cli(
        "run", "langgraph", "--app", PUBLISHING, "--answer", '"ada"', "--scenarios", "fork",
        "--cells", "app.none.*", "--no-progress", "--format", "json",
        "--langgraph", f"1.0.10,1.1.10,{compat.VERSION}", "--out", tmp_path,
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    versions = run.json()["versions"]
    assert [v["langgraph"] for v in versions] == ["1.0.10", "1.1.10", str(compat.VERSION)]
    for entry in versions:
        cells = entry["report"]["details"]["cells"]
        assert sorted(c["durability"] for c in cells) == ["async", "exit", "sync"]
        for cell in cells:
            assert cell["tested"]["status"] == "conforms", cell
            header, _ = read_trace_file(Path(cell["tested"]["trace"]))
            assert header["runtime"]["version"] == entry["langgraph"]


@pytest.mark.long  # CI time: make test-long
def test_langgraph_0_6_is_recorded_and_its_time_travel_runs_the_old_checkpoint_again(
    tmp_path: Path,
) -> None:
    """LangGraph 0.6.11 (the loop's modules as in 1.0, the older side of every shim in
    `compat`, its own langgraph-checkpoint 3.0) records in an environment of its own: every
    fault-free cell of a subgraph app that asks conforms in each durability, and the trace
    says 0.6.11 ran. Time travel at 0.6 (as at 1.0) makes no fork copy: the loop runs the old
    checkpoint's task again on that checkpoint, where its result is stored -- PC, and no
    `fork` event in the trace."""
    run = run_cli(
        "run", "langgraph", "--app", PUBLISHING, "--answer", '"ada"', "--scenarios", "fork",
        "--cells", "app.none.*", "--cells", "app-fork-1.none.sync", "--no-progress",
        "--format", "json", "--langgraph", "0.6.11", "--out", tmp_path,
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    cells = {
        f"{c['scenario']}.{c['fault']}.{c['durability']}": c["tested"]
        for c in run.json()["details"]["cells"]
    }
    assert sorted(cells) == [
        "app-fork-1.none.sync", "app.none.async", "app.none.exit", "app.none.sync",
    ]  # fmt: skip
    for name, cell in cells.items():
        header, _ = read_trace_file(Path(cell["trace"]))
        assert header["runtime"]["version"] == "0.6.11"
        if name.startswith("app."):
            assert cell["status"] == "conforms", cell
    fork = cells["app-fork-1.none.sync"]
    assert fork["properties"] == ["PC"], run
    _, events = read_trace_file(Path(fork["trace"]))
    assert not [e for e in events if e["ev"] == "fork"]


@pytest.mark.slow
def test_a_node_that_asks_twice_at_an_older_release_conforms_and_its_bug_is_co(
    tmp_path: Path,
) -> None:
    """At 1.1.10 (no task-status reader) a task that asks twice holds its first answer in a
    `__resume__` write while its second question waits: the fault-free run conforms (it was a
    false CO when that write read as "answered"), and #8837 -- invoke(None) giving the second
    question the first answer -- is CO."""
    app = ROOT / "tests" / "fixtures" / "known_bugs" / "lg8837.py"
    run = run_cli(
        "run", "langgraph", "--app", f"{app}:make_graph", "--durability", "sync",
        "--scenarios", "invoke-none", "--cells", "app.none.sync",
        "--cells", "app-invoke-none-2.none.sync", "--no-progress", "--format", "json",
        "--langgraph", "1.1.10", "--out", tmp_path,
    )  # fmt: skip
    run.assert_no_traceback()
    cells = {
        f"{c['scenario']}.{c['fault']}.{c['durability']}": c["tested"]
        for c in run.json()["details"]["cells"]
    }
    assert cells["app.none.sync"]["status"] == "conforms", run
    assert cells["app-invoke-none-2.none.sync"]["properties"] == ["CO"], run
