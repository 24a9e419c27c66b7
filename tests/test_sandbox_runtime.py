"""The sandbox runtime's parts on a real overlay, and what the contract says about its limits.

The inspector's evidence (the overlay's upper layer) must show a turn's net file effects
exactly, and a checkpoint image must rebuild the state it was taken from. (Process images:
`test_sandbox_criu.py`.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import SPEC, run_cli
from rctools.sandbox.command import missing_privileges
from rctools.sandbox.fanotify import Touched, UpperWatch
from rctools.sandbox.inspector import Inspector
from rctools.sandbox.namespace import Sandbox, table_digest
from rctools.sandbox.store import Store
from rctools.sandbox.tree import WHITEOUT, manifest, merge, tree_digest
from resumecheck.waiting import poll
from test_spec import expected_property

pytestmark = pytest.mark.slow

needs_root = pytest.mark.skipif(
    missing_privileges() is not None, reason=f"sandbox unavailable: {missing_privileges()}"
)


def _base(root: Path) -> Path:
    base = root / "base"
    (base / "docs").mkdir(parents=True)
    (base / "keep.txt").write_text("keep\n")
    (base / "drop.txt").write_text("drop\n")
    (base / "docs" / "a.md").write_text("a\n")
    return base


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(_base(tmp_path), tmp_path / "upper", tmp_path / "work", tmp_path / "mnt")
    box.start()
    yield box
    box.kill()


@needs_root
def test_upper_layer_shows_net_file_effects_exactly(sandbox: Sandbox) -> None:
    result = sandbox.run(
        "echo new > new.txt && rm drop.txt && echo tmp > t.tmp && rm t.tmp "
        "&& echo more >> keep.txt && rm -r docs && mkdir docs && echo b > docs/b.md"
    )
    assert result.exit == 0, result.output
    upper = manifest(sandbox.upper, upper=True)
    assert upper["drop.txt"] == WHITEOUT  # a deletion is a whiteout
    assert "t.tmp" not in upper  # created and deleted within the turn: no net effect
    assert upper["docs"][2:] == ("opaque",)  # the old docs/ is hidden, not merged
    assert {"new.txt", "keep.txt", "docs/b.md"} <= upper.keys()
    merged = merge(manifest(sandbox.lower), upper)
    assert tree_digest(merged) == tree_digest(manifest(sandbox.view))
    assert "docs/a.md" not in merged


@needs_root
def test_file_images_rebuild_the_state_they_were_taken_from(tmp_path: Path) -> None:
    base = _base(tmp_path)
    store = Store(tmp_path / "store")
    box = Sandbox(base, tmp_path / "upper", tmp_path / "work", tmp_path / "mnt")
    box.start()
    try:
        box.run("echo one > one.txt && rm drop.txt")
        first = manifest(box.upper, upper=True)
        store.write_files_image(1, box.upper, first, (0, {}), manifest(base))
        box.run("rm one.txt && echo two > two.txt && echo x >> keep.txt")
        second = manifest(box.upper, upper=True)
        image = store.write_files_image(2, box.upper, second, (1, first), manifest(base))
        live = tree_digest(manifest(box.view))
    finally:
        box.kill()
    assert image.digest == live
    store.restore_upper(2, tmp_path / "restored")
    again = Sandbox(base, tmp_path / "restored", tmp_path / "work2", tmp_path / "mnt2")
    again.start()
    try:
        assert tree_digest(manifest(again.view)) == live
        assert (
            again.run("cat two.txt keep.txt; ls").output
            == "two\nkeep\nx\ndocs\nkeep.txt\ntwo.txt\n"
        )
    finally:
        again.kill()


def test_every_sandbox_property_has_a_mutant() -> None:
    text = (SPEC / "SandboxCR.tla").read_text(encoding="utf-8")
    record_text = re.search(r"^Properties ==\s*\[(.*?)\]", text, re.M | re.S)
    assert record_text
    properties = set(re.findall(r"(\w+)\s*\|->", record_text.group(1)))
    assert properties == {
        "InspectorSound",
        "BoundaryAligned",
        "ManifestComposition",
        "AtomicPublish",
        "CompletionGating",
        "RestoreConsistency",
        "RewindConsistency",
        "RolloutResamples",
    }
    expected = set()
    for mutant in (SPEC / "mutants").glob("sandbox-*.mutant"):
        mutant_text = mutant.read_text(encoding="utf-8")
        assert "module: SandboxCR" in mutant_text, mutant
        expected.add(expected_property(mutant))
    # each operational form has a mutant of the protocol, each history form a sandbox-check-*
    # mutant that deletes what makes its property fire
    assert expected == properties | {f"Hist{name}" for name in properties}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--crash-points", "sometimes"), "unknown crash point(s) ['sometimes']"),
        (("--crash-turns", "last"), "--crash-turns: 'last' is not 'all' or 1,2,..."),
        (("--agent", " "), "--agent needs a command line"),
    ],
)
@needs_root
def test_bad_suite_options_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    run = run_cli("run", "sandbox", *args, "--out", tmp_path)
    run.assert_no_traceback()
    assert run.returncode == 2, run
    assert message in run.stderr
    assert not (tmp_path / "summary.json").exists()


@needs_root
def test_kernel_file_events_name_what_a_turn_touched(sandbox: Sandbox) -> None:
    """fanotify reports the paths the sandbox's processes touched in the upper layer; the
    inspector then calls a turn a file effect only if a touched entry differs from the last
    file image -- a temp file created and deleted is touched and no effect."""
    watch = UpperWatch(sandbox.upper)
    try:
        inspector = Inspector({}, table_digest([]), watch)
        watch.drain()
        assert sandbox.run("echo x > t.tmp && rm t.tmp && cat keep.txt").exit == 0
        upper = manifest(sandbox.upper, upper=True)
        assert inspector.classify(upper, [], {}) == set()
        assert inspector.since == {"t.tmp"} and inspector.events >= 2
        # A background process writes later (like a server's log): its write is seen too.
        assert (
            sandbox.run("(sleep 0.2; echo late >> keep.txt) </dev/null >/dev/null 2>&1 &").exit == 0
        )
        poll(lambda: "keep.txt" in manifest(sandbox.upper, upper=True), timeout=10, every=0.05)
        upper = manifest(sandbox.upper, upper=True)
        assert inspector.classify(upper, [], {}) == {"files"}
        assert "keep.txt" in inspector.since
        inspector.took({"files"}, upper, [])
        assert inspector.classify(upper, [], {}) == set() and inspector.since == set()
    finally:
        watch.close()


@needs_root
def test_events_outside_the_upper_layer_are_not_the_sandboxes(tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    upper.mkdir()
    watch = UpperWatch(upper)
    try:
        (tmp_path / "elsewhere.txt").write_text("host activity\n")  # same filesystem
        (upper / "mine.txt").write_text("x\n")
        touched = watch.drain()
        assert touched.paths == {"mine.txt"} and not touched.lost
    finally:
        watch.close()


@needs_root
def test_an_event_it_cannot_place_makes_it_compare_the_whole_layer(sandbox: Sandbox) -> None:
    """An unresolvable handle (a folder deleted elsewhere on the disk, common on a busy host)
    must neither hide a change nor invent one: the whole upper layer decides."""
    watch = UpperWatch(sandbox.upper)
    try:
        inspector = Inspector(manifest(sandbox.upper, upper=True), table_digest([]), watch)
        watch.drain()
        inspector.absorb(Touched(lost=True))
        assert inspector.classify(manifest(sandbox.upper, upper=True), [], {}) == set()
        # A change that no event names (the events were lost) is still found.
        (sandbox.upper / "unseen.txt").write_text("written while events were lost\n")
        watch.drain()
        inspector.absorb(Touched(lost=True))
        assert inspector.classify(manifest(sandbox.upper, upper=True), [], {}) == {"files"}
    finally:
        watch.close()
