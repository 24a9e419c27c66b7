"""Your own LangGraph graph under a revision: the first slice of `run revision --app`.

`FACTORY(checkpointer)` returns the user's compiled StateGraph, unchanged (loaded and checked
as `run langgraph --app` does). The trace's workflow is read off LangGraph itself: the nodes
and static edges of the builder, a node's reads are the channels LangGraph gives it (its input
schema, `graph.nodes[n].channels`) that are input paths (the keys of the first input). An
attempt is one LangGraph task execution (the `tasks` stream: start, then result), a commit is
the step's writes reaching a checkpoint (the `checkpoints` stream). A later user message -- an
update of one input channel -- arrives inside the model call a seeded draw picks (through a
LangChain callback, so the graph is not touched), or when a node's task starts, or when it has
ended and its step is not yet checkpointed. The policies recover on LangGraph's own checkpoints:

- `full`: a new thread on the revised input;
- `suffix`: fork from the checkpoint before the superstep of the earliest stale node, write the
  new value there and run that superstep and everything after it again;
- `validity`: the same fork, but the nodes of that superstep outside the affected set are
  reused -- their recorded writes are applied as those nodes (`bulk_update_state`) and only the
  affected ones run (`Command(goto=...)`);
- `stale`: never replans; the new value is written into the thread for whoever reads it next.

Model calls and tokens (words of prompt and completion) are counted by the same callback.

A graph with async-only nodes runs through `astream` on AsyncSqliteSaver, on an event loop of
the suite's own (rctools.langgraph.appdriver); everything else is the same.

Conditional edges in an acyclic graph run (`routing.py` reads them): the router's choice is part
of its node's attempt (LangGraph evaluates it inside that node's task), recorded as a `route`
event from a LangChain callback on the router function; the channels the router reads that are
input paths are reads of that attempt, so a revision of one makes the choice stale like any
output. Every node the branch target dominates runs only while the router chose that target.

A fan-out with `Send` runs too, in bounded slots (`routing.py`): the i-th task the router sends
to T is an attempt of slot `T#i` (matched by its Send argument, in the order the router listed
them), and the `route` event of the router's attempt names the slots with their arguments.

A subgraph (a compiled StateGraph added as a node) runs as one node, reading its own state's
keys. A loop runs as bounded laps (`loops.py`): the k-th run of a loop's node N on the current
route is an attempt of `N(k)`. A static interrupt (`interrupt_before`/`interrupt_after`) is a
pause between two steps, no attempt in flight: the run goes on as LangGraph's own docs resume
one (`invoke(None)`), and a revision may also arrive while it waits (`paused-N`, N the first
node it waits before). Not yet (said up front, `UnsupportedApp`): the functional API, a
subgraph with a checkpointer of its own, the loops `loops.py` names, a dynamic interrupt
(`interrupt()` in a node) unless a human's answer is given (`answer`: the run is resumed with
it at every interrupt, and the parked attempt spans the wait), and the conditional edges
`routing.py` names.

Effects (`effects`, node -> revocable): a declared node's writes are an outbox -- what it asks
the outside world to do (an e-mail to send) -- which the suite performs once the step has
committed: a revocable one right away (revoked when a plan invalidates its node), an
irreversible one only while no plan is due and no stale work reaches its node (held until
then), once per node (a re-run computes the same one), never revoked; a revision that would
change what an irreversible one out was computed from is refused as too late. An effect a node
performs itself, inside its body, happens before its step commits; the suite cannot hold it.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import networkx as nx
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, StateUpdate

from rctools.langgraph.app import AppError, async_only_nodes, load_factory, static_interrupts
from rctools.langgraph.appdriver import driver
from rctools.revision.loops import DEFAULT_LOOP_BOUND, beyond, unroll
from rctools.revision.recorder import Recorder, stage
from rctools.revision.routing import (
    COMMAND,
    DEFAULT_SEND_BOUND,
    Router,
    UnsupportedApp,
    routers_of,
    slots_of,
)
from rctools.suite.trace import V1, head


@dataclass(frozen=True)
class AppWorkflow:
    """The workflow as LangGraph declares it."""

    order: list[str]
    edges: list[tuple[str, str]]
    paths: list[str]
    reads: dict[str, list[str]]
    effects: dict[str, bool] = field(default_factory=dict)
    """Declared effect nodes -> whether their effect is revocable."""
    routers: dict[str, Router] = field(default_factory=dict)
    """The nodes with a conditional edge -> what it may choose."""
    branches: list[tuple[str, str, str]] = field(default_factory=list)
    """(node, router, target): `node` is on the route only while `router` chose `target`."""
    slots: dict[str, list[str]] = field(default_factory=dict)
    """A Send target -> its slots (`T#1..T#K`), the nodes of the workflow its tasks run as."""
    laps: dict[str, list[str]] = field(default_factory=dict)
    """A node of the graph's loop -> its laps (`N(1)..N(K)`, loops.py), in order."""
    static: bool = False
    """The graph stops at static interrupts (`interrupt_before`/`interrupt_after`)."""

    def origin(self, node: str) -> str:
        """The LangGraph node a workflow node runs as (a slot's target, a lap's node)."""
        for name, copies in (*self.slots.items(), *self.laps.items()):
            if node in copies:
                return name
        return node

    def preds(self, node: str) -> list[str]:
        return [a for a, b in self.edges if b == node]

    def closure(self, node: str) -> set[str]:
        """The paths a full restart's output of `node` depends on (a router's reads reach
        its branches through the conditional edge, one of `edges`)."""
        return set(self.reads[node]).union(*(self.closure(m) for m in self.preds(node)))

    def descendants(self, nodes: set[str]) -> set[str]:
        dag = nx.DiGraph(self.edges)
        dag.add_nodes_from(self.order)
        return set().union(*(nx.descendants(dag, n) for n in nodes)) if nodes else set()

    def header(self, scenario: str, policy: str) -> dict[str, Any]:
        return head(
            "DagRevision",
            "langgraph",
            metadata.version("langgraph"),
            V1,
            policy=policy,
            workload="app",
            scenario=scenario,
            workflow={
                "nodes": self.order,
                "edges": [list(e) for e in self.edges],
                "paths": self.paths,
                "reads": [{"node": n, "path": p} for n in self.order for p in self.reads[n]],
                "effects": [n for n in self.order if n in self.effects],
                "branches": [{"node": n, "by": r, "to": t} for n, r, t in self.branches],
            },
        )


def _slotted(
    nodes: list[str], edges: set[tuple[str, str]], routers: dict[str, Router]
) -> tuple[list[str], set[tuple[str, str]], dict[str, list[str]]]:
    """The nodes and edges with every Send target T replaced by its slots: the router's
    edge goes to each slot, T's edges leave from each."""
    slots = {t: slots_of(t, r.bound) for r in routers.values() if r.bound for t in r.sent_to}
    for t in slots:
        into = sorted(a for a, b in edges if b == t)
        if into or t in routers:
            why = f"is reached by an edge from {', '.join(into)}" if into else "routes itself"
            raise UnsupportedApp(
                f"run revision --app: {t} gets Send tasks and {why}; a Send target reached "
                "only by its fan-out, with static edges out, is supported"
            )
    out = {(a, b) for a, b in edges if a not in slots}
    out |= {(s, b) for a, b in edges if a in slots for s in slots[a]}
    return [m for n in nodes for m in slots.get(n, [n])], out, slots


def _channels(graph: Any, node: str) -> set[str]:
    """The state keys a node reads. A compiled StateGraph added as the node itself (a
    subgraph) is handed the whole state but takes in only its input schema's keys; a node
    function that calls a graph inside reads what the function reads."""
    channels = set(graph.nodes[node].channels)
    sub = graph.builder.nodes[node].runnable
    builder = getattr(sub, "builder", None)
    if isinstance(builder, StateGraph):
        channels &= set(builder.schemas[builder.input_schema])
    return channels


def workflow_of(
    graph: Any,
    inputs: dict[str, Any],
    effects: dict[str, bool] | None = None,
    bound: int = DEFAULT_SEND_BOUND,
    fanouts: Collection[str] = (),
    loop_bound: int = DEFAULT_LOOP_BOUND,
) -> AppWorkflow:
    """Reads the DAG off the compiled graph, or says why this shape is not supported. A Send
    target becomes `bound` slots; `fanouts` names routers seen sending Send packets; a loop
    becomes `loop_bound` laps."""
    builder = getattr(graph, "builder", None)
    if not isinstance(builder, StateGraph):
        raise UnsupportedApp(
            "run revision --app: the functional API (@entrypoint) is not supported yet; "
            "give a StateGraph compiled with the checkpointer passed in"
        )
    persistent = sorted(
        name
        for name, sub in graph.get_subgraphs(recurse=True)
        if sub.checkpointer not in (None, False)
    )
    if persistent:
        raise UnsupportedApp(
            f"run revision --app: the subgraph {', '.join(persistent)} is compiled with a "
            "checkpointer of its own (checkpointer=True or a saver), so it keeps state from one "
            "run to the next, a read the workflow cannot state; a subgraph that inherits the "
            "graph's checkpointer (compile() with none, LangGraph's default) runs as one node"
        )
    nodes = [n for n in builder.nodes if n not in (START, END)]
    edges = {(a, b) for a, b in builder.edges if a != START and b != END}
    edges |= {(a, b) for sources, b in builder.waiting_edges for a in sources if b != END}
    routers = routers_of(builder, bound, fanouts)
    # a conditional edge that names one destination goes nowhere else (LangGraph refuses a
    # return outside its path map): a static edge -- as LangChain's create_agent routes its
    # tools node back to the model when no tool returns directly
    single = {
        n: r
        for n, r in routers.items()
        if r.name != COMMAND and not r.bound and len(set(r.ends.values())) == 1
    }
    edges |= {(n, t) for n, r in single.items() for t in r.sent_to}
    routers = {n: r for n, r in routers.items() if n not in single}
    deaf = sorted(n for n, r in routers.items() if not r.heard)
    if deaf:
        raise UnsupportedApp(
            f"run revision --app: the conditional edge of {', '.join(deaf)} runs untraced "
            "(RunnableCallable(..., trace=False), as LangChain's create_agent builds its "
            "routers), so what it chose cannot be heard; a router LangGraph runs traced (a "
            "function given to add_conditional_edges) is supported"
        )
    nodes, edges, slots = _slotted(nodes, edges, routers)
    edges |= {(r, t) for r, router in routers.items() for t in router.targets}
    dag = nx.DiGraph(sorted(edges))
    dag.add_nodes_from(nodes)
    entry = {b for a, b in builder.edges if a == START}
    laps: dict[str, list[str]] = {}
    if not nx.is_directed_acyclic_graph(dag):
        unrolled = unroll(dag, routers, entry, slots, loop_bound)
        nodes, edges, routers = unrolled.nodes, unrolled.edges, unrolled.routers
        entry, laps, slots = unrolled.entry, unrolled.laps, unrolled.slots
        dag = nx.DiGraph(sorted(edges))
        dag.add_nodes_from(nodes)
    origin = {c: n for n, copies in laps.items() for c in copies}
    paths = sorted(inputs)
    # a slot's input is its Send argument (the router's output), never the state's channels;
    # a lap reads what its node reads
    reads = {
        n: _channels(graph, origin.get(n, n)) & set(paths)
        if origin.get(n, n) in graph.nodes
        else set()
        for n in nodes
    }
    for r, router in routers.items():  # the router reads as part of its node's attempt
        reads[r] |= set(router.reads) & set(paths)
    branches = [
        (n, r, t)
        for r, router in routers.items()
        for n, t in router.guards(dag, entry, reachable_end=END in router.ends.values())
    ]
    copies = {**slots, **laps}
    unknown = sorted(set(effects or {}) - set(nodes) - set(copies))
    if unknown:
        raise AppError(f"--effect/--irreversible: no node {', '.join(unknown)} in the graph")
    # an effect of a Send target is one of each of its slots (every task sent there has it),
    # and an effect of a node in a loop one of each of its laps
    effects = {
        copy: revocable for n, revocable in (effects or {}).items() for copy in copies.get(n, [n])
    }
    order = list(nx.lexicographical_topological_sort(dag))
    return AppWorkflow(
        order,
        sorted(edges),
        paths,
        {n: sorted(r) for n, r in reads.items()},
        effects,
        routers,
        sorted(branches),
        slots,
        laps,
        static_interrupts(graph),
    )


class _Calls(BaseCallbackHandler):
    """Counts model calls and tokens (words of prompt and completion); `at` (a 1-based call
    number) gets `hook` called inside that call, with the node it runs in. It also hears each
    router function of `routers` return, and keeps what it returned per LangGraph task
    (`chosen`), and which nodes ran (`ran`)."""

    run_inline = True
    """On an async graph, called in the task itself, not later on an executor thread: a
    router's choice is kept before its task's result is streamed."""

    def __init__(
        self, at: int | None, hook: Callable[[str], None], routers: dict[str, Router]
    ) -> None:
        self.calls = 0
        self.tokens = 0
        self.at = at
        self.hook = hook
        self.routers = routers
        self.routing: dict[Any, tuple[str, str]] = {}
        self.chosen: dict[str, tuple[str, Any]] = {}
        """LangGraph task id -> (router node, what the router returned)."""
        self.ran: list[str] = []
        self.fanouts: set[str] = set()
        """(After `probe`) the routers that fan out with Send."""
        self.slots: list[str] = []
        """(After `probe`) the slots its fan-outs sent tasks to."""
        self.steps: dict[Any, tuple[str, str]] = {}
        """A node's own run -> (node, LangGraph task id)."""
        self.commands: set[str] = set()
        """The nodes that returned a Command with a `goto` and declare no destinations:
        routing no edge states."""

    def on_chain_start(self, serialized: Any, inputs: Any, **kw: Any) -> None:
        meta = kw.get("metadata") or {}
        node = str(meta.get("langgraph_node", ""))
        tags = kw.get("tags") or []
        task = str(meta.get("langgraph_checkpoint_ns", "")).split("|")[-1].partition(":")[2]
        if any(str(t).startswith("graph:step") for t in tags):
            self.steps[kw.get("run_id")] = (node, task)
            if node not in self.ran:
                self.ran.append(node)
        router = self.routers.get(node)
        if router is None or kw.get("name") != router.name:
            return
        if any(str(t).startswith("graph:step") for t in tags):
            return  # the node's own function, named like its router
        self.routing[kw.get("run_id")] = (node, task)

    def on_chain_end(self, outputs: Any, **kw: Any) -> None:
        step = self.steps.pop(kw.get("run_id"), None)
        if step is not None and isinstance(outputs, Command) and outputs.goto:
            router = self.routers.get(step[0])
            if router is not None and router.name == COMMAND:  # its choice: where it goes
                self.chosen[step[1]] = (step[0], outputs.goto)
            else:
                self.commands.add(step[0])
        seen = self.routing.pop(kw.get("run_id"), None)
        if seen is not None:
            self.chosen[seen[1]] = (seen[0], outputs)

    def on_chat_model_start(self, serialized: Any, messages: Any, **kw: Any) -> None:
        self.calls += 1
        self.tokens += sum(len(str(m.content).split()) for batch in messages for m in batch)
        if self.calls == self.at:
            self.hook(str((kw.get("metadata") or {}).get("langgraph_node", "")))

    def on_llm_end(self, response: Any, **kw: Any) -> None:
        for gens in response.generations:
            self.tokens += sum(len(str(g.text).split()) for g in gens)


APP_POLICIES = ("full", "suffix", "stale", "validity")
MAX_RESUMES = 32
"""The most interrupts one run is answered at (`--answer`) or goes on from (a static one): a graph
that stops again after as many never ends."""


def _jsonable(value: Any) -> Any:
    """A Send argument as the trace can hold it (what JSON cannot say, as its repr)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


@dataclass(frozen=True)
class Point:
    """Where the revision arrives: inside model call number `at` ("call"), when node `at`'s
    first task starts ("node"), when it has ended and its step is not yet checkpointed
    ("commit"), while it waits at an interrupt for its human's answer ("parked"), or while it
    waits at a static interrupt before node `at` ("paused")."""

    kind: str
    at: str

    @property
    def label(self) -> str:
        return f"{self.kind}-{self.at}"


@dataclass
class _Attempt:
    id: str
    node: str
    reads: dict[str, int]
    step: int
    parents: list[str]
    state: str = "run"  # run, parked (at an interrupt), done, committed, rejected, cancelled
    writes: Any = None
    chose: list[str] = field(default_factory=list)
    sends: list[tuple[str, Any]] = field(default_factory=list)
    """A fan-out's tasks: (slot, Send argument)."""


@dataclass
class AppOutcome:
    trace: Path
    calls: int
    tokens: int
    revised_in: str
    """Where the revision arrived (the node of the model call, or the point's node)."""
    recomputed: list[str] = field(default_factory=list)
    """Nodes that ran again after the revision arrived, in order."""


def probe(
    factory: Callable[[Any], Any],
    inputs: dict[str, Any],
    bound: int = DEFAULT_SEND_BOUND,
    answer: tuple[Any, ...] = (),
) -> _Calls:
    """A fault-free run: its model calls are the instants a revision can be drawn from, its
    nodes the ones it can arrive at. A run that raises, parks at an `interrupt()` a node
    calls, or sends more Send packets to a node than `bound` is refused here, before any
    cell. Its `fanouts` are the routers that sent Send packets."""
    graph = factory(InMemorySaver())
    fanouts = {n for n, r in routers_of(graph.builder, bound).items() if r.bound}
    counter = _Calls(None, lambda _: None, routers_of(graph.builder, bound, fanouts))
    config = {"configurable": {"thread_id": "probe"}, "callbacks": [counter]}
    given: Any = inputs
    try:
        for _ in range(MAX_RESUMES + 1):
            if async_only_nodes(graph):
                asyncio.run(graph.ainvoke(given, config))
            else:
                graph.invoke(given, config)
            given = resumed(graph.get_state(config), answer, static_interrupts(graph))
            if given is _STOPS:
                break
    except Exception as exc:  # the user's graph: anything can go wrong in it
        raise AppError(
            f"run revision --app: the fault-free run raised {type(exc).__name__}: {exc}"
        ) from None
    if counter.commands:  # returned unannotated: no edge of the builder says so
        raise command_routes(sorted(counter.commands))
    state = graph.get_state(config)
    if state.next and not state.interrupts and static_interrupts(graph):
        raise UnsupportedApp(
            "run revision --app: the fault-free run was still waiting at a static interrupt "
            f"(interrupt_before/interrupt_after) after going on {MAX_RESUMES} times"
        )
    if state.next:
        raise UnsupportedApp(
            "run revision --app: the fault-free run parked at an interrupt (interrupt() in a "
            "node)"
            + (
                f" and was still parked after {MAX_RESUMES} answers"
                if answer
                else "; give --answer JSON, the value a human answers every interrupt with"
            )
        )
    sent = {node for node, returned in counter.chosen.values() if _sends(returned)}
    counter.fanouts = fanouts | sent
    routers = routers_of(graph.builder, bound, counter.fanouts)
    for node, returned in counter.chosen.values():
        if node in counter.fanouts:
            slots = routers[node].destinations(returned)  # more than bound: refused
            counter.slots += slots
            if not slots and END not in routers[node].ends.values():  # (may end: stated)
                raise UnsupportedApp(
                    f"run revision --app: {node} sent no Send task in the fault-free run; a "
                    "fan-out of none leaves the nodes after it unrun, which the workflow's "
                    "edges do not state"
                )
    return counter


_STOPS = object()
"""`resumed`'s answer when the run cannot go on by itself: it ended, or it waits for a human's
answer that `--answer` did not give."""


def resumed(state: Any, answer: tuple[Any, ...], static: bool) -> Any:
    """How a run waiting at `state` goes on: with the human's answer at an `interrupt()`
    (`Command(resume=...)`, as `--answer` gives it), with no input at a static interrupt of a
    graph that has them (`static`: `interrupt_before`/`interrupt_after`, the human only says
    "go on", LangGraph's `invoke(None)`), or `_STOPS`: it ended, it waits for an answer not
    given, or it stopped with work left and no interrupt (the trace ends there, as LangGraph
    left it)."""
    if not state.next:
        return _STOPS
    if state.interrupts:
        return Command(resume=answer[0]) if answer else _STOPS
    return None if static else _STOPS


def command_routes(nodes: Collection[str]) -> UnsupportedApp:
    return UnsupportedApp(
        f"run revision --app: {', '.join(nodes)} route(s) by returning Command(goto=...) "
        "with no destinations declared; annotate the node's return as "
        "Command[Literal[...]] (or add_node(..., destinations=...)) so that where it may go "
        "is an edge of the graph"
    )


def _sends(returned: Any) -> bool:
    return any(isinstance(x, Send) for x in (returned if isinstance(returned, list) else []))


def count_calls(factory: Callable[[Any], Any], inputs: dict[str, Any]) -> int:
    """The model calls of a fault-free run."""
    return probe(factory, inputs).calls


def points_of(
    factory: Callable[[Any], Any],
    inputs: dict[str, Any],
    bound: int = DEFAULT_SEND_BOUND,
    fault_free: _Calls | None = None,
    loop_bound: int = DEFAULT_LOOP_BOUND,
    answer: tuple[Any, ...] = (),
) -> list[Point]:
    """Every point of a run: inside each model call, at each node's (slot's, lap's) start,
    between each one's end and its commit (from `fault_free`, a `probe` of it, when given).
    A fault-free run that goes round its loop more than `loop_bound` times is refused here."""
    fault_free = fault_free or probe(factory, inputs, bound, answer)
    graph = factory(InMemorySaver())
    wf = workflow_of(graph, inputs, None, bound, fault_free.fanouts, loop_bound)
    calls = [Point("call", str(k)) for k in range(1, fault_free.calls + 1)]
    laps: set[str] = set()
    parks: list[str] = []
    if wf.laps or answer or wf.static:
        laps, parks = _walk(factory, inputs, bound, fault_free.fanouts, loop_bound, answer)
    ran = [  # not taken: none
        n for n in wf.order if n in fault_free.ran or n in fault_free.slots or n in laps
    ]
    nodes = [Point(kind, n) for n in ran for kind in ("node", "commit")]
    waits = [Point(kind, n) for kind, n in dict.fromkeys(parks)]  # each wait, once
    return calls + nodes + waits


def _walk(
    factory: Callable[[Any], Any], inputs: dict[str, Any], bound: int,
    fanouts: Collection[str], loop_bound: int, answer: tuple[Any, ...],
) -> tuple[set[str], list[tuple[str, str]]]:  # fmt: skip
    """The workflow nodes a fault-free run ran as, and where it waited (`parked` at an
    interrupt in a node, `paused` at a static one before a node), in order:
    which lap each run of a loop's node was is known only by following the route as a cell
    does (a node after the loop runs in the lap the loop ended in). A run that goes round more
    than `loop_bound` times is refused here."""
    with tempfile.TemporaryDirectory(prefix="resume-check-walk-") as scratch:
        folder = Path(scratch)
        run = AppRevisionRun(
            factory, inputs, sorted(inputs)[0], None, Point("none", ""), "validity",
            folder / "walk.sqlite", None, bound, fanouts, loop_bound, answer,
        )  # fmt: skip
        run.run(folder / "walk.jsonl", revised=False)
        return {a.node for a in run.attempts}, run.parks


class AppRevisionRun:
    """One run of the user's graph with one revision of `path` to `value` at `point`,
    recovered by `policy` on LangGraph's checkpoints."""

    def __init__(
        self, factory: Callable[[Any], Any], inputs: dict[str, Any], path: str, value: Any,
        point: Point, policy: str, db: Path, effects: dict[str, bool] | None = None,
        bound: int = DEFAULT_SEND_BOUND, fanouts: Collection[str] = (),
        loop_bound: int = DEFAULT_LOOP_BOUND, answer: tuple[Any, ...] = (),
    ) -> None:  # fmt: skip
        self.answer = answer
        """What a human answers every interrupt with (empty: the graph has none)."""
        self.parks: list[tuple[str, str]] = []
        """Where the run waited, in order: ("parked", node) for an attempt parked at an
        interrupt, ("paused", node) for a static interrupt before `node`."""
        self.driver = driver(factory, db, False, "sync")
        if async_only_nodes(self.driver.graph):  # only async graphs are built twice
            self.driver.close()
            self.driver = driver(factory, db, True, "sync")
        self.graph = self.driver.graph
        self.wf = workflow_of(self.graph, inputs, effects, bound, fanouts, loop_bound)
        if path not in self.wf.paths:
            raise AppError(f"--revise: {path!r} is not an input channel ({self.wf.paths})")
        self.inputs, self.path, self.value = inputs, path, value
        self.point, self.policy = point, policy
        self.versions = dict.fromkeys(self.wf.paths, 0)
        at = int(point.at) if point.kind == "call" else None
        graph_routers = {self.wf.origin(n): r for n, r in self.wf.routers.items()}
        self.model = _Calls(at, self._revise, graph_routers)
        scenario = f"revision of {path} at {point.label}"
        self.record = Recorder(self.wf.header(scenario, policy))
        self.attempts: list[_Attempt] = []
        self.by_task: dict[str, _Attempt] = {}
        self.cur: dict[str, _Attempt] = {}
        self.sent: dict[str, _Attempt] = {}
        """Per node, the attempt whose irreversible effect is out."""
        self.held: list[_Attempt] = []
        self.pending = False
        self.fired = False
        self.revised_in = ""
        self.recomputed: list[str] = []
        self.step = 0
        self.thread = self._new_thread()

    @staticmethod
    def _new_thread() -> dict[str, Any]:
        return {"configurable": {"thread_id": f"app-{uuid.uuid4().hex[:12]}"}}

    def _revise(self, node: str) -> None:
        if self.fired:
            return
        self.fired = True
        base = self.versions[self.path]
        if any(self.path in self.wf.closure(n) for n in self.sent):  # too late: refused
            self.record("revise", kind="replace", path=self.path, base=base, accepted=False)
            self.revised_in = node
            return
        self.record("revise", kind="replace", path=self.path, base=base)
        self.versions[self.path] = base + 1
        self.pending = True
        self.revised_in = node

    def _active(self, node: str) -> bool:
        """On the route: every router guarding `node` chose its branch in its current output."""
        return all(
            r in self.cur and t in self.cur[r].chose for n, r, t in self.wf.branches if n == node
        )

    def _inputs_of(self, node: str) -> list[str]:
        """The attempts whose outputs `node` consumes now: its inputs' current outputs, on
        the route."""
        return [self.cur[m].id for m in self.wf.preds(node) if m in self.cur and self._active(m)]

    def _stale(self, a: _Attempt) -> bool:
        return (
            any(self.versions[p] != v for p, v in a.reads.items())
            or set(self._inputs_of(a.node)) != set(a.parents)
            or not self._active(a.node)
        )

    # --- recording a stream -----------------------------------------------------------------

    def _stream(self, given: Any, config: dict[str, Any]) -> tuple[Any, Any] | None:
        """Runs until the end, or until a plan says where to go on from: (input, config)."""
        config = {**config, "callbacks": [self.model]}
        for mode, data in self.driver.stream(given, config, ["tasks", "checkpoints"]):
            name = data.get("name") if mode == "tasks" else None
            if name in self.wf.reads or name in self.wf.slots or name in self.wf.laps:
                waiting = self.by_task.get(data["id"])
                if "result" not in data and waiting is not None and waiting.state == "parked":
                    waiting.state = "run"  # answered: the same attempt goes on (LangGraph
                    # runs the node again from its start, its model calls included)
                elif "result" not in data:
                    self._start(data["id"], self._node_of(name, data.get("input")))
                elif data.get("interrupts"):
                    parked = self.by_task[data["id"]]
                    parked.state = "parked"  # waits for its human
                    self.parks.append(("parked", parked.node))
                    if self.point == Point("parked", parked.node):
                        self._revise(parked.node)
                else:
                    self._end(data["id"], data["result"])
            elif mode == "checkpoints":
                self.step = int(data["metadata"].get("step", 0)) + 1
                go_on = self._at_checkpoint()
                if go_on is not None:
                    return go_on
        return None

    def _node_of(self, name: str, arg: Any) -> str:
        """The workflow node a task runs as: a Send task's slot is the first one of the
        router's current output with its argument that no task has taken; a loop's node runs
        as its first lap on the current route (every router guarding it chose its way) that
        has not run, or else its first lap that has not run."""
        taken = {
            a.node for a in self.attempts if a.step == self.step and a.state in ("run", "done")
        }
        if name in self.wf.laps:
            laps = self.wf.laps[name]
            left = [n for n in laps if n not in self.cur and n not in taken]
            if not left:
                raise beyond(name, len(laps) + 1, len(laps))
            # off the route (a runtime that ran what no route leads to): its first lap not
            # run, which the trace then shows started off the route
            return next((n for n in left if self._active(n)), left[0])
        if name not in self.wf.slots:
            return name
        for router in self.cur.values():
            for slot, sent in router.sends:
                fresh = slot not in taken and slot not in self.cur
                if slot in self.wf.slots[name] and sent == arg and fresh:
                    return slot
        raise AppError(f"run revision --app: a {name} task with no Send of its argument {arg!r}")

    def _start(self, task: str, node: str) -> None:
        reads = {p: self.versions[p] for p in self.wf.reads[node]}
        parents = self._inputs_of(node)
        attempt = _Attempt(f"a{len(self.attempts) + 1}", node, reads, self.step, parents)
        if self.fired and any(a.node == node for a in self.attempts):
            self.recomputed.append(node)
        self.attempts.append(attempt)
        self.by_task[task] = attempt
        self.record("start", attempt=attempt.id, node=node, parents=parents)
        for p, v in attempt.reads.items():
            self.record("read", attempt=attempt.id, path=p, version=v)
        if self.point == Point("node", node):
            self._revise(node)

    def _end(self, task: str, writes: Any) -> None:
        attempt = self.by_task[task]
        attempt.state, attempt.writes = "done", writes
        router = self.wf.routers.get(attempt.node)
        if router is not None:  # its choice, made inside its task, is part of its output
            _, returned = self.model.chosen.pop(task, (attempt.node, []))
            if router.name == COMMAND and _sends(returned):
                raise UnsupportedApp(
                    f"run revision --app: {attempt.node} fanned out with Command(goto=Send(...)); "
                    "a fan-out by Command is not supported yet"
                )
            if not router.bound and _sends(returned):
                raise UnsupportedApp(
                    f"run revision --app: {attempt.node} fanned out with Send only after the "
                    "revision (not in the fault-free run, nor by its return type)"
                )
            attempt.chose = router.destinations(returned)
            past = [d for d in attempt.chose if d not in self.wf.reads]  # a lap past the last
            laps = self.wf.laps.get(self.wf.origin(attempt.node))
            if past and laps:  # the router goes round once more than the laps declared
                raise beyond(past[0], len(laps) + 1, len(laps))
            if past:
                raise AppError(f"run revision --app: {attempt.node} routed to {past[0]}, no node")
            if router.bound:  # a fan-out: the slots, each with its Send argument
                attempt.sends = router.sends(returned)
                sends = [{"to": slot, "arg": _jsonable(arg)} for slot, arg in attempt.sends]
                self.record("route", attempt=attempt.id, to=attempt.chose, sends=sends)
            else:
                self.record("route", attempt=attempt.id, to=attempt.chose)
        if attempt.node in self.wf.effects:  # its writes are the outbox: staged, not out
            stage(self.record, attempt.id, revocable=self.wf.effects[attempt.node])
        self.record("end", attempt=attempt.id)
        if self.point == Point("commit", attempt.node):
            self._revise(attempt.node)

    def _at_checkpoint(self) -> tuple[Any, Any] | None:
        """The step's writes are durable: commit what is still valid (all of it under
        `stale`); after a revision, plan first and answer where to go on from."""
        # an attempt parked at an interrupt is in flight too: a plan may cancel it
        done = [a for a in self.attempts if a.state in ("done", "parked")]
        go_on = self._plan(done) if self.pending else None
        for a in done:
            if a.state != "done":
                continue
            if self.policy != "stale" and self._stale(a):  # revalidation failed
                a.state = "rejected"
                self.record("reject", attempt=a.id)
                continue
            a.state = "committed"
            self.cur[a.node] = a
            self.record("commit", attempt=a.id)
            if self.wf.effects.get(a.node):
                self.record("publish", attempt=a.id)
            elif a.node in self.wf.effects:
                self.held.append(a)
        self._release_held()
        return go_on

    def _release_held(self) -> None:
        """Sends each held irreversible effect once no plan is due and no stale work reaches
        its node (fenced), once per node; drops the ones a plan invalidated."""
        if self.pending and self.policy != "stale":
            return
        stale = {a.node for a in self.cur.values() if self._stale(a)}
        reached = stale | self.wf.descendants(stale)
        for a in list(self.held):
            if self.cur.get(a.node) is not a or a.node in self.sent:
                self.held.remove(a)
            elif a.node not in reached or self.policy == "stale":
                self.held.remove(a)
                self.sent[a.node] = a
                self.record("publish", attempt=a.id)

    # --- planning, on LangGraph's checkpoints ------------------------------------------------

    def _plan(self, done: list[_Attempt]) -> tuple[Any, Any] | None:
        self.pending = False
        if self.policy == "stale":
            return self._write_through()
        work = done + list(self.cur.values())
        stale = {a.node for a in work if self._stale(a)}
        if self.policy == "full":
            self._record_plan("full", done, set(self.wf.order))
            return {**self.inputs, self.path: self.value}, self._new_thread_now()
        if not stale:
            self._record_plan("selective" if self.policy == "validity" else "suffix", done, set())
            return self._write_through()
        affected = stale | self.wf.descendants(stale)
        step = min(a.step for a in work if a.node in affected)
        fork, names = self._before(step)
        nxt = self._as_workflow(names, step, work)
        if self.policy == "suffix":
            first = min(self.wf.order.index(n) for n in stale)
            redo = set(self.wf.order[first:]) | {a.node for a in work if a.step >= step}
            reused: set[str] = set()
        else:
            redo = affected | self.wf.descendants(set(nxt))
            reused = {n for n in nxt if n not in redo and n in self.cur} | {
                a.node for a in done if a.node in nxt and a.node not in redo
            }
        mode = "suffix" if self.policy == "suffix" else "selective"
        self._record_plan(mode, done, redo)
        return self._resume(fork, nxt, reused, done)

    def _record_plan(self, mode: str, done: list[_Attempt], redo: set[str]) -> None:
        cancel = [a for a in done if a.node in redo]
        invalidate = [n for n in self.wf.order if n in redo and n in self.cur]
        self.record("plan", mode=mode, cancel=[a.id for a in cancel], invalidate=invalidate)
        for a in cancel:
            a.state = "cancelled"
        for n in invalidate:
            old = self.cur.pop(n)
            if self.wf.effects.get(n) and old.state == "committed":
                self.record("revoke", attempt=old.id)  # a revocable effect out is taken back

    def _new_thread_now(self) -> dict[str, Any]:
        self.thread = self._new_thread()
        return self.thread

    def _before(self, step: int) -> tuple[Any, list[str]]:
        """The checkpoint before superstep `step` on the current branch, and its next nodes."""
        snapshot = self.graph.get_state(self.thread)
        while snapshot.metadata["step"] > step - 1:
            snapshot = self.graph.get_state(snapshot.parent_config)
        return snapshot, [n for n in snapshot.next if n in self.wf.reads or n in self.wf.laps]

    def _as_workflow(self, names: list[str], step: int, work: list[_Attempt]) -> list[str]:
        """The workflow nodes of LangGraph nodes pending before superstep `step`: a loop's
        node as the lap its attempt of that step ran as."""
        out: list[str] = []
        for n in names:
            laps = [a.node for a in work if a.step == step and self.wf.origin(a.node) == n]
            out += sorted(set(laps)) if n in self.wf.laps and laps else [n]
        return out

    def _as_node_before(self, snapshot: Any) -> str:
        """A node of the superstep that led to `snapshot` (START for the first)."""
        parent = snapshot.parent_config and self.graph.get_state(snapshot.parent_config)
        return parent.next[0] if parent and parent.next else START

    def _resume(
        self, fork: Any, nxt: list[str], reused: set[str], done: list[_Attempt]
    ) -> tuple[Any, Any]:
        """Writes the new value at `fork` (with the reused nodes' writes, as those nodes) and
        goes on with the nodes of that superstep that must run."""
        writes = {a.node: a.writes for a in [*done, *self.cur.values()] if a.node in reused}
        if reused:
            first, *rest = sorted(reused)
            as_node = self.wf.origin
            updates = [
                StateUpdate({**(writes[first] or {}), self.path: self.value}, as_node(first))
            ]
            updates += [StateUpdate(writes[n] or {}, as_node(n)) for n in rest]
            config = self.graph.bulk_update_state(fork.config, [updates])
        else:
            as_node = self._as_node_before(fork)
            config = self.graph.update_state(fork.config, {self.path: self.value}, as_node=as_node)
        run = sorted({self.wf.origin(n) for n in set(nxt) - reused})
        return (Command(goto=run) if run else None), config

    def _write_through(self) -> tuple[Any, Any]:
        """Nothing to recompute: the new value goes into the thread, the pending nodes go on."""
        latest = self.graph.get_state(self.thread)
        nxt = [n for n in latest.next if n in self.wf.reads or n in self.wf.laps]
        as_node = self._as_node_before(latest)
        config = self.graph.update_state(latest.config, {self.path: self.value}, as_node=as_node)
        return (Command(goto=nxt) if nxt else None), config

    def _go_on(self, go_on: tuple[Any, Any] | None) -> None:
        """Streams until the run ends, answering each interrupt it parks at and going on from
        each static one (where a revision may arrive: no attempt is in flight, so it is
        planned at once, on the checkpoint the run waits at)."""
        resumes = 0
        while go_on is not None:
            go_on = self._stream(*go_on)
            state = self.graph.get_state(self.thread)
            if go_on is not None or not state.next:
                continue  # going on elsewhere, or the run ended
            if not state.interrupts and not self.wf.static:
                break  # stopped with work left and no interrupt: the trace ends as it is
            given = resumed(state, self.answer, self.wf.static)
            if given is _STOPS or resumes == MAX_RESUMES:  # a waiting run has no end to judge
                raise AppError(
                    "run revision --app: the revised run "
                    + (
                        "waited at a static interrupt"
                        if not state.interrupts
                        else "parked at an interrupt"
                    )
                    + (f" {MAX_RESUMES} times" if given is not _STOPS else "; give --answer JSON")
                )
            resumes += 1
            go_on = given, self.thread  # the thread's latest
            if not state.interrupts:
                go_on = self._paused(state) or go_on

    def _paused(self, state: Any) -> tuple[Any, Any] | None:
        """A static interrupt before `state.next`: the wait is a point, and a revision that
        arrives in it is planned at once."""
        before = sorted(state.next)[0]
        self.parks.append(("paused", before))
        if self.point == Point("paused", before):
            self._revise(before)
        return self._at_checkpoint() if self.pending else None

    def run(self, out: Path, revised: bool = True) -> AppOutcome:
        self._go_on((self.inputs, self.thread))
        if self.pending:  # arrived after the last checkpoint: plan once more
            self._go_on(self._at_checkpoint())
        self._release_held()
        self.record("finish", result=[n for n in self.wf.order if n in self.cur])
        self.driver.close()
        if revised and not self.fired:  # a cell with no revision would conform unearned
            raise AppError(
                f"run revision --app: the run never reached {self.point.label}, where the "
                "revision was to arrive (the graph ran otherwise than its fault-free run)"
            )
        self.record.write(out)
        calls, tokens = self.model.calls, self.model.tokens
        return AppOutcome(out, calls, tokens, self.revised_in, self.recomputed)


def record_app(
    spec: str, inputs: dict[str, Any], path: str, value: Any, policy: str, seed: int,
    out: Path, scratch: Path,
) -> AppOutcome:  # fmt: skip
    """Loads `MODULE:FACTORY`, draws the point the revision arrives at from `seed`, and
    records one run recovered by `policy` into `out`."""
    factory = load_factory(spec)
    points = points_of(factory, inputs)
    point = random.Random(seed).choice(points)
    db = scratch / f"app-{uuid.uuid4().hex[:8]}.sqlite"
    return AppRevisionRun(factory, inputs, path, value, point, policy, db).run(out)
