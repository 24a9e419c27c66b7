"""The bench's ResumeCore traces, from TLC simulating the contract's reference runtime.

    .venv/bin/python bench/simulate.py OUT --count 100 --seed 1

One TLC run (`-simulate`, spec/SimResumeCore.tla) walks the reference runtime of
spec/ResumeCore.tla at random -- loads, steps, tasks, effects, interrupts and answers, saves,
crashes that keep any part of what was in flight, time-travel forks, update_state edits, three
processes, every durability, effect level and fencing -- and prints each walk's observed history
(`hist`: every move as an event record) once it has ~100 events and its last invocation
returned. Each history becomes a trace in the recorders' format (docs/trace-format.md): the
record of each move maps to one event through `EVENTS`, a table of field names, and spec values
become identifiers the way recorders write them. No second runtime lives here: what a trace
does is what the contract's reference did.

The judge is the test of the table: every simulated trace must conform (`resume-check`), or the
mapping is wrong. 1 in 20 traces violates, as in bench/tracegen.py: mutants of conforming ones
(`resumecheck.mutation`) that the history oracle (`TraceResumeCoreHistory`, the properties
stated over the history alone) calls broken, with the event and properties it names; the
checker's verdicts must match them. It writes `manifest.json` beside the traces, in the
format of traces/core/manifest.json.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from corpus import Expected, Trace, write_manifest
from resumecheck import tempdirs
from resumecheck.judge import judge
from resumecheck.mutation import mutants
from resumecheck.tlc.runner import run_tlc
from resumecheck.tlc.values import FrozenDict, ModelValue, Value, parse_value
from resumecheck.trace.reader import read_trace
from resumecheck.verdict import Status

SPEC = Path(__file__).resolve().parent.parent / "spec"
MODULE = SPEC / "SimResumeCore.tla"
CONFIG = SPEC / "SimResumeCore.cfg"
TAG = "sim-trace"
TARGET_EVENTS = 100
VIOLATING_EVERY = 20
VIOLATING_OFFSET = 7
_DRAWS = 4  # mutants drawn per violating trace and round
_MAX_ROUNDS = 5
_VIOLATED = re.compile(r"^Invariant (\w+) is violated", re.M)
WALKS_PER_TRACE = 4  # walks TLC starts per trace wanted: some reach neither an end nor the depth
DEPTH = 400  # moves per walk before TLC gives up on it (a walk ends when its history is printed)

# hist record kind -> (trace event, its fields): the whole mapping. `name=source` takes the
# event's field `name` from the record's `source`, a bare name from the record's field of that
# name; ids are rendered by `_id` after the event field's name. What a record has and the event
# lacks (`kept`, `contents`, ...) is the contract's hidden state or folded into another field.
EVENTS: dict[str, tuple[str, str]] = {
    "load": ("load", "thread=ch asked before checkpoint=got parent digest answers"),
    "read": ("read", "thread=ch asked before checkpoint=got parent digest answers"),
    "schedule": ("schedule", "thread=ch checkpoint=c tasks"),
    "start": ("task_start", "thread=ch task node path by"),
    "effect": ("effect", "thread=ch task intent kind status"),
    "end": ("task_end", "thread=ch task outcome interrupt resumed=res digest"),
    "resume": ("resume", "thread=ch checkpoint=c interrupt value"),
    "step": ("step", "thread=ch checkpoint=c parent digest"),
    "fork": ("fork", "thread=ch checkpoint=c parent digest"),
    "update": ("update", "thread=ch checkpoint=c parent digest"),
    "edit": ("edit", "thread=ch checkpoint=c task digest"),
    "put": ("put", "checkpoint=c digest"),
    "putw": ("put_writes", "thread=ch checkpoint=c task kind interrupt digest"),
    "puta": ("put_writes", "checkpoint=c"),
    "finish": ("finish", "outcome"),
    "crash": ("crash", ""),
    "delete": ("delete", "thread=ch"),
}


def _fields(spec: str) -> list[tuple[str, str]]:
    return [(f.partition("=")[0], f.partition("=")[2] or f) for f in spec.split()]


# How a spec value of a field is written in a trace (0: none, null); ids as recorders name
# them: a thread `t1`, a checkpoint `c3`, its task on path a `c3:a`, that task's second
# interrupt() `c3:a#2`, a value `v1`, a digest `d4`, an effect intent `e2`.
PREFIX = dict.fromkeys(("checkpoint", "parent", "asked", "before"), "c") | {
    "thread": "t",
    "value": "v",
    "digest": "d",
    "intent": "e",
}


def _id(field: str, value: Value) -> Any:
    if isinstance(value, tuple):  # a task <<checkpoint, path>> or an interrupt <<task, index>>
        head, tail = value
        return f"{_id('task', head)}#{tail}" if isinstance(head, tuple) else f"c{head}:{tail}"
    if value == 0 and not isinstance(value, bool):
        return None
    if isinstance(value, ModelValue):
        return str(value)
    if field in PREFIX:
        return f"{PREFIX[field]}{value}"
    return value


def _entries(items: Any, fields: Sequence[str]) -> list[dict[str, Any]]:
    rows = [{f: _id(f, item[f]) for f in fields} for item in items]
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


def event(record: Mapping[str, Value], chains: Mapping[Value, Value]) -> dict[str, Any]:
    """The trace event recording one move of the contract's history (`chains`: each
    checkpoint made so far -> its chain, for an answers' save, whose record names none)."""
    kind, fields = EVENTS[str(record["ev"])]
    out: dict[str, Any] = {"ev": kind, "proc": str(record["p"])}
    for name, source in _fields(fields):
        value = record[source]
        if name in ("answers", "resumed"):
            out[name] = _entries(value, ("interrupt", "value"))
        elif name == "tasks":
            out[name] = _entries(value, ("task", "node", "path"))
        else:
            out[name] = _id(name, value)
    if kind in ("load", "read"):
        # a load's writes: their shapes, and the content of those whose content it saw
        contents = {c["task"]: c["digest"] for c in record["contents"]}
        out["writes"] = _entries(
            [FrozenDict({**w, "digest": contents.get(w["task"], 0)}) for w in record["writes"]],
            ("task", "kind", "interrupt", "digest"),
        )
        # (the reference runs one chain: no load is nested, refused or asked to go into another)
    if record["ev"] == "puta":
        out |= {"thread": _id("thread", chains[record["c"]]), "task": None, "kind": "resume"}
    if kind == "task_start" and out["by"] is None:
        del out["by"]
    return out


def header(workflow: Mapping[str, Value], index: int) -> dict[str, Any]:
    """The header of a simulated trace: the workflow's declared guarantees and graph."""
    effects = workflow["effects"]
    plan = workflow["plan"]
    nodes = sorted({str(task["node"]) for tasks in plan.values() for task in tasks})
    return {
        "format": "resume-check/v2",
        "contract": "ResumeCore",
        "runtime": {"name": "tlc-simulation", "version": "SimResumeCore"},
        "thread": "t1",
        "scenario": f"walk {index} of the reference runtime (spec/SimResumeCore.tla)",
        "guarantees": {
            "durability": workflow["durability"],
            "effects": {
                "default": effects["default"],
                "kinds": [{"kind": k["kind"], "level": k["level"]} for k in effects["kinds"]],
            },
            "fencing": workflow["fencing"],
        },
        "graph": {"nodes": nodes},
    }


@dataclass(frozen=True)
class Walk:
    """One printed history: the workflow it ran and its moves."""

    workflow: Mapping[str, Value]
    hist: tuple[Mapping[str, Value], ...]


def walks(count: int, seed: int, events: int, depth: int = DEPTH) -> list[Walk]:
    """`count` histories from ONE TLC run, each of at least `events` events. TLC checks the
    invariant that prints on every successor of a walk's state, also those it leaves aside:
    a print whose history, but for its last event, the next print extends came from a
    successor left aside, and is dropped."""
    config = tempdirs.mkdtemp("simulate-") / CONFIG.name
    try:
        text = CONFIG.read_text(encoding="utf-8")
        text, replaced = re.subn(r"TraceEvents = \d+", f"TraceEvents = {events}", text)
        if replaced != 1:
            raise click.ClickException(f"{CONFIG} sets no TraceEvents")
        text += "\nINVARIANT Printed\n"  # the spec check walks it without printing
        config.write_text(text, encoding="utf-8")
        shutil.copy(MODULE, config.parent)
        result = run_tlc(
            config.parent / MODULE.name,
            config,
            library_paths=[SPEC],
            extra_args=[
                "-simulate",
                f"num={count * WALKS_PER_TRACE}",
                "-depth",
                str(depth),
                "-seed",
                str(seed),
                "-continue",
            ],
        )
    finally:
        shutil.rmtree(config.parent, ignore_errors=True)
    broken = Counter(_VIOLATED.findall(result.error_text))
    if broken:
        # the reference runtime broke a property in some walks: a finding about the contract,
        # not about the traces (no walk goes on past a bad move), so the corpus is still sound
        said = ", ".join(f"{name} in {n}" for name, n in sorted(broken.items()))
        click.echo(
            f"simulate: the reference runtime breaks {said} of {count * WALKS_PER_TRACE} walks "
            f"(seed {seed}); those walks end there. TLC's trace of each: tlc -simulate "
            f"num={count * WALKS_PER_TRACE} -depth {depth} -seed {seed} -continue "
            f"-config {CONFIG.name} {MODULE.name} in spec/",
            err=True,
        )
    printed = [parse_value(p) for p in result.prints]
    found = [Walk(p[1], p[2]) for p in printed if isinstance(p, tuple) and p[0] == TAG]
    if not found:
        raise click.ClickException(
            f"TLC printed no history ({result.outcome.name}):\n"
            f"{result.error_text or result.stdout[-2000:]}"
        )
    kept = [
        w
        for w, nxt in zip(found, [*found[1:], None], strict=True)
        if nxt is None or nxt.hist[: len(w.hist) - 1] != w.hist[:-1]
    ]
    return kept[:count]


def trace_of(walk: Walk, index: int) -> Trace:
    """Walk `index` as a trace (named by its index), conforming and complete by construction:
    the walk printed only once its last invocation returned and nothing was in flight."""
    chains: dict[Value, Value] = {}
    events = []
    for record in walk.hist:
        if record["ev"] in ("step", "fork", "update"):
            chains[record["c"]] = record["ch"]
        events.append(event(record, chains))
    return Trace(
        f"sim-{index:04d}",
        header(walk.workflow, index),
        events,
        Expected("conforms", complete=True),
    )


def is_violating(index: int) -> bool:
    """Trace `index` is a mutant (1 in 20, as in bench/tracegen.py; trace 0 conforms)."""
    return index % VIOLATING_EVERY == VIOLATING_OFFSET


def corpus(count: int, seed: int, events: int = TARGET_EVENTS) -> list[Trace]:
    """`count` traces: the walks of one TLC run and, at every violating index, a mutant of
    the walks before it that the history oracle calls broken, cut after the event it names
    (TLC matches nothing after it). The first N of a corpus are the corpus of N."""
    slots = [i for i in range(count) if is_violating(i)]
    found = walks(count - len(slots), seed, events)
    if len(found) < count - len(slots):
        raise click.ClickException(
            f"TLC printed {len(found)} of {count - len(slots)} walks: raise DEPTH or --events"
        )
    conforming = iter(found)
    traces: list[Trace | None] = [
        None if i in slots else trace_of(next(conforming), i) for i in range(count)
    ]
    mutated = _mutate([t for t in traces if t is not None], slots, seed)
    return [t if t is not None else mutated[i] for i, t in enumerate(traces)]


def _mutate(conforming: Sequence[Trace], slots: Sequence[int], seed: int) -> dict[int, Trace]:
    """For each violating index, a mutant of the conforming traces before it, labelled by the
    history oracle's verdict (event and properties); Python decides nothing about it."""
    made: dict[int, Trace] = {}
    folder = tempdirs.mkdtemp("simulate-")
    try:
        for trace in conforming:
            trace.write(folder)
        raws = {t.name: read_trace(folder / t.file) for t in conforming}
        for attempt in range(_MAX_ROUNDS):
            wanted = [s for s in slots if s not in made]
            if not wanted:
                break
            drawn = []
            for slot in wanted:
                seeds = [raws[t.name] for t in conforming if int(t.name[4:]) < slot]
                for k, mutant in enumerate(
                    mutants(seeds, _DRAWS, seed * 1_000_003 + slot + attempt)
                ):
                    path = folder / f"mutant-{slot:04d}-{k}.jsonl"
                    path.write_text(mutant.jsonl(), encoding="utf-8")
                    drawn.append((slot, mutant, path))
            verdicts = judge([p for _, _, p in drawn], spec_paths=[SPEC], oracle=True)
            for (slot, mutant, _), verdict in zip(drawn, verdicts, strict=True):
                if slot in made or verdict.status is not Status.VIOLATES or not verdict.properties:
                    continue
                index = verdict.event_index
                assert index is not None
                made[slot] = Trace(
                    f"sim-{slot:04d}",
                    dict(mutant.header, scenario=f"{mutant.seed.stem}, {'; '.join(mutant.edits)}"),
                    list(mutant.events[:index]),
                    Expected("violates", index, tuple(sorted(verdict.properties))),
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    missing = sorted(set(slots) - set(made))
    if missing:
        raise click.ClickException(f"no mutant the oracle calls broken for traces {missing}")
    return made


@click.command()
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--count", default=100, show_default=True, help="traces to write")
@click.option("--seed", default=1, show_default=True, help="TLC's simulation seed")
@click.option(
    "--events", default=TARGET_EVENTS, show_default=True, help="events per walk, at least"
)
def main(out: Path, count: int, seed: int, events: int) -> None:
    """Write COUNT simulated traces (1 in 20 violating) and manifest.json to OUT."""
    traces = corpus(count, seed, events)
    out.mkdir(parents=True, exist_ok=True)
    for trace in traces:
        trace.write(out)
    write_manifest(out, traces)
    violating = sum(t.expected.status == "violates" for t in traces)
    total = sum(len(t.events) for t in traces)
    click.echo(f"{len(traces)} trace(s), {total} events, {violating} violating -> {out}")


if __name__ == "__main__":
    main()
