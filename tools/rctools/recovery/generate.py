"""Randomly generated commitment-sensitive workflows for the safety audit (seeded, deterministic).

`generate(n, seed)` returns n `Workload`s across five domains. Each is a producer A and one to
three consumers (a fan-out from A or a chain through earlier consumers); one instance fails
once, at a reversible tool call, on its first attempt. What varies, drawn from
`random.Random(seed)` in a fixed order so a (n, seed) pair always gives the same workflows:

- who fails: A (its consumers acted on its output, or not yet), or a leaf consumer;
- what A's consumers read: its committed output, or a draft before A committed, or nothing yet
  (A fails before it hands anything over; its consumers run in a later LangGraph step);
- where an irreversible effect of the failed instance lies: nowhere, before its output, after;
- the LangGraph layout: one node per instance, or A split into two nodes at its commit.

Only the shape is generated; the workflows run on the same engine, tools and model stand-ins as
the hand-written workloads, and the contract, not this module, says which restore is sound.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rctools.recovery.workloads import Action, Policy, Segment, Workload


@dataclass(frozen=True)
class Domain:
    name: str
    read: str  # a tool with no effect
    reversible: str
    compensable: str
    irreversible: str
    values: tuple[str, ...]  # what A's model may choose; a re-executed A picks the next
    roles: tuple[str, ...]  # what the consumers' outputs are, in order

    def tools(self) -> dict[str, Policy]:
        return {
            self.read: "none",
            self.reversible: "reversible",
            self.compensable: "compensable",
            self.irreversible: "irreversible",
        }


DOMAINS = (
    Domain(
        "scheduling", "calendar.lookup", "calendar.hold", "mail.send", "payments.deposit",
        ("Tue 10:00", "Wed 15:00", "Thu 09:30"), ("invitation", "reminder", "agenda"),
    ),
    Domain(
        "payments", "ledger.read", "invoice.draft", "payee.notify", "bank.transfer",
        ("EUR 120 to ACME", "EUR 95 to Initech", "EUR 310 to Globex"),
        ("remittance", "receipt", "reconciliation"),
    ),
    Domain(
        "inventory", "stock.read", "stock.reserve", "supplier.order", "shipment.dispatch",
        ("SKU-1042 x3", "SKU-2210 x1", "SKU-0917 x6"), ("pick list", "restock order", "invoice"),
    ),
    Domain(
        "messaging", "contacts.read", "outbox.stage", "chat.post", "sms.send",
        ("launch moved to Friday", "launch on schedule", "launch cancelled"),
        ("announcement", "digest", "follow-up"),
    ),
    Domain(
        "deployments", "registry.read", "canary.route", "ticket.open", "prod.migrate",
        ("v2.4.1", "v2.4.2", "v2.5.0"), ("rollout plan", "change ticket", "release note"),
    ),
)  # fmt: skip

FAILERS = ("producer", "leaf")
HANDOFFS = ("commit", "draft", "none")  # what A's consumers read before A fails
IRREVERSIBLE = ("none", "before", "after")  # of the failed instance, relative to its output


def _effect(tool: str, intent: str, *, fails: bool = False) -> Action:
    return Action("effect", tool=tool, intent=intent, fails=fails)


def _wait(source: str) -> Action:
    return Action("await", source=source)


def generate(n: int, seed: int) -> list[Workload]:
    """n workflows; the same (n, seed) always gives the same list, and a longer list starts
    with the shorter one."""
    rng = random.Random(seed)
    return [_one(rng, index, seed) for index in range(n)]


def _one(rng: random.Random, index: int, seed: int) -> Workload:
    domain = DOMAINS[index % len(DOMAINS)]
    consumers = rng.randint(1, 3)
    names = ["A", "B", "C", "D"][: consumers + 1]
    # Each consumer reads A or an earlier consumer.
    sources = {name: rng.choice(names[:k]) for k, name in enumerate(names) if k > 0}
    failer = rng.choices(FAILERS, weights=(3, 1))[0]
    handoff = rng.choices(HANDOFFS, weights=(11, 5, 4))[0] if failer == "producer" else "commit"
    irreversible = rng.choices(IRREVERSIBLE, weights=(2, 1, 1))[0]
    if handoff == "none" and irreversible == "after":  # A fails before its output
        irreversible = "none"
    split = failer == "producer" and handoff == "commit" and rng.random() < 0.35
    leaves = [c for c in names[1:] if c not in sources.values()]
    failed = "A" if failer == "producer" else rng.choice(leaves)
    others = [c for c in names if c != failed]
    d = domain
    irr = _effect(d.irreversible, f"{d.irreversible} for the task")
    fail = _effect(d.reversible, f"{d.reversible} before finishing", fails=True)

    instances: dict[str, tuple[Action, ...]] = {}
    # The producer.
    choose = Action("emit" if handoff == "draft" else "commit", choices=d.values)
    before = (irr,) if failed == "A" and irreversible == "before" else ()
    after = (irr,) if failed == "A" and irreversible == "after" else ()
    if failed != "A":
        instances["A"] = (_effect(d.read, "read the inputs"), choose)
    elif handoff == "none":  # A fails before it hands anything over
        instances["A"] = (
            _effect(d.read, "read the inputs"), *before, fail, Action("commit", choices=d.values)
        )  # fmt: skip
    else:
        waits = tuple(_wait(c) for c in names[1:])
        tail = (Action("commit", template="{self}"),) if handoff == "draft" else ()
        instances["A"] = (
            _effect(d.read, "read the inputs"), *before, choose, *after, *waits, fail, *tail
        )  # fmt: skip
    # The consumers.
    for k, name in enumerate(names[1:]):
        source = sources[name]
        role = d.roles[k]
        use = Action("consume", source=source, draft=source == "A" and handoff == "draft")
        act = _effect(d.compensable if k % 2 == 0 else d.reversible, f"prepare the {role}")
        commit = Action("commit", template=f"{role} for {{{source}}}")
        if name != failed:
            instances[name] = (use, act, commit)
            continue
        pre = (irr,) if irreversible == "before" else ()
        post = (irr,) if irreversible == "after" else ()
        waits = tuple(_wait(c) for c in others)
        instances[name] = (use, act, *pre, commit, *post, *waits, fail)

    segments: tuple[Segment, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    if split:
        cut = 1 + len(before) + 1  # A's node ends at its commit
        segments = (
            Segment("A.plan", "A", 0, cut),
            Segment("A.act", "A", cut, len(instances["A"])),
            *(Segment(c, c, 0, len(instances[c])) for c in names[1:]),
        )
        edges = (("A.plan", "A.act"), *(("A.plan", c) for c in names[1:]))
    elif failed == "A" and handoff == "none":  # the consumers start after A's node
        edges = tuple(("A", c) for c in names[1:])
    shape = "fan-out" if set(sources.values()) == {"A"} else "chain"
    read = {"commit": "its commit", "draft": "its draft", "none": "nothing yet"}[handoff]
    description = (
        f"{d.name}: "
        + (f"A fails, its consumers read {read}" if failed == "A" else f"leaf {failed} fails")
        + f"; irreversible effect of {failed}: {irreversible}; {shape} of {consumers}"
        + ("; A split into two nodes at its commit" if split else "")
    )
    return Workload(
        f"gen-{seed}-{index:04d}-{d.name}",
        description,
        instances,
        d.tools(),
        segments=segments,
        edges=edges,
    )
