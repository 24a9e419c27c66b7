"""The scenario apps: small real LangGraph graphs whose nodes act like an agent's.

They are plain LangGraph apps: side effects are LangChain tools (`notify`, `charge`, ...)
that the nodes call, human-in-the-loop questions are plain `interrupt()` calls, and the
recorder sees both without any help from the app. Model calls are deterministic stand-ins
(`ScriptedChatModel` for `create_react_agent`).

Eight of them are *shapes* (`SHAPES`): the ways LangGraph apps are built -- a loop, a loop
with an approval inside, a router, a `Send` map-reduce, a prebuilt ReAct agent, a subgraph,
a subgraph that asks, an edited state -- recorded fault-free as `corpora/langgraph/shapes/`.

A scenario's `script` says what the driver does: `start` (invoke with the input), `auto`
(keep resuming the way a user would until the thread is done: answer what `get_state` shows
parked, or `invoke(None)`), `update` (`update_state(values, as_node)` on the latest
checkpoint or on the one before a node), `fork` (time travel to the checkpoint before a
node), `pinned` (answer an answered checkpoint again), `concurrent` (N processes resume one
parked interrupt at once).
"""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy, Send, interrupt

WORLD_VAR = "RESUME_CHECK_WORLD"


def _world() -> Path | None:
    value = os.environ.get(WORLD_VAR)
    return Path(value) if value else None


def _record_world(line: str) -> None:
    """The outside world the tools act on: a file of what they did."""
    world = _world()
    if world is None:
        return
    fd = os.open(world, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def attempts(name: str) -> int:
    """How often `name` was attempted in this cell, across processes (1 on the first call):
    lets a node fail on its first attempt only, as a flaky tool would."""
    world = _world()
    if world is None:
        return 1
    counter = world.parent / f"attempts-{name}"
    fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b".")
    finally:
        os.close(fd)
    return counter.stat().st_size


# -- tools: the side effects --------------------------------------------------------


@tool
def notify(what: str) -> str:
    """Send a notification."""
    _record_world(f"notify {what}")
    return f"notified {what}"


@tool
def charge(account: str, cents: int) -> str:
    """Charge an account."""
    _record_world(f"charge {account} {cents}")
    return f"charged {account} {cents}"


@tool
def lookup(topic: str) -> str:
    """Look something up."""
    _record_world(f"lookup {topic}")
    return f"facts about {topic}"


class FlakyToolError(Exception):
    """A tool call that fails once and works when tried again."""


# -- a deterministic chat model -----------------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from a script: its k-th answer in a conversation (k = the
    AI messages already in it) is `script[k]`, tool calls or text. Deterministic, so a
    re-executed model call answers the same."""

    script: list[Any]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        """`run_manager` as LangChain names it: its default async path passes it by position
        (without it every `ainvoke` of the model raised TypeError: a false END finding on
        every async saver's `react` cells)."""
        k = sum(isinstance(m, AIMessage) for m in messages)
        turn = self.script[min(k, len(self.script) - 1)]
        if isinstance(turn, str):
            message = AIMessage(content=turn, id=f"ai-{k}")
        else:
            calls = [
                {"name": name, "args": args, "id": f"call-{k}-{i}", "type": "tool_call"}
                for i, (name, args) in enumerate(turn)
            ]
            message = AIMessage(content="", tool_calls=calls, id=f"ai-{k}")
        return ChatResult(generations=[ChatGeneration(message=message)])


# -- the matrix's apps --------------------------------------------------------------


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _node(
    name: str, *, asks: int = 0, effect: bool = True, fail_first: bool = False
) -> Callable[[State, RunnableConfig], dict[str, Any]]:
    def run(state: State, config: RunnableConfig) -> dict[str, Any]:
        answers = [interrupt(f"{name}: approve step {i}?") for i in range(1, asks + 1)]
        if fail_first and attempts(name) == 1:
            raise FlakyToolError(f"{name}: tool unavailable")
        if effect:
            notify.invoke({"what": name}, config)
        return {"log": [f"{name}({len(state['log'])}){answers or ''}"]}

    run.__name__ = name
    return run


def _in_line(g: StateGraph, *names: str) -> None:
    """Edges START -> each of `names` in turn -> END: the graph runs them one after another."""
    for a, b in zip((START, *names), (*names, END), strict=True):
        g.add_edge(a, b)


def _chain(fail: bool = False) -> StateGraph:
    g = StateGraph(State)
    for name in ("A", "B", "C"):
        g.add_node(name, _node(name, fail_first=fail and name == "B"))
    _in_line(g, "A", "B", "C")
    return g


def _fanout() -> StateGraph:
    g = StateGraph(State)
    g.add_node("plan", _node("plan"))
    g.add_node("search", _node("search"))
    g.add_node("lookup", _node("lookup", fail_first=True))
    g.add_node("answer", _node("answer"))
    g.add_edge(START, "plan")
    g.add_edge("plan", "search")
    g.add_edge("plan", "lookup")
    g.add_edge(["search", "lookup"], "answer")
    g.add_edge("answer", END)
    return g


def _asking(asks: int) -> Callable[[], StateGraph]:
    def build() -> StateGraph:
        g = StateGraph(State)
        g.add_node("draft", _node("draft"))
        g.add_node("review", _node("review", asks=asks))
        g.add_node("send", _node("send"))
        _in_line(g, "draft", "review", "send")
        return g

    return build


def _retrying() -> StateGraph:
    g = StateGraph(State)
    g.add_node("fetch", _node("fetch"))
    g.add_node(
        "call_tool",
        _node("call_tool", fail_first=True),
        retry_policy=RetryPolicy(
            max_attempts=3,
            initial_interval=0.01,
            jitter=False,
            retry_on=lambda exc: isinstance(exc, FlakyToolError),
        ),
    )
    g.add_node("report", _node("report"))
    _in_line(g, "fetch", "call_tool", "report")
    return g


# -- the shapes ---------------------------------------------------------------------


class LoopState(TypedDict):
    turn: int
    log: Annotated[list[str], operator.add]


def _loop(approval: bool) -> Callable[[], StateGraph]:
    """agent -> tools -> agent, until the agent has had three turns; with `approval` the
    tools node asks before each charge."""

    def build() -> StateGraph:
        def agent(state: LoopState) -> dict[str, Any]:
            return {"turn": state["turn"] + 1, "log": [f"agent {state['turn']}"]}

        def tools(state: LoopState, config: RunnableConfig) -> dict[str, Any]:
            if approval:
                answer = interrupt({"question": f"charge for turn {state['turn']}?"})
                if not answer:
                    return {"log": ["declined"]}
            charge.invoke({"account": "acme", "cents": 100 * state["turn"]}, config)
            return {"log": [f"tools {state['turn']}"]}

        def route(state: LoopState) -> str:
            return "tools" if state["turn"] < 3 else END

        g = StateGraph(LoopState)
        g.add_node("agent", agent)
        g.add_node("tools", tools)
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", route, ["tools", END])
        g.add_edge("tools", "agent")
        return g

    return build


class Ticket(TypedDict):
    text: str
    route: str
    log: Annotated[list[str], operator.add]


def _router() -> StateGraph:
    """classify -> one of billing / tech / other (a conditional edge) -> reply."""

    def classify(state: Ticket) -> dict[str, Any]:
        text = state["text"]
        route = "billing" if "invoice" in text else "tech" if "error" in text else "other"
        return {"route": route, "log": [f"classified {route}"]}

    def handler(name: str) -> Callable[[Ticket, RunnableConfig], dict[str, Any]]:
        def run(state: Ticket, config: RunnableConfig) -> dict[str, Any]:
            lookup.invoke({"topic": name}, config)
            return {"log": [f"handled by {name}"]}

        return run

    def reply(state: Ticket, config: RunnableConfig) -> dict[str, Any]:
        notify.invoke({"what": f"reply {state['route']}"}, config)
        return {"log": ["replied"]}

    g = StateGraph(Ticket)
    g.add_node("classify", classify)
    for name in ("billing", "tech", "other"):
        g.add_node(name, handler(name))
        g.add_edge(name, "reply")
    g.add_node("reply", reply)
    g.add_edge(START, "classify")
    g.add_conditional_edges("classify", lambda s: s["route"], ["billing", "tech", "other"])
    g.add_edge("reply", END)
    return g


class MapState(TypedDict):
    items: list[str]
    results: Annotated[list[str], operator.add]


class ItemState(TypedDict):
    item: str


def _send() -> StateGraph:
    """plan -> one `work` task per item (`Send`) -> reduce."""

    def plan(state: MapState) -> dict[str, Any]:
        return {}

    def fan_out(state: MapState) -> list[Send]:
        return [Send("work", {"item": item}) for item in state["items"]]

    def work(state: ItemState, config: RunnableConfig) -> dict[str, Any]:
        lookup.invoke({"topic": state["item"]}, config)
        return {"results": [state["item"].upper()]}

    def reduce(state: MapState, config: RunnableConfig) -> dict[str, Any]:
        notify.invoke({"what": ",".join(sorted(state["results"]))}, config)
        return {}

    g = StateGraph(MapState)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("reduce", reduce)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    return g


def _react() -> Any:
    """`create_react_agent` with a scripted model: look up, charge, then answer. (LangGraph
    1.x deprecates it for `langchain.agents.create_agent`; it is still the prebuilt agent
    most apps run.)"""
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10)
    model = ScriptedChatModel(
        script=[
            [("lookup", {"topic": "acme plan"})],
            [("charge", {"account": "acme", "cents": 4200})],
            "Charged acme 42.00 for its plan.",
        ]
    )
    return create_react_agent(model, [lookup, charge])


def _react_approval() -> StateGraph:
    """A ReAct loop built by hand: agent (a scripted chat model) -> approve (a human
    approves each tool call: `interrupt()`) -> tools (LangGraph's `ToolNode`) -> agent,
    until the model answers in text (`tools_condition`)."""
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import ToolNode, tools_condition

    model = ScriptedChatModel(
        script=[
            [("lookup", {"topic": "acme plan"})],
            [("charge", {"account": "acme", "cents": 4200})],
            "Charged acme 42.00 for its plan.",
        ]
    ).bind_tools([lookup, charge])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: MessagesState) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        interrupt({"approve": call["name"], "args": call["args"]})
        return {}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("approve", approve)
    g.add_node("tools", ToolNode([lookup, charge]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "approve", END: END})
    g.add_edge("approve", "tools")
    g.add_edge("tools", "agent")
    return g


class Doc(TypedDict):
    text: str
    log: Annotated[list[str], operator.add]


def _subgraph(asks: bool) -> Callable[[], StateGraph]:
    """prepare -> review (a compiled subgraph: check -> approve) -> publish; with `asks`
    the subgraph's approve node calls interrupt()."""

    def build() -> StateGraph:
        def check(state: Doc, config: RunnableConfig) -> dict[str, Any]:
            lookup.invoke({"topic": state["text"]}, config)
            return {"log": ["checked"]}

        def approve(state: Doc) -> dict[str, Any]:
            verdict = interrupt({"approve": state["text"]}) if asks else "auto"
            return {"log": [f"approved {verdict}"]}

        inner = StateGraph(Doc)
        inner.add_node("check", check)
        inner.add_node("approve", approve)
        _in_line(inner, "check", "approve")

        def prepare(state: Doc) -> dict[str, Any]:
            return {"log": ["prepared"]}

        def publish(state: Doc, config: RunnableConfig) -> dict[str, Any]:
            notify.invoke({"what": f"publish {state['text']}"}, config)
            return {"log": ["published"]}

        g = StateGraph(Doc)
        g.add_node("prepare", prepare)
        g.add_node("review", inner.compile())
        g.add_node("publish", publish)
        _in_line(g, "prepare", "review", "publish")
        return g

    return build


def _editable() -> StateGraph:
    """draft -> review (asks) -> send; the driver edits the draft while review waits."""

    def draft(state: Doc) -> dict[str, Any]:
        return {"text": state["text"] or "first draft", "log": ["drafted"]}

    def review(state: Doc) -> dict[str, Any]:
        verdict = interrupt({"review": state["text"]})
        return {"log": [f"reviewed {state['text']}: {verdict}"]}

    def send(state: Doc, config: RunnableConfig) -> dict[str, Any]:
        notify.invoke({"what": f"send {state['text']}"}, config)
        return {"log": ["sent"]}

    g = StateGraph(Doc)
    g.add_node("draft", draft)
    g.add_node("review", review)
    g.add_node("send", send)
    _in_line(g, "draft", "review", "send")
    return g


# -- the catalogue ------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """An app, its first input and what the driver does with it."""

    name: str
    description: str
    build: Callable[[], Any]
    make_input: Callable[[], Any] = lambda: {"log": []}
    script: tuple[tuple[Any, ...], ...] = (("start",), ("auto",))
    # the durability a shape is recorded in (None: the matrix's modes)
    durability: str | None = None
    # the threads the script is played on, step by step in turn, on one saver
    threads: tuple[str, ...] = ("t1",)
    # the value every interrupt is answered with (None: one unique to each process)
    answer: Any = None
    # SIGKILLed at every kill point by the matrix (besides the matrix's own list)
    killed: bool = False


def _messages(text: str) -> Callable[[], Any]:
    return lambda: {"messages": [HumanMessage(content=text, id="human-0")]}


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("chain", "a linear chain A -> B -> C, each node notifies", lambda: _chain()),
        Scenario(
            "node-error",
            "a linear chain whose B raises on its first attempt; a second invocation resumes",
            lambda: _chain(fail=True),
        ),
        Scenario(
            "fanout",
            "plan -> {search, lookup} -> answer; lookup fails once, search's result is kept",
            _fanout,
        ),
        Scenario(
            "two-interrupts",
            "review asks twice (interrupt, resume, interrupt, resume), then notifies",
            _asking(2),
        ),
        Scenario(
            "retry",
            "call_tool fails once and its RetryPolicy runs it again inside the task",
            _retrying,
        ),
        Scenario(
            "fork",
            "a chain run to the end, then time travel: re-run from the checkpoint before B",
            lambda: _chain(),
            script=(("start",), ("auto",), ("fork", "B"), ("auto",)),
        ),
        Scenario(
            "pinned-twice",
            "review asks once; after it was answered, its checkpoint is resumed again "
            "with another value",
            _asking(1),
            script=(("start",), ("auto",), ("pinned",), ("auto",)),
        ),
        Scenario(
            "concurrent-2",
            "review asks once; two processes resume the parked interrupt at once",
            _asking(1),
            script=(("start",), ("concurrent", 2), ("auto",)),
        ),
        Scenario(
            "concurrent-3",
            "review asks once; three processes resume the parked interrupt at once",
            _asking(1),
            script=(("start",), ("concurrent", 3), ("auto",)),
        ),
        Scenario(
            "invoke-none",
            "review asks twice; answered once it parks at its second question, and "
            "invoke(None) on the parked thread re-delivers the consumed answer to it",
            _asking(2),
            script=(("start",), ("answer",), ("none",), ("auto",)),
        ),
        Scenario(
            "threads",
            "review asks once, on threads t1, t10 and t1:a (ids that share prefixes) of one "
            "saver, played step by step in turn",
            _asking(1),
            threads=("t1", "t10", "t1:a"),
        ),
        Scenario(
            "threads-subgraph",
            "the subgraph that asks, on threads t1, t10 and t1:a of one saver: three "
            "threads, each with a subgraph namespace of its own",
            _subgraph(asks=True),
            make_input=lambda: {"text": "release notes", "log": []},
            threads=("t1", "t10", "t1:a"),
        ),
        Scenario(
            "delete",
            "review asks once and is answered; the thread is deleted (delete_thread), then "
            "started again on the same thread id: a new conversation, nothing of the old",
            _asking(1),
            script=(("start",), ("auto",), ("delete",), ("start",), ("auto",)),
        ),
        Scenario(
            "update-older",
            "a chain run to the end, then update_state on the checkpoint before B "
            "(as A): a new branch, which runs B and C again",
            lambda: _chain(),
            script=(
                ("start",),
                ("auto",),
                ("update", "before:B", "A", {"log": ["A edited"]}),
                ("auto",),
            ),
        ),
    )
}

SHAPES: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "loop",
            "agent -> tools -> agent until three turns (a conditional edge); tools charges",
            _loop(approval=False),
            make_input=lambda: {"turn": 0, "log": []},
        ),
        Scenario(
            "approval-loop",
            "the loop with an interrupt() in tools: each charge waits for an approval",
            _loop(approval=True),
            make_input=lambda: {"turn": 0, "log": []},
        ),
        Scenario(
            "router",
            "classify -> billing | tech | other (a router) -> reply",
            _router,
            make_input=lambda: {"text": "an error in my invoice?", "route": "", "log": []},
        ),
        Scenario(
            "send",
            "plan -> Send(work, item) for three items (map) -> reduce",
            _send,
            make_input=lambda: {"items": ["alpha", "beta", "gamma"], "results": []},
        ),
        Scenario(
            "react",
            "create_react_agent with a scripted chat model: lookup, charge, answer",
            _react,
            make_input=_messages("charge acme for its plan"),
        ),
        Scenario(
            "react-approval",
            "a ReAct loop by hand: agent (scripted model) -> approve (interrupt) -> "
            "ToolNode -> agent; each tool call waits for a human",
            _react_approval,
            make_input=_messages("charge acme for its plan"),
        ),
        Scenario(
            "subgraph",
            "prepare -> review (a subgraph: check -> approve) -> publish",
            _subgraph(asks=False),
            make_input=lambda: {"text": "release notes", "log": []},
        ),
        Scenario(
            "subgraph-interrupt",
            "the subgraph's approve node calls interrupt(); resumed from the parent",
            _subgraph(asks=True),
            make_input=lambda: {"text": "release notes", "log": []},
        ),
        Scenario(
            "update-state",
            "draft -> review (asks) -> send; while review waits, update_state edits the "
            "draft as node draft, then the thread is resumed",
            _editable,
            make_input=lambda: {"text": "", "log": []},
            script=(
                ("start",),
                ("update", "latest", "draft", {"text": "edited draft"}),
                ("auto",),
            ),
        ),
        Scenario(
            "exit",
            "the loop in exit durability: LangGraph saves only when the invocation returns",
            _loop(approval=False),
            make_input=lambda: {"turn": 0, "log": []},
            durability="exit",
        ),
    )
}

ALL: dict[str, Scenario] = {**SCENARIOS, **SHAPES}
