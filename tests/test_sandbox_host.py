"""The host-side runtime: an agent program the suite never saw, checkpointed between it and its
model endpoint, judged by SandboxCR.

The agent is `fixtures/sandbox_agents/shell_agent.py`: plain Python against OpenAI's chat
completions API, nothing of resume-check in it. The model is the stand-in (`standin.py`); the
workload is code-repair, a small repository whose tests the agent makes pass (two fixes), or
shell-heavy (pipelines, a build packed, a server started and queried: criu process images).
The contract judges; these tests read its verdicts and what the host recorded.
"""

from __future__ import annotations

import ast
import json
import shlex
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rctools.sandbox.command import missing_criu
from rctools.sandbox.recorder import RecordError, RunSpec, record
from rctools.sandbox.standin import ChatError, StandIn, answer, serving
from rctools.sandbox.tree import digest
from rctools.sandbox.workloads import WORKLOADS
from resumecheck.contract import default_spec_paths
from resumecheck.judge import judge
from resumecheck.verdict import Status

AGENT = Path(__file__).parent / "fixtures" / "sandbox_agents" / "shell_agent.py"
COMMAND = f"python3 {shlex.quote(str(AGENT))} 'make the tests pass'"
TOOLS = [{"type": "function", "function": {"name": "shell"}}]

needs_sandbox = pytest.mark.skipif(
    missing_criu() is not None, reason=f"sandbox unavailable: {missing_criu()}"
)


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]


@pytest.fixture(scope="module")
def model() -> Iterator[str]:
    """One stand-in for the module's runs, as one endpoint serves every sandbox of a batch."""
    with serving(0.01) as url:
        yield url


def _record(tmp: Path, model: str, spec: RunSpec) -> tuple[Path, Any]:
    [result] = record(spec, tmp, tmp / "scratch", 0.01, model=model)
    [verdict] = judge([result.trace], spec_paths=default_spec_paths())
    return result, verdict


# --- the agent and the stand-in, without a sandbox -------------------------------------------


def test_the_agent_is_unmodified_it_imports_nothing_of_resume_check() -> None:
    tree = ast.parse(AGENT.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"json", "os", "subprocess", "sys", "urllib.error", "urllib.request"}


def test_the_stand_in_answers_a_turn_with_the_next_turns_commands_then_a_final_message() -> None:
    workload = WORKLOADS["code-repair"]
    task = [{"role": "system", "content": "s"}, {"role": "user", "content": "fix it"}]
    first = answer(workload, {"messages": task, "tools": TOOLS})["choices"][0]
    calls = first["message"]["tool_calls"]
    assert first["finish_reason"] == "tool_calls"
    assert [json.loads(c["function"]["arguments"])["command"] for c in calls] == list(
        workload.turns[0]
    )
    done = [*task, *[{"role": "assistant", "content": None}] * len(workload.turns)]
    last = answer(workload, {"messages": [*done, {"role": "tool", "content": "exit=0\nOK\n"}],
                             "tools": TOOLS})  # fmt: skip
    assert last["choices"][0]["message"] == {"role": "assistant", "content": "code-repair: done"}
    with pytest.raises(ChatError, match="shell"):
        answer(workload, {"messages": task, "tools": []})


def test_the_stand_in_speaks_http_and_refuses_a_bad_request() -> None:
    """A request names its workload as the model `standin/<workload>` (the host routes it so);
    an unknown model, or no tools, is a 400 as the real API gives, and no call is counted."""
    server = StandIn({n: WORKLOADS[n] for n in ("code-repair", "shell-heavy")}, 0.0)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def post(model: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"model": model, "messages": [{"role": "user", "content": "go"}], "tools": tools}
        request = urllib.request.Request(
            server.url + "/chat/completions", json.dumps(body).encode(), method="POST"
        )
        with urllib.request.urlopen(request) as reply:
            return json.load(reply)

    try:
        reply = post("standin/shell-heavy", TOOLS)
        call = reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        assert json.loads(call)["command"] == WORKLOADS["shell-heavy"].turns[0][0]
        for model, tools in (("gpt-x", TOOLS), ("standin/code-repair", [])):
            with pytest.raises(urllib.error.HTTPError) as refused:
                post(model, tools)
            assert refused.value.code == 400
        assert server.calls == 1
    finally:
        server.shutdown()


# --- the host runtime on real sandboxes ------------------------------------------------------


@needs_sandbox
def test_an_unmodified_agent_repairs_the_repository_and_survives_a_sigkill(
    tmp_path: Path, model: str
) -> None:
    """Fault-free, and SIGKILLed in turn 7's checkpoint job (the second fix is in the sandbox,
    its image not yet done): both conform; the crash run restores to turn 6, answers the agent's
    re-sent turn 6 from the cache (no model call), and the agent ends with the tests passing."""
    clean, clean_verdict = _record(tmp_path, model, RunSpec("code-repair", "effect-aware", None,
                                                            agent=COMMAND))  # fmt: skip
    crash = RunSpec("code-repair", "effect-aware", (7, "checkpoint"), agent=COMMAND)
    crashed, crash_verdict = _record(tmp_path, model, crash)
    assert clean_verdict.status is Status.CONFORMS, clean_verdict
    assert crash_verdict.status is Status.CONFORMS, crash_verdict
    events = _events(crashed.trace)
    kinds = [e["ev"] for e in events]
    restore = kinds.index("restore")
    assert events[restore]["turn"] == 6 and events[restore]["history"] == 6
    assert events[restore + 1] == events[restore + 1] | {"ev": "release", "turn": 6}
    assert sum(e["ev"] == "response" and e["turn"] == 6 for e in events) == 1  # fast-forward
    assert [cached for _, cached in crashed.turns].count(True) == 1
    tests_pass = digest({"output": "exit=0\nOK\n"})  # the agent's own report of the tests
    assert [e["out"] for e in events if e["ev"] == "cmd_end"][-1] == tests_pass
    skipped = [e for e in _events(clean.trace) if e["ev"] == "checkpoint" and not e["capture"]]
    assert len(skipped) == 7  # read, test, read, test, read, test, a temp report: no effect


@needs_sandbox
def test_an_agent_that_restarts_from_its_task_is_refused_not_replayed(
    tmp_path: Path, model: str
) -> None:
    """The same agent with its transcript taken away re-sends turn 0 after a restore to turn
    3: replaying it would run turns 1..3 again on the restored sandbox, so the host refuses."""
    forgetful = "env -u AGENT_TRANSCRIPT " + COMMAND
    spec = RunSpec("code-repair", "effect-aware", (4, "checkpoint"), agent=forgetful)
    with pytest.raises(RecordError, match="a request of turn 0 while the run is at turn 3"):
        record(spec, tmp_path, tmp_path / "scratch", 0.01, model=model)


@pytest.mark.slow
@needs_sandbox
def test_chat_only_loses_the_fixes_and_restore_consistency_names_the_restore(
    tmp_path: Path, model: str
) -> None:
    spec = RunSpec("code-repair", "chat-only", (8, "checkpoint"), agent=COMMAND)
    _, verdict = _record(tmp_path, model, spec)
    assert verdict.status is Status.VIOLATES and verdict.properties == ["RestoreConsistency"]
    assert '"ev": "restore"' in (verdict.event or "")


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("crash", [(8, "checkpoint"), (9, "response"), (10, "command")])
def test_a_server_the_agent_started_is_restored_by_criu(
    tmp_path: Path, model: str, crash: tuple[int, str]
) -> None:
    """shell-heavy starts a server in turn 8 and queries it in turn 10: with criu images
    taken by the host, every SIGKILL around it conforms."""
    result, verdict = _record(tmp_path, model, RunSpec("shell-heavy", "effect-aware", crash,
                                                       agent=COMMAND))  # fmt: skip
    assert verdict.status is Status.CONFORMS, verdict
    assert any(e["ev"] == "restore" for e in _events(result.trace))
