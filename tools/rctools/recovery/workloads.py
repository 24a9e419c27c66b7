"""The structured tool-agent workloads: instances, their actions, their tools and graph layout.

Each workload is a task split into subtask instances that hand outputs to each other. Instance A
always fails on its first attempt after its downstream consumers have committed, which is what
makes recovery commitment-sensitive: a re-executed A may choose another value (a re-sampled
model), and whatever consumed A's earlier output is then orphaned.

The layout says how instances map onto LangGraph nodes. An instance is one node, or several
(`Segment`s) when the workflow's author split it; LangGraph checkpoints fall only between
nodes, so whether its checkpoint-aligned restore lands on an admissible boundary depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

Kind = Literal["emit", "commit", "consume", "effect", "await"]
Policy = Literal["none", "reversible", "compensable", "irreversible"]


@dataclass(frozen=True)
class Action:
    """One step of an instance.

    `emit` and `commit` produce an output: the model chooses among `choices`, or `template`
    is filled in with what the instance consumed (`{A}` is A's output). `consume` reads
    `source`'s committed output, or its draft when `draft`. `effect` calls `tool` for `intent`.
    `await` waits until `source` has exited; it orders the scenario and is not traced.
    `fails` makes the action fail, before it takes effect, on the instance's first attempt.
    """

    kind: Kind
    source: str = ""
    draft: bool = False
    tool: str = ""
    intent: str = ""
    choices: tuple[str, ...] = ()
    template: str = ""
    fails: bool = False


@dataclass(frozen=True)
class Segment:
    """The actions [start, end) of `instance`, run by LangGraph node `node`."""

    node: str
    instance: str
    start: int
    end: int


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    instances: dict[str, tuple[Action, ...]]
    tools: dict[str, Policy]
    # Nodes in order; edges between nodes (START and END are added for nodes without any).
    segments: tuple[Segment, ...] = ()
    edges: tuple[tuple[str, str], ...] = field(default=())

    def layout(self) -> tuple[Segment, ...]:
        """The explicit segments, or one node per instance, all started in parallel."""
        if self.segments:
            return self.segments
        return tuple(Segment(name, name, 0, len(acts)) for name, acts in self.instances.items())

    def actions(self) -> int:
        """Traced actions of a run without failures (awaits are not actions)."""
        return sum(a.kind != "await" for acts in self.instances.values() for a in acts)


def certified_commit(actions: tuple[Action, ...]) -> int | None:
    """The index after an instance's commit when its plan certifies that boundary: no
    irreversible effect follows the commit (what the instance hands over before it, drafts
    and the commit itself, is produced at or before it by construction). None otherwise."""
    commits = [k for k, a in enumerate(actions) if a.kind == "commit"]
    return commits[0] + 1 if commits else None


def aligned(workload: Workload) -> Workload:
    """The same workload with its LangGraph checkpoints aligned to the boundaries the
    controller certifies from the plan: a node that runs an instance across its certified
    commit is split there into two nodes, so LangGraph's own checkpoint after that step is the
    instance's commit checkpoint. Edges into the node go to the first part, edges out of it
    leave the second. A commit followed by an irreversible effect is not certified and stays
    inside its node."""
    irreversible = {t for t, p in workload.tools.items() if p == "irreversible"}
    segments: list[Segment] = []
    renamed: dict[str, tuple[str, str]] = {}  # node -> (its first part, its last part)
    for seg in workload.layout():
        acts = workload.instances[seg.instance]
        cut = certified_commit(acts)
        after = acts[cut:] if cut is not None else ()
        if (
            cut is None
            or not seg.start < cut < seg.end
            or any(a.kind == "effect" and a.tool in irreversible for a in after)
        ):
            segments.append(seg)
            renamed[seg.node] = (seg.node, seg.node)
            continue
        first, second = f"{seg.node}.to-commit", f"{seg.node}.from-commit"
        segments += [Segment(first, seg.instance, seg.start, cut),
                     Segment(second, seg.instance, cut, seg.end)]  # fmt: skip
        renamed[seg.node] = (first, second)
    if all(a == b for a, b in renamed.values()):
        return workload
    edges = [(renamed[src][1], renamed[dst][0]) for src, dst in workload.edges]
    edges += [(a, b) for a, b in renamed.values() if a != b]
    return replace(workload, segments=tuple(segments), edges=tuple(edges))


def _emit(*choices: str) -> Action:
    return Action("emit", choices=choices)


def _commit(*choices: str, template: str = "") -> Action:
    return Action("commit", choices=choices, template=template)


def _use(source: str, *, draft: bool = False) -> Action:
    return Action("consume", source=source, draft=draft)


def _call(tool: str, intent: str, *, fails: bool = False) -> Action:
    return Action("effect", tool=tool, intent=intent, fails=fails)


def _wait(source: str) -> Action:
    return Action("await", source=source)


SLOTS = ("Tue 10:00", "Wed 15:00", "Thu 09:30")

SCHEDULE_TOOLS: dict[str, Policy] = {
    "calendar.lookup": "none",
    "calendar.hold": "reversible",
    "mail.send": "compensable",
    "payments.charge": "irreversible",
}

_INVITER = (
    _use("A"),
    _call("mail.send", "send invitation"),
    _commit(template="invitation for {A}"),
)

SCHEDULE = Workload(
    "schedule-form",
    "A picks a slot and commits it; B sends an invitation for it; A fails holding the room",
    {
        "A": (
            _call("calendar.lookup", "find free slots"),
            _commit(*SLOTS),
            _wait("B"),
            _call("calendar.hold", "hold the room", fails=True),
        ),
        "B": _INVITER,
    },
    SCHEDULE_TOOLS,
)

SCHEDULE_DRAFT = Workload(
    "schedule-form-draft",
    "B sends an invitation for A's draft slot; A fails validating it, before committing",
    {
        "A": (
            _call("calendar.lookup", "find free slots"),
            _emit(*SLOTS),
            _wait("B"),
            _call("calendar.hold", "hold the room", fails=True),
            _commit(template="{self}"),
        ),
        "B": (
            _use("A", draft=True),
            _call("mail.send", "send invitation"),
            _commit(template="invitation for {A}"),
        ),
    },
    SCHEDULE_TOOLS,
)

SCHEDULE_PAYMENT = Workload(
    "schedule-form-payment",
    "A commits a slot and pays the deposit (irreversible); B invites; A fails holding the room",
    {
        "A": (
            _call("calendar.lookup", "find free slots"),
            _commit(*SLOTS),
            _call("payments.charge", "pay the deposit"),
            _wait("B"),
            _call("calendar.hold", "hold the room", fails=True),
        ),
        "B": _INVITER,
    },
    SCHEDULE_TOOLS,
)

NAVIGATION = Workload(
    "navigation",
    "A plans a route to a page and commits it (one node), then acts on the page in a second "
    "node; B fills the form on the committed page; A's click fails",
    {
        "A": (
            _call("browser.read", "read the start page"),
            _commit("/flights/search", "/flights/deals"),
            _wait("B"),
            _call("browser.click", "click continue", fails=True),
            _call("browser.read", "read the result page"),
        ),
        "B": (
            _use("A"),
            _call("browser.type", "fill the form"),
            _commit(template="form filled on {A}"),
        ),
    },
    {"browser.read": "none", "browser.click": "reversible", "browser.type": "reversible"},
    segments=(
        Segment("A.plan", "A", 0, 2),
        Segment("A.act", "A", 2, 5),
        Segment("B", "B", 0, 3),
    ),
    edges=(("A.plan", "A.act"), ("A.plan", "B")),
)

DIAGNOSIS = Workload(
    "diagnosis",
    "A triages and commits a hypothesis; B orders a test for it; C writes the report; A fails "
    "filing its notes",
    {
        "A": (
            _call("records.read", "read the history"),
            _commit("iron deficiency", "thyroid disorder"),
            _wait("C"),
            _call("records.write", "file triage notes", fails=True),
        ),
        "B": (
            _use("A"),
            _call("lab.order", "order the test"),
            _commit(template="test ordered for {A}"),
        ),
        "C": (
            _use("B"),
            _call("records.write", "write the report"),
            _commit(template="report on {B}"),
        ),
    },
    {"records.read": "none", "records.write": "reversible", "lab.order": "compensable"},
)

ETL = Workload(
    "etl",
    "A extracts and commits a snapshot; B transforms it; C loads it into the warehouse; A fails "
    "archiving the source files",
    {
        "A": (
            _call("source.list", "list the new files"),
            _commit("snapshot-0412", "snapshot-0413"),
            _wait("C"),
            _call("source.archive", "archive the files", fails=True),
        ),
        "B": (
            _use("A"),
            _call("scratch.write", "write the transformed rows"),
            _commit(template="rows of {A}"),
        ),
        "C": (
            _use("B"),
            _call("warehouse.load", "load the partition"),
            _commit(template="partition of {B}"),
        ),
    },
    {
        "source.list": "none",
        "source.archive": "reversible",
        "scratch.write": "reversible",
        "warehouse.load": "compensable",
    },
)

WORKLOADS: dict[str, Workload] = {
    w.name: w for w in (SCHEDULE, SCHEDULE_DRAFT, SCHEDULE_PAYMENT, NAVIGATION, DIAGNOSIS, ETL)
}
