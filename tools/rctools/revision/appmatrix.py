"""`resume-check run revision --app MODULE:FACTORY`: the cells of a user's graph.

A cell is one run of the graph with the revision (`--revise PATH=JSON`: a new value of one
input channel, a later user message) at one point -- inside each model call of a fault-free
run, at each node's start, between each node's end and its commit -- recovered by the chosen
policy. Each cell also measures full restart and suffix recomputation at the same point, so
the figures compare the policy's model calls and tokens with both on the same runs (those
baseline runs are measured, not judged; `--policy full` and `--policy suffix` judge them).
"""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from langgraph.checkpoint.memory import InMemorySaver
from resumecheck.errors import UsageError

from rctools.langgraph.app import AppError, load_factory, parse_answer, parse_json
from rctools.revision.app import AppRevisionRun, Point, points_of, probe, workflow_of
from rctools.revision.loops import DEFAULT_LOOP_BOUND
from rctools.revision.routing import DEFAULT_SEND_BOUND
from rctools.suite.matrix import CellByCell, Judged
from rctools.suite.reports import Cell, CellReport, Figures

WHERE = {
    "call": "inside model call {}",
    "node": "when {} starts",
    "commit": "after {} ends, before its commit",
    "parked": "while {} waits at its interrupt for the human's answer",
    "paused": "while the run waits at a static interrupt before {}",
}


def parse_revision(text: str | None) -> tuple[str, Any]:
    """`PATH=JSON` -> (path, value)."""
    if not text or "=" not in text:
        raise UsageError(
            "with --app, --revise takes PATH=JSON: the input channel and its new value"
        )
    path, _, value = text.partition("=")
    try:
        return path, json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--revise {path}=...: not a JSON value: {exc}") from None


class AppMatrix(CellByCell):
    """Every point of the user's graph under one policy, each measured beside full and suffix."""

    DOCS = "docs/revision.md"
    DECLARED: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        spec: str,
        inputs: Any,
        revision: tuple[str, Any],
        policy: str,
        effects: dict[str, bool] | None = None,
        bound: int = DEFAULT_SEND_BOUND,
        loop_bound: int = DEFAULT_LOOP_BOUND,
        answer: tuple[Any, ...] = (),
    ) -> None:
        try:
            self.factory: Callable[[Any], Any] = load_factory(spec)
            if not isinstance(inputs, dict) or not inputs:
                raise AppError("with --app, --input takes a JSON object: the input channels")
            graph = self.factory(InMemorySaver())
            workflow_of(graph, inputs, effects, bound, (), loop_bound)  # refused now, not later
            if revision[0] not in inputs:
                known = ", ".join(sorted(inputs))
                raise AppError(
                    f"--revise: {revision[0]!r} is not an input channel of --input ({known})"
                )
            fault_free = probe(self.factory, inputs, bound, answer)  # the run before the cells
            self.fanouts = fault_free.fanouts  # a router seen sending Send packets
            workflow_of(graph, inputs, effects, bound, self.fanouts, loop_bound)
            self.points = points_of(self.factory, inputs, bound, fault_free, loop_bound, answer)
        except AppError as exc:
            raise UsageError(str(exc)) from None
        self.spec, self.inputs, self.revision, self.policy = spec, inputs, revision, policy
        self.effects, self.bound, self.loop_bound = dict(effects or {}), bound, loop_bound
        self.answer = answer

    def cells(self) -> list[Cell]:
        path = self.revision[0]
        return [
            Cell(
                f"app-{self.policy}-{p.label}",
                "app",
                f"{path} revised {WHERE[p.kind].format(p.at)}; {self.policy} recovers",
                {"kind": p.kind, "at": p.at},
            )
            for p in self.points
        ]

    def runtime(self) -> dict[str, str]:
        return {"name": "langgraph", "version": importlib.metadata.version("langgraph")}

    def _run(self, point: Point, policy: str, trace: Path, scratch: Path) -> Any:
        path, value = self.revision
        db = scratch / f"{trace.stem}-{policy}.sqlite"
        run = AppRevisionRun(
            self.factory, self.inputs, path, value, point, policy, db, self.effects,
            self.bound, self.fanouts, self.loop_bound, self.answer,
        )  # fmt: skip
        return run.run(trace)

    def record_cell(self, cell: Cell, traces: Path, scratch: Path) -> CellReport:
        point = Point(cell.params["kind"], cell.params["at"])
        report = CellReport(cell, f"{cell.name}.jsonl")
        try:
            mine = self._run(point, self.policy, traces / f"{cell.name}.jsonl", scratch)
            base = {
                p: self._run(point, p, scratch / f"{cell.name}-{p}.jsonl", scratch)
                for p in ("full", "suffix")
            }
        except Exception as exc:  # the user's graph or LangGraph failed: not a verdict
            report.problem = f"recording failed: {exc!r}"
            return report
        report.notes = {
            "point": point.label,
            "policy": self.policy,
            "revised_in": mine.revised_in,
            "model_calls": mine.calls,
            "tokens": mine.tokens,
            "recomputed": mine.recomputed,
            "full_calls": base["full"].calls,
            "full_tokens": base["full"].tokens,
            "suffix_calls": base["suffix"].calls,
            "suffix_tokens": base["suffix"].tokens,
        }
        return report

    def figures(self, judged: Judged) -> Figures:
        """The policy's model calls and tokens in all, beside full restart and suffix on the
        same points."""
        costed = [r.notes for r, _ in judged if "model_calls" in r.notes]
        sums = {
            k: sum(n[k] for n in costed)
            for k in (
                "model_calls",
                "tokens",
                "full_calls",
                "full_tokens",
                "suffix_calls",
                "suffix_tokens",
            )
        }
        data: dict[str, Any] = {"policy": self.policy, **sums}
        text = (
            f"policy {self.policy}: {sums['model_calls']} model call(s), {sums['tokens']} token(s) "
            f"in {len(costed)} run(s); on the same points full restart {sums['full_calls']} "
            f"call(s), {sums['full_tokens']} token(s), suffix {sums['suffix_calls']} call(s), "
            f"{sums['suffix_tokens']} token(s)"
        )
        for base in ("full", "suffix"):
            if sums[f"{base}_calls"]:
                saved = 1 - sums["model_calls"] / sums[f"{base}_calls"]
                data[f"saved_against_{base}"] = round(saved, 4)
                text += f"; {abs(saved):.1%} {'fewer' if saved >= 0 else 'more'} calls than {base}"
        return Figures(data, text)


def configure_app(
    spec: str,
    input_json: str | None,
    revise: str | None,
    policy: str,
    effects: tuple[str, ...] = (),
    irreversible: tuple[str, ...] = (),
    send_bound: int = DEFAULT_SEND_BOUND,
    loop_bound: int = DEFAULT_LOOP_BOUND,
    answer_json: str | None = None,
) -> AppMatrix:
    """The matrix of `run revision --app`; any problem with the app or the options is a usage
    error (exit code 2) before a cell runs."""
    try:
        inputs = parse_json("--input", input_json, None)
        answer = parse_answer(answer_json)
    except AppError as exc:
        raise UsageError(str(exc)) from None
    both = sorted(set(effects) & set(irreversible))
    if both:
        raise UsageError(f"{', '.join(both)}: --effect (revocable) or --irreversible, not both")
    declared = {n: True for n in effects} | {n: False for n in irreversible}
    return AppMatrix(
        spec, inputs, parse_revision(revise), policy, declared, send_bound, loop_bound, answer
    )
