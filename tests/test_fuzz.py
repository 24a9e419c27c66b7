"""Fuzzing: mutated traces, judged in batches by the real CLI and the real TLC.

Seeds are the traces of traces/ in their contract's current format, whatever the contract, so
the test follows the formats as they change. Each example is a batch of traces of one contract,
each a seed with a few mutations: events dropped, duplicated, reordered; fields dropped, added,
retyped, integers written as floats; the file cut at any byte; random bytes written over or
into it; a byte order mark, CRLF line ends, blank lines. Whatever comes of it, resume-check
must end within a bound, without a traceback, and give every trace one of conforms, violates
or invalid, with its reason; a last line it could not parse is never part of a conforming
verdict.

`make test` runs a few batches; `make fuzz` runs many (RESUME_CHECK_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import judgeable_traces, run_cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow
EXAMPLES = int(os.environ.get("RESUME_CHECK_FUZZ_EXAMPLES", "3"))
BATCH = 6
BOUND = 120  # seconds for one batch: a handful of TLC runs at most

SEEDS: dict[str, list[list[bytes]]] = defaultdict(list)
for _path, _ in judgeable_traces():
    _lines = [line for line in _path.read_bytes().split(b"\n") if line.strip()]
    SEEDS[json.loads(_lines[0])["contract"]].append(_lines)
CONTRACTS = sorted(SEEDS)

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def _edit_object(line: bytes, draw: st.DrawFn) -> bytes:
    """One change to the fields of a JSON object line: drop, add or retype one."""
    try:
        value = json.loads(line)
    except ValueError:
        return line  # an earlier mutation made it something else
    if not isinstance(value, dict):
        return line
    keys = sorted(value)
    how = draw(st.sampled_from(["drop", "add", "retype", "float"]))
    if how == "add" or not keys:
        value[draw(st.text(min_size=1, max_size=8))] = draw(JSON_VALUES)
        return json.dumps(value).encode()
    key = draw(st.sampled_from(keys))
    if how == "drop":
        del value[key]
    elif how == "float" and type(value[key]) is int:
        value[key] = float(value[key])
    else:
        value[key] = draw(JSON_VALUES)
    return json.dumps(value).encode()


@st.composite
def mutated(draw: st.DrawFn, seed: list[bytes]) -> bytes:
    """A seed trace with a few mutations, as the bytes of a file."""
    lines = list(seed)
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        if len(lines) < 2:
            break
        kind = draw(
            st.sampled_from(
                ["drop", "duplicate", "swap", "edit", "edit-header", "dup-key", "blank"]
            )
        )
        i = draw(st.integers(min_value=1, max_value=len(lines) - 1))
        if kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(min_value=1, max_value=len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind in ("edit", "edit-header"):
            at = 0 if kind == "edit-header" else i
            lines[at] = _edit_object(lines[at], draw)
        elif kind == "dup-key":
            lines[i] = lines[i].rstrip(b"}") + b', "ev": "x"}'
        else:
            lines.insert(i, b"   ")
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = end.join(lines) + end
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    damage = draw(st.sampled_from(["none", "none", "cut", "overwrite", "insert", "noise"]))
    if damage == "cut":
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    elif damage in ("overwrite", "insert"):
        at = draw(st.integers(min_value=0, max_value=len(data)))
        noise = draw(st.binary(min_size=1, max_size=8))
        data = data[:at] + noise + data[at + (len(noise) if damage == "overwrite" else 0) :]
    elif damage == "noise":
        data = draw(st.binary(max_size=200))
    return data


@st.composite
def batches(draw: st.DrawFn) -> list[bytes]:
    """Mutated traces of one contract (a batch is one TLC run for them all)."""
    seeds = SEEDS[draw(st.sampled_from(CONTRACTS))]
    picks = st.sampled_from(seeds).flatmap(lambda seed: mutated(seed))
    return draw(st.lists(picks, min_size=1, max_size=BATCH))


def _cut_short(data: bytes) -> bool:
    """Whether the file ends in a non-blank line without a newline that does not parse."""
    last = data.rsplit(b"\n", 1)[-1]
    if not last.strip():
        return False
    try:
        json.loads(last.decode("utf-8").removeprefix("\ufeff"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return True
    return False


@pytest.mark.skipif(not CONTRACTS, reason="traces/ holds no judgeable seed")
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=EXAMPLES <= 3,  # the short run of `make test` is the same every time
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=batches())
def test_mutated_batches_get_a_verdict_each(batch: list[bytes], tmp_path_factory: Any) -> None:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    for index, data in enumerate(batch):
        (folder / f"t{index:02d}.jsonl").write_bytes(data)
    run = run_cli("--format", "json", folder, timeout=BOUND)
    run.assert_no_traceback()
    assert "internal error" not in run.stderr, run
    assert run.returncode in (0, 1, 2), run
    document = run.json()
    assert document["exit_code"] == run.returncode
    verdicts = {Path(v["path"]).name: v for v in document["traces"]}
    assert len(verdicts) == len(batch), run
    for index, data in enumerate(batch):
        verdict = verdicts[f"t{index:02d}.jsonl"]
        status = verdict["status"]
        event(status)  # `--hypothesis-show-statistics` shows how often TLC was reached
        assert status in ("conforms", "violates", "invalid"), verdict
        if status == "conforms":
            assert verdict["matched"] == verdict["events"], verdict
        else:
            assert verdict["reason"], verdict
        if status == "violates":
            assert 1 <= verdict["event_index"] <= verdict["events"], verdict
        if status != "invalid" and _cut_short(data):
            assert verdict["truncated"] is True, verdict
