"""The workflows revision recovery is measured on, as data: nodes, what they read, the revision.

Each node is one LangGraph node that asks the model stand-in once, with a prompt built from the
input paths it reads and its inputs' outputs. `reads` is what a node truly reads (the trace
header declares it, and a full restart's outputs depend on exactly it); a node with
`tracked=False` reads through the raw record, so tracking never sees its reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    name: str
    after: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    route: tuple[str, int] | None = None
    """(control path, value): the node runs only while the path holds the value."""
    effect: bool = False
    tracked: bool = True


@dataclass(frozen=True)
class Revision:
    path: str
    kind: str  # "replace", "append", "cancel" or "control"
    value: int = 0
    """For a control revision: the new route value."""


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    nodes: tuple[Node, ...]
    """Topologically sorted: the order the runtime runs them in."""
    inputs: dict[str, str | int]
    revision: Revision
    """The revision injected at every point of the run by `resume-check run revision`."""
    controls: frozenset[str] = field(default_factory=frozenset)

    @property
    def order(self) -> list[str]:
        return [n.name for n in self.nodes]

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def revisions(self) -> list[Revision]:
        """Every revision the benchmark averages over: each data path replaced, each control
        path flipped to each other value its routes test."""
        found = [Revision(p, "replace") for p in self.inputs if p not in self.controls]
        for path in sorted(self.controls):
            values = {n.route[1] for n in self.nodes if n.route and n.route[0] == path}
            found += [Revision(path, "control", v) for v in sorted(values - {self.inputs[path]})]
        return found


def _n(name: str, *after: str, reads: tuple[str, ...] = (), **kw: object) -> Node:
    return Node(name, tuple(after), reads, **kw)  # type: ignore[arg-type]


DIAMOND = Workload(
    "diamond",
    "A -> {B, C} -> D plus an independent E; the revision changes y, read only by C",
    (
        _n("A", reads=("x",)),
        _n("B", "A"),
        _n("C", "A", reads=("y",)),
        _n("E", reads=("z",)),
        _n("D", "B", "C", effect=True),
    ),
    {"x": "x0", "y": "y0", "z": "z0"},
    Revision("y", "replace"),
)

APP10 = Workload(
    "app10",
    "a 10-node assistant: planner, three tools, verifier, router, two answer branches, "
    "critic and join; the revision changes the units only the calculator reads",
    (
        _n("intake", reads=("question",)),
        _n("planner", "intake", reads=("goal",)),
        _n("search", "planner", reads=("sources",)),
        _n("calculator", "planner", reads=("units",)),
        _n("retriever", "planner", reads=("corpus",)),
        _n("verifier", "search", "calculator", reads=("strictness",)),
        _n("router", "verifier", reads=("audience",)),
        _n("summarizer", "router", route=("mode", 0)),
        _n("reporter", "router", route=("mode", 1)),
        _n("critic", "summarizer", "reporter", reads=("rubric",)),
        _n("join", "critic", "retriever", reads=("tone",), effect=True),
    ),
    {
        "question": "q0",
        "goal": "g0",
        "sources": "s0",
        "units": "u0",
        "corpus": "c0",
        "strictness": "st0",
        "audience": "a0",
        "mode": 0,
        "rubric": "r0",
        "tone": "t0",
    },
    Revision("units", "replace"),
    frozenset({"mode"}),
)

COMPILER = Workload(
    "compiler",
    "plan-and-execute in the style of LLMCompiler: a planner emits a task DAG (two searches, "
    "a computation on the first, a lookup on both) and a joiner answers",
    (
        _n("plan", reads=("request",)),
        _n("search1", "plan", reads=("q1",)),
        _n("search2", "plan", reads=("q2",)),
        _n("compute", "search1", reads=("formula",)),
        _n("lookup", "search2", "compute"),
        _n("joiner", "lookup", "search1", reads=("request",), effect=True),
    ),
    {"request": "r0", "q1": "q1-0", "q2": "q2-0", "formula": "f0"},
    Revision("q2", "replace"),
)

UNTRACKED = Workload(
    "untracked",
    "the diamond with E reading the raw input record: its provenance is unknown, so "
    "validity-guided recovery must fall back to the suffix",
    (
        _n("A", reads=("x",)),
        _n("B", "A"),
        _n("C", "A", reads=("y",)),
        _n("E", reads=("z",), tracked=False),
        _n("D", "B", "C", effect=True),
    ),
    {"x": "x0", "y": "y0", "z": "z0"},
    Revision("y", "replace"),
)

ROUTE = Workload(
    "route",
    "R -> {B1 | B2} -> J: the control path c selects B1 (0) or B2 (1); the revision flips it",
    (
        _n("R", reads=("q",)),
        _n("B1", "R", route=("c", 0)),
        _n("B2", "R", route=("c", 1)),
        _n("J", "B1", "B2", effect=True),
    ),
    {"q": "q0", "c": 0},
    Revision("c", "control", 1),
    frozenset({"c"}),
)

WORKLOADS: dict[str, Workload] = {w.name: w for w in (DIAMOND, APP10, COMPILER, UNTRACKED, ROUTE)}
