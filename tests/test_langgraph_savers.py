"""Savers the project has never seen, through `--saver MODULE:FACTORY`: each broken one is
caught as a saver finding with the property (or runner check) named, each correct one has no
saver finding; and what LangGraph's storage-API conformance package says about the same
savers, checked against the side-by-side table in docs/langgraph.md.

The zoo is tests/fixtures/broken_savers.py: LangGraph's SQLite saver with one bug, and savers
written from scratch (a table saver with its own SQLite schema, a dict-based one in a pickle
file) with one bug each, of the classes a saver author gets wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import JOBS, ROOT, run_cli
from rctools.langgraph.killpoints import KillPoint, kind

pytestmark = pytest.mark.slow

FIXTURES = ROOT / "tests" / "fixtures"
ENV = {"PYTHONPATH": str(FIXTURES)}
DOCS = ROOT / "docs" / "langgraph.md"


def _matrix(
    tmp_path: Path, factory: str, scenarios: str, stride: int, durability: str = "sync"
) -> dict[str, Any]:
    run = run_cli(
        "run",
        "langgraph",
        "--saver",
        f"broken_savers:{factory}",
        "--scenarios",
        scenarios,
        "--durability",
        durability,
        "--api",
        "sync",
        "--kill-stride",
        str(stride),
        "--format",
        "json",
        "--out",
        tmp_path,
        "--no-progress",
        *JOBS,
        env=ENV,
    )
    run.assert_no_traceback()
    document = run.json()
    assert document["exit_code"] == run.returncode
    return document


class Broken(NamedTuple):
    factory: str
    scenarios: str
    stride: int
    caught_as: frozenset[str]  # a saver finding names at least one of these
    needs: str | None = None  # why it cannot be caught before other work lands (xfail)
    durability: str = "sync"


ZOO = [
    # Every kill point: a lost write shows only when the kill lands between the
    # acknowledgement and the next checkpoint, a few points of each run.
    Broken("drops_pending_writes", "chain", 1, frozenset({"CV"})),
    # wrong from the first resume on: its runs never finish, so few kill points suffice
    Broken("parent_as_latest", "chain", 40, frozenset({"CV"})),
    Broken("writes_kept_in_memory", "chain", 1, frozenset({"CV"})),
    Broken("write_behind_objectstorage", "chain", 1, frozenset({"CV"})),
    Broken("ignores_checkpoint_id", "update-older", 1, frozenset({"CV", "STATE"})),
    Broken("namespaces_mixed", "subgraph", 1, frozenset({"CV", "STATE"})),
    Broken("latest_by_step", "update-older", 1, frozenset({"CV", "STATE"})),
    # The contract sees nothing wrong (no fork is made at all): only the end differs.
    Broken("history_only_latest", "update-older", 1, frozenset({"STATE"})),
    # The thread deleted, then started again on the same id: the first load reads it back.
    Broken("delete_keeps_checkpoints", "delete", 1, frozenset({"CV"})),
    Broken("stops_early", "chain", 2, frozenset({"CV", "END", "STATE"})),
    # Caught by a kill between the two statements of one put (a kill point inside the call):
    # the half-written checkpoint cannot be read back (RUNS) or reads wrong (CV).
    Broken("two_step_put", "chain", 2, frozenset({"CV", "PC", "VALID", "RUNS"})),
    # Threads t1, t10 and t1:a on one saver (the `threads` scenario).
    Broken("thread_prefix", "threads", 1, frozenset({"CV", "PC", "STATE"})),
    # Only where a write can land before its checkpoint: LangGraph's background put in async
    # durability (the fault-free cells already show it).
    Broken(
        "put_hides_earlier_writes",
        "two-interrupts,approval-loop",
        40,
        frozenset({"CV"}),
        durability="async",
    ),
    Broken(
        "latest_by_insertion",
        "concurrent-2",
        1,
        frozenset({"CV", "STATE"}),
        needs="a put with an older id landing after one with a newer id: race cells (saver "
        "calls not serialized) exist, but two resumers' puts have not yet been seen to cross",
    ),
]
CORRECT = ("correct_sqlite", "table_saver", "file_dict_saver", "slow_ack_sqlite", "log_dir_saver")
# Every kind of kill point a saver of one statement per call has (killpoints.kind).
KINDS = {
    "start", "end", "get_tuple entry", "get_tuple exit", "put entry", "put exit", "put @",
    "put_writes entry", "put_writes exit", "put_writes @",
}  # fmt: skip
# Caught through an app, not a bundled scenario (tests/test_langgraph_app.py): only time travel
# past a subgraph with one namespace for every run calls list(before=).
APP_ONLY = ("list_ignores_before",)


# `make test-long` only: a second write-behind cache (the first, writes_kept_in_memory, stays
# in `make test`), a second early stop (stops_early, after a kill; history_only_latest, of time
# travel, stays), the namespace mix (thread_prefix, the thread mix, stays), the saver no
# cell can catch yet (an xfail) and the one only async durability catches: minutes of CI
# between them.
LONG = {
    "write_behind_objectstorage",
    "stops_early",
    "namespaces_mixed",
    "latest_by_insertion",
    "put_hides_earlier_writes",
}


def _case(broken: Broken) -> Any:
    marks = [pytest.mark.xfail(reason=broken.needs, strict=False)] if broken.needs else []
    marks += [pytest.mark.long] if broken.factory in LONG else []
    return pytest.param(broken, id=broken.factory, marks=marks)


@pytest.mark.parametrize("broken", [_case(b) for b in ZOO])
def test_a_broken_saver_is_a_saver_finding_with_the_check_named(
    tmp_path: Path, broken: Broken
) -> None:
    document = _matrix(tmp_path, broken.factory, broken.scenarios, broken.stride, broken.durability)
    assert document["exit_code"] == 1, document["details"]["counts"]
    saver = [c for c in document["details"]["cells"] if c["finding"] in ("saver", "saver-error")]
    assert saver, f"{broken.factory} was not caught: {document['details']['counts']}"
    assert all(c["checks"] for c in saver)
    named = {check for c in saver for check in c["checks"]}
    assert named & broken.caught_as, named


# `make test` runs the first; the other two correct savers, minutes more of the same check,
# under `make test-long` (and every one at stride 1 under `make no-false-alarm`).
@pytest.mark.parametrize(
    "factory", [CORRECT[0], *(pytest.param(f, marks=pytest.mark.long) for f in CORRECT[1:])]
)
def test_a_correct_saver_never_seen_before_has_no_saver_finding(
    tmp_path: Path, factory: str
) -> None:
    # Every fifth kill point of four scenarios: every kind of kill point (node start and end,
    # each saver call's entry and exit, an instant inside a write) is still reached -- the
    # slice of `make no-false-alarm`'s stride 1 that CI can afford (docs/langgraph.md).
    document = _matrix(tmp_path, factory, "chain,two-interrupts,update-older,subgraph", 5)
    reached = {
        kind(point.label)
        for c in document["details"]["cells"]
        if (point := KillPoint.parse(c["fault"])) is not None
    }
    assert reached >= KINDS, KINDS - reached
    counts = document["details"]["counts"]
    assert counts["saver"] == 0 and counts["saver-error"] == 0, [
        (c["scenario"], c["fault"], c["checks"])
        for c in document["details"]["cells"]
        if c["checks"]
    ]
    assert counts["failed"] == 0
    assert document["exit_code"] == 0
    assert counts["conforms"] >= 12


# --- the storage-API conformance package on the same fixtures ---------------------------------


def _conformance(factory: str, store: Path) -> bool:
    """Whether `langgraph-checkpoint-conformance` passes the saver (every capability it
    detects)."""
    conformance = pytest.importorskip("langgraph.checkpoint.conformance")
    sys.path.insert(0, str(FIXTURES))
    os.environ["RESUME_CHECK_STORE"] = str(store)
    try:
        import broken_savers

        make = getattr(broken_savers, factory)

        @conformance.checkpointer_test(name=factory)
        async def registered():  # type: ignore[no-untyped-def]
            made = make()
            if isinstance(made, contextlib.AbstractContextManager) and not hasattr(
                made, "get_tuple"
            ):
                with made as saver:
                    yield saver
            else:
                yield made

        return bool(asyncio.run(conformance.validate(registered)).passed_all())
    finally:
        sys.path.remove(str(FIXTURES))
        sys.modules.pop("broken_savers", None)


def _docs_table() -> dict[str, str]:
    """The side-by-side table of docs/langgraph.md: saver -> its conformance column."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Broken savers side by side", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| (passes|fails) \|", section, re.M)
    return dict(rows)


@pytest.mark.parametrize("factory", [b.factory for b in ZOO] + list(CORRECT) + list(APP_ONLY))
def test_the_docs_say_what_the_conformance_package_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, factory: str
) -> None:
    monkeypatch.setenv("RESUME_CHECK_STORE", str(tmp_path))
    passed = _conformance(factory, tmp_path)
    assert _docs_table().get(factory) == ("passes" if passed else "fails")
