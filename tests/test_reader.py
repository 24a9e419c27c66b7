"""trace/reader.py: JSON Lines read without trusting them (no TLC)."""

from __future__ import annotations

from pathlib import Path

import pytest
from resumecheck.trace.reader import Limits, read_trace

HEADER = b'{"format": "resume-check/v1", "workflow": {"nodes": ["A"], "edges": []}}'
E1 = b'{"ev": "load", "proc": "w1"}'
E2 = b'{"ev": "finish", "proc": "w1"}'


def write(tmp_path: Path, data: bytes, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_complete_trace(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + E2 + b"\n"))
    assert trace.problem is None
    assert trace.truncation is None
    assert trace.header == {"format": "resume-check/v1", "workflow": {"nodes": ["A"], "edges": []}}
    assert trace.events == [{"ev": "load", "proc": "w1"}, {"ev": "finish", "proc": "w1"}]
    assert trace.lines == [2, 3]
    assert trace.raw == [E1.decode(), E2.decode()]


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + E2))
    assert trace.problem is None
    assert trace.truncation is None
    assert len(trace.events) == 2


def test_cut_last_line_is_dropped_and_noted(tmp_path: Path) -> None:
    cut = E2[:10]
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + cut))
    assert trace.problem is None
    assert trace.events == [{"ev": "load", "proc": "w1"}]
    assert trace.lines == [2]
    assert trace.truncation == (
        "line 3 is incomplete (10 bytes, no newline): the writer was probably killed; "
        "it was not judged, only the complete lines before it"
    )


def test_last_line_cut_inside_a_multibyte_character_is_truncation(tmp_path: Path) -> None:
    line = '{"ev": "finish", "proc": "wörker"}'.encode()
    cut = line[: line.index("ö".encode()) + 1]  # half of the two-byte ö
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + cut))
    assert trace.problem is None
    assert trace.truncation is not None
    assert trace.truncation.startswith(f"line 3 is incomplete ({len(cut)} bytes")
    assert len(trace.events) == 1


def test_broken_last_line_with_newline_is_invalid(tmp_path: Path) -> None:
    """A newline after it means the writer finished the line: the damage is not a cut."""
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + E2[:10] + b"\n"))
    assert trace.truncation is None
    assert trace.problem is not None
    assert trace.problem.startswith("line 3: not JSON (")


def test_broken_middle_line_is_invalid(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1[:10] + b"\n" + E2 + b"\n"))
    assert trace.truncation is None
    assert trace.problem is not None
    assert trace.problem.startswith("line 2: not JSON (")


def test_broken_middle_line_and_cut_last_line(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1[:10] + b"\n" + E2[:5]))
    assert trace.problem is not None
    assert trace.problem.startswith("line 2: not JSON (")


def test_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    data = b"\n" + HEADER + b"\n\n   \n" + E1 + b"\n\t\n" + E2 + b"\n\n"
    trace = read_trace(write(tmp_path, data))
    assert trace.problem is None
    assert trace.truncation is None
    assert trace.header is not None
    assert trace.lines == [5, 7]
    assert [e["ev"] for e in trace.events] == ["load", "finish"]


def test_crlf_line_endings(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\r\n" + E1 + b"\r\n" + E2 + b"\r\n"))
    assert trace.problem is None
    assert trace.truncation is None
    assert [e["ev"] for e in trace.events] == ["load", "finish"]
    assert trace.lines == [2, 3]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"[1, 2]", "not a JSON object"),
        (b'"just a string"', "not a JSON object"),
        (b"42", "not a JSON object"),
        (b"null", "not a JSON object"),
        (b"true", "not a JSON object"),
    ],
)
def test_non_object_json_is_invalid(tmp_path: Path, line: bytes, why: str) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n" + line + b"\n" + E2 + b"\n"))
    assert trace.problem == f"line 2: {why}"


def test_non_object_header_is_invalid(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, b"[]\n" + E1 + b"\n"))
    assert trace.problem == "line 1: not a JSON object"
    assert trace.header is None


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path: Path, constant: str) -> None:
    line = b'{"ev": "load", "proc": "w1", "ts": ' + constant.encode() + b"}"
    trace = read_trace(write(tmp_path, HEADER + b"\n" + line + b"\n" + E2 + b"\n"))
    assert trace.problem == f"line 2: not JSON ({constant} is not JSON)"


def test_nan_in_a_last_line_without_newline_is_damage_not_a_cut(tmp_path: Path) -> None:
    """No writer killed mid-line leaves a whole object: what cannot be a prefix of valid JSON
    is damage, newline or not."""
    line = b'{"ev": "load", "proc": "w1", "ts": NaN}'
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + line))
    assert trace.truncation is None
    assert trace.problem == "line 3: not JSON (NaN is not JSON)"


@pytest.mark.parametrize(
    "tail",
    [E2 + b"}", E2 + b" x", b'{"ev": "finish", "proc": w1', b'{"ev": NaN', b"finish", b"[1, 2"],
)
def test_last_line_that_no_cut_can_leave_is_invalid(tmp_path: Path, tail: bytes) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n" + E1 + b"\n" + tail))
    assert trace.truncation is None
    assert trace.problem is not None
    assert trace.problem.startswith("line 3: ")


def test_invalid_utf8_is_invalid(tmp_path: Path) -> None:
    bad = b'{"ev": "load", "proc": "w\xff1"}'
    trace = read_trace(write(tmp_path, HEADER + b"\n" + bad + b"\n" + E2 + b"\n"))
    assert trace.problem == "line 2: not UTF-8 text"


def test_one_leading_byte_order_mark_is_stripped(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, b"\xef\xbb\xbf" + HEADER + b"\n" + E1 + b"\n"))
    assert trace.problem is None
    assert trace.header is not None
    assert trace.lines == [2]


def test_byte_order_mark_anywhere_else_is_invalid(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    trace = read_trace(write(tmp_path, bom + bom + HEADER + b"\n"))
    assert trace.problem is not None
    assert trace.problem.startswith("line 1: not JSON (")
    trace = read_trace(write(tmp_path, HEADER + b"\n" + bom + E1 + b"\n"))
    assert trace.problem is not None
    assert trace.problem.startswith("line 2: not JSON (")


def test_duplicate_keys_are_invalid_at_any_depth(tmp_path: Path) -> None:
    line = b'{"ev": "load", "proc": "w1", "proc": "w2"}'
    trace = read_trace(write(tmp_path, HEADER + b"\n" + line + b"\n"))
    assert trace.problem == "line 2: duplicate key 'proc' in an object"
    nested = b'{"format": "x", "workflow": {"nodes": [], "nodes": [], "edges": []}}'
    trace = read_trace(write(tmp_path, nested + b"\n"))
    assert trace.problem == "line 1: duplicate key 'nodes' in an object"


def test_deep_nesting_is_invalid_not_a_crash(tmp_path: Path) -> None:
    line = b'{"ev": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    trace = read_trace(write(tmp_path, HEADER + b"\n" + line + b"\n"))
    assert trace.problem == "line 2: not JSON (nested too deeply)"


def test_huge_integer_is_invalid_not_a_crash(tmp_path: Path) -> None:
    line = b'{"ev": "load", "seq": ' + b"9" * 5000 + b"}"
    trace = read_trace(write(tmp_path, HEADER + b"\n" + line + b"\n"))
    assert trace.problem is not None
    assert trace.problem.startswith("line 2: not JSON (")


def test_empty_and_blank_files(tmp_path: Path) -> None:
    for data in (b"", b"\n\n", b"  \t \n"):
        trace = read_trace(write(tmp_path, data))
        assert trace.problem == "empty file: a trace needs a header line"
        assert trace.header is None


def test_cut_header_is_no_header(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER[:20]))
    assert trace.header is None
    assert trace.problem == "no complete header line"
    assert trace.truncation is not None


def test_header_only(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, HEADER + b"\n"))
    assert trace.problem is None
    assert trace.header is not None
    assert trace.events == []


def test_a_directory_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    trace = read_trace(folder)
    assert trace.problem == "not a regular file (a directory); only files are read"


def test_unreadable_file_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    trace = read_trace(tmp_path / "missing.jsonl")
    assert trace.problem == "cannot read: No such file or directory"


def test_line_length_limit(tmp_path: Path) -> None:
    long = b'{"ev": "load", "proc": "' + b"w" * 40 + b'"}'
    trace = read_trace(
        write(tmp_path, b'{"format": "x"}\n' + long + b"\n" + E2 + b"\n"),
        Limits(max_line_bytes=40),
    )
    assert trace.problem == (
        "line 2 is 66 bytes, over the limit of 40 bytes per line (raise it with --max-line-bytes)"
    )


def test_line_length_limit_applies_to_a_last_line_without_newline(tmp_path: Path) -> None:
    """A long last line is never taken for a cut one: it is judged or it is over the limit."""
    long = b'{"ev": "load", "proc": "' + b"w" * 40 + b'"}'
    path = write(tmp_path, b'{"format": "x"}\n' + long)
    trace = read_trace(path, Limits(max_line_bytes=40))
    assert trace.truncation is None
    assert trace.problem is not None
    assert trace.problem.startswith("line 2 is 66 bytes, over the limit of 40 bytes per line")
    trace = read_trace(path, Limits(max_line_bytes=66))
    assert trace.problem is None
    assert trace.events == [{"ev": "load", "proc": "w" * 40}]


def test_size_limit(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + b"\n" + E1 + b"\n")
    size = path.stat().st_size
    assert read_trace(path, Limits(max_bytes=size)).problem is None
    assert read_trace(path, Limits(max_bytes=size - 1)).problem == (
        f"{size} bytes, over the limit of {size - 1} bytes per trace (raise it with --max-bytes)"
    )


def test_event_count_limit(tmp_path: Path) -> None:
    limits = Limits(max_events=2)
    trace = read_trace(write(tmp_path, HEADER + b"\n" + (E1 + b"\n") * 3), limits)
    assert trace.problem == "more than 2 events"
    trace = read_trace(write(tmp_path, HEADER + b"\n" + (E1 + b"\n") * 2), limits)
    assert trace.problem is None
