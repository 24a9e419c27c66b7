"""The matrix on real servers: PostgreSQL and redis, started on loopback by the test set-up.

Each cell also runs on the reference saver, so a failure here is attributed: a saver finding
would mean the server-backed saver loses, mixes or resurrects state that SQLite keeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import JOBS, run_langgraph
from services import services  # noqa: F401  (the session fixture)

pytestmark = pytest.mark.slow


# `make test` judges the PostgreSQL saver; the redis one, the same check on another server,
# under `make test-long`.
@pytest.mark.parametrize("backend", ["postgres", pytest.param("redis", marks=pytest.mark.long)])
def test_a_server_backed_saver_keeps_the_contract_where_langgraph_does(
    backend: str,
    services: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    run = run_langgraph(
        tmp_path,
        *JOBS,
        # Not concurrent-2's race cell: it goes whichever way the two resumers' unserialized
        # calls interleave, so one run on a server saver can break what the reference's did not
        # (test_langgraph_faults.py judges races).
        *("--cells", "chain.*", "--cells", "node-error.*", "--cells", "fork.*"),
        *("--cells", "concurrent-2.none.*"),
        backend=backend,
        scenarios="chain,node-error,fork,concurrent-2",
        durability="sync",
        stride=4,
        env=services,
    )
    run.assert_no_traceback()
    assert run.returncode == 0, run
    document = run.json()
    assert document["details"]["counts"]["saver"] == 0
    assert document["details"]["counts"]["failed"] == 0
    cells = {(c["scenario"], c["fault"]): c for c in document["details"]["cells"]}
    assert cells[("chain", "none")]["finding"] == "conforms"
    concurrent = cells[("concurrent-2", "none")]
    assert concurrent["finding"] == "runtime"
    assert set(concurrent["tested"]["properties"]) <= {"CO", "EO", "PC"}
    # whether the forked run's first node starts before the fork is saved is a race
    assert cells[("fork", "none")]["finding"] in ("conforms", "runtime")
    kills = [c for (s, f), c in cells.items() if s in ("chain", "node-error") and f != "none"]
    assert kills and all(c["finding"] == "conforms" for c in kills)
