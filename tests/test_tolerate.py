"""`--tolerate PROP`: a known break is set aside, and judging goes on to what else a trace breaks.

The LangGraph matrix relies on this to attribute properties to a saver: a property the
reference runtime breaks in a scenario is tolerated, so a different break by the tested saver in
the same cell still shows. TLA+ decides all of it (TraceValidation's `TraceTolerated`).
"""

from __future__ import annotations

from pathlib import Path

from conftest import TRACES, invoke, write_co_then_cv

CO_TRACE = TRACES / "core" / "co-answer-of-other-task.jsonl"  # CO at event 16, then stops
PC_TRACE = TRACES / "core" / "pc-done-without-schedule.jsonl"


def _verdict(*args: str | Path) -> tuple[int, dict]:
    run = invoke("--format", "json", "--no-progress", *args)
    run.assert_no_traceback()
    return run.returncode, run.json()["traces"][0]


def test_a_tolerated_break_is_listed_and_does_not_fail() -> None:
    code, plain = _verdict(CO_TRACE)
    assert (code, plain["status"], plain["properties"]) == (1, "violates", ["CO"])
    code, tolerant = _verdict("--tolerate", "CO", CO_TRACE)
    assert (code, tolerant["status"], tolerant["tolerated"]) == (0, "conforms", {"CO": 16})
    assert tolerant["matched"] == tolerant["events"]


def test_tolerating_one_property_does_not_hide_another(tmp_path: Path) -> None:
    code, v = _verdict("--tolerate", "CO", PC_TRACE)
    assert (code, v["status"], v["properties"]) == (1, "violates", ["PC"])
    # After the CO break, a reader is handed content the store never held: CV, found only
    # because judging went on past the tolerated CO.
    code, v = _verdict("--tolerate", "CO", write_co_then_cv(tmp_path / "co-then-cv.jsonl"))
    assert (code, v["status"], v["properties"], v["event_index"]) == (1, "violates", ["CV"], 18)
    assert v["tolerated"] == {"CO": 16}


def test_a_name_that_is_no_property_is_refused_before_reaching_tla() -> None:
    for name in ("XX", 'CO"} \\/ TRUE \\/ {"', "co"):
        run = invoke("--no-progress", "--tolerate", name, CO_TRACE)
        run.assert_no_traceback()
        assert run.returncode == 2, (name, run.stdout, run.stderr)
        assert "not a property of ResumeCore" in run.stderr + run.stdout


def test_past_two_answers_to_one_interrupt_a_load_returns_one_of_them() -> None:
    """A checkpoint keeps one answer slot: once two processes answered one interrupt (CO,
    LangGraph's when resumers race), the later answer replaces the earlier, and a load that
    returns only it keeps CV -- the saver is not blamed for LangGraph's race. A load that
    returns neither stored answer is still CV."""
    one = TRACES / "core" / "co-later-answer-in-the-one-slot.jsonl"
    code, v = _verdict("--tolerate", "CO", one)
    assert (code, v["status"], v["tolerated"]) == (0, "conforms", {"CO": 14})
    code, v = _verdict("--tolerate", "CO", TRACES / "core" / "co-cv-both-answers-lost.jsonl")
    assert (code, v["status"], v["properties"], v["event_index"]) == (1, "violates", ["CV"], 17)


def test_the_answer_slot_knows_which_answer_came_later() -> None:
    """The slot's order cuts both ways. An answer handed over after another was stored
    replaces it once stored, and one still in flight may already have landed over the stored
    one: LangGraph answering an interrupt twice (CO, the runtime's) then leaves the saver
    blameless (both shapes were objectstorage false alarms at stride 1). A saver that keeps
    the first answer and ignores a later one is CV, with no CO to set aside."""
    for name, co in (
        ("co-answer-in-flight-shown-over-the-stored-one.jsonl", 12),
        ("co-answer-stored-then-replaced-by-a-second-answer.jsonl", 13),
    ):
        code, v = _verdict("--tolerate", "CO", TRACES / "core" / name)
        assert (code, v["status"], v["tolerated"]) == (0, "conforms", {"CO": co}), name
        assert v["matched"] == v["events"], name
    kept = TRACES / "core" / "cv-answer-slot-keeps-the-replaced-answer.jsonl"
    code, v = _verdict(kept)
    assert (code, v["status"], v["properties"], v["event_index"]) == (1, "violates", ["CV"], 20)
