"""Whose fault a break is, property by property, on traces with known verdicts (real TLC, no
LangGraph run): what the reference breaks is set aside and what the tested saver breaks beyond
it shows; the runner checks END, STATE and VALID; the exit code and the JUnit cells.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import CORPORA, TRACES, write_co_then_cv
from rctools.langgraph.attribution import (
    END,
    STATE,
    UNMATCHED,
    Judgments,
    end_checks,
    reference_breaks,
    saver_breaks,
)
from rctools.langgraph.driver import CellRun
from rctools.langgraph.final import FinalState, digest
from rctools.langgraph.killpoints import KillPoint
from rctools.langgraph.matrix import (
    RACE,
    Cell,
    CellKey,
    Matrix,
    Side,
    _attribute,
    _judge,
    to_json,
)
from rctools.langgraph.report import junit_report, matrix_exit_code, render_text
from rctools.saver_cells import CellOutcome, explain
from resumecheck.contract import default_spec_paths
from resumecheck.report import Invocation

CO_TRACE = TRACES / "core" / "co-answer-of-other-task.jsonl"  # CO at event 16
STORE = frozenset({"CV"})  # ResumeCore's StoreProperties
CONFORMS = TRACES / "core" / "ok-crash-resume.jsonl"


@pytest.fixture(scope="module")
def co_then_cv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CO at event 16, then a load of content the store never held: CV at event 18."""
    return write_co_then_cv(tmp_path_factory.mktemp("attr") / "co-then-cv.jsonl")


def _extended(tmp_path_factory: pytest.TempPathFactory, name: str, extra: list[dict]) -> Path:
    lines = CO_TRACE.read_text(encoding="utf-8").splitlines()[:17]  # up to the CO at event 16
    trace = tmp_path_factory.mktemp("attr") / f"{name}.jsonl"
    trace.write_text("\n".join([*lines, *map(json.dumps, extra)]) + "\n", encoding="utf-8")
    return trace


FINISH_DONE = {"ev": "finish", "proc": "w2", "outcome": "done"}  # with work unsaved: PC
WRONG_LOAD = {
    "ev": "load", "proc": "w3", "thread": "t1", "asked": None, "checkpoint": "c0",
    "parent": None, "digest": "not-what-was-put", "writes": [], "answers": [],
}  # fmt: skip


@pytest.fixture(scope="module")
def co_then_pc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CO at event 16, then a return claiming done with work unsaved: PC at event 17."""
    return _extended(tmp_path_factory, "co-then-pc", [FINISH_DONE])


@pytest.fixture(scope="module")
def co_pc_cv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CO at 16, PC at 17, then a load of content the store never held: CV at 18."""
    return _extended(tmp_path_factory, "co-pc-cv", [FINISH_DONE, WRONG_LOAD])


@pytest.fixture(scope="module")
def judgments() -> Judgments:
    return Judgments(default_spec_paths())


def test_a_property_only_the_tested_saver_breaks_shows_behind_one_the_reference_breaks(
    co_then_cv: Path, judgments: Judgments
) -> None:
    reference = reference_breaks({("s", "sync"): [CO_TRACE]}, judgments)[("s", "sync")]
    assert reference == {"CO"}
    assert saver_breaks(co_then_cv, reference, judgments) == {"CV"}
    assert saver_breaks(CO_TRACE, reference, judgments) == frozenset()
    assert saver_breaks(co_then_cv, frozenset(), judgments) == {"CO"}  # no StoreProperties
    assert saver_breaks(co_then_cv, frozenset(), judgments, store=STORE) == {"CV"}


@pytest.mark.parametrize("fault", ["none", "kill:A start#1", RACE])
def test_only_the_store_s_properties_are_a_saver_s_in_every_cell(
    co_then_cv: Path, co_then_pc: Path, co_pc_cv: Path, judgments: Judgments, fault: str
) -> None:
    """A CO or a PC with every load answered as the contract requires is what the runtime
    did (with this saver's timing), whether or not a reference run shows it: a runtime
    finding. A CV is how the store answered a load: the saver's, also behind a CO and a PC
    (each tolerated in turn as it shows)."""

    def cell(tested: Path, reference: Path = CO_TRACE) -> Cell:
        found = Cell(CellKey("s", fault, "sync"), _side(tested), _side(reference))
        _matrix([found], judgments)
        return found

    runtime = cell(co_then_pc)
    assert (runtime.finding, runtime.checks, runtime.runtime) == ("runtime", (), ("CO",))
    unseen = cell(co_then_pc, reference=CONFORMS)  # no reference run breaks CO or PC
    assert (unseen.finding, unseen.checks, unseen.runtime) == ("runtime", (), ("CO",))
    store = cell(co_then_cv)
    assert (store.finding, store.checks, store.runtime) == ("saver", ("CV",), ("CO",))
    assert cell(co_pc_cv, reference=CONFORMS).checks == ("CV",)


def test_what_the_reference_breaks_after_its_first_break_is_the_reference_s_too(
    co_then_cv: Path, judgments: Judgments
) -> None:
    """A reference trace that breaks CO and then CV: both are LangGraph's in that scenario."""
    reference = reference_breaks({("s", "sync"): [co_then_cv]}, judgments)[("s", "sync")]
    assert reference == {"CO", "CV"}
    assert saver_breaks(co_then_cv, reference, judgments) == frozenset()


def _end(done: bool, values: object) -> FinalState:
    return FinalState(done, () if done else ("B",), digest(values))


def test_a_store_break_in_a_concurrent_exit_durability_cell_is_not_measured(
    co_then_cv: Path, judgments: Judgments
) -> None:
    """In exit durability LangGraph reports a run's final checkpoint only once the saver
    holds it, so another process of a concurrent cell can load it before the trace shows it
    made: a CV there is inconclusive, never the saver's (lmdb's stride-1 run, 2026-12-04).
    The same break in another durability, or in a cell of one process, is the saver's."""

    def cell(scenario: str, durability: str) -> Cell:
        found = Cell(CellKey(scenario, RACE, durability), _side(co_then_cv), _side(CO_TRACE))
        matrix = Matrix("mine", [found], concurrent=frozenset({"concurrent-2"}))
        _judge([found], judgments)
        _attribute(matrix, judgments)
        return found

    blind = cell("concurrent-2", "exit")
    assert (blind.finding, blind.checks, blind.inconclusive) == ("inconclusive", (), ("CV",))
    assert cell("concurrent-2", "sync").checks == ("CV",)
    assert cell("chain", "exit").checks == ("CV",)


def test_end_and_state_compare_the_tested_end_with_every_reference_run() -> None:
    finished = _end(True, {"log": ["A", "B", "C"]})
    assert end_checks(finished, [finished]) == []
    assert end_checks(_end(False, {"log": ["A"]}), [finished]) == [END]
    assert end_checks(_end(True, {"log": ["A"]}), [finished]) == [STATE]
    # a reference that did not finish, or ended two ways, is no measure
    assert end_checks(_end(False, {}), [_end(False, {})]) == []
    other = _end(True, {"log": ["A", "C"]})
    assert end_checks(_end(True, {"log": ["A"]}), [finished, other]) == []


def test_the_digest_is_the_same_for_equal_values_whatever_their_ids() -> None:
    one = {"messages": [{"id": "0b9e2c4a-1111-4222-8333-444455556666", "text": "hi"}]}
    two = {"messages": [{"id": "7f00e2c4-aaaa-4bbb-8ccc-ddddeeeeffff", "text": "hi"}]}
    assert digest(one) == digest(two)
    assert digest({"a": {1, 2}}) == digest({"a": {2, 1}})
    assert digest({"log": ["A"]}) != digest({"log": ["A", "B"]})


def test_answers_are_told_apart_in_the_trace_but_digest_alike_at_the_end() -> None:
    # Two runs of one cell answer through different processes, and LangGraph gives their
    # interrupts different ids; a correct saver's thread must still end with the reference's
    # digest (a run-dependent answer made STATE fire on LangGraph's own SqliteSaver).
    from rctools.langgraph.worker import Invocation, answer

    def said(proc: str, interrupt: str) -> object:
        parked = {"node": "review", "interrupt": interrupt}
        return answer(parked, Invocation(kind="resume", proc=proc, nonce=proc))

    assert said("w2", "a" * 32) != said("w3", "a" * 32) != said("w3", "b" * 32)
    assert said("w2", "a" * 32) == said("w2", "a" * 32)
    tested = {"log": [f"review(1){[said('w2', 'a' * 32)]}"]}
    reference = {"log": [f"review(1){[said('w4', 'c' * 32)]}"]}
    assert digest(tested) == digest(reference)


def _side(trace: Path, end: FinalState | None = None, failure: str | None = None) -> Side:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    return Side(CellRun(trace, failure=failure), end=end, started=started, seconds=1.5)


def _matrix(cells: list[Cell], judgments: Judgments) -> Matrix:
    matrix = Matrix("mine", cells)
    _judge(cells, judgments)
    _attribute(matrix, judgments)
    return matrix


def test_a_malformed_tested_trace_beside_a_valid_reference_is_a_saver_finding(
    tmp_path: Path, judgments: Judgments
) -> None:
    malformed = tmp_path / "malformed.jsonl"
    lines = CONFORMS.read_text(encoding="utf-8").splitlines()
    malformed.write_text("\n".join([lines[0], '{"ev": "load", "proc": 7}']) + "\n")
    cell = Cell(CellKey("chain", "none", "sync"), _side(malformed), _side(CONFORMS))
    matrix = _matrix([cell], judgments)
    assert (cell.tested.status, cell.finding, cell.checks) == ("invalid", "saver", ("VALID",))
    assert matrix_exit_code(matrix) == 1
    both = Cell(CellKey("chain", "none", "async"), _side(malformed), _side(malformed))
    _matrix([both], judgments)
    assert both.finding == "failed"


def test_exit_1_on_a_saver_finding_even_with_cells_that_could_not_run(
    co_then_cv: Path, judgments: Judgments
) -> None:
    done = _end(True, {"log": ["A"]})
    saver = Cell(CellKey("s", "none", "sync"), _side(co_then_cv, done), _side(CO_TRACE, done))
    broken = Cell(CellKey("s", "kill@1", "sync"), _side(CONFORMS, failure="boom"), None)
    runtime = Cell(CellKey("s", "kill@2", "sync"), _side(CO_TRACE, done), _side(CO_TRACE, done))
    matrix = _matrix([saver, broken, runtime], judgments)
    assert (saver.finding, saver.checks) == ("saver", ("CV",))
    assert (runtime.finding, runtime.runtime, runtime.reference_elsewhere) == (
        "runtime",
        ("CO",),
        "none",
    )
    assert broken.finding == "failed"
    assert matrix_exit_code(matrix) == 1
    assert matrix_exit_code(Matrix("mine", [broken, runtime])) == 3
    assert matrix_exit_code(Matrix("mine", [runtime])) == 0
    assert matrix_exit_code(Matrix("mine", [runtime]), strict=True) == 1
    document = to_json(matrix)
    assert document["counts"]["saver"] == 1
    assert document["cells"][0]["checks"] == ["CV"]


def test_whose_fault_a_break_is_does_not_depend_on_which_cells_are_chosen(
    co_then_cv: Path, judgments: Judgments
) -> None:
    """The tested run breaks CO, then CV, in a cell whose reference run conforms; in another
    cell of the scenario the reference breaks both. Chosen together or alone (`--cells`,
    `--stride`), the first cell's CV is the saver's: only the reference's runs of the same
    cell, killed at the same instant, measure it. The other cell is named as a hint."""

    def cells() -> list[Cell]:
        return [
            Cell(CellKey("s", "kill:A start#1", "sync"), _side(co_then_cv), _side(CONFORMS)),
            Cell(CellKey("s", "kill:B start#1", "sync"), _side(co_then_cv), _side(co_then_cv)),
        ]

    together = _matrix(cells(), judgments).cells
    alone = [_matrix([cell], judgments).cells[0] for cell in cells()]
    for both, one in zip(together, alone, strict=True):
        assert (both.finding, both.checks, both.runtime) == (one.finding, one.checks, one.runtime)
    assert (together[0].finding, together[0].checks) == ("saver", ("CV",))
    assert together[0].reference_elsewhere == "kill:B start#1"
    assert (together[1].finding, together[1].runtime) == ("runtime", ("CO",))


def test_how_a_thread_ends_is_measured_only_by_a_reference_killed_at_the_same_instant(
    judgments: Judgments,
) -> None:
    """The tested thread ends otherwise than the reference's. It is the saver's STATE only
    when the reference run died at the same logical instant: its kill landed where it was
    asked (not at a later point, passed while events were held) and the calls LangGraph's
    background writer had inside the saver took effect alike. Otherwise the cell is
    inconclusive, never a saver finding."""
    asked = KillPoint("put_writes review entry", 3)
    here = ("put_writes review entry", 3)

    def cell(landed: tuple[str, int], inflight: list[tuple[str, ...]]) -> Cell:
        tested = CellRun(CONFORMS, killed_at="w3: put_writes review entry", kill_point=here)
        tested.asked = asked
        reference = CellRun(CONFORMS, killed_at=f"w3: {landed[0]}", kill_point=landed)
        reference.asked, reference.inflight = asked, inflight
        made = Cell(
            CellKey("two-interrupts", "kill:put_writes review entry#3", "async"),
            Side(tested, end=_end(True, {"log": ["A"]})),
            Side(reference, end=_end(True, {"log": ["A", "B"]})),
        )
        _matrix([made], judgments)
        return made

    same = cell(here, [])
    assert (same.finding, same.checks) == ("saver", (STATE,))
    later = cell(("put entry", 4), [])  # the reference's kill was passed, and landed later
    assert (later.finding, later.checks, later.inconclusive) == ("inconclusive", (), (STATE,))
    # a background write in flight had taken effect there only (the trace's checkpoint c0)
    cut = cell(here, [("put_writes -", "all", "c0", "")])
    assert (cut.finding, cut.inconclusive) == ("inconclusive", (STATE,))
    # reported as what it is: listed apart, skipped in JUnit, no exit 1
    matrix = Matrix("mine", [later])
    assert "Inconclusive" in render_text(matrix, Path("out"))
    case = junit_report(matrix, Invocation("run langgraph")).find(".//testcase")
    assert case is not None and case.find("failure") is None
    skipped = case.find("skipped")
    assert skipped is not None and skipped.get("type") == "inconclusive"
    assert matrix_exit_code(matrix) == 0
    assert to_json(matrix)["counts"]["inconclusive"] == 1


def test_a_break_before_the_kill_is_the_saver_s_whatever_instant_the_reference_died_at(
    co_then_cv: Path, co_pc_cv: Path, judgments: Judgments
) -> None:
    """No reference run died at the tested run's instant (its kill landed later). A break the
    tested run shows before its kill is no question of the instant -- the saver's own wrong
    answers are often what made the runs differ -- and stays the saver's; a break after the
    kill needs a reference run killed at the same instant, so without one it is inconclusive.
    `co_then_cv`: CO at event 16, the crash, then CV; `co_pc_cv`: the CV with no crash."""
    asked = KillPoint("end A", 1)

    def cell(tested_trace: Path, reference_trace: Path) -> Cell:
        tested = CellRun(tested_trace, killed_at="w2: end A", kill_point=("end A", 1))
        tested.asked = asked
        reference = CellRun(reference_trace, killed_at="w2: put entry", kill_point=("put entry", 2))
        reference.asked = asked
        made = Cell(CellKey("s", "kill:end A#1", "sync"), Side(tested), Side(reference))
        _matrix([made], judgments)
        return made

    before = cell(co_pc_cv, CONFORMS)  # the kill never reached: the CV is the saver's
    assert (before.finding, before.checks) == ("saver", ("CV",))
    after = cell(co_then_cv, CONFORMS)  # the CV comes after the crash
    assert (after.finding, after.checks, after.inconclusive) == ("inconclusive", (), ("CV",))


RACE = CORPORA / "langgraph" / "memory" / "fanout.none.sync.jsonl"  # search left running
WON_RACE = CORPORA / "langgraph" / "sqlite" / "fanout.none.sync.jsonl"  # search ended first


def _exactly_once(trace: Path, folder: Path) -> Path:
    """`trace` with its effects declared exactly-once."""
    lines = trace.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["guarantees"]["effects"]["default"] = "exactly-once"
    out = folder / trace.name
    out.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", "utf-8")
    return out


@pytest.fixture(scope="module")
def races(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """RACE and WON_RACE with their effects declared exactly-once. In RACE, `search`, still
    running when `lookup` raised and the invocation returned, runs again in the next one and
    fires its effect again: EO at event 31 (at-least-once allows it: the return cut that
    work short). In WON_RACE `search` ended and its write was stored first: it conforms."""
    lost, won = (tmp_path_factory.mktemp(name) for name in ("lost", "won"))
    return _exactly_once(RACE, lost), _exactly_once(WON_RACE, won)


def test_a_runtime_race_the_saver_under_test_lost_is_never_its_finding(
    races: tuple[Path, Path], judgments: Judgments
) -> None:
    """LangGraph's sibling-error race in `fanout`: `search` fires its effect, `lookup`
    raises, and the invocation may return before `search` ends, so the next one fires it
    again (EO for an exactly-once effect). A saver whose timing loses that race more often
    than the reference (a wrapper whose async methods block the event loop) breaks EO where no
    reference run does, and may do so every time: with every load answered as the contract
    requires, the EO is the runtime's, never the saver's."""
    lost_race, won_race = races
    for again in (won_race, lost_race):
        made = Cell(CellKey("fanout", "none", "sync"), _side(lost_race), _side(won_race))
        made.retested.append(_side(again))
        _matrix([made], judgments)
        assert (made.finding, made.checks, made.runtime) == ("runtime", (), ("EO",))


@pytest.fixture(scope="module")
def unmatched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """WON_RACE with an effect of a task that never started: no action allows event 30."""
    lines = WON_RACE.read_text(encoding="utf-8").splitlines()
    stray = {"ev": "effect", "proc": "w1", "thread": "t1", "task": "nobody", "intent": "x:1"}
    trace = tmp_path_factory.mktemp("attr") / "unmatched.jsonl"
    trace.write_text("\n".join([*lines[:30], json.dumps(stray), *lines[30:]]) + "\n", "utf-8")
    return trace


def test_an_event_no_action_allows_is_the_saver_s_only_if_it_repeats(
    unmatched: Path, judgments: Judgments, tmp_path: Path
) -> None:
    """An event no action allows (`unmatched`) is no property: a recorder's callbacks of a
    task LangGraph cancels may arrive out of order once. It stays the saver's only if the
    saver under test shows it again when its cell runs again; otherwise it is `unrepeated`
    and the cell inconclusive, never a saver finding."""

    def cell(again: Path) -> Cell:
        made = Cell(CellKey("fanout", "none", "sync"), _side(unmatched), _side(WON_RACE))
        made.retested.append(_side(again))
        _matrix([made], judgments)
        return made

    once = cell(WON_RACE)
    assert (once.finding, once.checks, once.unrepeated) == ("inconclusive", (), (UNMATCHED,))
    matrix = Matrix("mine", [once])
    assert matrix_exit_code(matrix) == 0
    assert "not broken again when the cell ran again" in render_text(matrix, tmp_path)
    assert to_json(matrix)["cells"][0]["unrepeated"] == [UNMATCHED]
    twice = cell(unmatched)
    assert (twice.finding, twice.checks, twice.unrepeated) == ("saver", (UNMATCHED,), ())


def test_a_thread_that_ends_short_of_the_reference_is_END(judgments: Judgments) -> None:
    short = Cell(
        CellKey("chain", "kill@3", "sync"),
        _side(CONFORMS, _end(False, {"log": ["A"]})),
        _side(CONFORMS, _end(True, {"log": ["A", "B"]})),
    )
    _matrix([short], judgments)
    assert (short.finding, short.checks) == ("saver", (END,))
    # the failure's first line (pytest's short summary) names the check and the cell, not
    # the trace's verdict: this trace conforms, its thread ends short
    first = explain(CellOutcome(short, 0.0), "mine").splitlines()[0]
    assert first.startswith("END in cell chain.killat3.sync: saver finding"), first


def test_junit_has_one_testcase_per_cell_with_time_timestamp_and_file(
    co_then_cv: Path, judgments: Judgments
) -> None:
    cells = [
        Cell(CellKey("s", "none", "sync"), _side(co_then_cv), _side(CO_TRACE)),
        Cell(CellKey("s", "kill:A start#1", "sync"), _side(CONFORMS), _side(CONFORMS)),
    ]
    matrix = _matrix(cells, judgments)
    root = junit_report(matrix, Invocation("run langgraph"))
    cases = root.findall(".//testcase")
    # a cell's file-name slug: the kill label without shell or URL specials
    assert [c.get("name") for c in cases] == ["s.none.sync", "s.kill-A-start_1.sync"]
    assert all(c.get("time") == "1.500" and c.get("timestamp") for c in cases)
    assert cases[0].get("file") == str(co_then_cv)
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "CV"
    assert cases[1].find("failure") is None


def test_unmatched_is_a_pseudo_property_never_tolerated(judgments: Judgments) -> None:
    assert UNMATCHED not in reference_breaks({("s", "sync"): [CONFORMS]}, judgments)[("s", "sync")]


def test_a_tested_thread_no_fresh_process_can_read_back_is_RUNS(judgments: Judgments) -> None:
    unreadable = FinalState(
        False, (), "", problem="OperationalError: database disk image is malformed"
    )
    cell = Cell(
        CellKey("chain", "kill@3", "sync"),
        _side(CONFORMS, unreadable),
        _side(CONFORMS, _end(True, {"log": ["A"]})),
    )
    _matrix([cell], judgments)
    assert (cell.finding, cell.checks) == ("saver", ("RUNS",))
