"""Record an unmodified LangGraph app into a ResumeCore trace (format v2).

The public helper is `record_run(factory, input, answers=..., out=...)`: one run of your
graph, answered until it is done, recorded on SqliteSaver (or your saver). `Recording` is
what it is built on, for a run driven by hand:

    rec = Recording(Path("run.jsonl"), proc="w1", durability="sync")
    rec.header(app_builder, scenario="my agent")       # once per trace
    app = rec.attach(app_builder, SqliteSaver(conn))   # a StateGraph or a compiled graph
    rec.invoke(app, {"messages": [...]}, {"configurable": {"thread_id": "t1"}})

`attach` wraps the app's checkpointer (the ground truth of what was saved and loaded);
`invoke` adds the recorder's callbacks to the config and writes `finish` when the invocation
returns. In `exit` durability LangGraph makes its checkpoints and task writes in memory and
saves only the last checkpoint, so `invoke` runs the graph through
`stream(stream_mode=["checkpoints", "tasks"], subgraphs=True)`, which reports each checkpoint
the loop makes and each task result when its writes are made, saved or not. Processes that
append to one trace file share it: one `os.write` per line on an `O_APPEND` descriptor, and a
`SaverLock` file makes each saver call and its lines one step across them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command

from rctools.langgraph.app import resume_all
from rctools.langgraph.callbacks import RecorderCallbacks
from rctools.langgraph.coverage import CallTally
from rctools.langgraph.recorder import KillSwitch, Recorder
from rctools.langgraph.saver import RecordingSaver, SaverLock
from rctools.langgraph.tracefile import TraceFile
from rctools.suite.trace import FORMAT, head

# LangGraph's documented promises (https://docs.langchain.com/oss/python/langgraph/durable-execution):
# a node that was running when a process died runs again from its start on resume -- its
# side effects can happen twice (at-least-once) -- and nothing excludes two processes running
# one thread (no fencing).
CONTRACT = "ResumeCore"  # the contract every LangGraph trace is judged by
GUARANTEES = {"effects": {"default": "at-least-once"}, "fencing": "none"}

# How an exit-durability invocation is streamed: the checkpoints and task results the loop
# makes in memory (`Recording._chunk`), and the values, whose last root chunk is the result.
_EXIT_STREAM: dict[str, Any] = {
    "stream_mode": ["checkpoints", "tasks", "values"],
    "subgraphs": True,
    "durability": "exit",
}


def on_saver(app: Any, saver: Any) -> Any:
    """The compiled app with checkpointer `saver`. `app` is a StateGraph (compiled with it),
    a compiled graph (copied with it, e.g. `create_react_agent(...)`) or a factory
    `FACTORY(checkpointer)` that returns the compiled graph (called with it; its result is
    copied with `saver` if the factory compiled with another)."""
    if isinstance(app, StateGraph):
        return app.compile(checkpointer=saver)
    if isinstance(app, Pregel):
        return app.copy({"checkpointer": saver})
    if callable(app):
        compiled = app(saver)
        if not isinstance(compiled, Pregel):
            raise TypeError(
                f"the app factory returned {type(compiled).__name__}, not a compiled graph"
            )
        if compiled.checkpointer is not saver:
            compiled = compiled.copy({"checkpointer": saver})
        return compiled
    raise TypeError(f"not a LangGraph app: {type(app).__name__}")


def nodes_of(app: Any) -> list[str]:
    """Every node of the graph and of its subgraphs, the input node `__start__` included."""
    compiled = on_saver(app, InMemorySaver()) if not isinstance(app, Pregel) else app
    names = list(compiled.nodes)
    for _, sub in compiled.get_subgraphs(recurse=True):
        names += [n for n in getattr(sub, "nodes", {}) if n not in names]
    return names


def header(
    app: Any,
    *,
    durability: str,
    backend: str,
    scenario: str,
    thread: str,
) -> dict[str, Any]:
    return head(
        CONTRACT,
        "langgraph",
        version("langgraph"),
        FORMAT,
        backend=backend,
        thread=thread,
        scenario=scenario,
        guarantees={"durability": durability, **GUARANTEES},
        # open: a node's `@task` calls, the functional API's tasks and error handlers run
        # under names the compiled graph does not list, known only once they run
        graph={"nodes": nodes_of(app), "open": True},
    )


class Recording:
    """One process's recorder of one trace."""

    def __init__(
        self,
        trace: Path,
        proc: str,
        *,
        durability: str = "sync",
        kill: KillSwitch | None = None,
        lock: Path | None = None,
        serialize: bool = True,
    ) -> None:
        self.path = trace
        self.file = TraceFile(trace, proc)
        self.durability = durability
        self.recorder = Recorder(self.file, durability=durability, kill=kill)
        self.lock = SaverLock(lock, serialize=serialize)
        self.callbacks = RecorderCallbacks(self.recorder)
        # the saver calls of this process by shape (coverage.py); a kill message carries them
        self.calls = CallTally()
        self.recorder.kill.tally = self.calls.to_json
        self.saver: RecordingSaver | None = None  # the recording checkpointer, once attached

    def header(self, app: Any, *, backend: str, scenario: str, thread: str) -> None:
        self.file.header(
            header(
                app, durability=self.durability, backend=backend, scenario=scenario, thread=thread
            )
        )

    def attach(self, app: Any, saver: Any) -> Any:
        """The app with its checkpointer recorded: a StateGraph is compiled with it, a
        compiled graph is copied with it, a factory is called with it (`on_saver`)."""
        wrapped = RecordingSaver(saver, self.recorder, self.lock, self.calls)
        self.saver = wrapped
        compiled = on_saver(app, wrapped)
        self.recorder.graph = compiled
        return compiled

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        callbacks = [*(config.get("callbacks") or []), self.callbacks]
        return {**config, "callbacks": callbacks}

    def invoke(self, app: Any, payload: Any, config: dict[str, Any], **kwargs: Any) -> Any:
        config = self._begin(payload, config)
        with self._finishing():
            if self.durability != "exit":
                return app.invoke(payload, config, durability=self.durability, **kwargs)
            result = None
            for namespace, mode, data in app.stream(payload, config, **_EXIT_STREAM, **kwargs):
                result = self._streamed(namespace, mode, data, result)
            return result

    async def ainvoke(self, app: Any, payload: Any, config: dict[str, Any], **kwargs: Any) -> Any:
        config = self._begin(payload, config)
        with self._finishing():
            if self.durability != "exit":
                return await app.ainvoke(payload, config, durability=self.durability, **kwargs)
            result = None
            async for namespace, mode, data in app.astream(
                payload, config, **_EXIT_STREAM, **kwargs
            ):
                result = self._streamed(namespace, mode, data, result)
            return result

    def _begin(self, payload: Any, config: dict[str, Any]) -> dict[str, Any]:
        """What `invoke` and `ainvoke` do first: the recorder told what the call resumes and
        where, and the config that carries the recorder's callbacks."""
        if isinstance(payload, Command) and payload.resume is not None:
            self.recorder.expect_resume(payload.resume)
        self.recorder.expect_into(config)
        return self.config(config)

    @contextlib.contextmanager
    def _finishing(self) -> Iterator[None]:
        """The invocation's `finish` line: with the exception that ended it, or none."""
        try:
            yield
        except BaseException as exc:
            self.recorder.finished(exc)
            raise
        self.recorder.finished(None)

    def _streamed(self, namespace: tuple[str, ...], mode: str, data: Any, result: Any) -> Any:
        """Exit durability: the checkpoints and task results the loop makes in memory are
        recorded; the root graph's values are the result so far."""
        if mode == "checkpoints":
            self.recorder.checkpoint_chunk(namespace, data)
        elif mode == "tasks" and ("result" in data or "error" in data):
            self.recorder.task_result(namespace, data)
        return data if mode == "values" and not namespace else result

    def close(self) -> None:
        self.file.close()


def record_run(
    app: Any,
    input: Any,
    *,
    out: Path,
    answers: Iterable[Any] = (),
    saver: Any = None,
    durability: str = "sync",
    thread: str = "t1",
    scenario: str = "one run of my graph",
) -> Path:
    """Records one run of your graph into the trace `out` (a fresh file) and returns it.

    `app` is `FACTORY(checkpointer)` returning your compiled graph (or a StateGraph, or a
    compiled graph). The run is `invoke(input)`, then, while the thread is parked at an
    interrupt, `invoke(Command(resume=a))` with the next of `answers` (several interrupts at
    once each get it, through a map resume); it ends done, or parked when the answers run
    out. `saver` is a sync `BaseCheckpointSaver` (default: LangGraph's
    SqliteSaver on `out` with the suffix `.sqlite`, created afresh). Judge the trace with
    `resumecheck.judge.judge([path], spec_paths=default_spec_paths())`. An app whose nodes
    are async def: `arecord_run`."""
    out = Path(out)
    out.unlink(missing_ok=True)
    own: Any = None
    if saver is None:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        own = sqlite3.connect(_fresh_db(out), check_same_thread=False)
        saver = SqliteSaver(own)
    recording = Recording(out, "w1", durability=durability)
    try:
        recording.header(app, backend=type(saver).__name__, scenario=scenario, thread=thread)
        graph = recording.attach(app, saver)
        config: dict[str, Any] = {"configurable": {"thread_id": thread}}
        recording.invoke(graph, input, config)
        for answer in answers:
            resume = resume_all(graph.get_state(config), answer)
            if resume is None:
                break
            recording.invoke(graph, resume, config)
    finally:
        recording.close()
        if own is not None:
            own.close()
    return out


async def arecord_run(
    app: Any,
    input: Any,
    *,
    out: Path,
    answers: Iterable[Any] = (),
    saver: Any = None,
    durability: str = "sync",
    thread: str = "t1",
    scenario: str = "one run of my graph",
) -> Path:
    """`record_run` through LangGraph's async API (`ainvoke`, the saver's `aget_tuple`,
    `aput`, ...), which an app whose nodes are async def needs: `saver` is then an async
    saver (default: LangGraph's AsyncSqliteSaver on a fresh `.sqlite` file beside `out`)."""
    out = Path(out)
    out.unlink(missing_ok=True)
    async with contextlib.AsyncExitStack() as stack:
        if saver is None:
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            saver = await stack.enter_async_context(
                AsyncSqliteSaver.from_conn_string(str(_fresh_db(out)))
            )
        recording = Recording(out, "w1", durability=durability)
        stack.callback(recording.close)
        recording.header(app, backend=type(saver).__name__, scenario=scenario, thread=thread)
        graph = recording.attach(app, saver)
        config: dict[str, Any] = {"configurable": {"thread_id": thread}}
        await recording.ainvoke(graph, input, config)
        for answer in answers:
            resume = resume_all(await graph.aget_state(config), answer)
            if resume is None:
                break
            await recording.ainvoke(graph, resume, config)
    return out


def _fresh_db(out: Path) -> Path:
    """The default saver's SQLite file: beside the trace, created afresh."""
    db = out.with_suffix(".sqlite")
    db.unlink(missing_ok=True)
    return db
