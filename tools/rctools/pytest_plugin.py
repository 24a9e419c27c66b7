"""pytest plugin: the resume-check matrix on your checkpointer, one pytest test per cell.

Registered as the `resume_check` pytest11 entry point, so installing resume-check enables it.
A saver author marks a test with the factory and the part of the matrix to run:

    @pytest.mark.resume_check(saver=make_saver, scenarios=["chain"], kill_stride=4)
    def test_resume(resume_check_cell):
        pass

Every cell (scenario x fault x durability, and the API: `api="both"` drives a saver that has
both through `ainvoke` too, cells named `*.ainvoke`) becomes one test,
`test_resume[chain.kill-end-A_1.sync]`:
a saver finding fails it with the property, the event and the trace file; a runtime finding
(LangGraph breaks the cell on the reference saver too) is an xfail unless
`--resume-check-strict`. The body runs first and may look at the cell; the verdict is enforced
after it, so an empty body still fails a broken cell.

Why the matrix is planned at collection: which kill cells exist is known only after the
fault-free run of each scenario on *your* saver has counted its kill points, and pytest needs
the list of tests before it runs any. So the fault-free runs of each marker's settings are
recorded while pytest collects; the cells that `-k`, `-m` and node ids leave selected are
recorded and judged (one TLC run) when the first of their tests runs, and each test reports
its cell. `--collect-only` records nothing.

This module is imported by every pytest run in an environment that has resume-check, so it
imports nothing heavy until a test asks for a cell.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

MARKER = "resume_check"
FIXTURE = "resume_check_cell"
PLAIN_INTERVAL = 10.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("resume-check", "resume-check: the LangGraph checkpointer matrix")
    group.addoption(
        "--resume-check-saver",
        metavar="MODULE:FACTORY",
        help="the saver factory for tests whose resume_check marker names none",
    )
    group.addoption(
        "--resume-check-scenarios",
        metavar="A,B",
        help="comma-separated scenarios, instead of the marker's (default: every scenario)",
    )
    group.addoption(
        "--resume-check-durability",
        metavar="MODES",
        help="comma-separated durability modes: sync, async, exit (default: all three)",
    )
    group.addoption(
        "--resume-check-api",
        choices=("both", "sync", "async"),
        help="the saver API the graphs are driven through, instead of the marker's (default: "
        "both: a saver with both gets every cell twice, the second through ainvoke)",
    )
    group.addoption(
        "--resume-check-profile",
        choices=("quick", "pr", "full"),
        help="how much of the matrix, instead of the marker's (default: full): quick, every "
        "scenario fault-free in durability sync and one kill point of each kind in four "
        "scenarios; pr, every durability and two points of each kind; full, every point",
    )
    group.addoption(
        "--resume-check-kill-stride",
        metavar="N",
        type=int,
        help="SIGKILL at every N-th kill point, instead of the marker's (default: 1, every one)",
    )
    group.addoption(
        "--resume-check-no-reference",
        action="store_true",
        help="do not run cells on the reference saver: every failing cell then fails its test",
    )
    group.addoption(
        "--resume-check-strict",
        action="store_true",
        help="fail runtime findings too (cells LangGraph fails on the reference saver)",
    )
    group.addoption(
        "--resume-check-out",
        metavar="DIR",
        help="folder for the traces (default: .pytest_cache/d/resume-check, or a temporary one)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(saver, name=None, scenarios=None, durability=None, kill_stride=None, "
        "profile='full', reference=True, in_process=False, strict=False, api='both'): run the "
        "resume-check "
        "LangGraph matrix on the saver factory, one test per cell, for tests using the "
        f"{FIXTURE} fixture",
    )
    config.stash[_RUNS] = {}
    config.stash[_TEMPORARY] = []
    if getattr(config.option, "testrunuid", "absent") is None and _test_run(config) is None:
        # pytest-xdist's controller: fix the id its workers share now, so that the temporary
        # folder they record into (`_out_folder`) is known here to be removed at the end
        config.option.testrunuid = uuid.uuid4().hex


@dataclass(frozen=True)
class CellCase:
    """What one generated test checks: a cell of a planned matrix (recorded when the first
    of the selected tests runs), or why there is none."""

    name: str
    strict: bool
    batch: Any = None  # the _Batch of its matrix
    slug: str = ""
    error: str | None = None

    def check(self) -> None:
        """Fails (or xfails) the running test as the cell's finding says."""
        from rctools.saver_cells import Action, action, explain

        if self.error is not None:
            pytest.fail(f"resume-check: {self.error}", pytrace=False)
        outcome = self.outcome
        if outcome is None:
            problem = self.batch and self.batch.problem
            if problem:
                pytest.fail(f"resume-check: {problem}", pytrace=False)
            pytest.skip("resume-check: no cell recorded (--collect-only, or not selected)")
        what = action(outcome, self.strict)
        if what is Action.FAIL:
            pytest.fail(explain(outcome, self.name), pytrace=False)
        if what is Action.REPORT:
            pytest.xfail(explain(outcome, self.name))
        if what is Action.UNDECIDED:
            pytest.skip(explain(outcome, self.name))

    @property
    def outcome(self) -> Any:
        """The recorded cell (`rctools.saver_cells.CellOutcome`); asking for it records the
        cells selected with it, once, or None when they could not be recorded."""
        return None if self.batch is None else self.batch.outcome(self.slug)

    @property
    def cell(self) -> Any:
        """The matrix cell (`rctools.langgraph.matrix.Cell`): key, finding, both sides'
        runs and verdicts, for a test body that wants to look further."""
        outcome = self.outcome
        return None if outcome is None else outcome.cell

    @property
    def trace(self) -> Path | None:
        """The trace file of the saver under test."""
        outcome = self.outcome
        return None if outcome is None else Path(outcome.cell.tested.run.trace)


class _Batch:
    """The cells of one planned matrix that this pytest run selected: recorded and judged
    together (one TLC run) when the first of their tests runs; a cell asked for outside the
    selection (a worker of pytest-xdist, which collects everything) is recorded alone."""

    def __init__(self, planned: Any, say: _Say, strict: bool) -> None:
        self.planned = planned  # rctools.saver_cells.PlannedCells
        self.say = say
        self.strict = strict  # for summary.json's exit code
        self.selected: list[str] = []
        self.problem: str | None = None

    def outcome(self, slug: str) -> Any:
        from rctools.saver_cells import CellError

        if self.problem is not None:
            return None
        group = self.selected if slug in self.selected else [slug]
        try:
            if not self.planned.recorded(slug):
                name = self.planned.settings.name
                self.say(f"resume-check: recording {len(group)} cell(s) of {name}")
                self.planned.record(group)
            return self.planned.outcome(slug)
        except CellError as exc:
            self.problem = str(exc)
            return None


_RUNS = pytest.StashKey[dict[tuple[Any, ...], "_Batch | str"]]()
# The warm judge held from the first matrix planned to the end of the session.
_WARM = pytest.StashKey[contextlib.ExitStack]()
# The temporary folders this run recorded into (no --resume-check-out, no pytest cache).
_TEMPORARY = pytest.StashKey[list[Path]]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker(MARKER)
    config = metafunc.config
    try:
        settings, strict = _settings(marker, config)
    except _Misconfigured as exc:
        pytest.fail(f"{metafunc.definition.nodeid}: {exc}", pytrace=False)
    name = settings.name
    if config.option.collectonly or not _named_by_args(metafunc):
        cases = [CellCase(name, strict)]
        ids = ["not-recorded"]
    else:
        cases, ids = _cases(config, settings, strict)
    metafunc.parametrize(FIXTURE, cases, ids=ids, indirect=True)


@pytest.fixture
def resume_check_cell(request: pytest.FixtureRequest) -> CellCase:
    """One cell of the resume-check matrix (parametrized by the resume_check marker)."""
    if not hasattr(request, "param"):
        pytest.fail(
            f"{FIXTURE} needs @pytest.mark.{MARKER}(saver=...) on the test, or "
            "--resume-check-saver MODULE:FACTORY",
            pytrace=False,
        )
    case: CellCase = request.param
    return case


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """Runs the body, then enforces the cell's verdict; with no cell to look at (the matrix
    could not run, or nothing was recorded) the body does not run."""
    case = pyfuncitem.funcargs.get(FIXTURE)
    if isinstance(case, CellCase) and (case.error or case.outcome is None):
        case.check()
    result = yield
    if isinstance(case, CellCase):
        case.check()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A cell's test takes no time of its own (its cell was recorded during collection), so
    its report carries the cell's recording time: what JUnit's `time` should show."""
    report = yield
    case = getattr(item, "callspec", None) and item.callspec.params.get(FIXTURE)
    if report.when != "call" or not isinstance(case, CellCase):
        return report
    outcome = case.outcome
    if outcome is not None:
        report.duration = outcome.seconds
        # JUnit writes the item's properties with the teardown report
        item.user_properties.append(("resume_check_trace", str(case.trace)))
        item.user_properties.append(("resume_check_finding", outcome.finding))
    return report


def _named_by_args(metafunc: pytest.Metafunc) -> bool:
    """Whether the command line can select this test: a node id naming another function of
    the module (`test_x.py::test_other`) leaves it out, so its matrix is not recorded.
    (`-k` is applied only after collection, when the matrix has been recorded.)"""
    names = {metafunc.definition.originalname}
    if metafunc.cls is not None:
        names.add(metafunc.cls.__name__)
    for arg in metafunc.config.args:
        parts = [part.split("[", 1)[0] for part in str(arg).split("::")[1:]]
        if not parts or names & set(parts):
            return True
    return False


class _Misconfigured(Exception):
    """A marker or option that makes no sense; reported as a collection error."""


def _settings(marker: pytest.Mark | None, config: pytest.Config) -> tuple[Any, bool]:
    """The marker's arguments with the command line's options over them."""
    from rctools.saver_cells import (
        CellError,
        Saver,
        Settings,
        as_factory,
        check_settings,
        resolve_factory,
    )

    kwargs = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        kwargs.setdefault("saver", marker.args[0])
    allowed = {
        "saver",
        "name",
        "scenarios",
        "durability",
        "kill_stride",
        "profile",
        "reference",
        "in_process",
        "strict",
        "api",
    }
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise _Misconfigured(f"{MARKER} marker: unknown argument(s) {', '.join(unknown)}")
    saver = kwargs.get("saver") or config.getoption("--resume-check-saver")
    if not saver:
        raise _Misconfigured(
            f"no saver: give @pytest.mark.{MARKER}(saver=factory) or --resume-check-saver"
        )
    try:
        given = Saver(resolve_factory(saver)) if isinstance(saver, str) else as_factory(saver)
    except CellError as exc:
        raise _Misconfigured(str(exc)) from None
    from rctools.langgraph.profiles import DEFAULT, PROFILES

    name = str(config.getoption("--resume-check-profile") or kwargs.get("profile") or DEFAULT)
    if name not in PROFILES:
        raise _Misconfigured(f"{MARKER} marker: profile takes {', '.join(PROFILES)}, not {name!r}")
    profile = PROFILES[name]
    scenarios = _names(config.getoption("--resume-check-scenarios")) or _names(
        kwargs.get("scenarios")
    )
    durability = _names(config.getoption("--resume-check-durability")) or _names(
        kwargs.get("durability")
    )
    stride = config.getoption("--resume-check-kill-stride") or kwargs.get("kill_stride")
    settings = Settings(
        factory=given.factory,
        name=str(kwargs.get("name") or given.name or _name_of(saver)),
        scenarios=scenarios or profile.scenarios,
        durabilities=durability or profile.durabilities,
        kill_stride=int(stride or 1),
        per_kind=0 if stride else profile.per_kind,
        killed=None if scenarios else profile.killed,
        faulted=None if durability else profile.faulted,
        reference=bool(kwargs.get("reference", True))
        and not config.getoption("--resume-check-no-reference"),
        in_process=bool(kwargs.get("in_process", False)),
        lifespan=given.lifespan,
        api=str(config.getoption("--resume-check-api") or kwargs.get("api", "both")),
    )
    try:
        check_settings(settings)
    except CellError as exc:
        raise _Misconfigured(str(exc)) from None
    strict = bool(kwargs.get("strict", False)) or bool(config.getoption("--resume-check-strict"))
    return settings, strict


def _names(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(item).strip() for item in items if str(item).strip())


def _name_of(saver: Any) -> str:
    if isinstance(saver, str):
        return saver
    module = getattr(saver, "__module__", None) or "factory"
    return f"{module}:{getattr(saver, '__qualname__', type(saver).__name__)}"


def _cases(config: pytest.Config, settings: Any, strict: bool) -> tuple[list[CellCase], list[str]]:
    """The matrix of these settings, planned once per session however many tests use it:
    its fault-free runs are recorded now, to name its cells; the cells are recorded when
    their tests run (`_Batch`), only those selected."""
    from rctools.saver_cells import CellError, PlannedCells

    runs = config.stash[_RUNS]
    key = (settings,)
    if key not in runs:
        _hold_warm_judge(config)
        out = _out_folder(config, settings)
        say = _Say(config)
        say(f"resume-check: planning the matrix of {settings.name} (its fault-free runs) in {out}")
        started = time.monotonic()
        planned = PlannedCells(settings, out, say.progress)
        try:
            runs[key] = _Batch(planned.plan(_test_run(config)), say, strict)
            say(
                f"resume-check: {settings.name}: {len(planned.slugs)} cells planned in "
                f"{time.monotonic() - started:.0f} s"
                + (f"; left out: {planned.left_out}" if planned.left_out else "")
            )
        except CellError as exc:
            planned.close()
            runs[key] = str(exc)
            say(f"resume-check: {settings.name}: could not run: {exc}")
    found = runs[key]
    if isinstance(found, str):
        return [CellCase(settings.name, strict, error=found)], ["matrix"]
    slugs = found.planned.slugs
    return [CellCase(settings.name, strict, found, slug) for slug in slugs], slugs


def _hold_warm_judge(config: pytest.Config) -> None:
    """From the first matrix on, every judge call of this session runs TLC in warm drivers
    (`resumecheck.judge.warm`): a session judges again and again (each matrix's fault-free
    runs, its cells, the reference's), and each call would otherwise pay a JVM's start, TLC's
    class loading and SANY's compiling. Not before: a session without a matrix starts none."""
    if _WARM in config.stash:
        return
    from resumecheck.judge import warm

    stack = contextlib.ExitStack()
    stack.enter_context(warm())
    config.stash[_WARM] = stack


def pytest_unconfigure(config: pytest.Config) -> None:
    """Ends the warm judge's drivers, if the session held them."""
    stack = config.stash.get(_WARM, None)
    if stack is not None:
        del config.stash[_WARM]
        stack.close()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once `-k`, `-m`, node ids and `--lf` have chosen (so before anything is recorded): the
    cells of each matrix that are selected, recorded together when the first of them runs. A
    worker of pytest-xdist collects every test but runs only those sent to it: it records
    each cell when its test runs."""
    if hasattr(session.config, "workerinput"):
        return
    for item in session.items:
        case = getattr(item, "callspec", None) and item.callspec.params.get(FIXTURE)
        if isinstance(case, CellCase) and case.batch is not None:
            case.batch.selected.append(case.slug)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Writes each matrix's summary.json beside its traces (not in a pytest-xdist worker,
    which recorded only some of the cells), and ends each saver's lifespan (opened when its
    matrix was planned)."""
    config = session.config
    for found in config.stash.get(_RUNS, {}).values():
        if not isinstance(found, _Batch):
            continue
        try:
            if _test_run(config) is None:
                found.planned.write_summary(found.strict)
        finally:
            found.planned.close()
    _leave_no_temporary_folder(session)


def _leave_no_temporary_folder(session: pytest.Session) -> None:
    """A temporary folder (`-p no:cacheprovider` without --resume-check-out) is removed when
    every test passed: nothing in it is pointed at. After a failure it stays, and the
    terminal says where: the failures' messages name its traces. Under pytest-xdist the
    controller does it, once its workers are done (they share one folder)."""
    config = session.config
    if _test_run(config) is not None or config.getoption("--resume-check-out"):
        return
    folders = list(config.stash.get(_TEMPORARY, []))
    uid = getattr(config.option, "testrunuid", None)
    if uid and getattr(config, "cache", None) is None:
        folders.append(Path(tempfile.gettempdir()) / f"resume-check-pytest-{uid}")
    folders = [f for f in folders if f.is_dir()]
    if session.testsfailed:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        for folder in folders:
            if reporter is not None:
                reporter.write_line(f"resume-check: traces kept in {folder}")
        return
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def _out_folder(config: pytest.Config, settings: Any) -> Path:
    """One folder per settings: --resume-check-out, the pytest cache, or a temporary one.
    Named after the saver, with a digest of the plan so two markers never share one."""
    from rctools.langgraph.matrix import folder_name

    given = config.getoption("--resume-check-out")
    run = _test_run(config)
    if given:
        base = Path(given)
    elif getattr(config, "cache", None) is not None:
        base = Path(config.cache.mkdir("resume-check"))
    elif run is not None:  # the workers of one pytest-xdist run share it
        base = Path(tempfile.gettempdir()) / f"resume-check-pytest-{run}"
    else:
        base = Path(tempfile.mkdtemp(prefix="resume-check-pytest-"))
        config.stash.setdefault(_TEMPORARY, []).append(base)
    plan = repr(replace(settings, factory=None)).encode()
    return base.resolve() / f"{folder_name(settings.name)}-{hashlib.sha1(plan).hexdigest()[:8]}"


def _test_run(config: pytest.Config) -> str | None:
    """What the workers of one pytest-xdist run have in common (None outside xdist): they
    plan each matrix once between them (`PlannedCells.plan`)."""
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else str(workerinput["testrunuid"])


class _Say:
    """Lines on the terminal while the matrix records (pytest captures stderr during
    collection): a start line, a plain progress line every PLAIN_INTERVAL seconds, an end."""

    def __init__(self, config: pytest.Config) -> None:
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.capture = config.pluginmanager.get_plugin("capturemanager")
        self.shown = time.monotonic()

    def __call__(self, text: str) -> None:
        if self.reporter is None:
            return
        if self.capture is None:
            self.reporter.write_line(text)
            return
        with self.capture.global_and_fixture_disabled():  # collection runs captured
            self.reporter.write_line(text)

    def progress(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if now - self.shown >= PLAIN_INTERVAL:
            self.shown = now
            self(f"resume-check: {done}/{total} {what}")
