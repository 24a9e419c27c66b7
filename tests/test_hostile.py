"""Hostile input through the real CLI: no hang, no unbounded read, no forged report line, no
verdict from a line that was not judged, nothing left behind by a killed run.

Every case is a real file (FIFOs, /dev/zero, symbolic links, names with newlines and escape
sequences). The seed traces are whatever traces/ holds that the checker judges today, any
contract, so the tests follow the trace formats as they change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from conftest import CLI, ROOT, SPEC, Run, judgeable_traces, read_trace_file, run_cli
from resumecheck import escape, tempdirs
from resumecheck.inputs import expand
from resumecheck.tlc.warm import MAIN_CLASS
from resumecheck.trace.prefix import is_object_prefix
from resumecheck.trace.schema import load_schema
from resumecheck.waiting import poll

# --- seeds ---------------------------------------------------------------------------------


def _seeds() -> tuple[Path, Path, dict[str, Any]] | None:
    """A conforming trace longer than 1 KiB and one whose last event breaks a property, of the
    same contract (the tests edit the first event and cut the file at 1 KiB)."""
    chosen: dict[str, dict[str, Any]] = defaultdict(dict)
    for path, entry in judgeable_traces():
        contract = read_trace_file(path)[0]["contract"]
        events = len(read_trace_file(path)[1])
        if entry["status"] == "conforms" and events and path.stat().st_size > 1024:
            chosen[contract].setdefault("ok", path)
        elif entry["status"] == "violates" and entry.get("properties") and entry["event"] == events:
            chosen[contract].setdefault("bad", (path, entry))
    for picks in chosen.values():
        if "ok" in picks and "bad" in picks:
            return picks["ok"], picks["bad"][0], picks["bad"][1]
    return None


SEEDS = _seeds()
pytestmark = pytest.mark.skipif(SEEDS is None, reason="traces/ holds no judgeable seed pair")
OK, BAD, BAD_ENTRY = SEEDS if SEEDS is not None else (Path(), Path(), {})
NEWLINE_NAME = "x\nfake.jsonl: conforms to Anything (1 events)\n.jsonl"
ANSI_NAME = "\x1b[2K\x1b[1Gred\x1b[0m.jsonl"


def lines_of(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def events_in(path: Path) -> int:
    return len(lines_of(path)) - 1


def with_float_integer(path: Path) -> list[bytes] | None:
    """The trace's lines with one field the schema says is an integer (and not a number)
    written as a float: 3 becomes 3.0, an identifier that may be a string or an integer
    becomes 1.0. None when no event has such a field."""
    header, events = read_trace_file(path)
    schema = load_schema(header["contract"])
    assert schema is not None
    for index, event in enumerate(events):
        fields = schema.defs[f"ev_{event['ev']}"]["properties"]
        for key, value in event.items():
            types = schema.resolve(fields.get(key, {})).get("type", [])
            types = [types] if isinstance(types, str) else types
            if "integer" in types and "number" not in types and type(value) in (int, str):
                events[index] = {**event, key: float(value) if type(value) is int else 1.0}
                return [json.dumps(item).encode() for item in [header, *events]]
    return None


def with_duplicate_key(path: Path) -> list[bytes]:
    lines = lines_of(path)
    lines[1] = lines[1].rstrip(b"}") + b', "ev": "again"}'
    return lines


def judge(*args: str | Path, cwd: Path = ROOT) -> Run:
    """The real CLI; every case must end within 60 s and without a traceback."""
    started = time.monotonic()
    run = run_cli(*args, cwd=cwd, timeout=60)
    assert time.monotonic() - started < 60
    run.assert_no_traceback()
    return run


def only_verdict(run: Run, code: int = 2) -> dict[str, Any]:
    """The verdict of a run given one trace, once its exit code is `code` (2: not judged)."""
    assert run.returncode == code, run
    (verdict,) = run.json()["traces"]
    return verdict


# --- one folder of hostile entries, judged in each format ------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    good, bad = OK.read_bytes(), BAD.read_bytes()
    (root / "ok.jsonl").write_bytes(good)
    (root / "UPPER.JSONL").write_bytes(good)
    (root / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + good)
    cut = lines_of(OK)
    (root / "cut.jsonl").write_bytes(b"\n".join(cut[:-1]) + b"\n" + cut[-1][: len(cut[-1]) // 2])
    (root / "stray.jsonl").write_bytes(bad.rstrip(b"\n") + b"}")
    (root / "violating-cut.jsonl").write_bytes(bad + b'{"ev": "')
    (root / "dup.jsonl").write_bytes(b"\n".join(with_duplicate_key(OK)) + b"\n")
    retyped = with_float_integer(OK)
    assert retyped is not None, f"{OK.name} has no integer field to write as a float"
    (root / "float.jsonl").write_bytes(b"\n".join(retyped) + b"\n")
    (root / NEWLINE_NAME).write_bytes(bad)
    (root / ANSI_NAME).write_bytes(good)
    (root / os.fsdecode(b"bytes-\xff.jsonl")).write_bytes(good)
    os.mkfifo(root / "fifo.jsonl")
    (root / "dangling.jsonl").symlink_to(root / "nowhere.jsonl")
    (root / "zz-link.jsonl").symlink_to(root / "ok.jsonl")
    (root / "sub").mkdir()
    (root / "sub" / "inner.jsonl").write_bytes(good)
    (root / "zz-dir-link").symlink_to(root / "sub")
    return root


JUDGED = {  # file name -> (status, truncated)
    "ok.jsonl": ("conforms", False),
    "UPPER.JSONL": ("conforms", False),
    "bom.jsonl": ("conforms", False),
    "cut.jsonl": ("conforms", True),
    "stray.jsonl": ("invalid", False),
    "violating-cut.jsonl": ("violates", True),
    "dup.jsonl": ("invalid", False),
    "float.jsonl": ("invalid", False),
    NEWLINE_NAME: ("violates", False),
    ANSI_NAME: ("conforms", False),
    os.fsdecode(b"bytes-\xff.jsonl"): ("conforms", False),
    "inner.jsonl": ("conforms", False),
}


@pytest.fixture(scope="module")
def as_json(folder: Path) -> Run:
    """The folder and its subfolder together: the subfolder's trace is judged once."""
    return judge("--format", "json", folder, folder / "sub")


@pytest.fixture(scope="module")
def as_text(folder: Path) -> Run:
    return judge(folder, folder / "sub")


@pytest.mark.slow
def test_each_entry_is_judged_once_with_the_right_verdict(as_json: Run) -> None:
    assert as_json.returncode == 2
    document = as_json.json()
    got = {}
    for verdict in document["traces"]:
        name = Path(verdict["path"]).name
        got[name] = (verdict["status"], verdict.get("truncated", False))
    expected = {escape.json_safe(name): value for name, value in JUDGED.items()}
    assert got == expected
    assert len(document["traces"]) == len(JUDGED)


@pytest.mark.slow
def test_reasons_name_the_damage(as_json: Run) -> None:
    verdicts = {Path(v["path"]).name: v for v in as_json.json()["traces"]}
    last = events_in(BAD) + 1  # the violating event's line
    assert verdicts["stray.jsonl"]["reason"].startswith(f"line {last}: not JSON (Extra data")
    assert "duplicate key 'ev'" in verdicts["dup.jsonl"]["reason"]
    assert "is not of type" in verdicts["float.jsonl"]["reason"]
    cut = verdicts["violating-cut.jsonl"]
    assert (cut["event_index"], cut["properties"]) == (BAD_ENTRY["event"], BAD_ENTRY["properties"])
    assert cut["truncation"].startswith(f"line {last + 1} is incomplete (8 bytes, no newline)")
    assert verdicts["cut.jsonl"]["events"] == events_in(OK) - 1
    assert verdicts["cut.jsonl"]["complete"] is False


@pytest.mark.slow
def test_skipped_entries_are_listed_with_their_reasons(folder: Path, as_json: Run) -> None:
    skipped = {Path(s["path"]).name: s["reason"] for s in as_json.json()["skipped"]}
    assert skipped == {
        "dangling.jsonl": "a dangling symbolic link",
        "fifo.jsonl": "not a regular file (a FIFO)",
        "zz-link.jsonl": f"the same file as {folder / 'ok.jsonl'}: judged once",
        "zz-dir-link": "a symbolic link to a directory: not followed (name it to judge it)",
        "inner.jsonl": "reached again: judged once",
    }
    for entry in as_json.json()["skipped"]:
        line = f"resume-check: skipped {escape.path(entry['path'])}: {entry['reason']}\n"
        assert line in as_json.stderr


@pytest.mark.slow
def test_json_is_plain_ascii_and_exit_code_matches(as_json: Run) -> None:
    assert as_json.stdout.isascii()
    assert as_json.json()["exit_code"] == as_json.returncode == 2


@pytest.mark.slow
def test_text_report_has_one_line_per_trace_and_no_forged_line(folder: Path, as_text: Run) -> None:
    assert as_text.returncode == 2
    lines = as_text.stdout.splitlines()
    heads = [line for line in lines[:-1] if not line.startswith((" ", "spec "))]
    assert len(heads) == len(JUDGED)
    assert not any(line.startswith("fake.jsonl") for line in lines)
    for line in lines:
        assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in line), line
    quoted = escape.path(folder / NEWLINE_NAME)
    assert quoted.startswith('"') and "\\n" in quoted
    assert any(line.startswith(f"{quoted}: violates ") for line in heads)
    assert any(line.startswith(escape.path(folder / ANSI_NAME) + ": conforms") for line in heads)
    cut = escape.path(folder / "cut.jsonl")
    assert any(line.startswith(f"{cut}: conforms (truncated)") for line in heads)
    assert lines[-1].startswith(f"{len(JUDGED)} trace(s): ")
    assert "(1 truncated)" in lines[-1]


@pytest.mark.slow
def test_junit_is_well_formed_xml(folder: Path) -> None:
    run = judge("--format", "junit", folder)
    assert run.returncode == 2
    root = ET.fromstring(run.stdout.encode("utf-8"))
    names = [case.get("name") or "" for case in root.iter("testcase")]
    assert len(names) == len(JUDGED)
    assert all("\n" not in name and "\x1b" not in name for name in names)


@pytest.mark.slow
def test_html_shows_no_hidden_character(folder: Path) -> None:
    run = judge("--format", "html", folder)
    assert run.returncode == 2
    hidden = {c for c in run.stdout if unicodedata.category(c) in ("Cc", "Cf", "Cs")} - {"\n"}
    assert hidden == set()
    assert escape.text(folder / NEWLINE_NAME) in run.stdout


# --- what is never opened or read without bound ---------------------------------------------


def test_fifo_named_on_the_command_line_is_invalid_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    verdict = only_verdict(judge("--format", "json", fifo))
    assert (verdict["status"], verdict["reason"]) == (
        "invalid",
        "not a regular file (a FIFO); only files are read",
    )


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_not_read(device: str) -> None:
    verdict = only_verdict(judge("--format", "json", device))
    assert verdict["reason"] == "not a regular file (a character device); only files are read"


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as stream:
        stream.truncate(8 << 30)  # sparse: 8 GiB that no test machine could hold
    started = time.monotonic()
    run = judge("--format", "json", huge)
    assert time.monotonic() - started < 20
    verdict = only_verdict(run)
    assert verdict["reason"] == (
        f"{8 << 30} bytes, over the limit of {256 << 20} bytes per trace "
        "(raise it with --max-bytes)"
    )
    small = judge("--format", "json", "--max-bytes", "1K", OK)
    assert small.json()["traces"][0]["reason"].endswith("(raise it with --max-bytes)")


@pytest.mark.slow
def test_a_long_valid_last_line_is_judged_or_over_the_limit_never_dropped(tmp_path: Path) -> None:
    lines = lines_of(BAD)
    padded = lines[-1][:-1] + b" " * (10 << 20) + b"}"  # 10 MiB of JSON whitespace
    path = tmp_path / "long-last-line.jsonl"
    path.write_bytes(b"\n".join([*lines[:-1], padded]))  # and no final newline
    verdict = only_verdict(judge("--format", "json", path))
    assert verdict["reason"] == (
        f"line {len(lines)} is {len(padded)} bytes, over the limit of {1 << 20} bytes per line "
        "(raise it with --max-line-bytes)"
    )
    verdict = only_verdict(judge("--format", "json", "--max-line-bytes", "16M", path), 1)
    assert (verdict["status"], verdict["event_index"]) == ("violates", BAD_ENTRY["event"])
    assert "truncated" not in verdict


def test_a_reason_quotes_at_most_500_characters(tmp_path: Path) -> None:
    """A schema's complaint quotes the value it rejects; a trace can make that a megabyte."""
    header, events = read_trace_file(OK)
    field = next(key for key in events[0] if key != "ev")
    events[0][field] = [{"x": index} for index in range(20_000)]
    path = tmp_path / "huge-field.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in [header, *events]) + "\n")
    verdict = only_verdict(judge("--format", "json", path))
    assert len(verdict["reason"]) == 500
    assert verdict["reason"].endswith("...")


@pytest.mark.slow
def test_require_complete_fails_a_truncated_trace(folder: Path) -> None:
    cut = folder / "cut.jsonl"
    assert judge(cut).returncode == 0
    run = judge("--format", "json", "--require-complete", cut)
    assert run.returncode == 1
    assert run.json()["exit_code"] == 1


# --- reading rules, without TLC -------------------------------------------------------------


def test_every_cut_of_every_seed_line_is_a_prefix_and_no_whole_line_is() -> None:
    for path, _ in judgeable_traces()[:20]:
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not is_object_prefix(line)
            assert all(is_object_prefix(line[:cut]) for cut in range(1, len(line)))


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain/name-1.jsonl", "plain/name-1.jsonl"),
        ("a b.jsonl", '"a b.jsonl"'),
        ("x\nok.jsonl: conforms", '"x\\nok.jsonl: conforms"'),
        ('q"uote\\.jsonl', '"q\\"uote\\\\.jsonl"'),
        ("\x1b[31mred", '"\\x1b[31mred"'),
        ("rtl\u202egnp.jsonl", '"rtl\\u202egnp.jsonl"'),
        (os.fsdecode(b"bad\xff.jsonl"), '"bad\\xff.jsonl"'),
    ],
)
def test_path_escaping(raw: str, shown: str) -> None:
    assert escape.path(raw) == shown


def test_text_and_xml_escaping() -> None:
    assert escape.text("a\tb\r\n\x00\x7f\x85\u2028") == "a\\tb\\r\\n\\x00\\x7f\\x85\\u2028"
    assert escape.text("ünïcødé ✓") == "ünïcødé ✓"
    assert escape.xml("ok\n\x01\ufffe") == "ok\n\\x01\\ufffe"
    assert escape.json_safe({"p": os.fsdecode(b"\xfe"), "q": ["\ud800"]}) == {
        "p": "\\xfe",
        "q": ["\\ud800"],
    }


def test_an_integer_written_as_a_float_is_invalid_in_every_contract() -> None:
    """`"proc": 1.0` would be a different identifier from `"proc": 1`; the compiled validator
    alone, like JSON Schema, would take it for an integer."""
    checked = set()
    for path, _ in judgeable_traces():
        header, events = read_trace_file(path)
        retyped = with_float_integer(path)
        if header["contract"] in checked or retyped is None:
            continue
        checked.add(header["contract"])
        schema = load_schema(header["contract"])
        assert schema is not None
        new = [json.loads(line) for line in retyped[1:]]
        ((old, bad),) = [
            (o, n) for o, n in zip(events, new, strict=True) if json.dumps(o) != json.dumps(n)
        ]
        assert schema.event_problem(old) is None
        assert "is not of type" in (schema.event_problem(bad) or ""), (header["contract"], bad)
    assert checked


def test_the_compiled_check_alone_judges_integral_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    """A float without a fraction where the schema says number (`ts`) is valid, and where it
    says integer (`seq`) is not, without asking jsonschema's interpreter for the verdict: it
    is asked only for the message of an event found invalid."""
    from resumecheck.trace import schema as schema_module

    core = load_schema("ResumeCore")
    assert core is not None
    event = read_trace_file(sorted((ROOT / "traces" / "core").glob("ok-*.jsonl"))[0])[1][0]
    asked: list[str] = []
    real = schema_module._validator
    monkeypatch.setattr(schema_module, "_validator", lambda c, n: asked.append(n) or real(c, n))
    assert core.event_problem({**event, "ts": 1764000000.0}) is None
    assert asked == []
    assert "is not of type 'integer'" in (core.event_problem({**event, "seq": 3.0}) or "")
    assert asked == [f"ev_{event['ev']}"]


def test_hard_links_and_case_insensitive_suffixes(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("{}\n")
    os.link(tmp_path / "a.jsonl", tmp_path / "b.NDJSON")
    (tmp_path / "c.Jsonl").write_text("{}\n")
    (tmp_path / "notes.txt").write_text("x\n")
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    found = expand([tmp_path, tmp_path / "c.Jsonl"])
    assert found.files == [tmp_path / "a.jsonl", tmp_path / "c.Jsonl"]
    assert {s.path.name: s.reason for s in found.skipped} == {
        "b.NDJSON": f"the same file as {tmp_path / 'a.jsonl'}: judged once",
        "loop.jsonl": "a symbolic link that leads nowhere: Too many levels of symbolic links",
        "c.Jsonl": "reached again: judged once",
    }


def test_dead_run_folders_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = tmp_path / "run-999999999-dead"
    dead.mkdir()
    (dead / "lock").write_text("")
    alive = tmp_path / "run-1-alive"
    alive.mkdir()
    (alive / "lock").write_text("")
    holder = os.open(alive / "lock", os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(holder, fcntl.LOCK_EX)
        creating = tmp_path / f"run-{os.getpid()}-creating"  # no lock yet, owner alive
        creating.mkdir()
        tempdirs.remove_dead_runs(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, creating.name])
    finally:
        os.close(holder)
    tempdirs.remove_dead_runs(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [creating.name]


def test_temporary_folders_live_in_one_run_folder_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first, second = tempdirs.mkdtemp("a-"), tempdirs.mkdtemp("b-")
    run = first.parent
    assert run == second.parent
    assert run.parent == tmp_path / f"resume-check-{os.getuid()}"
    assert run.name.startswith(f"run-{os.getpid()}-")
    assert sorted(p.name for p in run.iterdir()) == sorted([first.name, second.name, "lock"])
    shutil.rmtree(run)  # as a temporary-file cleaner might: the next folder gets a new run
    third = tempdirs.mkdtemp("c-")
    assert third.parent != run and third.parent.parent == run.parent


# --- evaluation errors ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_property_that_fails_to_evaluate_is_reported_once(tmp_path: Path) -> None:
    contract = read_trace_file(OK)[0]["contract"]
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    base = spec / f"{contract}.tla"
    text, found = re.subn(
        r"\nProperties ==\s*\[",
        r"\n\\* HostileZZ: cannot be evaluated.\nHostileZZ == 1 \\div 0 = 1\n\n"
        r"Properties == [HostileZZ |-> HostileZZ, ",
        base.read_text(encoding="utf-8"),
    )
    assert found == 1, f"{contract}.tla changed shape"
    base.write_text(text, encoding="utf-8")
    traces = tmp_path / "traces"
    traces.mkdir()
    for index in range(6):
        shutil.copy(OK, traces / f"t{index}.jsonl")
    run = judge("--spec-path", spec, traces)
    assert run.returncode == 3  # TLC could not judge: the contract must be fixed
    assert run.stderr == ""
    lines = [line for line in run.stdout.splitlines() if not line.startswith("spec ")]
    assert len(lines) == 7
    assert all(": error: " in line for line in lines[:-1])
    cause = "The second argument of \\div is 0."
    assert sum(cause in line for line in lines) == 1
    (first,) = [line for line in lines if cause in line]
    assert f"TLC could not evaluate property HostileZZ ({contract}.tla, line " in first
    assert first.startswith(str(traces / "t0.jsonl"))
    assert "column" in first and "Line" not in run.stdout and "tlc2" not in run.stdout


def _planted_action() -> tuple[str, Path, Path] | None:
    """An event kind K and two conforming traces of one contract, the first with K and the
    second without: an Assert planted in K's action fails on the first only."""
    kinds: dict[str, list[tuple[Path, set[str]]]] = defaultdict(list)
    for path, entry in judgeable_traces():
        if entry["status"] == "conforms":
            header, events = read_trace_file(path)
            kinds[header["contract"]].append((path, {e["ev"] for e in events}))
    for contract, traces in sorted(kinds.items()):
        module = (SPEC / f"Trace{contract}.tla").read_text(encoding="utf-8")
        for with_k, has in traces:
            for without_k, lacks in traces:
                for kind in sorted(has - lacks):
                    if module.count(f'e.ev = "{kind}" /\\ ') == 1:
                        return kind, with_k, without_k
    return None


@pytest.mark.slow
def test_an_action_that_fails_on_one_trace_spares_the_others(tmp_path: Path) -> None:
    planted = _planted_action()
    if planted is None:
        pytest.skip("no event kind only some conforming traces have")
    kind, with_k, without_k = planted
    contract = read_trace_file(with_k)[0]["contract"]
    spec = tmp_path / "spec"
    shutil.copytree(SPEC, spec)
    module = spec / f"Trace{contract}.tla"
    old = f'e.ev = "{kind}" /\\ '
    module.write_text(
        module.read_text(encoding="utf-8").replace(old, old + 'Assert(FALSE, "planted") /\\ '),
        encoding="utf-8",
    )
    traces = tmp_path / "traces"
    traces.mkdir()
    for index in range(7):
        shutil.copy(without_k, traces / f"fine-{index}.jsonl")
    shutil.copy(with_k, traces / "planted-1.jsonl")
    shutil.copy(with_k, traces / "planted-2.jsonl")
    run = judge("--format", "json", "--spec-path", spec, traces)
    assert run.returncode == 3
    verdicts = {Path(v["path"]).name: v for v in run.json()["traces"]}
    assert {name: v["status"] for name, v in verdicts.items()} == {
        **{f"fine-{index}.jsonl": "conforms" for index in range(7)},
        "planted-1.jsonl": "error",
        "planted-2.jsonl": "error",
    }
    first, second = verdicts["planted-1.jsonl"]["reason"], verdicts["planted-2.jsonl"]["reason"]
    assert first.startswith(f"TLC could not evaluate Apply (Trace{contract}.tla, line ")
    assert first.endswith('the second argument was: "planted"')
    assert second.endswith(f"either: the same error as on {traces / 'planted-1.jsonl'}")


# --- SIGKILL ----------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    """The live descendants of `pid` (a zombie is dead, whoever is to reap it)."""
    parents: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            parents[int(fields[1])].append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _kill_when(
    process: subprocess.Popen[bytes], wanted: Callable[[str], bool], timeout: float = 60
) -> list[int]:
    """SIGKILLs `process` once it has a descendant whose command line is `wanted`; returns the
    descendants it had then."""

    def found() -> list[int] | None:
        children = _children(process.pid)
        if any(wanted(_cmdline(child)) for child in children):
            return children
        assert process.poll() is None, "resume-check finished before it could be killed"
        return None

    children = poll(found, timeout=timeout, every=0.02)
    process.kill()
    process.wait()
    if children is None:
        raise AssertionError(f"no such child within {timeout} s")
    return children


def _all_dead(pids: list[int], within: float = 10) -> list[int]:
    def alive() -> list[int]:
        return [p for p in pids if (Path("/proc") / str(p)).exists() and _live(p)]

    poll(lambda: not alive(), timeout=within, every=0.05)
    return alive()


def _live(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.slow
def test_sigkill_during_tlc_leaves_no_java_and_the_next_run_cleans_up(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    traces = tmp_path / "traces"
    traces.mkdir()
    for index in range(20):
        shutil.copy(OK, traces / f"t{index}.jsonl")
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("RESUME_CHECK_SPEC_PATH", None)
    process = subprocess.Popen(
        [str(CLI), "--no-progress", traces], env=env, stdout=subprocess.DEVNULL
    )
    # TLC's JVM: a plain run's, or the warm driver `check` holds for its runs
    children = _kill_when(process, lambda command: "tlc2.TLC" in command or MAIN_CLASS in command)
    assert _all_dead(children) == []
    user = tmp / f"resume-check-{os.getuid()}"
    assert [p.name.split("-")[1] for p in user.iterdir()] == [str(process.pid)]
    run = run_cli(tmp_path / "missing.jsonl", env={"TMPDIR": str(tmp)})
    assert run.returncode == 2
    assert list(user.iterdir()) == []


@pytest.mark.slow
def test_sigkill_while_preparing_a_large_batch_leaves_no_process(tmp_path: Path) -> None:
    """Killed while it reads and validates 2000 traces (and, should it be that fast, while TLC
    runs): nothing it started may outlive it, whatever it uses to prepare them."""
    traces = tmp_path / "traces"
    traces.mkdir()
    for index in range(2000):
        shutil.copy(OK, traces / f"t{index:05d}.jsonl")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen(
        [str(CLI), "--no-progress", traces], env=env, stdout=subprocess.DEVNULL
    )
    time.sleep(1.5)  # Python is up and reading
    assert process.poll() is None, "resume-check finished before it could be killed"
    children = _children(process.pid)
    process.kill()
    process.wait()
    assert _all_dead(children) == []
