"""`--profile`: which kill points a profile keeps of a fault-free run (`killpoints.by_kind`),
and what each profile plans. In-process and cheap: no run is recorded here
(test_langgraph_selection.py lists a real plan; bench/profiles_bench.py measures what each
profile costs and catches)."""

from __future__ import annotations

from rctools.langgraph.killpoints import KillPoint, by_kind, kind, plan
from rctools.langgraph.matrix import KILLED
from rctools.langgraph.profiles import PROFILES

# A fault-free run of a graph A -> review (interrupts, resumed twice) -> C, as its points
# count: labels in the order first reached.
SEEN = {
    "get_tuple entry": 3,
    "get_tuple exit": 3,
    "put entry": 5,
    "put exit": 5,
    "put_writes __start__ entry": 1,
    "put_writes __start__ exit": 1,
    "start A": 1,
    "end A": 1,
    "put_writes A entry": 1,
    "put_writes A exit": 1,
    "start review": 3,
    "end review": 3,
    "put_writes review entry": 3,
    "put_writes review exit": 3,
    "start C": 1,
    "end C": 1,
    "put_writes C entry": 1,
    "put_writes C exit": 1,
}
LINES = {"put": [40, 40, 40, 40, 40], "put_writes review": [30, 30, 30]}


def test_a_kind_names_what_a_point_tests_whatever_node_or_instant() -> None:
    assert kind("start review") == kind("start A") == "start"
    assert kind("put_writes review exit") == kind("put_writes A exit") == "put_writes exit"
    assert kind("put entry") == "put entry"
    assert kind("put_writes A @0.516") == kind("put_writes B @0.1") == "put_writes @"
    assert kind("put sql 2 INSERT") == kind("put sql 3 UPDATE") == "put sql"
    assert kind("put cmd 2 HSET") == "put cmd"


def test_one_per_kind_is_the_latest_of_the_label_reached_most_often() -> None:
    points = plan(SEEN, LINES)
    chosen = by_kind(points, 1, list(SEEN))
    assert len({kind(p.label) for p in points}) == len(chosen)
    faults = {p.fault for p in chosen}
    # review ran three times (the resumes re-enter it): its third run, not C's only one
    assert {"kill:start review#3", "kill:end review#3"} <= faults
    assert {"kill:put_writes review exit#3", "kill:put entry#5", "kill:get_tuple exit#3"} <= faults
    assert any(p.label.startswith("put_writes review @") and p.occurrence == 3 for p in chosen)
    assert chosen == [p for p in points if p in chosen]  # the plan's order


def test_two_per_kind_adds_the_earliest_and_never_repeats_a_point() -> None:
    points = plan(SEEN, LINES)
    chosen = by_kind(points, 2, list(SEEN))
    # nested: what `quick` kills, `pr` kills too, and `full` kills every point -- so a saver
    # `quick` catches, the larger profiles catch (bench/profiles-results.md)
    assert set(by_kind(points, 1, list(SEEN))) < set(chosen) < set(points)
    starts = [p.fault for p in chosen if kind(p.label) == "start"]
    assert sorted(starts) == ["kill:start A#1", "kill:start review#3"]
    assert len(chosen) == len(set(chosen))
    alone = [KillPoint("put entry", 1)]
    assert by_kind(alone, 2, ["put entry"]) == alone


def test_profiles_narrow_in_order_and_full_is_every_point() -> None:
    quick, pr, full = PROFILES["quick"], PROFILES["pr"], PROFILES["full"]
    assert full.per_kind == 0 and full.killed == KILLED and full.left_out == "nothing"
    assert set(quick.killed) < set(pr.killed) == set(KILLED)
    # every durability fault-free, faults in fewer of them
    assert quick.durabilities == pr.durabilities == full.durabilities
    assert quick.faulted is not None and set(quick.faulted) < set(quick.durabilities)
    assert pr.faulted is None and full.faulted is None
    assert 0 < quick.per_kind < pr.per_kind
    assert quick.scenarios == pr.scenarios == full.scenarios  # every scenario fault-free
