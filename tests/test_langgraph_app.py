"""Your own graph: `resume-check run langgraph --app MODULE:FACTORY` and `record_run`, on
apps the project has never seen (tests/fixtures/apps, written as a user writes them: plain
`interrupt()`, no project import), on real LangGraph, real SQLite files and real SIGKILLs.

The matrix plans an app from its fault-free run (its interrupts, its checkpoints): every
fault-free run of the app itself must conform, every killed cell must be judged, no cell may
be invalid or fail to run.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import JOBS, ROOT, invoke, run_cli

pytestmark = pytest.mark.slow

APPS = ROOT / "tests" / "fixtures" / "apps"
DOCS = ROOT / "docs" / "langgraph.md"


def _app_matrix(tmp_path: Path, app: str, *options: str) -> tuple[int, dict[str, Any]]:
    run = run_cli(
        "run", "langgraph", "--app", app, *options, "--format", "json", "--no-progress",
        *JOBS, "--out", tmp_path,
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode in (0, 1), run
    return run.returncode, run.json()


def _cells(document: dict[str, Any], scenario: str | None = None) -> list[dict[str, Any]]:
    return [
        c for c in document["details"]["cells"] if scenario is None or c["scenario"] == scenario
    ]


# (app, options, interrupts its fault-free run parks at). `make test` runs a slice that covers
# the three kinds of program (a graph: a router; the functional API, with parallel tasks and
# interrupts in tasks and in the entrypoint; an agent LangChain's create_agent builds); the
# others are minutes more of the same machinery and run under `make test-long` (Send map-reduce
# goes through `make test` on two savers below).
LONG = pytest.mark.long
LC_INPUT = '{"messages": [{"role": "user", "content": "refund order 42"}]}'
APPS_SEEN_NEVER = [
    # a ReAct loop: scripted chat model, ToolNode with a real tool, a human approval inside
    pytest.param(
        f"{APPS / 'support_agent.py'}:make_graph", ["--input", '{"messages": []}'], 2, marks=LONG
    ),
    # a router, no interrupt: the plan has no concurrent or invoke(None) cells
    (f"{APPS / 'triage.py'}:build", ["--input", '{"text": "my card was charged twice"}'], 0),
    # Send map-reduce, then a review that asks
    pytest.param(
        f"{APPS / 'research.py'}:make_graph",
        ["--input", '{"question": "why are skies blue"}'],
        1,
        marks=LONG,
    ),
    # a compiled subgraph whose node calls interrupt(), answered with a string
    pytest.param(f"{APPS / 'publishing.py'}:make_graph", ["--answer", '"ada"'], 1, marks=LONG),
    # the same subgraph compiled with checkpointer=True: its namespace has no task id
    pytest.param(
        f"{APPS / 'publishing.py'}:make_persistent_graph", ["--answer", '"ada"'], 1, marks=LONG
    ),
    # parallel Send tasks that each ask: several interrupts at once, a map resume
    pytest.param(f"{APPS / 'parallel_review.py'}:make_graph", [], 1, marks=LONG),
    # the functional API: an @entrypoint whose @task calls run in parallel, a task that calls
    # a task, an interrupt inside a task and one in the entrypoint
    (f"{APPS / 'drafting.py'}:make_workflow", ["--input", '{"queries": ["tides"]}'], 2),
    # LangChain's create_agent: a model node, a tools node fed by Send, the approval
    # middleware's node that parks (HumanInTheLoopMiddleware) -- no LangGraph code of the user's
    (
        f"{APPS / 'lc_agent.py'}:build",
        ["--input", LC_INPUT, "--answer", '{"decisions": [{"type": "approve"}]}'],
        1,
    ),
    # a node whose error handler runs when it raises (a task no checkpoint schedules)
    pytest.param(
        f"{APPS / 'payments.py'}:make_graph", ["--input", '{"item": "lamp"}'], 1, marks=LONG
    ),
    # async nodes only (Send fan-out, an interrupt): driven through ainvoke on AsyncSqliteSaver
    pytest.param(
        f"{APPS / 'async_assistant.py'}:make_graph",
        ["--input", '{"question": "tidal power"}'],
        1,
        marks=LONG,
    ),
]


def _app_id(case: Any) -> str:
    app = case.values[0] if hasattr(case, "values") else case[0]
    return str(app).split("/")[-1]


@pytest.mark.parametrize(
    ("app", "options", "parks"), APPS_SEEN_NEVER, ids=[_app_id(a) for a in APPS_SEEN_NEVER]
)
def test_an_app_never_seen_goes_through_the_whole_matrix(
    tmp_path: Path, app: str, options: list[str], parks: int
) -> None:
    code, document = _app_matrix(tmp_path, app, *options, "--kill-stride", "10")
    assert code == 0  # on the reference saver itself nothing is the saver's
    clean = [c for c in _cells(document, "app") if c["fault"] == "none"]
    assert sorted(c["durability"] for c in clean) == ["async", "exit", "sync"]
    for cell in clean:
        assert cell["tested"]["status"] == "conforms", cell
    kills = [c for c in document["details"]["cells"] if c["fault"].startswith("kill")]
    assert kills and {c["scenario"] for c in kills} == {"app"}
    for cell in document["details"]["cells"]:
        assert cell["tested"]["status"] in ("conforms", "violates"), cell
    for cell in kills:
        trace = Path(cell["tested"]["trace"]).read_text(encoding="utf-8")
        assert '"ev": "crash"' in trace or '"ev": "load"' in trace
    names = {c["scenario"] for c in document["details"]["cells"]}
    for k in range(1, parks + 1):
        kinds = ("concurrent", "invoke-none", "pinned", "head", "answer-again")
        assert {f"app-{kind}-{k}" for kind in kinds} <= names
    assert not any(n.startswith("app-concurrent") for n in names if parks == 0)
    assert "app-fork-0" in names


def test_the_plan_follows_the_fault_free_run(tmp_path: Path) -> None:
    """One fork per checkpoint of the thread but the latest, one cell per interrupt."""
    _, document = _app_matrix(
        tmp_path, f"{APPS / 'research.py'}:make_graph", "--durability", "sync",
        "--scenarios", "fork,concurrent,invoke-none,update-older",
    )  # fmt: skip
    names = sorted(c["scenario"] for c in document["details"]["cells"])
    clean = next(c for c in document["details"]["cells"] if c["scenario"] == "app")
    checkpoints = _checkpoints_of(Path(clean["tested"]["trace"]))
    forks = [n for n in names if n.startswith("app-fork-")]
    assert len(forks) == checkpoints - 1
    assert "app-update-older" in names
    # (a concurrent scenario has two cells: `none` and `race`, its calls not serialized)
    assert [n for n in sorted(set(names)) if "concurrent" in n or "invoke-none" in n] == [
        "app-concurrent-1",
        "app-invoke-none-1",
    ]
    fork = next(c for c in document["details"]["cells"] if c["scenario"] == "app-fork-1")
    events = _events(Path(fork["tested"]["trace"]))
    assert sum(e["ev"] == "fork" for e in events) == 1
    update = next(c for c in document["details"]["cells"] if c["scenario"] == "app-update-older")
    assert sum(e["ev"] == "update" for e in _events(Path(update["tested"]["trace"]))) == 1


def test_time_travel_into_a_subgraph_is_planned_per_nested_checkpoint(tmp_path: Path) -> None:
    """One `app-subfork-I` per checkpoint inside a subgraph that schedules a task: the cell
    asks LangGraph to continue from inside the subgraph, and the recorded run forks the parent
    and runs the subgraph's task again (a nested load)."""
    _, document = _app_matrix(
        tmp_path, f"{APPS / 'publishing.py'}:make_graph", "--answer", '"ada"',
        "--durability", "async", "--scenarios", "subfork",
    )  # fmt: skip
    cells = document["details"]["cells"]
    clean = next(c for c in cells if c["scenario"] == "app")
    events = _events(Path(clean["tested"]["trace"]))
    stored = {e["checkpoint"] for e in events if e["ev"] == "put"}
    scheduling = {
        e["checkpoint"] for e in events if e["ev"] == "schedule" and e.get("ns") and e["tasks"]
    }
    subforks = sorted(c["scenario"] for c in cells if c["scenario"].startswith("app-subfork-"))
    assert subforks == [f"app-subfork-{i}" for i in range(len(scheduling & stored))] != []
    for cell in (c for c in cells if c["scenario"].startswith("app-subfork-")):
        assert cell["tested"]["status"] in ("conforms", "violates"), cell
        after = _events(Path(cell["tested"]["trace"]))
        last = max(i for i, e in enumerate(after) if e["ev"] == "finish" and e["proc"] == "w2")
        later = [e["ev"] for e in after[last + 1 :]]
        assert "fork" in later and any(
            e["ev"] == "load" and e.get("nested") for e in after[last + 1 :]
        ), later


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def _checkpoints_of(trace: Path) -> int:
    """The top chain's checkpoints stored by the fault-free run."""
    events = _events(trace)
    top = {e["checkpoint"] for e in events if e["ev"] in ("step", "fork") and not e.get("ns")}
    return len(top & {e["checkpoint"] for e in events if e["ev"] == "put"})


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("nowhere/app.py:make", [], "no such file"),
        (f"{APPS / 'triage.py'}:nothing", [], "has no callable 'nothing'"),
        (f"{APPS / 'triage.py'}", [], "takes MODULE:FACTORY"),
        ("not_a_module_anywhere:make", [], "importing 'not_a_module_anywhere' failed"),
        (f"{APPS / 'triage.py'}:build", ["--answer", "{yes"], "--answer takes a JSON value"),
        (f"{APPS / 'triage.py'}:build", ["--input", "[1,"], "--input takes a JSON value"),
        (f"{APPS / 'triage.py'}:build", ["--answer", "null"], "--answer null is no answer"),
        (f"{APPS / 'triage.py'}:build", ["--scenarios", "chain"], "with --app, --scenarios"),
        (f"{APPS / 'triage.py'}:build", ["--backend", "sqlite", "--saver", "x:y"], "exactly one"),
    ],
)
def test_a_bad_app_option_is_a_clear_error_and_exit_2(
    tmp_path: Path, spec: str, options: list[str], message: str
) -> None:
    run = invoke("run", "langgraph", "--app", spec, *options, "--out", tmp_path / "out")
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert message in run.stderr, run


def test_an_app_that_is_not_a_compiled_graph_is_a_clear_error(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "uncompiled.py",
        """
        from langgraph.graph import StateGraph, START, END
        from typing import TypedDict

        class S(TypedDict):
            x: int

        def make(checkpointer):
            g = StateGraph(S)
            g.add_node("a", lambda s: {"x": 1})
            g.add_edge(START, "a")
            g.add_edge("a", END)
            return g  # forgot to compile

        def broken(checkpointer):
            raise RuntimeError("no model key configured")
        """,
    )
    for attr, message in (("make", "not a compiled graph"), ("broken", "no model key")):
        run = run_cli("run", "langgraph", "--app", f"uncompiled:{attr}", "--out", tmp_path / "o",
                      cwd=tmp_path)  # fmt: skip
        run.assert_no_traceback()
        assert run.returncode == 2, run
        assert message in run.stderr, run


ASYNC_FLOW = """
from langgraph.func import entrypoint, task
from langgraph.types import interrupt

@task
async def fetch(topic):
    return f"notes on {topic}"

def make(checkpointer):
    @entrypoint(checkpointer=checkpointer)
    async def flow(inputs):
        notes = await fetch(inputs.get("topic", "tides"))
        return {"notes": notes, "ok": interrupt("publish?")}
    return flow
"""


@pytest.mark.parametrize(
    "options",
    [["--backend", "sqlite"], ["--api", "sync"]],
    ids=["sync-only-saver", "api-sync"],
)
def test_an_async_app_where_only_the_sync_api_runs_is_refused_up_front(
    tmp_path: Path, options: list[str]
) -> None:
    """LangGraph runs an `async def` entrypoint only through `ainvoke`: on a saver without
    the async API, or with `--api sync`, every invocation would fail, and a thread that never
    ran says nothing. It is said before anything runs, with the node named."""
    _write(tmp_path, "asyncflow.py", ASYNC_FLOW)
    run = run_cli("run", "langgraph", "--app", "asyncflow:make", *options, "--out", tmp_path / "o",
                  cwd=tmp_path)  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert "node(s) flow are async def only" in run.stderr, run
    assert not list((tmp_path / "o").rglob("*.jsonl")), "nothing is recorded"


@pytest.mark.parametrize("backend", [[], ["--backend", "memory"]], ids=["default", "memory"])
def test_an_async_app_runs_through_ainvoke_on_both_sides(
    tmp_path: Path, backend: list[str]
) -> None:
    """An app of async nodes (a graph: Send fan-out, an interrupt) and async functional-API
    entrypoints (one whose parallel tasks ask) run unchanged: every cell through `ainvoke` on
    the saver's async API (by default LangGraph's AsyncSqliteSaver, then its own reference;
    in one process on the in-memory saver), the fault-free runs conform, none is invalid or
    fails to run."""
    _write(tmp_path, "asyncflow.py", ASYNC_FLOW)
    apps = [
        (f"{APPS / 'async_assistant.py'}:make_graph", ["--input", '{"question": "tidal power"}']),
        ("asyncflow:make", []),
        # parallel @task calls that ask: LangGraph waits for an interrupt get_state omits
        (f"{APPS / 'async_drafting.py'}:make_workflow", []),
    ]
    for index, (app, options) in enumerate(apps):
        run = run_cli(
            "run", "langgraph", "--app", app, *options, *backend, "--scenarios", "app",
            "--durability", "sync", "--kill-stride", "1000", "--no-kill-inside",
            "--format", "json", "--no-progress", "--out", tmp_path / f"o{index}", cwd=tmp_path,
        )  # fmt: skip
        run.assert_no_traceback()
        assert run.returncode == 0, run
        cells = _cells(run.json())
        assert cells and all(c["api"] == "async" for c in cells), cells
        assert all(c["finding"] in ("conforms", "runtime") for c in cells), cells
        (clean,) = [c for c in cells if c["scenario"] == "app" and c["fault"] == "none"]
        assert clean["tested"]["status"] == "conforms", clean
        assert clean["tested"]["trace"].endswith(".ainvoke.jsonl"), clean


def test_every_interrupt_gets_an_answer_of_its_own_by_default(tmp_path: Path) -> None:
    """Two interrupts answered by one process get two values: an answer delivered to the
    wrong interrupt, or delivered again, then carries a value never answered to it."""
    code, document = _app_matrix(
        tmp_path, f"{APPS / 'drafting.py'}:make_workflow", "--scenarios", "app",
        "--durability", "sync", "--no-kill-inside", "--kill-stride", "1000",
    )  # fmt: skip
    assert code == 0
    (clean,) = [c for c in _cells(document, "app") if c["fault"] == "none"]
    assert clean["tested"]["status"] == "conforms", clean
    lines = Path(clean["tested"]["trace"]).read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines[1:]]
    answers = {(e["interrupt"], e["value"]) for e in events if e["ev"] == "resume"}
    assert len(answers) == 2 and len({v for _, v in answers}) == 2, answers
    called = [e for e in events if e["ev"] == "task_start" and e.get("by")]
    assert {e["node"] for e in called} == {"search", "summarize", "review"}, called
    assert json.loads(lines[0])["graph"]["open"] is True


def test_an_error_handler_is_recorded_as_made_by_the_task_that_failed(tmp_path: Path) -> None:
    """The handler LangGraph runs when `charge` raises is a task_start whose `by` is the
    failed task, and the run that completes on its result conforms."""
    code, document = _app_matrix(
        tmp_path, f"{APPS / 'payments.py'}:make_graph", "--input", '{"item": "lamp"}',
        "--scenarios", "app", "--durability", "sync", "--no-kill-inside", "--kill-stride", "1000",
    )  # fmt: skip
    assert code == 0
    (clean,) = [c for c in _cells(document, "app") if c["fault"] == "none"]
    assert clean["tested"]["status"] == "conforms", clean
    events = _events(Path(clean["tested"]["trace"]))
    failed = {e["task"] for e in events if e["ev"] == "task_end" and e["outcome"] == "error"}
    handlers = [e for e in events if e["ev"] == "task_start" and e.get("by")]
    assert [e["node"] for e in handlers] == ["__error_handler__charge"], handlers
    assert handlers[0]["by"] in failed


class Point(NamedTuple):
    x: int
    y: int


def test_a_named_tuple_in_the_state_is_hashed_by_its_fields() -> None:
    """A NamedTuple value (a `DeltaChannel`'s snapshot is one) hashes like any other: it was
    rebuilt from one iterable, so recording such an app failed ("not msgpack serializable")."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from rctools.langgraph.observe import digest

    def of(value: Any) -> str | None:
        return digest({"channel_values": {"p": value}}, JsonPlusSerializer())

    assert of(Point(1, 2)) == of(Point(1, 2)) != of(Point(2, 1))


def test_an_app_whose_state_is_a_delta_channel_conforms_through_time_travel(
    tmp_path: Path,
) -> None:
    """A `DeltaChannel` is stored as replayable writes with a snapshot now and then, and a fork
    copy is made with a forced snapshot of it: its stored form differs from its source's while
    its state does not. Recorded (its snapshot once failed to hash) and judged like any other
    state, the forks conform (async durability: sync forks are a known runtime finding)."""
    code, document = _app_matrix(
        tmp_path, f"{APPS / 'chat_log.py'}:make_graph", "--input", '{"question": "open?"}',
        "--scenarios", "app,fork", "--durability", "async", "--no-kill-inside",
        "--kill-stride", "1000",
    )  # fmt: skip
    cells = _cells(document)
    assert {c["scenario"] for c in cells} >= {"app", "app-fork-1", "app-fork-2"}, cells
    assert all(c["tested"]["status"] == "conforms" for c in cells), cells
    assert code == 0
    store = [c["tested"]["trace"] for c in cells if c["scenario"] == "app-fork-1"]
    forks = [e for e in _events(Path(store[0])) if e["ev"] == "fork"]
    assert forks and all(e["digest"] for e in forks), forks


def test_input_and_answer_need_an_app(tmp_path: Path) -> None:
    run = invoke("run", "langgraph", "--backend", "sqlite", "--answer", "1", "--out", tmp_path)
    assert run.returncode == 2 and "go with --app" in run.stderr, run


def test_a_dotted_module_in_the_current_folder_is_an_app(tmp_path: Path) -> None:
    """MODULE may be a dotted name importable from the current folder (a package of the
    user's project), not only a file path."""
    package = tmp_path / "myproj"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "graph.py").write_text((APPS / "triage.py").read_text("utf-8"), encoding="utf-8")
    run = run_cli(
        "run", "langgraph", "--app", "myproj.graph:build", "--durability", "sync",
        "--scenarios", "fork", "--format", "json", "--no-progress", "--out", tmp_path / "out",
        cwd=tmp_path,
    )  # fmt: skip
    run.assert_no_traceback()
    assert run.returncode == 0, run
    clean = next(c for c in run.json()["details"]["cells"] if c["scenario"] == "app")
    assert clean["tested"]["status"] == "conforms"


def test_arecord_run_records_an_async_app_through_ainvoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`arecord_run`: an app of async nodes (Send fan-out, an interrupt), answered to the end
    on AsyncSqliteSaver, conforms."""
    import asyncio
    import importlib

    from rctools.langgraph import arecord_run
    from resumecheck.contract import default_spec_paths
    from resumecheck.judge import judge

    monkeypatch.syspath_prepend(str(APPS))
    module = importlib.import_module("async_assistant")
    trace = asyncio.run(
        arecord_run(
            module.make_graph, {"question": "tidal power"}, answers=["yes"],
            out=tmp_path / "run.jsonl",
        )
    )  # fmt: skip
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["backend"] == "AsyncSqliteSaver"
    assert [e["ev"] for e in lines[1:]].count("finish") == 2  # asked, then answered
    assert sum(e.get("node") == "look_up" for e in lines if e.get("ev") == "task_start") == 2
    [verdict] = judge([trace], spec_paths=default_spec_paths())
    assert verdict.status.value == "conforms", verdict.reason


def _doc_example() -> str:
    """The record_run example of docs/langgraph.md (the block after its marker)."""
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(r"<!-- example: record_run -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert found, "docs/langgraph.md lost its record_run example"
    return found.group(1)


def test_the_docs_record_run_example_runs_and_conforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example in docs/langgraph.md, executed as written (in a fresh folder, with the
    fixture apps importable as the user's own module): it asserts its own verdict."""
    code = _doc_example()
    assert len(code.strip().splitlines()) <= 20
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(APPS))
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(code, str(DOCS), "exec"), namespace)
    assert Path(namespace["trace"]).is_file()


def test_record_run_answers_several_interrupts_at_once_with_a_map_resume(tmp_path: Path) -> None:
    """Parallel tasks that each ask: the answers go through one map resume, each is written
    as an answer to its own interrupt (equal values, different interrupts), and counts as
    stored once the task that received it has its write acknowledged."""
    import sys

    from rctools.langgraph import record_run
    from resumecheck.contract import default_spec_paths
    from resumecheck.judge import judge

    sys.path.insert(0, str(APPS))
    try:
        from parallel_review import make_graph
    finally:
        sys.path.remove(str(APPS))
    trace = record_run(make_graph, {"reviewers": ["ana", "bo", "cy"]}, answers=["yes"],
                       out=tmp_path / "run.jsonl")  # fmt: skip
    [verdict] = judge([trace], spec_paths=default_spec_paths())
    assert verdict.status.value == "conforms", verdict.reason
    events = _events(trace)
    resumes = [e for e in events if e["ev"] == "resume"]
    assert len(resumes) == 3 and len({e["interrupt"] for e in resumes}) == 3
    assert len({e["value"] for e in resumes}) == 1
    assert any(e["ev"] == "put_writes" and e["task"] is None for e in events)


def _on_savers(
    tmp_path: Path, app: str, savers: tuple[str, ...], *options: str
) -> dict[str, tuple[int, dict[str, Any]]]:
    """The app's matrix on each zoo saver (tests/fixtures/broken_savers.py) through the sync
    API: saver -> (exit code, JSON report)."""
    env = {"PYTHONPATH": str(ROOT / "tests" / "fixtures")}
    found = {}
    for saver in savers:
        run = run_cli(
            "run", "langgraph", "--app", app, "--saver", f"broken_savers:{saver}", *options,
            "--api", "sync", "--format", "json", "--no-progress", *JOBS,
            "--out", tmp_path / saver, env=env,
        )  # fmt: skip
        run.assert_no_traceback()
        found[saver] = (run.returncode, run.json())
    return found


def test_an_app_on_a_broken_saver_is_a_saver_finding_and_on_a_correct_one_is_not(
    tmp_path: Path,
) -> None:
    """With --saver, every cell of the app's plan runs on that saver and on the reference: a
    saver that returns the parent of the latest checkpoint breaks the app's resume (CV) where
    SqliteSaver does not; LangGraph's own saver behind the same factory contract has none."""
    found = _on_savers(
        tmp_path, f"{APPS / 'research.py'}:make_graph", ("parent_as_latest", "correct_sqlite"),
        "--durability", "sync", "--scenarios", "fork", "--kill-stride", "1000",
        "--cells", "app.*", "--cells", "app-fork-1.*",
    )  # fmt: skip
    code, document = found["parent_as_latest"]
    assert code == 1
    saver_cells = [c for c in document["details"]["cells"] if c["finding"] == "saver"]
    assert saver_cells and all("CV" in c["tested"]["properties"] for c in saver_cells)
    code, document = found["correct_sqlite"]
    assert code == 0 and document["details"]["counts"]["saver"] == 0


def test_a_saver_whose_list_ignores_before_is_a_saver_finding(tmp_path: Path) -> None:
    """Time travel that replays a subgraph compiled with checkpointer=True loads the
    subgraph's checkpoint with `list(before=<replayed parent checkpoint>, limit=1)`: the load
    records that request (`before`), so a saver that drops the bound returns a later
    checkpoint and is CV, where LangGraph's own saver conforms (it was CV on every saver while
    the recorder wrote the request as a load of the latest)."""
    found = _on_savers(
        tmp_path, f"{APPS / 'publishing.py'}:make_persistent_graph",
        ("list_ignores_before", "correct_sqlite"),
        "--durability", "async", "--scenarios", "fork", "--cells", "app-fork-0.*",
        "--answer", '"ada"',
    )  # fmt: skip
    code, document = found["list_ignores_before"]
    assert code == 1
    (cell,) = [c for c in _cells(document) if c["scenario"] == "app-fork-0"]
    assert cell["finding"] == "saver" and cell["tested"]["properties"] == ["CV"], cell
    assert cell["reference"]["status"] == "conforms", cell
    at = int(re.search(r"at event (\d+)", cell["tested"]["verdict"]).group(1))
    lines = Path(cell["tested"]["trace"]).read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[at])  # line 0 is the header
    assert bad["ev"] == "load" and bad["nested"] and bad["before"] is not None, bad
    code, document = found["correct_sqlite"]
    assert code == 0 and document["details"]["counts"]["saver"] == 0
    assert all(c["tested"]["status"] == "conforms" for c in _cells(document, "app-fork-0"))
