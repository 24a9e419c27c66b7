"""Write the TLA+ that validates a batch of traces in one TLC run, and run TLC on it.

Generated files sit beside each other in a fresh folder: `TraceData.tla` (the batch's
definitions, numbers and the schema's own words only), `TraceBatch.tla` (extends the
contract's `Trace<Name>` module and the data) and `TraceBatch.cfg` (the contract's own
`Trace<Name>.cfg`, plus the invariants a witness or diagnosis run adds). The spec path's folders
are TLC's library path, in search order, so a module overridden there wins for every EXTENDS.

The traces themselves (`TraceLog`) reach TLC one of two ways, with the same verdicts:

- `java` (the default when the JDK's javac is there): in `TraceLog.rcdata`, which the Java
  override of `resumecheck.tlc.override` reads straight into TLC values; SANY parses only the
  small module. For 1,000 traces this halves the CPU of a TLC run and cuts its memory by
  two thirds (bench/results.md).
- `module`: as the definition `TraceLog` in `TraceData.tla` (SANY parses it).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from resumecheck import tempdirs
from resumecheck.contract import Contract
from resumecheck.errors import TLCError, ToolchainError
from resumecheck.tlc import override, warm
from resumecheck.tlc.output import Outcome, TLCResult
from resumecheck.trace.encode import EncodedTrace, event_constructors, vocabulary
from resumecheck.trace.schema import TraceSchema, load_schema

TLC_WORKERS = 2

DEFAULT_MAX_HEAP = "2g"
"""TLC's heap per run unless told (--max-heap): with the JVM's own overhead and the checker's
Python process beside it, a batch of any size is judged on a 4 GB machine."""
# What one TLC run takes, measured with the override (bench/results.md, docs/scale.md):
# ~100 MiB before the first trace, then at most ~1.6 KiB of heap per event of the batch (1,000
# traces, 98,476 events, ran in -Xmx160m). Twice that per event, so that longer histories
# (a state's size grows with its history) stay inside the cap.
_HEAP_BASE = 128 << 20
_HEAP_PER_EVENT = 3 << 10


def parse_heap(text: str) -> int:
    """`2g`, `512m`, `1500000k` (as java's -Xmx takes them) in bytes; at least 256 MiB."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    word = text.strip().lower()
    number, unit = (word[:-1], units[word[-1]]) if word[-1:] in units else (word, 1)
    if not number.isdigit():
        raise ValueError(f"not a heap size: {text!r} (e.g. 2g, 512m)")
    size = int(number) * unit
    if size < 256 << 20:
        raise ValueError(f"heap {text!r} is below 256m, too small for TLC and one contract")
    return size


def events_per_run(heap: int) -> int:
    """The most events one TLC run is given, so that it stays under `heap` bytes."""
    return max(1, (heap - _HEAP_BASE) // _HEAP_PER_EVENT)


def shards(sizes: Sequence[int], budget: int, parts: int = 1) -> list[range]:
    """Consecutive index ranges of a batch whose traces have `sizes` events: each within
    `budget` events (a longer trace alone), and about `parts` of them (one per trace when
    there are no more traces than that), of about equal events, so that `parts` TLC runs
    share the work."""
    total = sum(sizes)
    count = max(1, min(len(sizes), parts), -(-total // budget) if total else 1)
    if count >= len(sizes):
        return [range(i, i + 1) for i in range(len(sizes))] or [range(0)]
    out: list[range] = []
    start, held, left = 0, 0, total

    def target() -> int:
        # What each shard still to come should hold for `count` shards in all.
        wanted = max(1, count - len(out))
        return min(budget, max(1, -(-left // wanted)))

    goal = target()
    for index, size in enumerate(sizes):
        # A shard ends before a trace that would take it past its goal (or the budget) ...
        if index > start and held + size > goal:
            out.append(range(start, index))
            start, held, goal = index, 0, target()
        held += size
        left -= size
        # ... or at the goal.
        if held >= goal and index + 1 < len(sizes):
            out.append(range(start, index + 1))
            start, held = index + 1, 0
            goal = target()
    if start < len(sizes) or not out:
        out.append(range(start, len(sizes)))
    return out


DataPath = Literal["java", "module"]

# TLC's message 2168: an operator override was loaded (tlc2.output.EC).
_OVERRIDE_LOADED = 2168


@dataclass(frozen=True)
class BatchFiles:
    module: Path
    config: Path
    data: Path | None = None
    """`TraceLog.rcdata` when the traces go through the Java override."""


def write_batch(
    folder: Path,
    contract: Contract,
    schema: TraceSchema,
    traces: Sequence[EncodedTrace],
    *,
    invariants: Sequence[str] = (),
    cut: bool = True,
    tolerated: Iterable[str] = (),
    data: DataPath = "module",
) -> BatchFiles:
    """Writes the batch modules for `traces` (in order: trace i is TLA+ index i) into `folder`.

    With `cut` false, a state that breaks a property is still explored: only for showing the
    state a violating event leads to, never for a verdict. A `tolerated` property's breaks are
    reported and not cut (the caller has checked the names against the contract). `data`
    says where `TraceLog` goes (see the module's docstring).

    Both ways the module starts with the schema's vocabulary, so that TLC interns its strings
    in the same order and orders sets and records alike: the two ways explore in one order.
    """
    namespaces = sorted({ns for trace in traces for ns in trace.ids.tables} | {"proc"})
    counts = ", ".join(
        f"{ns} |-> {max((t.ids.count(ns) for t in traces), default=0)}" for ns in namespaces
    )
    constructors = event_constructors(schema)
    log = "TraceLog == <<\n" + ",\n".join(trace.tla for trace in traces) + "\n>>\n"
    data_file = None
    if data == "java":
        data_file = folder / "TraceLog.rcdata"
        data_file.write_text(f"{override.MAGIC}{constructors}\n{log}", encoding="ascii")
        # Replaced by the override when TLC loads it; fails to evaluate if it was not.
        log = (
            "\\* The traces are in TraceLog.rcdata, read by resume-check's Java override.\n"
            "TraceLog == CHOOSE nothing \\in {} : TRUE\n"
        )
    (folder / "TraceData.tla").write_text(
        "---- MODULE TraceData ----\n"
        "\\* Generated by resume-check: the traces of one batch, identifiers as numbers.\n"
        f"{vocabulary(schema)}\n"
        f"{constructors}\n"
        f"{log}"
        f"TraceIdCounts == [{counts}]\n"
        f"TraceCut == {'TRUE' if cut else 'FALSE'}\n"
        f"TraceTolerated == {{{', '.join(_tla_names(tolerated))}}}\n"
        "====\n",
        encoding="utf-8",
    )
    module = folder / "TraceBatch.tla"
    module.write_text(
        f"---- MODULE TraceBatch ----\nEXTENDS {contract.trace_module.stem}, TraceData\n====\n",
        encoding="utf-8",
    )
    config = folder / "TraceBatch.cfg"
    text = contract.trace_config.read_text(encoding="utf-8")
    for name in invariants:
        text += f"\nINVARIANT {name}\n"
    config.write_text(text, encoding="utf-8")
    return BatchFiles(module, config, data_file)


def _tla_names(names: Iterable[str]) -> list[str]:
    """Property names as TLA+ strings; only identifiers ever reach the generated module."""
    out = []
    for name in sorted(set(names)):
        if not name.isidentifier() or not name.isascii():
            raise ValueError(f"not a property name: {name!r}")
        out.append(f'"{name}"')
    return out


def run_batch(
    contract: Contract,
    encoded: list[EncodedTrace],
    *,
    on_line: Callable[[str], None] | None,
    invariants: Sequence[str] = (),
    cut: bool = True,
    tolerated: Iterable[str] = (),
    data: DataPath | None = None,
    heap: int | None = None,
    workers: int | None = None,
) -> TLCResult:
    """One TLC run over `encoded` (see `write_batch`), in a temporary folder removed after.

    `data` None: the Java override when it is available (`data_path`). `heap` caps TLC's
    heap (bytes, java's -Xmx); `workers` is TLC's -workers (default 2, 1 when an invariant is
    added: a witness or diagnosis run wants one worker's order)."""
    schema = load_schema(contract.name)
    assert schema is not None
    chosen, classes = data_path() if data is None else (data, _classes_for(data))
    folder = tempdirs.mkdtemp("batch-")
    try:
        files = write_batch(
            folder,
            contract,
            schema,
            encoded,
            invariants=invariants,
            cut=cut,
            tolerated=tolerated,
            data=chosen,
        )
        # Two workers keep separate registers; each prints its own progress and the report
        # takes the maximum, so the verdict does not depend on the number of workers.
        # A warm driver's run while the process holds them (resumecheck.judge.warm).
        result = warm.run(
            files.module,
            files.config,
            library_paths=contract.search,
            workers=workers or (1 if invariants else TLC_WORKERS),
            on_line=on_line,
            heap=heap,
            classpath=() if classes is None else (classes,),
            properties={} if files.data is None else {override.PROPERTY: str(files.data)},
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if files.data is not None and not _override_loaded(result):
        # A contract that does not parse is reported as such; anything else without the
        # override loaded (the placeholder TraceLog failing, the override failing) is ours.
        contract_error = (
            result.outcome is Outcome.SPEC_ERROR and "module TraceData" not in result.error_text
        )
        if not contract_error:
            raise TLCError(
                "TLC did not load resume-check's trace data override (set "
                f"{override.DATA_ENV}=module to do without it): {result.error_text.strip()}"
            )
    return result


def _override_loaded(result: TLCResult) -> bool:
    return any(m.code == _OVERRIDE_LOADED and "TraceLog" in m.text for m in result.messages)


def data_path() -> tuple[DataPath, Path | None]:
    """How traces reach TLC here: the Java override and its classes when it builds (or is
    insisted on), else the generated module."""
    choice = override.wanted()
    if choice == "module":
        return "module", None
    built = override.classes()
    if built.folder is None:
        if choice == "java":
            raise ToolchainError(f"{override.DATA_ENV}=java: {built.problem}")
        return "module", None
    return "java", built.folder


def _classes_for(data: DataPath) -> Path | None:
    if data == "module":
        return None
    built = override.classes()
    if built.folder is None:
        raise ToolchainError(built.problem)
    return built.folder
