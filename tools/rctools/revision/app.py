"""Your own LangGraph graph under a revision: the first slice of `run revision --app`.

`FACTORY(checkpointer)` returns the user's compiled StateGraph, unchanged (loaded and checked
as `run langgraph --app` does). The trace's workflow is read off LangGraph itself: the nodes
and static edges of the builder, a node's reads are the channels LangGraph gives it (its input
schema, `graph.nodes[n].channels`) that are input paths (the keys of the first input). An
attempt is one LangGraph task execution (the `tasks` stream: start, then result), a commit is
the step's writes reaching a checkpoint (the `checkpoints` stream). A later user message -- an
update of one input channel -- arrives inside the model call a seeded draw picks (through a
LangChain callback, so the graph is not touched); the suffix policy then recovers on
LangGraph's own checkpoints: it forks the thread from the checkpoint before the superstep of
the earliest stale node, writes the new value there (`update_state`, as a node of the step
before) and runs on. Model calls and completion tokens are counted by the same callback.

Not yet (said up front, `UnsupportedApp`): the functional API, conditional edges and `Send`,
subgraphs, interrupts; policies other than suffix; revisions before a node or between its end
and its commit; effects.
"""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import networkx as nx
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from rctools.langgraph.app import AppError, load_factory
from rctools.revision.recorder import Recorder


class UnsupportedApp(AppError):
    """The graph's shape is one `run revision --app` cannot run yet (a usage error, exit 2)."""


@dataclass(frozen=True)
class AppWorkflow:
    """The workflow as LangGraph declares it."""

    order: list[str]
    edges: list[tuple[str, str]]
    paths: list[str]
    reads: dict[str, list[str]]

    def preds(self, node: str) -> list[str]:
        return [a for a, b in self.edges if b == node]

    def header(self, scenario: str) -> dict[str, Any]:
        return {
            "format": "resume-check/v1",
            "contract": "DagRevision",
            "runtime": {"name": "langgraph", "version": metadata.version("langgraph")},
            "policy": "suffix",
            "workload": "app",
            "scenario": scenario,
            "workflow": {
                "nodes": self.order,
                "edges": [list(e) for e in self.edges],
                "paths": self.paths,
                "reads": [{"node": n, "path": p} for n in self.order for p in self.reads[n]],
            },
        }


def workflow_of(graph: Any, inputs: dict[str, Any]) -> AppWorkflow:
    """Reads the DAG off the compiled graph, or says why this shape is not supported."""
    builder = getattr(graph, "builder", None)
    if not isinstance(builder, StateGraph):
        raise UnsupportedApp(
            "run revision --app: the functional API (@entrypoint) is not supported yet; "
            "give a StateGraph compiled with the checkpointer passed in"
        )
    if any(builder.branches.values()):
        raise UnsupportedApp(
            "run revision --app: conditional edges (add_conditional_edges, Send) are not "
            f"supported yet (nodes {sorted(n for n, b in builder.branches.items() if b)})"
        )
    if list(graph.get_subgraphs()):
        raise UnsupportedApp("run revision --app: subgraphs are not supported yet")
    nodes = [n for n in builder.nodes if n not in (START, END)]
    edges = {(a, b) for a, b in builder.edges if a != START and b != END}
    edges |= {(a, b) for sources, b in builder.waiting_edges for a in sources if b != END}
    dag = nx.DiGraph(sorted(edges))
    dag.add_nodes_from(nodes)
    if not nx.is_directed_acyclic_graph(dag):
        raise UnsupportedApp("run revision --app: the graph has a cycle; only DAGs are supported")
    paths = sorted(inputs)
    reads = {n: sorted(set(graph.nodes[n].channels) & set(paths)) for n in nodes}
    return AppWorkflow(list(nx.lexicographical_topological_sort(dag)), sorted(edges), paths, reads)


class _Calls(BaseCallbackHandler):
    """Counts model calls and completion tokens; `at` (a 1-based call number) gets `hook`
    called inside that call, with the node it runs in."""

    def __init__(self, at: int | None, hook: Callable[[str], None]) -> None:
        self.calls = 0
        self.tokens = 0
        self.at = at
        self.hook = hook

    def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
        self.calls += 1
        if self.calls == self.at:
            self.hook(str((kw.get("metadata") or {}).get("langgraph_node", "")))

    def on_llm_end(self, response: Any, **kw: Any) -> None:
        for gens in response.generations:
            self.tokens += sum(len(str(g.text).split()) for g in gens)


@dataclass
class _Attempt:
    id: str
    node: str
    reads: dict[str, int]
    step: int
    state: str = "run"  # run, done, committed, cancelled


@dataclass
class AppOutcome:
    trace: Path
    calls: int
    tokens: int
    revised_in: str
    """The node whose model call the revision arrived in."""
    recomputed: list[str] = field(default_factory=list)


def count_calls(factory: Callable[[Any], Any], inputs: dict[str, Any]) -> int:
    """The model calls of a fault-free run: the instants a revision can be drawn from."""
    counter = _Calls(None, lambda _: None)
    graph = factory(InMemorySaver())
    config = {"configurable": {"thread_id": "probe"}, "callbacks": [counter]}
    graph.invoke(inputs, config)
    return counter.calls


class AppRevisionRun:
    """One run of the user's graph with one revision of `path` to `value` inside model call
    number `at`, recovered by the suffix policy on LangGraph's checkpoints."""

    def __init__(
        self, factory: Callable[[Any], Any], inputs: dict[str, Any], path: str, value: Any,
        at: int, db: Path,
    ) -> None:  # fmt: skip
        self.conn = sqlite3.connect(db, check_same_thread=False)
        self.graph = factory(SqliteSaver(self.conn))
        self.wf = workflow_of(self.graph, inputs)
        if path not in self.wf.paths:
            raise AppError(f"--revise: {path!r} is not an input channel ({self.wf.paths})")
        self.inputs, self.path, self.value = inputs, path, value
        self.versions = dict.fromkeys(self.wf.paths, 0)
        self.model = _Calls(at, self._revise)
        self.record = Recorder(self.wf.header(f"revision of {path} in model call {at}"))
        self.attempts: list[_Attempt] = []
        self.by_task: dict[str, _Attempt] = {}
        self.cur: dict[str, _Attempt] = {}
        self.pending = False
        self.revised_in = ""
        self.recomputed: list[str] = []
        self.step = 0

    def _revise(self, node: str) -> None:
        base = self.versions[self.path]
        self.record("revise", kind="replace", path=self.path, base=base)
        self.versions[self.path] = base + 1
        self.pending = True
        self.revised_in = node

    def _stale(self, a: _Attempt) -> bool:
        parents = {self.cur[m].id for m in self.wf.preds(a.node) if m in self.cur}
        return any(self.versions[p] != v for p, v in a.reads.items()) or parents != set(
            self._parents_of[a.id]
        )

    def _stream(self, given: Any, config: dict[str, Any]) -> dict[str, Any] | None:
        """Runs until the end, or until a revision needs a plan; returns the fork to go on
        from then, None at the end."""
        config = {**config, "callbacks": [self.model]}
        for mode, data in self.graph.stream(
            given, config, stream_mode=["tasks", "checkpoints"], durability="sync"
        ):
            if mode == "tasks" and "result" not in data and data["name"] in self.wf.reads:
                self._start(data["id"], data["name"])
            elif mode == "tasks" and data["name"] in self.wf.reads:
                attempt = self.by_task[data["id"]]
                attempt.state = "done"
                self.record("end", attempt=attempt.id)
            elif mode == "checkpoints":
                self.step = int(data["metadata"].get("step", 0)) + 1
                fork = self._at_checkpoint()
                if fork is not None:
                    return fork
        return None

    def _start(self, task: str, node: str) -> None:
        attempt = _Attempt(
            f"a{len(self.attempts) + 1}", node, {p: self.versions[p] for p in self.wf.reads[node]},
            self.step,
        )  # fmt: skip
        parents = [self.cur[m].id for m in self.wf.preds(node) if m in self.cur]
        self._parents_of[attempt.id] = parents
        if any(a.node == node for a in self.attempts) and self.revised_in:
            self.recomputed.append(node)
        self.attempts.append(attempt)
        self.by_task[task] = attempt
        self.record("start", attempt=attempt.id, node=node, parents=parents)
        for p, v in attempt.reads.items():
            self.record("read", attempt=attempt.id, path=p, version=v)

    def _at_checkpoint(self) -> dict[str, Any] | None:
        """The step's writes are durable: commit what is still valid; after a revision, plan
        first, and answer the fork to resume from when something must run again."""
        done = [a for a in self.attempts if a.state == "done"]
        fork = self._plan(done) if self.pending else None
        for a in done:
            if a.state != "done":
                continue
            if self._stale(a):  # revalidation failed
                a.state = "rejected"
                self.record("reject", attempt=a.id)
                continue
            a.state = "committed"
            self.cur[a.node] = a
            self.record("commit", attempt=a.id)
        return fork

    def _plan(self, done: list[_Attempt]) -> dict[str, Any] | None:
        """Suffix: from the earliest stale node on, in the order; LangGraph re-runs whole
        supersteps from a fork, so every node of the earliest stale node's step and after."""
        self.pending = False
        work = done + list(self.cur.values())
        stale = [a for a in work if self._stale(a)]
        if not stale:  # nothing read it yet: the new value goes into the thread as it is
            self.record("plan", mode="suffix", cancel=[], invalidate=[])
            history = list(self.graph.get_state_history(self.thread))
            as_node = history[1].next[0] if len(history) > 1 and history[1].next else START
            return self.graph.update_state(
                history[0].config, {self.path: self.value}, as_node=as_node
            )
        first = min(stale, key=lambda a: (a.step, self.wf.order.index(a.node)))
        suffix = set(self.wf.order[min(self.wf.order.index(a.node) for a in stale) :])
        redo = suffix | {a.node for a in work if a.step >= first.step}
        cancel = [a for a in done if a.node in redo]
        invalidate = [n for n in self.wf.order if n in redo and n in self.cur]
        self.record("plan", mode="suffix", cancel=[a.id for a in cancel], invalidate=invalidate)
        for a in cancel:
            a.state = "cancelled"
        for n in invalidate:
            del self.cur[n]
        return self._fork(first.node, first.step)

    def _fork(self, node: str, step: int) -> dict[str, Any]:
        """The checkpoint before `node`'s step, with the revised value written as by a node
        of the step before (LangGraph's own time travel and update_state)."""
        history = list(self.graph.get_state_history(self.thread))
        before = next(s for s in history if node in s.next and s.metadata["step"] == step - 1)
        earlier = next((s for s in history if s.metadata["step"] == step - 2 and s.next), None)
        as_node = earlier.next[0] if earlier is not None else START
        return self.graph.update_state(before.config, {self.path: self.value}, as_node=as_node)

    def run(self, out: Path) -> AppOutcome:
        self._parents_of: dict[str, list[str]] = {}
        self.thread = {"configurable": {"thread_id": f"app-{uuid.uuid4().hex[:12]}"}}
        fork = self._stream(self.inputs, self.thread)
        while fork is not None:
            fork = self._stream(None, fork)
        if self.pending:  # the revision came in the last step: plan once more
            self._at_checkpoint()
        self.record("finish", result=[n for n in self.wf.order if n in self.cur])
        self.conn.close()
        self.record.write(out)
        return AppOutcome(
            out, self.model.calls, self.model.tokens, self.revised_in, self.recomputed
        )


def record_app(
    spec: str, inputs: dict[str, Any], path: str, value: Any, seed: int, out: Path, scratch: Path
) -> AppOutcome:
    """Loads `MODULE:FACTORY`, draws the model call the revision arrives in from `seed`, and
    records one suffix-recovered run into `out`."""
    factory = load_factory(spec)
    calls = count_calls(factory, inputs)
    if calls == 0:
        raise UnsupportedApp("run revision --app: the graph calls no model (a revision arrives "
                             "inside a model call)")  # fmt: skip
    at = random.Random(seed).randint(1, calls)
    return AppRevisionRun(factory, inputs, path, value, at, scratch / "app.sqlite").run(out)
