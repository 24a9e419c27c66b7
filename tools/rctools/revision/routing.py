"""The conditional edges of a user's StateGraph, as DagRevision's routes a node computes.

A conditional edge (`add_conditional_edges(node, router, path_map)`) is evaluated by LangGraph
inside `node`'s task, after the node's own function, on the channels of the router's input
schema (or the node's). So the choice is part of that node's attempt: the trace records it as a
`route` event of the attempt, and the router's input channels that are input paths are reads of
the attempt. A branch target, and every node it dominates (every path to it from START passes
through the target), is on the route only while the router's current output chose the target:
the header's `branches`. A node below several branches that every branch reaches (a joiner)
needs no guard: it runs whichever branch was chosen.

A router that fans out with `Send` (one task per item its node listed) is stated with bounded
*slots*: a target T it may send to up to K times (`--send-bound K`) is K nodes `T#1..T#K` of the
workflow, each a branch of the router -- on the route only while the router's current output
sent a task to it -- whose input is its Send argument, part of the router's output (the edge
router -> slot). The i-th Send to T of an output goes to slot `T#i`; a joiner below T is below
every slot. So a revision of what the router read makes every slot's input stale (DagRevision
does not see which argument changed), a list that shrinks takes the last slots off the route,
and one that grows puts new slots on it.

A router with neither a path_map nor a `Literal` return type is read off its source: when every
`return` of the function gives a string constant or a module name bound to one (`END`), or a
choice of two such (`a if cond else b`), those are where it may go. Said up front, never
guessed (`UnsupportedApp`, exit code 2): a router whose destinations neither LangGraph nor its
source names (a computed return, a lambda), a
fan-out of more than K tasks to one target (`SendBound`), two conditional edges on one node, a
branch target reached another way too (its activity would be a disjunction the contract does not
state), and a node that joins only some of a router's branches, or all of them when the router
may end the run (the same).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any, get_type_hints

import networkx as nx
from langgraph.graph import END, START
from langgraph.types import Send

from rctools.langgraph.app import AppError


class UnsupportedApp(AppError):
    """The graph's shape is one `run revision --app` cannot run yet (a usage error, exit 2)."""


class SendBound(UnsupportedApp):
    """A router sent more tasks to one node than the slots the workflow declares."""


COMMAND = "<Command(goto=...)>"
"""The `Router.name` of a node that routes by returning Command(goto=...), whose `ends` its
return annotation (`Command[Literal[...]]`) or `add_node(destinations=...)` names: its choice is
the node's own output, heard at its end, not a router function's run."""

DEFAULT_SEND_BOUND = 4
"""Slots per Send target when `--send-bound` is not given."""


@dataclass(frozen=True)
class Router:
    """One node's conditional edge."""

    node: str
    ends: dict[str, str]
    """What the router may return -> the node it goes to (END: the run ends)."""
    reads: list[str]
    """The channels LangGraph hands the router."""
    name: str
    """The router function's run name (what its callback events are called)."""
    bound: int = 0
    """A fan-out (`Send`): the slots per target; 0 for a router that names nodes."""
    lap: int = 0
    """A fan-out in a graph's loop: the lap this copy of it sends in (its slots `T#i(lap)`,
    loops.py); 0 outside a loop."""
    heard: bool = True
    """LangGraph runs the router function traced, so its callbacks say what it returned (a
    `RunnableCallable(..., trace=False)`, as LangChain's create_agent builds its routers, is
    not)."""

    @property
    def sent_to(self) -> list[str]:
        """The nodes it may go to (for a fan-out: the nodes it sends tasks to)."""
        return sorted({d for d in self.ends.values() if d != END})

    @property
    def targets(self) -> list[str]:
        """Its branches: the nodes it may go to, or a fan-out's slots."""
        if not self.bound:
            return self.sent_to
        return [slot for t in self.sent_to for slot in slots_of(t, self.bound, self.lap)]

    def destinations(self, returned: Any) -> list[str]:
        """The branches a router's return value goes to (END left out)."""
        if self.bound:
            return [slot for slot, _ in self.sends(returned)]
        labels = returned if isinstance(returned, list | tuple) else [returned]
        return sorted({self.ends.get(str(x), x) for x in labels} - {END})

    def sends(self, returned: Any) -> list[tuple[str, Any]]:
        """A fan-out's return value as (slot, Send argument): the i-th Send to T goes to
        slot T#i; more than `bound` to one target is said, not truncated."""
        packets = returned if isinstance(returned, list | tuple) else [returned]
        if list(packets) == [END]:  # it ends the run: no task sent
            return []
        if not all(isinstance(p, Send) for p in packets):
            raise UnsupportedApp(
                f"run revision --app: the conditional edge of {self.node} returns Send packets "
                "and node names together; a fan-out of Send packets only is supported"
            )
        strays = sorted({p.node for p in packets} - set(self.sent_to))
        if strays:
            raise UnsupportedApp(
                f"run revision --app: {self.node} sent a task to {', '.join(strays)}, which its "
                "conditional edge's path_map does not name; the slots must be declared before "
                "the run"
            )
        out: list[tuple[str, Any]] = []
        for p in packets:
            i = sum(1 for s, _ in out if s.rpartition("#")[0] == p.node) + 1
            if i > self.bound:
                n = sum(1 for q in packets if q.node == p.node)
                raise SendBound(
                    f"run revision --app: {self.node} sent {n} tasks to {p.node}, above the "
                    f"bound of {self.bound} slot{'s' * (self.bound > 1)}; give --send-bound {n} "
                    "(or more)"
                )
            out.append((slots_of(p.node, i, self.lap)[-1], p.arg))
        return out

    def guards(
        self, dag: nx.DiGraph, entry: set[str], reachable_end: bool
    ) -> Iterator[tuple[str, str]]:
        """(node, target): `node` runs only while this router chose `target`."""
        for t in self.targets:
            others = set(dag.predecessors(t)) - {self.node}
            if others or t in entry:
                raise UnsupportedApp(
                    f"run revision --app: {t} is a branch of {self.node}'s conditional edge "
                    f"and is reached another way too ({', '.join(sorted(others)) or 'START'}); "
                    "not supported yet"
                )
        rooted = nx.DiGraph(dag)
        rooted.add_edges_from((START, n) for n in entry)
        idom = nx.immediate_dominators(rooted, START)
        below = {t: nx.descendants(dag, t) | {t} for t in self.targets}
        for n in sorted(set().union(*below.values())):
            doms = _dominators(idom, n)
            ts = [t for t in self.targets if t in doms]
            if ts:
                yield from ((n, t) for t in ts)
                continue
            joins_all = all(n in below[t] for t in self.targets)
            if reachable_end and joins_all and self.bound and len(self.sent_to) == 1:
                # below every slot of a fan-out to one node, which may also end the run: it
                # runs once the router sent any task, that is, while it chose the first slot
                yield (n, self.targets[0])
                continue
            if reachable_end or not joins_all:
                raise UnsupportedApp(
                    f"run revision --app: {n} joins "
                    + (
                        f"the branches of {self.node}'s conditional edge, which may also end "
                        "the run (END)"
                        if reachable_end
                        else f"only some of the branches of {self.node}'s conditional edge"
                    )
                    + "; whether it runs is not stated by one branch: not supported yet"
                )


def _dominators(idom: dict[str, str], node: str) -> set[str]:
    """`node` and every node that dominates it (START excluded)."""
    out = set()
    while node != START:
        out.add(node)
        node = idom[node]
    return out


def slots_of(target: str, bound: int, lap: int = 0) -> list[str]:
    """The slots of a Send target: `T#1..T#K` (in lap k of a loop, `T#1(k)..T#K(k)`)."""
    suffix = f"({lap})" if lap else ""
    return [f"{target}#{i}{suffix}" for i in range(1, bound + 1)]


def _returns_send(func: Any) -> bool:
    try:
        hint = get_type_hints(func).get("return")
    except Exception:  # an annotation that does not resolve says nothing either way
        return False
    return hint is not None and "Send" in repr(hint)


def _returned_names(func: Any) -> list[str] | None:
    """The node names a router function can return, read off its source: every `return` of
    the function itself gives a string constant, or a name of its module bound to a string
    (`END`). None when any return gives something else (computed, a list, a Send) or the source
    cannot be read -- then nothing is assumed."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if len(defs) != 1:
        return None  # a lambda, or a source that is not one function
    # a module name the function binds itself (an argument, an assignment) is not the module's
    local = {a.arg for a in ast.walk(defs[0].args) if isinstance(a, ast.arg)} | {
        n.id for n in ast.walk(defs[0]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    scope = {k: v for k, v in func.__globals__.items() if k not in local}
    names: set[str] = set()
    for ret in _own_returns(defs[0]):
        found = _names_in(ret.value, scope)
        if found is None:
            return None
        names |= found
    return sorted(names) or None


def _names_in(value: ast.expr | None, scope: dict[str, Any]) -> set[str] | None:
    """The strings an expression of a `return` can be: a string constant, a module name
    bound to one, either side of `a if cond else b`; None for anything else."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, ast.Name) and isinstance(scope.get(value.id), str):
        return {scope[value.id]}
    if isinstance(value, ast.IfExp):
        body, orelse = _names_in(value.body, scope), _names_in(value.orelse, scope)
        return None if body is None or orelse is None else body | orelse
    return None


def _own_returns(fn: ast.AST) -> Iterator[ast.Return]:
    """The `return` statements of a function, not of functions or classes inside it."""
    for child in ast.iter_child_nodes(fn):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(child, ast.Return):
            yield child
        yield from _own_returns(child)


def routers_of(
    builder: Any, bound: int = DEFAULT_SEND_BOUND, fanouts: Collection[str] = ()
) -> dict[str, Router]:
    """Every conditional edge of the builder, or why it cannot be followed. A router is a
    fan-out when its return type names `Send` or it sent Send packets in the fault-free run
    (`fanouts`)."""
    routers: dict[str, Router] = {}
    for node, specs in builder.branches.items():
        if not specs:
            continue
        if len(specs) > 1:
            raise UnsupportedApp(
                f"run revision --app: {node} has {len(specs)} conditional edges; one per node "
                "is supported"
            )
        ((_, spec),) = specs.items()
        func = getattr(spec.path, "func", None) or getattr(spec.path, "afunc", None)
        fans = node in fanouts or (func is not None and _returns_send(func))
        named = spec.ends
        if named is None and func is not None and not fans:
            named = {x: x for x in _returned_names(func) or ()} or None
        if named is None:
            raise UnsupportedApp(
                f"run revision --app: the conditional edge of {node} does not name where it "
                "may go; give add_conditional_edges a path_map, or the router a Literal "
                "return type"
            )
        schema = spec.input_schema or builder.nodes[node].input_schema
        reads = sorted(builder.schemas[schema])
        ends = {str(k): v for k, v in named.items()}
        heard = getattr(spec.path, "trace", True) is not False
        routers[node] = Router(
            node, ends, reads, spec.path.get_name(), bound if fans else 0, heard=heard
        )
    for node, spec in builder.nodes.items():  # a node that returns Command(goto=...)
        if not spec.ends:
            continue
        if node in routers:
            raise UnsupportedApp(
                f"run revision --app: {node} routes both by a conditional edge and by "
                "returning Command(goto=...); one way per node is supported"
            )
        reads = sorted(builder.schemas[spec.input_schema])
        routers[node] = Router(node, {str(d): d for d in spec.ends}, reads, COMMAND)
    return routers
