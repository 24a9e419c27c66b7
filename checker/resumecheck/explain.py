"""What a report adds to a verdict, asked of TLC: the witness and a correct runtime's moves.

Judging (`resumecheck.judge`) says whether a trace conforms; this module explains it. A witness
is one behaviour of the contract that matches the trace, shown as the variables each event
changed; for an event no action allows, the contract's reference runtime says what it would
have done there instead. Both come from further TLC runs, and TLC's identifiers (`proc 2`) are
named back to the trace's own (`"w2"`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from resumecheck.batch import run_batch
from resumecheck.contract import Contract, find_contract
from resumecheck.tlc import printed
from resumecheck.tlc.evalerror import read_evaluation_error
from resumecheck.tlc.output import Outcome
from resumecheck.tlc.values import FrozenDict, Value, format_value, plain
from resumecheck.trace.encode import EncodedTrace, encode_trace
from resumecheck.trace.reader import Limits, RawTrace, read_trace
from resumecheck.trace.schema import TraceSchema, load_schema
from resumecheck.verdict import Status, Verdict, Witness, WitnessStep, one_line


def add_expected(
    verdicts: Sequence[Verdict],
    spec_paths: Sequence[Path],
    tolerated: frozenset[str] = frozenset(),
    limits: Limits | None = None,
) -> None:
    """For each verdict with an event no action allows, the moves the contract's reference
    runtime could have made there instead (`Verdict.expected`): one more TLC run per contract,
    over the matched prefixes of all such traces, read again from their files.

    A stage the caller asks for (the `check` command, a failing cell's message): judging does
    not explain, so a batch of verdicts costs no TLC run beyond its own."""
    stuck: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in verdicts:
        if verdict.status is Status.VIOLATES and not verdict.properties and verdict.contract:
            stuck[verdict.contract].append(verdict)
    for name, group in stuck.items():
        contract = find_contract(name, spec_paths)
        raws = [read_trace(v.path, limits or Limits()) for v in group]
        readable = [(r, v) for r, v in zip(raws, group, strict=True) if r.header is not None]
        own = tolerated & frozenset(contract.descriptions)
        _add_expected(contract, [r for r, _ in readable], [v for _, v in readable], own)


def add_witnesses(
    verdicts: Sequence[Verdict],
    spec_paths: Sequence[Path],
    tolerated: frozenset[str] = frozenset(),
    limits: Limits | None = None,
) -> None:
    """For each conforming or violating verdict, one behaviour of the contract that shows it
    (`Verdict.witness`, see `witness`): for a conforming trace one that matches all of it,
    for a violation one that ends in the state the bad event leads to when that event
    matched a move (the counterexample), else at the last event that did. One TLC run per
    trace, each read again from its file: a stage the caller asks for (`check --witness`)."""
    contracts: dict[str, Contract] = {}
    for verdict in verdicts:
        if verdict.status not in (Status.CONFORMS, Status.VIOLATES) or not verdict.contract:
            continue
        if verdict.contract not in contracts:
            contracts[verdict.contract] = find_contract(verdict.contract, spec_paths)
        contract = contracts[verdict.contract]
        raw = read_trace(verdict.path, limits or Limits())
        if raw.header is None:
            continue
        own = tolerated & frozenset(contract.descriptions)
        if verdict.status is Status.CONFORMS:
            verdict.witness = witness(contract, raw, verdict.matched, cut=True, tolerated=own)
        else:
            upto = verdict.matched + (1 if verdict.properties else 0)
            verdict.witness = witness(
                contract, raw, upto, cut=not verdict.properties, tolerated=own
            )


def _add_expected(
    contract: Contract,
    traces: Sequence[RawTrace],
    verdicts: Sequence[Verdict],
    tolerated: frozenset[str],
) -> None:
    stuck = [
        (trace, verdict)
        for trace, verdict in zip(traces, verdicts, strict=True)
        if verdict.status is Status.VIOLATES
        and not verdict.properties
        and 0 <= verdict.matched <= len(trace.events)
    ]
    if not stuck:
        return
    schema = load_schema(contract.name)
    assert schema is not None
    prefixes = [encode_trace(schema, t.header or {}, t.events[: v.matched]) for t, v in stuck]
    result = run_batch(
        contract, prefixes, on_line=None, invariants=("TraceExpected",), tolerated=tolerated
    )
    if result.outcome is not Outcome.OK:
        return  # an area without TraceExpected: the verdict stands without the hint
    moves: dict[int, set[Value]] = defaultdict(set)
    for record in printed.records(result.prints):
        if isinstance(record, printed.Expected):
            moves[record.trace] |= record.moves
    for number, ((_, verdict), prefix) in enumerate(zip(stuck, prefixes, strict=True), start=1):
        verdict.expected = sorted(
            (_named_event(schema, prefix, move) for move in moves.get(number, ())),
            key=lambda e: json.dumps(e, sort_keys=True),
        )


def _named_event(schema: TraceSchema, trace: EncodedTrace, move: Value) -> dict[str, Any]:
    """A partial event from TLC in the trace's own names (`proc 2` back to `"w2"`)."""
    assert isinstance(move, FrozenDict)
    kind = str(move["ev"])
    props = schema.defs[f"ev_{kind}"]["properties"] if f"ev_{kind}" in schema.defs else {}
    named: dict[str, Any] = {"ev": kind}
    for field, value in move.items():
        if field == "ev":
            continue
        target = schema.resolve(props.get(field, {}))
        namespace = target.get("x-intern")
        named[str(field)] = trace.ids.name(namespace, value) if namespace else plain(value)
    return named


def witness(
    contract: Contract,
    trace: RawTrace,
    matched: int,
    *,
    cut: bool,
    tolerated: frozenset[str] = frozenset(),
) -> Witness | str:
    """One behaviour of the contract that matches the first `matched` events, hidden state too;
    or why TLC gave none.

    For a violation the last of those events is the bad one and `cut` is off, so the behaviour
    ends in the state that breaks the property: the counterexample, in the contract's terms.
    """
    schema = load_schema(contract.name)
    assert schema is not None and trace.header is not None
    prefix = encode_trace(schema, trace.header, trace.events[:matched])
    result = run_batch(
        contract, [prefix], on_line=None, invariants=("NotMatched",), cut=cut, tolerated=tolerated
    )
    if result.outcome is not Outcome.INVARIANT_VIOLATION or result.violated != "NotMatched":
        said = one_line(result.error_text)
        if result.outcome is Outcome.EVALUATION_ERROR:
            error = read_evaluation_error(result, contract.search)
            said = f"{error.what()} could not be evaluated: {error.cause}"
        return f"no witness: TLC said {result.outcome.value}: {said}"
    steps: list[WitnessStep] = []
    previous: dict[str, Value] = {}
    for state in result.error_trace:
        variables = {k: v for k, v in state.variables.items() if k not in ("t", "l")}
        changed: dict[str, str] = {}
        for name, value in variables.items():
            if name in previous:
                changed.update(_diff(name, previous[name], value))
            else:
                changed[name] = format_value(value)
        index = len(steps)
        event = trace.raw[index - 1] if index else None
        steps.append(WitnessStep(after_event=index, event=event, changed=changed))
        previous = variables
    legend = {
        ns: {str(n): prefix.ids.name(ns, n) for n in table.values()}
        for ns, table in prefix.ids.tables.items()
    }
    return Witness(steps=tuple(steps), ids=legend)


def _diff(path: str, old: Value, new: Value) -> dict[str, str]:
    """The parts of a variable that changed, as `run[2].task[1]`-style paths, so a witness shows
    what a step did rather than the whole state again."""
    if old == new:
        return {}
    if isinstance(old, FrozenDict) and isinstance(new, FrozenDict) and old.keys() == new.keys():
        items = [(k, old[k], new[k]) for k in new]
    elif isinstance(old, tuple) and isinstance(new, tuple) and len(old) == len(new):
        items = [(i, a, b) for i, (a, b) in enumerate(zip(old, new, strict=True), start=1)]
    else:
        return {path: format_value(new)}
    changed: dict[str, str] = {}
    for key, a, b in items:
        if isinstance(key, str) and key.isidentifier():
            sub = f"{path}.{key}"
        else:
            sub = f"{path}[{key if isinstance(key, int) else format_value(key)}]"
        changed.update(_diff(sub, a, b))
    return changed
