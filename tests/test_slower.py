"""A slower store gets the same verdict: `resume-check slower` on the committed traces.

A `put` or `put_writes` records a call's return; a store that answers later gives the same run
with the acknowledgement later, past other processes' events. Every such variant of a trace the
contract accepts must be accepted too. The committed traces and corpora hold runs of unfenced
processes racing on one thread, so this finds, by itself, where the contract is stricter than a
correct store: it found the two holes `traces/core/ok-latest-in-flight-made-beside-the-stored-one`
and `ok-write-in-flight-shown-over-the-stored-one` close, and the FD that
`ok-write-acknowledged-after-it-landed-and-was-replaced` no longer is. The last tests show it can
fail: with either hole put back into a copy of the contract, a variant is flagged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke
from resumecheck.contract import default_spec_paths
from resumecheck.mutation import late_acknowledgements
from resumecheck.slowstore import render_text, slower
from resumecheck.trace.reader import read_trace
from resumecheck.trace.schema import load_schema

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "traces" / "core"
CORPORA = ROOT / "corpora"
# A recorded race of two LangGraph resumers on redis, async durability: its variants reach both
# holes the contract had.
RACE = CORPORA / "langgraph" / "redis" / "concurrent-2.none.async.jsonl"


def _events(*procs: str) -> list[dict[str, object]]:
    return [{"ev": "put" if p.endswith("!") else "step", "proc": p.rstrip("!")} for p in procs]


def test_each_acknowledgement_moves_to_just_before_its_process_next_event(tmp_path: Path) -> None:
    header = {"format": "resume-check/v2", "contract": "ResumeCore"}
    events = _events("w1", "w1!", "w2", "w2", "w1", "w2!", "w2")
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *events]), encoding="utf-8")
    schema = load_schema("ResumeCore")
    assert schema is not None
    variants = list(late_acknowledgements(read_trace(path), schema))
    order = [[(e["ev"], e["proc"]) for e in v.events] for v in variants]
    # w1's put goes past w2's two events; w2's last put is already just before its next event
    assert order == [
        [
            ("step", "w1"),
            ("step", "w2"),
            ("step", "w2"),
            ("put", "w1"),
            ("step", "w1"),
            ("put", "w2"),
            ("step", "w2"),
        ],
    ]
    assert variants[0].edits == ("acknowledged event 2 late, at 4",)


def test_every_acknowledgement_late_at_once_keeps_each_process_order(tmp_path: Path) -> None:
    header = {"format": "resume-check/v2", "contract": "ResumeCore"}
    events = _events("w1", "w1!", "w1!", "w2", "w2!", "w3", "w1", "w2")
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *events]), encoding="utf-8")
    schema = load_schema("ResumeCore")
    assert schema is not None
    *alone, together = late_acknowledgements(read_trace(path), schema)
    assert len(alone) == 2  # w1's second put and w2's put; w1's first is followed by its own
    assert together.edits == ("acknowledged 2 events late",)
    for proc in ("w1", "w2", "w3"):
        mine = [e for e in events if e["proc"] == proc]
        assert [e for e in together.events if e["proc"] == proc] == mine
    assert [(e["ev"], e["proc"]) for e in together.events] == [
        ("step", "w1"),
        ("put", "w1"),
        ("step", "w2"),
        ("step", "w3"),
        ("put", "w1"),
        ("step", "w1"),
        ("put", "w2"),
        ("step", "w2"),
    ]


@pytest.mark.slow
def test_no_committed_trace_is_flagged_when_its_store_answers_later() -> None:
    result = slower([CORE, CORPORA], spec_paths=default_spec_paths(), jobs=2)
    assert result.judged >= 200, render_text(result, None)
    assert not result.flagged, render_text(result, None)


def _with_hole(tmp_path: Path, old: str, new: str) -> list[Path]:
    """The contract with one rule put back as it was: a spec folder searched first."""
    spec = tmp_path / "spec"
    spec.mkdir()
    base = (default_spec_paths()[-1] / "ResumeCore.tla").read_text(encoding="utf-8")
    assert old in base
    (spec / "ResumeCore.tla").write_text(base.replace(old, new), encoding="utf-8")
    return default_spec_paths([spec])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a task's stored write must be shown as it is, never one in flight in its place
        (
            "\\/ \\E m \\in MustWrites(c) : ~\\E x \\in Shapes(writes) : x.task = m.task",
            "\\/ ~(MustWrites(c) \\subseteq Shapes(writes))",
        ),
        # the return of a write that landed and was replaced is a second write (FD)
        (
            '<<"FD", ~mine /\\ ~same /\\ ~back /\\ ~edit>>',
            '<<"FD", ~mine /\\ ~same /\\ ~edit>>',
        ),
    ],
    ids=["write-slot", "late-return"],
)
def test_a_hole_put_back_is_found(tmp_path: Path, old: str, new: str) -> None:
    seeds = [RACE, CORE / "ok-failed-then-overwritten-by-a-concurrent-run.jsonl"]
    result = slower(seeds, spec_paths=_with_hole(tmp_path, old, new))
    assert result.flagged, render_text(result, None)
    text = render_text(result, None)
    assert "false alarm" in text and "seed: conforms; variant: violates" in text


def test_the_documented_example_runs_verbatim(tmp_path: Path) -> None:
    """docs/cli.md's example of `resume-check slower`: its command, run from the project root
    (CliRunner, in-process), prints exactly the output the page shows."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page.split("## Would a slower store get the same verdict", 1)[1].split("\n## ", 1)[0]
    block = section.split("```\n", 2)[1].split("```", 1)[0]
    command, *shown = block.splitlines()
    assert command.startswith("$ resume-check slower ")
    args = [ROOT / a if a.endswith(".jsonl") else a for a in command.split()[2:]]
    run = invoke(*args)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == shown
    missing = invoke("slower", tmp_path / "nothing-here", "--no-progress")
    assert missing.returncode == 2
    assert "no such file" in missing.stderr and "Traceback" not in missing.stderr
    alone = invoke("slower", CORE / "ok-linear-sync.jsonl", "--no-progress")
    assert alone.returncode == 0
    assert alone.stdout.startswith("no trace given has an acknowledgement"), alone.stdout
