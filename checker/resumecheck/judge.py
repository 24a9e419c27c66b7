"""From trace files to verdicts: validate, encode, run TLC once per contract, read its answer.

This module decides nothing about semantics. TLC evaluates the contract's actions and
properties; here we only route data and translate TLC's printed progress back to events.
What a report adds to a verdict (witness, expected moves) is `resumecheck.explain`'s.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from resumecheck import escape, tempdirs
from resumecheck.batch import DEFAULT_MAX_HEAP, events_per_run, parse_heap, run_batch, shards
from resumecheck.contract import Contract, default_spec_paths, find_contract
from resumecheck.errors import SpecError, TLCError, UsageError
from resumecheck.inputs import expand, no_traces
from resumecheck.tlc import printed
from resumecheck.tlc import warm as warm_tlc
from resumecheck.tlc.evalerror import EvaluationError, read_evaluation_error
from resumecheck.tlc.output import Outcome, TLCResult
from resumecheck.trace.encode import EncodedTrace, EncodeError, encode_trace
from resumecheck.trace.reader import Limits, RawTrace, read_trace
from resumecheck.trace.schema import load_schema
from resumecheck.verdict import SHOWN_AFTER, Status, Verdict, one_line, shortened

Progress = Callable[[str], None]


@dataclass
class Prepared:
    """A trace that passed validation, ready to go to TLC (and, with an executor, data that
    travels to a worker: it holds everything judging needs, no reference to a file)."""

    raw: RawTrace
    contract: Contract
    encoded: EncodedTrace


@contextlib.contextmanager
def warm() -> Iterator[warm_tlc.Pool | None]:
    """Within the block, every `judge` call of this process runs TLC in warm drivers
    (`resumecheck.tlc.warm`) kept between calls: a JVM start, TLC's class loading and
    SANY's compiled code are paid once, not per call (bench/results.md). For a process that
    judges again and again (the pytest plugin's session, a suite's loop); verdicts are a
    plain run's, and a run that a driver cannot give is run alone as before. Blocks nest;
    the drivers end when the outermost one ends. Yields the drivers' pool (None with
    `$RESUME_CHECK_TLC_JVM=per-run`)."""
    with warm_tlc.held() as pool:
        yield pool


def judge(
    paths: Sequence[Path],
    *,
    spec_paths: list[Path],
    default_contract: str | None = None,
    on_line: Progress | None = None,
    limits: Limits | None = None,
    tolerate: frozenset[str] = frozenset(),
    max_heap: int | None = None,
    jobs: int = 1,
    executor: Executor | None = None,
    oracle: bool = False,
) -> list[Verdict]:
    """Judges every trace below `paths` (see `resumecheck.inputs`); one TLC run per contract
    for the whole batch, or per shard of it: a batch larger than one TLC run can hold under
    `max_heap` bytes (default `DEFAULT_MAX_HEAP`) is split into consecutive shards, and with
    `jobs` > 1 into at least `jobs` shards judged by that many TLC runs at once (one TLC
    worker each). A trace's verdict does not depend on which shard it is in: each trace is its
    own behaviours, from its own initial state.

    A property in `tolerate` does not make a trace violate: TLC goes on past its breaks and
    the verdict lists where they were, so what else a trace breaks shows (the LangGraph matrix
    sets aside what the reference runtime breaks too). Each contract tolerates the names among
    its own properties; a name that is a property of none of the contracts judged is refused.

    With an `executor` the shards (at least one per slot of it) are judged where it runs them,
    by the same `judge_part`; verdicts are the same as here.

    With `oracle` the traces are judged by each contract's history oracle (`find_contract`): a
    verdict that the history forms of the properties give, for comparing with the checker's.
    """
    files = expand(paths).files
    if not files:
        raise no_traces(paths)
    verdicts: dict[int, Verdict] = {}
    groups: dict[Contract, list[tuple[int, Prepared]]] = defaultdict(list)
    # Read and validated in this process: since validation is compiled, a pool of workers
    # saves little (1000 traces: 0.75 s here, 0.65 s on two busy cores), not worth processes
    # that a SIGKILL of this one could leave behind.
    limits = limits or Limits()
    contracts: dict[str, Contract] = {}  # by name: one lookup of its files per call
    for position, path in enumerate(files):
        prepared = _prepare(path, spec_paths, default_contract, limits, oracle, contracts)
        if isinstance(prepared, Verdict):
            verdicts[position] = prepared
        else:
            groups[prepared.contract].append((position, prepared))
    unknown = set(tolerate).difference(*(c.descriptions for c in groups)) if groups else set()
    if unknown:
        raise UsageError(
            f"--tolerate {', '.join(sorted(map(escape.text, unknown)))}: not a property of "
            + ", ".join(sorted(c.name for c in groups))
        )
    plan = _Plan(max_heap or parse_heap(DEFAULT_MAX_HEAP), max(1, jobs), executor)

    def group(contract: Contract) -> list[Verdict]:
        own = frozenset(tolerate) & frozenset(contract.descriptions)
        return _judge_group(contract, [p for _, p in groups[contract]], on_line, own, plan)

    # A cluster queues every contract's shards at once; here one contract's runs follow another's.
    if executor is not None and len(groups) > 1:
        with ThreadPoolExecutor(max_workers=len(groups)) as pool:
            judged = dict(zip(groups, pool.map(group, groups), strict=True))
    else:
        judged = {contract: group(contract) for contract in groups}
    for contract, members in groups.items():
        for (position, _), verdict in zip(members, judged[contract], strict=True):
            verdicts[position] = verdict
    return [verdicts[i] for i in range(len(files))]


def judge_events(
    header: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    *,
    spec_paths: Sequence[Path] = (),
    tolerate: frozenset[str] = frozenset(),
) -> Verdict:
    """The verdict of one history given as data, not as a file: a test states a property on a
    five-event history in a few lines and gets TLC's answer in-process. The history is written
    as a trace (one JSON object per line, header first) and judged exactly as a file is, with
    the contracts of `spec_paths` first on the search path; the verdict's `path` names the
    temporary file, which is gone when this returns."""
    folder = tempdirs.mkdtemp("events-")
    try:
        path = folder / "events.jsonl"
        lines = [json.dumps(dict(header)), *(json.dumps(dict(e)) for e in events)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        (verdict,) = judge([path], spec_paths=default_spec_paths(spec_paths), tolerate=tolerate)
        return verdict
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _prepare(
    path: Path,
    spec_paths: list[Path],
    default: str | None,
    limits: Limits,
    oracle: bool,
    contracts: dict[str, Contract],
) -> Prepared | Verdict:
    raw = read_trace(path, limits)

    def invalid(reason: str, contract: str | None = None) -> Verdict:
        return Verdict(
            path,
            Status.INVALID,
            contract=contract,
            reason=shortened(reason),
            events=len(raw.events),
            truncation=raw.truncation,
        )

    if raw.problem or raw.header is None:
        return invalid(raw.problem or "no header")
    name = raw.header.get("contract", default)
    if not isinstance(name, str):
        return invalid("the header names no contract; pass --spec NAME")
    schema = load_schema(name)
    if schema is None:
        return invalid(f"no trace format is known for contract {name!r}", name)
    if raw.header.get("format") != schema.format:
        return invalid(
            f"line 1 (header): format {raw.header.get('format')!r} is not judged; {name} traces "
            f"are {schema.format!r} (docs/trace-format.md)",
            name,
        )
    problem = schema.header_problem(raw.header)
    if problem:
        return invalid(f"line 1 (header): {problem}", name)
    for index, event in enumerate(raw.events, start=1):
        problem = schema.event_problem(event)
        if problem:
            return invalid(f"line {raw.lines[index - 1]} (event {index}): {problem}", name)
    try:
        contract = contracts.get(name) or find_contract(name, spec_paths, oracle=oracle)
        contracts[name] = contract
        encoded = encode_trace(schema, raw.header, raw.events)
    except UsageError as exc:
        return invalid(str(exc), name)
    except EncodeError as exc:
        return invalid(_event_line(raw, str(exc)), name)
    return Prepared(raw, contract, encoded)


def _event_line(raw: RawTrace, message: str) -> str:
    """Rewrites 'event N: ...' as 'line L (event N): ...' for a person reading the file."""
    head, _, rest = message.partition(":")
    if head.startswith("event ") and head[6:].split(".")[0].isdigit():
        index = int(head[6:].split(".")[0])
        return f"line {raw.lines[index - 1]} ({head}):{rest}"
    return message


class Executor(Protocol):
    """Somewhere else that judges shards (`resumecheck.executor`: a Dask cluster)."""

    def slots(self) -> int:
        """How many shards it judges at once."""
        ...

    def judge_part(
        self,
        contract: Contract,
        traces: list[Prepared],
        on_line: Progress,
        tolerated: frozenset[str],
        heap: int,
        shard: tuple[int, int],
    ) -> list[Verdict]:
        """What `judge_part` gives for `traces` (shard `shard[0]` of `shard[1]`), TLC's
        "Parsing file" lines passed to `on_line` with the paths of `contract`'s files."""
        ...


@dataclass(frozen=True)
class _Plan:
    """How a contract's batch is run: TLC's heap per run, how many runs at once, and where."""

    heap: int
    jobs: int
    executor: Executor | None = None


def _judge_group(
    contract: Contract,
    traces: list[Prepared],
    on_line: Progress | None,
    tolerated: frozenset[str],
    plan: _Plan | None = None,
) -> list[Verdict]:
    started = time.monotonic()
    modules = _ModuleLog(on_line)
    plan = plan or _Plan(parse_heap(DEFAULT_MAX_HEAP), 1)
    executor = plan.executor
    jobs = plan.jobs if executor is None else max(plan.jobs, executor.slots())
    parts = shards([max(1, len(t.raw.events)) for t in traces], events_per_run(plan.heap), jobs)
    workers = 1 if jobs > 1 else None

    def one(index: int) -> list[Verdict]:
        part = traces[parts[index].start : parts[index].stop]
        if executor is not None:
            shard = (index + 1, len(parts))
            return executor.judge_part(contract, part, modules, tolerated, plan.heap, shard)
        return judge_part(contract, part, modules, tolerated, plan.heap, workers)

    if jobs > 1 and len(parts) > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            judged = list(pool.map(one, range(len(parts))))
    else:
        judged = [one(index) for index in range(len(parts))]
    verdicts = [verdict for part in judged for verdict in part]
    used = modules.spec_files(contract)
    share = (time.monotonic() - started) / len(traces)
    for verdict in verdicts:
        verdict.spec_files = used
        verdict.seconds = share
    return verdicts


class _ModuleLog:
    """Passes TLC's lines on and notes the modules SANY parsed ("Parsing file PATH").

    Which file of a module TLC read is TLC's answer, not ours: with an override folder on the
    library path, this is what tells the report which ResumeCore.tla judged the traces.
    """

    PREFIX = "Parsing file "

    def __init__(self, on_line: Progress | None) -> None:
        self.on_line = on_line
        self.parsed: list[Path] = []
        self.lock = threading.Lock()  # shards' TLC runs may report at once (--jobs)

    def __call__(self, line: str) -> None:
        with self.lock:
            if line.startswith(self.PREFIX):
                self.parsed.append(Path(line[len(self.PREFIX) :].strip()))
            if self.on_line is not None:
                self.on_line(line)

    def spec_files(self, contract: Contract) -> tuple[Path, ...]:
        """The contract's own files TLC used: the configuration and every parsed module from a
        spec folder (not the generated batch, not TLC's standard modules), by folder."""
        rank = {folder: index for index, folder in enumerate(contract.search)}
        files = dict.fromkeys(p for p in [contract.trace_config, *self.parsed] if p.parent in rank)
        # Search order first, so an override folder and what it replaced lead the list.
        return tuple(sorted(files, key=lambda p: (rank[p.parent], p.name)))


def judge_part(
    contract: Contract,
    traces: list[Prepared],
    on_line: Progress | None,
    tolerated: frozenset[str],
    heap: int | None,
    workers: int | None,
) -> list[Verdict]:
    """The verdicts of one shard: everything TLC is asked to judge a shard, so that an
    executor's worker does all of it where it runs (explaining them is a stage of its own,
    `resumecheck.explain`)."""
    verdicts = _judge_batch(contract, traces, on_line, tolerated, heap, workers)
    _store_kept_if_possible(contract, traces, verdicts, on_line, tolerated, heap, workers)
    return verdicts


def _store_kept_if_possible(
    contract: Contract,
    traces: list[Prepared],
    verdicts: list[Verdict],
    on_line: Progress | None,
    tolerated: frozenset[str],
    heap: int | None,
    workers: int | None,
) -> None:
    """A store is blamed only when no behaviour in which it keeps its properties explains the
    trace: a violation of the contract's `StoreProperties` alone is judged again with every
    other property tolerated, and where the trace then conforms its verdict becomes the first
    of those other breaks.

    Why: TLC reports the longest prefix some behaviour matches unbroken, and a crash leaves a
    choice open (did the write in flight reach the store?) that a later event settles. One
    branch can run unbroken further than the true one and break a store property there, e.g. a
    LangGraph worker killed before its subgraph task's write: the branch in which the store got
    the write lets the next process answer the interrupt again unbroken (its task's answer is
    consumed) and breaks CV at the load that shows no such write; the branch in which it did not
    breaks CO at the answer, and nothing after. The store kept its word in the second; blaming it
    would be a false alarm against a correct saver. Python decides no property here: TLC judges
    both runs, the contract names the store's properties.
    """
    store = contract.store_properties
    if not store:
        return
    suspects = [
        index
        for index, verdict in enumerate(verdicts)
        if verdict.status is Status.VIOLATES
        and verdict.properties
        and set(verdict.properties) <= store
        # Tolerating properties that cut no behaviour of the trace would explore the same
        # behaviours again: no rerun can change the verdict.
        and verdict.cut_for - store - tolerated
    ]
    others = frozenset(contract.descriptions) - store - tolerated
    if not suspects or not others:
        return
    again = _judge_batch(
        contract, [traces[i] for i in suspects], on_line, tolerated | others, heap, workers
    )
    for index, verdict in zip(suspects, again, strict=True):
        breaks = {p: i for p, i in verdict.tolerated.items() if p in others}
        if verdict.status is not Status.CONFORMS or not breaks:
            continue
        first = min(breaks.values())
        verdicts[index] = _violation(
            contract,
            traces[index],
            first,
            sorted(p for p, i in breaks.items() if i == first),
            {p: i for p, i in verdict.tolerated.items() if p in tolerated},
        )


def _judge_batch(
    contract: Contract,
    traces: list[Prepared],
    on_line: Progress | None,
    tolerated: frozenset[str] = frozenset(),
    heap: int | None = None,
    workers: int | None = None,
) -> list[Verdict]:
    """One TLC run for the batch; when TLC stops on an expression it cannot evaluate, finds
    the trace it stopped on.

    TLC stops at the first such error and does not say which trace it was on. Bisection does:
    a half that runs cleanly gets its verdicts (and its other half is known to hold the error),
    a half that stops is split again, down to one trace, which gets the error in one sentence;
    other traces that stop with the same error refer to it. A broken property stops every run,
    so after log2(N) + 3 runs the traces still unjudged are reported as not judged instead of
    costing a TLC run each.
    """
    verdicts: dict[int, Verdict] = {}
    first: tuple[EvaluationError, Path] | None = None
    last: EvaluationError | None = None
    runs = len(traces).bit_length() + 3
    todo = [_Part(list(range(len(traces))))]
    while todo and runs > 0:
        part = todo.pop(0)
        if part.fails and len(part.batch) > 1:
            todo[:0] = part.halves()
            continue
        members = [traces[i] for i in part.batch]
        result = run_batch(
            contract,
            [t.encoded for t in members],
            on_line=on_line,
            tolerated=tolerated,
            heap=heap,
            workers=workers,
        )
        runs -= 1
        if result.outcome is Outcome.SPEC_ERROR:
            raise SpecError(f"contract {contract.name} does not parse: {result.error_text}")
        if result.outcome is Outcome.OK:
            judged = _read_verdicts(contract, members, result)
            verdicts.update(zip(part.batch, judged, strict=True))
            if part.sibling is not None:
                part.sibling.fails = True
        elif result.outcome is not Outcome.EVALUATION_ERROR:
            reason = f"TLC could not judge this batch ({result.outcome.value}): "
            reason += one_line(result.error_text)
            verdicts.update(
                (i, _verdict(traces[i], Status.ERROR, reason=reason)) for i in part.batch
            )
        elif len(part.batch) > 1:
            last = read_evaluation_error(result, contract.search)
            todo[:0] = part.halves()
        else:
            (index,) = part.batch
            error = read_evaluation_error(result, contract.search)
            reason = f"TLC could not evaluate {error.what()} on this trace"
            if first is not None and first[0] == error:
                reason += f" either: the same error as on {escape.path(first[1])}"
            else:
                reason += f", after its first {_matched(result)} event(s) matched: {error.cause}"
            verdicts[index] = _verdict(traces[index], Status.ERROR, reason=reason)
            first = first or (error, traces[index].raw.path)
    if first is not None:
        left = f"the evaluation error reported on {escape.path(first[1])}"
    else:
        left = f"being unable to evaluate {(last or EvaluationError('')).what()}"
    for i in (i for part in todo for i in part.batch):
        verdicts[i] = _verdict(traces[i], Status.ERROR, reason=f"not judged: TLC stopped on {left}")
    return [verdicts[i] for i in range(len(traces))]


@dataclass
class _Part:
    """Traces of a batch (their indices) still to judge. `fails` is set once their sibling
    half ran cleanly: then they hold the error, and are split without a run of their own."""

    batch: list[int]
    fails: bool = False
    sibling: _Part | None = None

    def halves(self) -> list[_Part]:
        middle = len(self.batch) // 2
        right = _Part(self.batch[middle:])
        return [_Part(self.batch[:middle], sibling=right), right]


def _matched(result: TLCResult) -> int:
    """The longest prefix of any trace of the run that some behaviour matched."""
    depths = [r.matched for r in printed.records(result.prints) if isinstance(r, printed.Progress)]
    return max(depths, default=0)


def _verdict(trace: Prepared, status: Status, **fields: Any) -> Verdict:
    return Verdict(
        trace.raw.path,
        status,
        contract=trace.contract.name,
        events=len(trace.raw.events),
        truncation=trace.raw.truncation,
        header=trace.raw.header,
        **fields,
    )


def _read_verdicts(contract: Contract, traces: list[Prepared], result: TLCResult) -> list[Verdict]:
    progress: dict[int, int] = defaultdict(int)
    broken: dict[tuple[int, int], set[str]] = defaultdict(set)
    accepted: dict[int, dict[str, Any]] = {}
    tolerated: dict[int, dict[str, int]] = defaultdict(dict)
    cut_for: dict[int, set[str]] = defaultdict(set)
    for record in printed.records(result.prints):
        if isinstance(record, printed.Progress):
            progress[record.trace] = max(progress[record.trace], record.matched)
        elif isinstance(record, printed.Broken) and not record.tolerated:
            broken[(record.trace, record.event)] |= record.properties
            cut_for[record.trace] |= record.properties
        elif isinstance(record, printed.Broken):
            seen = tolerated[record.trace]
            for prop in record.properties:
                seen[prop] = min(seen.get(prop, record.event), record.event)
        elif isinstance(record, printed.Accepted):
            accepted[record.trace] = record.summary
    verdicts = []
    for number, trace in enumerate(traces, start=1):
        total = len(trace.raw.events)
        matched = progress[number]
        if matched > total:
            raise TLCError(f"TLC reported {matched} matched events of {total}: a harness bug")
        # Where some behaviour broke a tolerated property: within the prefix that matched.
        kept = {p: i for p, i in sorted(tolerated[number].items()) if i <= matched}
        if matched == total and (number in accepted or total == 0):
            verdicts.append(
                _verdict(
                    trace,
                    Status.CONFORMS,
                    matched=total,
                    summary=accepted.get(number, {}),
                    tolerated=kept,
                    cut_for=frozenset(cut_for[number]),
                )
            )
            continue
        index = matched + 1
        props = sorted(broken.get((number, index), set()))
        verdict = _violation(contract, trace, index, props, kept)
        verdict.cut_for = frozenset(cut_for[number])
        verdicts.append(verdict)
    return verdicts


def _violation(
    contract: Contract, trace: Prepared, index: int, props: list[str], tolerated: dict[str, int]
) -> Verdict:
    """Event `index` is the first that does not conform: it breaks `props`, or (none) no
    action allows it after the events before it."""
    if props:
        reason = f"event {index} leads to a state that breaks {', '.join(props)}"
    else:
        before = index - 1
        reason = f"no action of {contract.name} allows event {index} after the {before} before it"
    return _verdict(
        trace,
        Status.VIOLATES,
        matched=index - 1,
        event_index=index,
        line=trace.raw.lines[index - 1],
        event=trace.raw.raw[index - 1],
        properties=props,
        descriptions={p: contract.describe(p) for p in props},
        reason=reason,
        tolerated=tolerated,
        shown=tuple(trace.raw.events[: index + SHOWN_AFTER]),
    )
