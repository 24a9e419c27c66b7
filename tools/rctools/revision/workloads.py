"""The workflows revision recovery is measured on, as data: nodes, what they read, the revision.

Each node is one LangGraph node that asks the model stand-in once, with a prompt built from the
input paths it reads and its inputs' outputs. `reads` is what a node truly reads (the trace
header declares it, and a full restart's outputs depend on exactly it); a node with
`tracked=False` reads through the raw record, so tracking never sees its reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Node:
    name: str
    after: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    route: tuple[str, int] | None = None
    """(control path, value): the node runs only while the path holds the value."""
    effect: bool = False
    irreversible: bool = False
    """Its effect (with `effect`) cannot be revoked once published: an e-mail sent."""
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
    inputs: dict[str, Any]
    revision: Revision
    """The revision injected at every point of the run by `resume-check run revision`."""
    controls: frozenset[str] = field(default_factory=frozenset)
    paths: tuple[str, ...] = ()
    """The declared input paths when some are nested (default: the record's top-level keys)."""
    menu: tuple[tuple[str, str], ...] = ()
    """(path, kind): the revisions a racing user may send (default: replace, append and cancel
    of every data path, control of every control path)."""

    @property
    def declared_paths(self) -> list[str]:
        return list(self.paths) if self.paths else list(self.inputs)

    def racing_menu(self) -> list[tuple[str, str]]:
        if self.menu:
            return list(self.menu)
        data = [p for p in self.inputs if p not in self.controls]
        found = [(p, kind) for p in data for kind in ("replace", "append", "cancel")]
        return found + [(p, "control") for p in sorted(self.controls)]

    def route_values(self, path: str) -> list[int]:
        return sorted({n.route[1] for n in self.nodes if n.route and n.route[0] == path})

    @property
    def order(self) -> list[str]:
        return [n.name for n in self.nodes]

    crash: bool = True
    """The crash harness can run it: its revision after the run is accepted, so the process
    has a revision to die after and a recovery to die in."""

    @property
    def irreversible(self) -> bool:
        """Some node's effect cannot be revoked (an e-mail sent)."""
        return any(n.irreversible for n in self.nodes)

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

# An assistant that e-mails the user as soon as it has read the request (irreversible: a sent
# e-mail cannot be taken back) and posts its answer (revocable: a post can be edited). The
# e-mail depends on the request (x) alone; the answer also on the notes (y). Ordered so that
# the suffix from the notes' reader includes the e-mail: a full or suffix plan re-runs it.
_EMAIL_NODES = (
    _n("intake", reads=("x",)),
    _n("draft", "intake", reads=("y",)),
    _n("email", "intake", effect=True, irreversible=True),
    _n("answer", "draft", "email", effect=True),
)

EMAIL = Workload(
    "email",
    "intake -> {draft, e-mail} -> answer: the e-mail is irreversible and does not read the "
    "notes (y) the revision changes; a full or suffix plan re-runs it and must not send it twice",
    _EMAIL_NODES,
    {"x": "x0", "y": "y0"},
    Revision("y", "replace"),
)

EMAIL_LATE = Workload(
    "email-late",
    "the e-mail workload with the request (x) revised: once the e-mail it was written from is "
    "out, the revision comes too late and is refused; before, the e-mail is held until its "
    "output is revalidated",
    _EMAIL_NODES,
    {"x": "x0", "y": "y0"},
    Revision("x", "replace"),
    crash=False,  # after the run, the e-mail is out: the revision is refused, nothing to recover
)

WORKLOADS: dict[str, Workload] = {
    w.name: w for w in (DIAMOND, APP10, COMPILER, UNTRACKED, ROUTE, EMAIL, EMAIL_LATE)
}

DIGEST = Workload(
    "digest",
    "a research digest over a nested input record: five independent readers (the question, the "
    "first document's title, the second one's body, the whole document list, the language "
    "preference) run at once; a route picks a brief or a full report; compose answers",
    (
        _n("intake", reads=("question",)),
        _n("lead", reads=("docs[0].title",)),
        _n("second", reads=("docs[1].body",)),
        _n("catalog", reads=("docs",)),
        _n("style", reads=("prefs.lang",)),
        _n("brief", "lead", "second", route=("mode", 0)),
        _n("report", "catalog", "lead", route=("mode", 1)),
        _n("compose", "intake", "brief", "report", "style", reads=("prefs.length",), effect=True),
    ),
    {
        "question": "q0",
        "docs": [
            {"title": "t0", "body": "b0"},
            {"title": "t1", "body": "b1"},
            {"title": "t2", "body": "b2"},
        ],
        "prefs": {"lang": "en", "length": "short"},
        "mode": 0,
    },
    Revision("docs[0].title", "replace"),
    frozenset({"mode"}),
    paths=(
        "question",
        "docs",
        "docs[0]",
        "docs[0].title",
        "docs[1].body",
        "docs[2].title",
        "prefs.lang",
        "prefs.length",
        "mode",
    ),
    menu=(
        ("docs[0].title", "replace"),
        ("docs[0].title", "cancel"),
        ("docs[1].body", "replace"),
        ("docs[1].body", "append"),
        ("docs[2].title", "replace"),
        ("docs[0]", "replace"),
        ("docs", "append"),
        ("docs", "cancel"),
        ("prefs.lang", "replace"),
        ("prefs.length", "append"),
        ("question", "append"),
        ("question", "cancel"),
        ("mode", "control"),
    ),
)

RACING_WORKLOADS: dict[str, Workload] = {
    **{name: w for name, w in WORKLOADS.items() if not w.irreversible},
    DIGEST.name: DIGEST,
}
"""What racing runs use by default: every workload above without an irreversible effect (so
that the racing figures stay comparable with those measured before there were any; `--workload
email` runs one), and the nested-path digest."""
