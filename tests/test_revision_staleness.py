"""`rctools.revision.staleness`: what both revision runtimes tell a plan about an attempt.

An attempt of a routed node is stale once its route's control path was revised, even when the
path came back to the value that put the node on the route: DagRevision's `Stale` reads the
versions the attempt ran under (`RoutePaths(n) \\cap Touched(a)`), not the values. That is the
route clause of `Staleness._stale`, and no other clause covers it here -- the node is on the
route again, it read nothing, and its parents are the current commits. Real code, no TLC: a
unit test of the one definition both runtimes share.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from rctools.revision.runtime import Attempt
from rctools.revision.staleness import Staleness
from rctools.revision.tracking import Inputs
from rctools.revision.workloads import ROUTE


@dataclass(frozen=True)
class _Commit:
    id: str


class _Runtime(Staleness):
    """ROUTE (R -> {B1 | B2} -> J, c selects the branch) with R committed."""

    def __init__(self) -> None:
        self.workload = ROUTE
        self.dag = nx.DiGraph()
        self.inputs = Inputs(dict(ROUTE.inputs))
        self.cur = {"R": _Commit("r1")}

    def revise(self, path: str, value: int) -> None:
        self.inputs.values[path] = value
        self.inputs.versions[path] += 1


def test_a_routed_attempt_is_stale_once_its_route_was_revised_even_back() -> None:
    runtime = _Runtime()
    b1 = Attempt("b1", "B1", ("r1",), dict(runtime.inputs.versions))
    assert not runtime._stale(b1)
    runtime.revise("c", 1)  # B2's branch: B1 is off the route
    assert not runtime._active("B1") and runtime._stale(b1)
    runtime.revise("c", 0)  # back: B1 is on the route again, under a newer version of c
    assert runtime._active("B1")
    assert runtime._stale(b1)


def test_a_revision_of_another_path_leaves_a_routed_attempt_fresh() -> None:
    runtime = _Runtime()
    b1 = Attempt("b1", "B1", ("r1",), dict(runtime.inputs.versions))
    runtime.revise("q", 1)  # read by R only; R's commit stays current here
    assert not runtime._stale(b1)
