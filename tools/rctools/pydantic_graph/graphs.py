"""The graphs a pydantic-graph cell runs: each node fires one effect through `HOOK`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic_graph import BaseNode, End, Graph, GraphRunContext


def _unset(name: str) -> None:
    raise RuntimeError("the worker sets HOOK")


HOOK: list[Callable[[str], None]] = [_unset]
LOOPS = 3  # how often the loop graph's Work node runs


@dataclass
class State:
    done: list[str] = field(default_factory=list)
    loops: int = 0


def act(ctx: GraphRunContext[State], name: str) -> None:
    HOOK[0](name)
    ctx.state.done.append(name)


@dataclass
class Reserve(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> Charge:
        act(ctx, "Reserve")
        return Charge()


@dataclass
class Charge(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> Mail:
        act(ctx, "Charge")
        return Mail()


@dataclass
class Mail(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> Ship:
        act(ctx, "Mail")
        return Ship()


@dataclass
class Ship(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> End[list]:
        act(ctx, "Ship")
        return End(list(ctx.state.done))


@dataclass
class Plan(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> Work:
        act(ctx, "Plan")
        return Work()


@dataclass
class Work(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> Work | Report:
        act(ctx, "Work")
        ctx.state.loops += 1
        return Work() if ctx.state.loops < LOOPS else Report()


@dataclass
class Report(BaseNode[State, None, list]):
    async def run(self, ctx: GraphRunContext[State]) -> End[list]:
        act(ctx, "Report")
        return End(list(ctx.state.done))


GRAPHS = {
    "linear": (Graph(nodes=[Reserve, Charge, Mail, Ship], state_type=State), Reserve),
    "loop": (Graph(nodes=[Plan, Work, Report], state_type=State), Plan),
}
NODES = {"linear": ["Reserve", "Charge", "Mail", "Ship"], "loop": ["Plan", "Work", "Report"]}
