"""Round trips of server-backed savers are kill points, hooked at the driver (a psycopg
cursor, a redis client), never by editing the saver: real PostgreSQL and redis on loopback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from rctools.langgraph.backends import open_saver, resolve
from rctools.langgraph.killpoints import KillSwitch, hook_statements
from services import services  # noqa: F401  (the session fixture)

pytestmark = [pytest.mark.slow, pytest.mark.services]


# PostgresSaver sends a call's statements in one transaction, so a kill between them leaves
# the store as at the call's entry: no point inside (a statement is a point only once part of
# the call has committed). RedisSaver's commands each land on their own: points inside.
@pytest.mark.parametrize(
    ("backend", "driver", "points_inside"),
    [("postgres", "psycopg", False), ("redis", "redis", True)],
)
def test_a_write_call_of_a_server_backed_saver_has_a_point_before_each_round_trip(
    backend: str,
    driver: str,
    points_inside: bool,
    services: dict[str, str],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESUME_CHECK_STORE", str(tmp_path))
    with open_saver(resolve(backend)) as saver:
        kill = KillSwitch()
        assert hook_statements(saver, kill) == [driver]
        config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"log": ["a"]}  # a blob: PostgresSaver sends two
        checkpoint["channel_versions"] = {"log": 1}
        with kill.call("put"):
            saved = saver.put(config, checkpoint, {"source": "input", "step": -1}, {"log": 1})
        with kill.call("put_writes A"):
            saver.put_writes(saved, [("x", 1), ("y", 2)], "task-1", "A")
    inside = sorted(label for label in kill.seen if " sql " in label or " cmd " in label)
    if not points_inside:
        assert inside == [], kill.seen
        assert {"put entry", "put exit", "put_writes A entry", "put_writes A exit"} <= set(
            kill.seen
        )
        return
    assert inside, kill.seen
    assert all(label.startswith(("put ", "put_writes A ")) for label in inside)
    assert any(label.startswith("put ") for label in inside)
    assert os.environ["RESUME_CHECK_STORE"] == str(tmp_path)
