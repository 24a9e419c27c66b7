"""Your own graph through the matrix: `resume-check run langgraph --app MODULE:FACTORY`.

`FACTORY(checkpointer)` returns the user's compiled graph or functional-API `@entrypoint`,
built the way the app builds it (plain `interrupt()`, `@task`, `Command(resume=...)`, nothing
from this project). The matrix runs it as
the scenario `app` -- fault-free, then SIGKILLed at every kill point -- and, from what that
fault-free run did (how often it parked at an interrupt, how many checkpoints its thread has),
derives the rest of the plan, so it works for graphs it has never seen:

- `app-concurrent-K`: two processes resume the K-th interrupt at once;
- `app-invoke-none-K`: at the K-th interrupt, `invoke(None)` on the parked thread, then on;
- `app-pinned-K`: run to the end, then resume the K-th interrupt again on its own, older
  checkpoint (`Command(resume=...)` with that `checkpoint_id`), then on;
- `app-head-K`: parked at the K-th interrupt, answered with `Command(resume=...)` and the
  config naming the parked checkpoint's id -- the head of the thread, as Studio and the API
  server send it on every resume (LangGraph #7361: such a resume became a replay);
- `app-answer-again-K`: once the K-th interrupt was answered and the thread went on (to the
  next interrupt, or to the end), answer it again by its id (`Command(resume={id: value})`,
  an id no longer pending), then on;
- `app-fork-I`: run to the end, then time travel from the I-th checkpoint (oldest first);
- `app-subfork-I`: run to the end, then time travel from the I-th checkpoint inside a
  subgraph that schedules a task (oldest first): `invoke(None, config)` with the config
  LangGraph's own history gives it (its `checkpoint_map`), as Studio's "re-run from here";
- `app-update-older`: run to the end, then `update_state(None)` on an older checkpoint (as
  the node that ran before it), and on from the new branch;
- `app-delete`: run to the end, then `delete_thread`, then the first input again on the same
  thread id: a new conversation that must find nothing of the old one.

Every interrupt gets an answer of its own by default: `{"answer": "ok NODE", "nonce": UUID}`,
the nonce distinct per interrupt and per process, so an answer delivered to the wrong
interrupt, or delivered twice, shows in the trace. `--answer JSON` gives every interrupt that
one value instead (for an app that reads its answers' shape); equal answers cannot be told
apart then. The first invocation gets `--input` (default `{}`).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from langgraph.types import Command

from rctools.langgraph.scenarios import Scenario

DEFAULT_INPUT: Any = {}
DEFAULT_ANSWER: Any = None  # an answer of its own per interrupt and process (worker.answer)
# What `--scenarios` selects for an app: the run itself and each kind of derived cell.
KINDS = (
    "app",
    "concurrent",
    "invoke-none",
    "pinned",
    "head",
    "answer-again",
    "fork",
    "subfork",
    "update-older",
    "delete",
)


class AppError(Exception):
    """The app cannot be loaded or built; the message says why (a usage error, exit 2)."""


def _module(name: str) -> Any:
    """A dotted module on sys.path or in the current folder, or a .py file by path."""
    if name.endswith(".py") or "/" in name:
        path = Path(name).resolve()
        if not path.is_file():
            raise AppError(f"--app: no such file {name!r}")
        # the app's own folder first, so that it can import its siblings
        sys.path.insert(0, str(path.parent))
        unique = f"_resume_check_app_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(unique, path)
        if spec is None or spec.loader is None:
            raise AppError(f"--app: {name!r} is not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    return importlib.import_module(name)


def load_factory(spec: str) -> Callable[[Any], Any]:
    """`MODULE:FACTORY` -> the factory, checked by building the graph once on an in-memory
    saver (so a broken app is a clear error before any cell runs)."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise AppError(f"--app takes MODULE:FACTORY (a dotted module or a .py path), not {spec!r}")
    try:
        module = _module(module_name)
    except AppError:
        raise
    except Exception as exc:  # the user's module: anything can go wrong in it
        raise AppError(
            f"--app: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise AppError(f"--app: {module_name!r} has no callable {attr!r}")
    try:
        graph = factory(InMemorySaver())
    except Exception as exc:
        raise AppError(f"--app: {attr}(checkpointer) raised {type(exc).__name__}: {exc}") from None
    if not isinstance(graph, Pregel):
        raise AppError(
            f"--app: {attr}(checkpointer) returned {type(graph).__name__}, not a compiled "
            "graph (return builder.compile(checkpointer=checkpointer)) or an @entrypoint"
        )
    return factory


def _nodes(graph: Pregel) -> list[tuple[str, Any]]:
    """(name, PregelNode) of `graph` and of its subgraphs."""
    graphs = [graph] + [sub for _, sub in graph.get_subgraphs(recurse=True)]
    return [(name, node) for g in graphs for name, node in getattr(g, "nodes", {}).items()]


def static_interrupts(graph: Pregel) -> bool:
    """Whether the graph stops at static interrupts (`interrupt_before`/`interrupt_after`):
    only then is a stop with work left and no `interrupt()` a pause to go on from
    (`invoke(None)`); otherwise the run stopped as LangGraph left it."""
    return bool(graph.interrupt_before_nodes or graph.interrupt_after_nodes)


def resume_all(state: Any, answer: Any) -> Command | None:
    """The resume that gives `answer` to the interrupts a thread waits at (`state`: its
    `get_state`; several at once, from parallel tasks, take a map resume), or None when it
    waits at none."""
    waiting = [i.id for task in state.tasks for i in task.interrupts]
    if not waiting:
        return None
    return Command(resume={i: answer for i in waiting} if len(waiting) > 1 else answer)


def async_only_nodes(graph: Pregel) -> list[str]:
    """The nodes (an `@entrypoint` included) whose function is `async def` only."""
    return sorted(
        {
            n
            for n, node in _nodes(graph)
            if getattr(node.bound, "func", True) is None and getattr(node.bound, "afunc", None)
        }
    )


def parse_json(option: str, text: str | None, default: Any) -> Any:
    """A JSON option's value; a clear error when it is not JSON."""
    if text is None:
        return copy.deepcopy(default)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise AppError(f"{option} takes a JSON value: {exc}") from None


def parse_answer(text: str | None) -> tuple[Any, ...]:
    """`--answer JSON`: () when not given, else the one answer; `null` is refused (LangGraph
    reads `Command(resume=None)` as no answer)."""
    if text is None:
        return ()
    answer = parse_json("--answer", text, None)
    if answer is None:
        raise AppError("--answer null is no answer: LangGraph reads Command(resume=None) as none")
    return (answer,)


@dataclass(frozen=True)
class App:
    """A user's graph and what the matrix feeds it."""

    spec: str  # MODULE:FACTORY, for people
    factory: Callable[[Any], Any]
    input: Any = field(default_factory=dict)
    answer: Any = DEFAULT_ANSWER
    kinds: tuple[str, ...] = KINDS

    @cached_property
    def async_nodes(self) -> tuple[str, ...]:
        """The app's nodes that are async def only: it then runs through `ainvoke` alone."""
        return tuple(async_only_nodes(self.factory(InMemorySaver())))

    def scenario(
        self, name: str, description: str, script: tuple[tuple[Any, ...], ...]
    ) -> Scenario:
        given = self.input

        return Scenario(
            name,
            f"{self.spec}: {description}",
            # a factory is an app `Recording.attach` calls with the recorded checkpointer
            build=lambda: self.factory,
            make_input=lambda: copy.deepcopy(given),
            script=script,
            answer=self.answer,
            killed=name == "app" and "app" in self.kinds,
        )

    def catalogue(self) -> dict[str, Scenario]:
        """The scenario known before anything ran: the app, answered until it is done (run,
        and SIGKILLed at every point, even when `--scenarios` leaves it out: the rest of the
        plan is derived from it)."""
        return {
            "app": self.scenario(
                "app", "the input, then every interrupt answered", (("start",), ("auto",))
            )
        }

    def expand(self, scenario: Scenario, clean: Any) -> list[Scenario]:
        """The matrix's `expand`: only the app's own fault-free run derives cells."""
        return self.derive(clean) if scenario.name == "app" else []

    def derive(self, clean: Any) -> list[Scenario]:
        """The cells the app's fault-free run (a `CellRun`) calls for: one per interrupt
        it parked at, one fork per checkpoint of its thread but the latest, one edit of an
        older checkpoint."""
        out: list[Scenario] = []
        parks = int(clean.parks)
        checkpoints = int(clean.checkpoints)
        for k in range(1, parks + 1):
            if "concurrent" in self.kinds:
                out.append(
                    self.scenario(
                        f"app-concurrent-{k}",
                        f"two processes resume interrupt {k} at once",
                        (("start",), ("answers", k), ("concurrent", 2), ("auto",)),
                    )
                )
            if "invoke-none" in self.kinds:
                out.append(
                    self.scenario(
                        f"app-invoke-none-{k}",
                        f"parked at interrupt {k}, invoke(None), then answered on",
                        (("start",), ("answers", k), ("none",), ("auto",)),
                    )
                )
            if "pinned" in self.kinds:
                out.append(
                    self.scenario(
                        f"app-pinned-{k}",
                        f"run to the end, then interrupt {k} resumed again on its own checkpoint",
                        (("start",), ("auto",), ("pinned", k), ("auto",)),
                    )
                )
            if "head" in self.kinds:
                out.append(
                    self.scenario(
                        f"app-head-{k}",
                        f"parked at interrupt {k}, answered with its checkpoint's id in the "
                        "config (what Studio and the API server send), then on",
                        (("start",), ("answers", k), ("pinned", k), ("auto",)),
                    )
                )
            if "answer-again" in self.kinds:
                # at the next interrupt while there is one, else at the end
                went_on = ("answers", k + 1) if k < parks else ("auto",)
                out.append(
                    self.scenario(
                        f"app-answer-again-{k}",
                        f"interrupt {k} answered, the thread on; interrupt {k} answered again "
                        "by its id",
                        (("start",), went_on, ("again", k), ("auto",)),
                    )
                )
        if "fork" in self.kinds:
            for i in range(max(checkpoints - 1, 0)):
                out.append(
                    self.scenario(
                        f"app-fork-{i}",
                        f"run to the end, then time travel from checkpoint {i} (oldest first)",
                        (("start",), ("auto",), ("fork", f"at:{i}"), ("auto",)),
                    )
                )
        if "subfork" in self.kinds:
            for i in range(int(clean.nested)):
                out.append(
                    self.scenario(
                        f"app-subfork-{i}",
                        f"run to the end, then time travel from checkpoint {i} inside a "
                        "subgraph (oldest first)",
                        (("start",), ("auto",), ("fork", f"sub:{i}"), ("auto",)),
                    )
                )
        older = max(2, (checkpoints - 1) // 2)
        if "update-older" in self.kinds and older < checkpoints - 1:
            out.append(
                self.scenario(
                    "app-update-older",
                    f"run to the end, then update_state on checkpoint {older} (a new branch)",
                    (("start",), ("auto",), ("update", f"at:{older}", "", None), ("auto",)),
                )
            )
        if "delete" in self.kinds and checkpoints:
            out.append(
                self.scenario(
                    "app-delete",
                    "run to the end, then delete_thread, then the first input again on the "
                    "same thread id (a new conversation)",
                    (("start",), ("auto",), ("delete",), ("start",), ("auto",)),
                )
            )
        return out
