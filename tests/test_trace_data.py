"""The two ways a batch reaches TLC -- the Java override and the generated module -- give the
same verdicts, and the override fails loudly, never with a verdict, when it cannot do its job.

`test_manifest.py` judges traces/ the default way (the override, where javac is); here every
trace of traces/ is judged both ways and the answers compared field by field.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import CORE, ROOT, SPEC, read_trace_file, run_cli
from resumecheck.batch import run_batch, write_batch
from resumecheck.contract import find_contract
from resumecheck.errors import TLCError
from resumecheck.tlc import override
from resumecheck.tlc.locate import find_jar, find_java
from resumecheck.tlc.output import Outcome
from resumecheck.tlc.values import parse_value
from resumecheck.trace.encode import encode_trace
from resumecheck.trace.schema import load_schema

pytestmark = pytest.mark.slow

BUILT = override.classes()
needs_javac = pytest.mark.skipif(BUILT.folder is None, reason=BUILT.problem)

# Every contract's hand-written and recorded examples (the recorded LangGraph corpus, long
# traces of the same event kinds, is left out: most of the test's time for no other data).
AREAS = ("traces/core", "traces/revision", "traces/recovery", "traces/sandbox")
# What a verdict says, without timings: must be equal both ways.
FIELDS = ("status", "contract", "events", "matched", "event_index", "properties", "reason")


def _verdicts(data: str) -> dict[str, tuple[Any, ...]]:
    run = run_cli(
        "--format", "json", "--no-progress", *AREAS, env={override.DATA_ENV: data}, cwd=ROOT
    )
    run.assert_no_traceback()
    assert run.returncode == 1, run  # traces/ holds violating examples on purpose
    return {t["path"]: tuple(str(t.get(f)) for f in FIELDS) for t in run.json()["traces"]}


@needs_javac
@pytest.mark.corpus
def test_override_and_module_give_identical_verdicts_on_traces() -> None:
    java, module = _verdicts("java"), _verdicts("module")
    assert len(java) > 100
    assert java == module


def _core_batch() -> tuple[Any, list[Any]]:
    schema = load_schema("ResumeCore")
    assert schema is not None
    # Conforming ones and violating ones.
    paths = sorted(CORE.glob("ok-*.jsonl"))[:3] + sorted(CORE.glob("co-*.jsonl"))[:3]
    encoded = [encode_trace(schema, *read_trace_file(path)) for path in paths]
    return find_contract("ResumeCore", [SPEC]), encoded


@needs_javac
def test_both_paths_print_the_same_answers() -> None:
    """Same values, same interning order: TLC prints the very same violations and acceptances
    (in the same order with one worker) either way, and the same longest matched prefix per
    trace -- the override prints it once per trace, when TLC exits, instead of per event."""
    contract, encoded = _core_batch()
    results = [
        run_batch(contract, encoded, on_line=None, data=data, invariants=("Progress",))
        for data in ("java", "module")
    ]
    assert all(r.outcome is Outcome.OK for r in results)
    java, module = (_answers(r.prints) for r in results)
    assert java == module
    assert java[0] and java[1]  # progress and the other answers are both there
    tags = {line.split(",", 1)[0].replace(" ", "") for line in results[1].prints}
    assert tags == {'<<"rc-progress"', '<<"rc-accepted"', '<<"rc-violation"'}
    # One progress line per trace at exit, a few more while the run goes deeper.
    lines = [p for p in results[0].prints if p.startswith('<<"rc-progress"')]
    assert len(lines) < len([p for p in results[1].prints if p.startswith('<<"rc-progress"')])


def _answers(prints: list[str]) -> tuple[dict[int, int], list[str]]:
    """The longest prefix per trace that the progress lines report, and the other lines."""
    best: dict[int, int] = {}
    others = []
    for line in prints:
        value = parse_value(line)
        if isinstance(value, tuple) and value[0] == "rc-progress":
            best[value[1]] = max(best.get(value[1], 0), value[2])
        else:
            others.append(line)
    return best, others


@needs_javac
def test_the_data_file_holds_only_numbers_and_schema_words(tmp_path: Path) -> None:
    contract, encoded = _core_batch()
    schema = load_schema("ResumeCore")
    assert schema is not None
    files = write_batch(tmp_path, contract, schema, encoded, data="java")
    assert files.data is not None
    text = files.data.read_text(encoding="ascii")
    assert text.startswith(override.MAGIC)
    module = files.module.parent / "TraceData.tla"
    small = module.read_text(encoding="ascii")
    # The module keeps everything but the traces: SANY parses a few lines.
    assert "TraceEvent_load(" not in small.split("TraceLog ==", 1)[1]
    assert len(small) < 5000 < len(text)


def _read(java_file: Path, text: str) -> subprocess.CompletedProcess[str]:
    assert BUILT.folder is not None
    java_file.write_text(text, encoding="ascii")
    classpath = f"{BUILT.folder}:{find_jar()}"
    return subprocess.run(
        [find_java(), "-cp", classpath, "resumecheck.TraceDataOverride", str(java_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@needs_javac
@pytest.mark.parametrize(
    "body",
    [
        "TraceLog == <<[a |-> 1]",  # cut short
        'TraceLog == <<"\\n">>',  # an escape the encoder never writes
        "TraceLog == <<Unknown(1)>>",  # a constructor never defined
        "TraceLog == <<99999999999>>",  # beyond TLC's integers
        "TraceLog == <<1>> /\\ FALSE",  # anything after the value
        "E(a) == [x |-> a]\nTraceLog == <<E(1, 2)>>",  # wrong arity
    ],
)
def test_the_reader_refuses_what_the_encoder_never_writes(tmp_path: Path, body: str) -> None:
    done = _read(tmp_path / "bad.rcdata", override.MAGIC + body + "\n")
    assert done.returncode != 0
    assert "resume-check trace data, offset" in done.stderr


@needs_javac
def test_the_reader_reads_what_the_encoder_writes(tmp_path: Path) -> None:
    text = override.MAGIC + 'E(a0) == [ev |-> "x\\"y", n |-> a0]\nTraceLog == <<E(-2), {}>>\n'
    done = _read(tmp_path / "ok.rcdata", text)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "2"


@needs_javac
def test_an_override_that_did_not_load_is_an_error_not_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the classes on TLC's class path, the placeholder TraceLog is all TLC has: the
    run must end in an error, never in verdicts about an empty batch."""
    from resumecheck import batch

    monkeypatch.setattr(batch, "_classes_for", lambda data: None)
    contract, encoded = _core_batch()
    with pytest.raises(TLCError, match="did not load"):
        run_batch(contract, encoded[:1], on_line=None, data="java")


def test_the_choice_of_path_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from resumecheck.batch import data_path
    from resumecheck.errors import ToolchainError

    monkeypatch.setenv(override.DATA_ENV, "module")
    assert data_path() == ("module", None)
    monkeypatch.setenv(override.DATA_ENV, "sany")
    with pytest.raises(ToolchainError, match="auto, java or module"):
        data_path()
