"""`resume-check spec`: every MC configuration passes and every mutant is rejected for exactly
the property spec/manifest.json names for it; a mutant that does not apply or changes nothing
fails its row. The manifest's own rules (a file it does not list, a count that changed,
`--update-manifest`): test_spec_manifest.py.

`make test` runs a slice: every configuration but the specialised soundness models of ResumeCore
(`MCResumeCoreSound<Something>.cfg`, up to half a minute each; `MCResumeCoreSound.cfg`, every
move at five events, stays), and every mutant but the few found only at the end of a long search
(10-60 s each); the mutants that run still break every property of every contract. `make
check-spec` runs them all.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SPEC, Run, run_cli
from resumecheck import speccheck
from resumecheck.contract import find_contract

pytestmark = pytest.mark.slow

_ROW = re.compile(
    r"^(?P<kind>config|walks|mutant|contract)\s+(?P<name>\S+)\s+(?P<distinct>[\d,]+|-)\s+(?P<seconds>[\d.]+)s\s+"
    r"(?P<outcome>.+?)\s+expected (?P<expected>\S+)\s+(?P<mark>PASS|FAIL)$"
)


@dataclass(frozen=True)
class Row:
    kind: str
    name: str
    outcome: str
    expected: str
    mark: str


def rows_of(run: Run) -> dict[str, Row]:
    lines = run.stdout.splitlines()
    assert lines[0].split()[:2] == ["kind", "name"], run
    assert set(lines[1]) == {"-"}, run  # the rule under the headings
    rows: dict[str, Row] = {}
    for line in lines[2:-1]:
        match = _ROW.match(line)
        assert match, f"not a table row: {line!r}"
        row = Row(*match.group("kind", "name", "outcome", "expected", "mark"))
        assert row.name not in rows, f"{row.name} listed twice"
        rows[row.name] = row
    return rows


def expected_property(mutant: Path) -> str:
    """The property the manifest of the mutant's spec folder names for it."""
    manifest = json.loads((mutant.parent.parent / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["mutants"].get(mutant.stem)
    assert entry, f"{mutant} is not in its folder's manifest.json"
    return str(entry["property"])


def add_to_manifest(folder: Path, **mutants: str) -> None:
    """Lists mutants (name=property; a name's `_` stands for `-`) in a copied spec folder."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name, prop in mutants.items():
        manifest["mutants"][name.replace("_", "-")] = {"property": prop}
    path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


# The rows `make test` leaves to `make check-spec` (resume-check spec --skip).
SLICE_SKIP = (
    "MCResumeCoreSound?*.cfg",
    "core-check-end-changes-other-branch",
    "core-check-ends-over-parked",
    "core-check-answered-twice",
    "core-check-finish-own-end",
    # TLC's walks of ResumeCore's reference (about a minute of CPU); the toy walks of
    # test_spec_manifest.py show the mechanism in make test
    "SimResumeCore.cfg",
    "core-exit-edit-put-loses-the-runs-writes",
)


def in_slice(name: str) -> bool:
    return speccheck.selected(name, None, SLICE_SKIP)


@pytest.fixture(scope="module")
def full_run() -> Run:
    # Two TLC runs at once, as `resume-check spec` does for users: each run has its own
    # folders (test_tlc_isolation.py shows concurrent runs share no file), and the second
    # core halves the longest test of `make test`.
    skips = [option for glob in SLICE_SKIP for option in ("--skip", glob)]
    run = run_cli("spec", "--jobs", "2", *skips, timeout=1800)
    run.assert_no_traceback()
    return run


def test_spec_passes(full_run: Run) -> None:
    assert full_run.returncode == 0, full_run
    rows = rows_of(full_run)
    assert full_run.stdout.splitlines()[-1] == f"{len(rows)} checked, 0 failed"


def test_every_small_configuration_is_checked_and_passes(full_run: Run) -> None:
    rows = rows_of(full_run)
    configs = sorted(p.name for p in SPEC.glob("MC*.cfg") if not p.stem.endswith("Large"))
    assert "MCResumeCore.cfg" in configs
    assert "MCResumeCoreSound.cfg" in configs
    got = {name: (r.kind, r.outcome, r.expected, r.mark) for name, r in rows.items()}
    for config in configs:
        if not in_slice(config):
            assert config not in got, f"{config} is left to make check-spec"
        else:
            assert got.get(config) == ("config", "ok", "ok", "PASS"), config
    large = [p.name for p in SPEC.glob("MC*Large.cfg")]
    assert not set(large) & set(rows), "large configurations run only with --large"


def test_every_walked_reference_breaks_nothing(full_run: Run) -> None:
    """TLC's random walks of each reference (Sim*.cfg), deeper than its MC bounds."""
    rows = rows_of(full_run)
    walked = sorted(p.name for p in SPEC.glob("Sim*.cfg"))
    assert len(walked) == 4
    for name in walked:
        if in_slice(name):
            assert (rows[name].kind, rows[name].outcome, rows[name].mark) == (
                "walks",
                "ok, 1,000 walks",
                "PASS",
            ), name
        else:
            assert name not in rows, f"{name} is left to make check-spec"


def test_every_mutant_is_rejected_for_its_property(full_run: Run) -> None:
    rows = rows_of(full_run)
    mutants = sorted((SPEC / "mutants").glob("*.mutant"))
    assert len(mutants) >= 10
    expected = {
        m.stem: ("mutant", f"violates {expected_property(m)}", "PASS")
        for m in mutants
        if in_slice(m.stem)
    }
    got = {name: (r.kind, r.outcome, r.mark) for name, r in rows.items() if r.kind == "mutant"}
    assert got == expected
    for mutant in mutants:
        if in_slice(mutant.stem):
            assert rows[mutant.stem].expected == expected_property(mutant)
    # the slice still shows every property of every contract able to fail
    assert {expected_property(m) for m in mutants if in_slice(m.stem)} == {
        expected_property(m) for m in mutants
    }


def test_every_property_is_shown_to_fail_by_some_mutant(full_run: Run) -> None:
    """Each property of the contract's Properties record has a mutant that breaks it."""
    text = (SPEC / "ResumeCore.tla").read_text(encoding="utf-8")
    record = re.search(r"^Properties == \[(.*?)\]", text, re.M | re.S)
    assert record
    properties = set(re.findall(r"(\w+)\s*\|->", record.group(1)))
    assert properties == {"PC", "EO", "CO", "CV", "FD", "RD"}
    broken = {expected_property(m) for m in (SPEC / "mutants").glob("*.mutant")}
    assert properties <= broken


def test_store_properties_name_only_properties_of_the_record(tmp_path: Path) -> None:
    """`StoreProperties` (what a saver matrix's race cells still compare past the runtime's
    first break; ResumeCore: CV) may name only properties: another name is a coverage gap."""
    assert find_contract("ResumeCore", [SPEC]).store_properties == {"CV"}
    folder = tmp_path / "spec"
    shutil.copytree(SPEC, folder)
    base = folder / "ResumeCore.tla"
    text = base.read_text(encoding="utf-8")
    assert text.count('StoreProperties == {"CV"}') == 1
    base.write_text(text.replace('{"CV"}', '{"CV", "XV"}'), encoding="utf-8")
    rows = {row.name: row for row in speccheck.check_coverage(folder)}
    assert not rows["ResumeCore"].passed
    assert "StoreProperties names XV, not in Properties" in rows["ResumeCore"].detail
    assert all(row.passed for name, row in rows.items() if name != "ResumeCore")


# --- mutants that must fail their row --------------------------------------------------------

BAD_PATCH = """\
# A patch whose text occurs nowhere in the module.
module: ResumeCore
config: MCResumeCore.cfg
--- replace
THIS TEXT DOES NOT OCCUR IN RESUMECORE
--- with
TRUE
--- end
"""

COMMENT_ONLY = """\
# Rewords a comment: the protocol is unchanged, so no property can fail.
module: ResumeCore
config: MCResumeCoreTiny.cfg
--- replace
\\* f[k], or d when k is not in f's domain.
--- with
\\* f at k, or d when k is not in f's domain.
--- end
"""

# A small configuration (written into the copy only) so that the unchanged protocol is
# model-checked to the end in seconds.
TINY_CONFIG = """\
CONSTANTS
    Procs = {p1}
    Observe <- Unobserved
    Workflows <- MCWorkflows
    Durabilities = {"sync"}
    Plans = {"ask"}
    Levels = {"exactly-once"}
    Fencings = {"lease"}
    MaxFaults = 1
    MaxCheckpoints = 3
SPECIFICATION MCSpec
CONSTRAINT MCBounds
INVARIANT
    TypeOK
    PC
    EO
    CO
    CV
    FD
    RD
"""

WRONG_PROPERTY = """\
# The runtime does not wait for a durable checkpoint in sync mode: that breaks PC, not EO.
module: ResumeCore
config: MCResumeCore.cfg
--- replace
StepMayStart(p) == wf.durability = "sync" => Stored(R(p).cur)
--- with
StepMayStart(p) == TRUE
--- end
"""


@pytest.fixture(scope="module")
def bad_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("badspec") / "spec"
    shutil.copytree(SPEC, folder)
    text = (folder / "ResumeCore.tla").read_text(encoding="utf-8")
    assert text.count("\\* f[k], or d when k is not in f's domain.") == 1
    assert text.count('StepMayStart(p) == wf.durability = "sync" => Stored(R(p).cur)') == 1
    (folder / "MCResumeCoreTiny.cfg").write_text(TINY_CONFIG, encoding="utf-8")
    for name, body in (
        ("zz-bad-patch", BAD_PATCH),
        ("zz-comment-only", COMMENT_ONLY),
        ("zz-wrong-property", WRONG_PROPERTY),
    ):
        (folder / "mutants" / f"{name}.mutant").write_text(body, encoding="utf-8")
    add_to_manifest(folder, zz_bad_patch="PC", zz_comment_only="PC", zz_wrong_property="EO")
    return folder


@pytest.fixture(scope="module")
def bad_run(bad_spec: Path) -> Run:
    run = run_cli("spec", "--spec-dir", bad_spec, "--only", "zz-", "--jobs", "1", timeout=900)
    run.assert_no_traceback()
    return run


def test_bad_mutants_fail_and_the_command_exits_1(bad_run: Run) -> None:
    assert bad_run.returncode == 1, bad_run
    rows = rows_of(bad_run)
    assert {name: r.mark for name, r in rows.items()} == {
        "zz-bad-patch": "FAIL",
        "zz-comment-only": "FAIL",
        "zz-wrong-property": "FAIL",
    }
    assert bad_run.stdout.splitlines()[-1] == "3 checked, 3 failed"


def test_patch_that_does_not_apply(bad_run: Run) -> None:
    row = rows_of(bad_run)["zz-bad-patch"]
    assert (row.outcome, row.expected) == ("patch does not apply", "PC")
    assert "zz-bad-patch: the text to replace occurs 0 times" in bad_run.stderr


def test_mutant_that_changes_nothing_observable(bad_run: Run) -> None:
    row = rows_of(bad_run)["zz-comment-only"]
    assert (row.outcome, row.expected) == ("ok", "PC")


def test_mutant_breaking_another_property_than_it_names(bad_run: Run) -> None:
    row = rows_of(bad_run)["zz-wrong-property"]
    assert (row.outcome, row.expected) == ("violates PC", "EO")


def test_malformed_mutant_file_is_a_usage_error(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    shutil.copytree(SPEC, folder)
    (folder / "mutants" / "zz-malformed.mutant").write_text(
        "# no header fields, no patch\n", encoding="utf-8"
    )
    run = run_cli("spec", "--spec-dir", folder, "--only", "zz-")
    run.assert_no_traceback()
    assert run.returncode == 2
    assert "zz-malformed.mutant: needs module:, config: and a replace/with/end block" in run.stderr


# --- every property stated twice --------------------------------------------------------------


def _coverage_detail(folder: Path) -> str:
    rows = {row.name: row for row in speccheck.check_coverage(folder)}
    assert all(row.passed for name, row in rows.items() if name != "ResumeCore")
    return "" if rows["ResumeCore"].passed else rows["ResumeCore"].detail


def test_resume_core_states_every_property_twice() -> None:
    """ResumeCore's HistoryProperties (in ResumeCoreHistory, the module of its history forms)
    names the same properties as Properties, and the coverage row of the shipped spec passes."""
    text = (SPEC / "ResumeCore.tla").read_text(encoding="utf-8")
    assert speccheck.history_operators(text) is None  # not parsed when judging a trace
    forms = (SPEC / f"ResumeCore{speccheck.HISTORY_MODULE}.tla").read_text(encoding="utf-8")
    history = speccheck.history_operators(forms)
    assert history is not None
    assert set(history) == set(speccheck.property_names(text))
    assert _coverage_detail(SPEC) == ""


@pytest.mark.parametrize(
    ("change", "gap"),
    [
        ("drop-history-form", "HistoryProperties names RD but Properties does not"),
        ("drop-sound-invariant", "HistCV is checked on no soundness configuration"),
        ("drop-sound-mutant", "HistEO has no mutant that deletes a check it must catch"),
        ("drop-reference-invariant", "HistCO is checked on no configuration of the reference"),
    ],
)
def test_a_property_stated_once_is_a_coverage_gap(tmp_path: Path, change: str, gap: str) -> None:
    """A spec author who states a property over the history must also check it on the reference
    and on the soundness model, and show with a mutant that it catches a deleted check."""
    folder = tmp_path / "spec"
    shutil.copytree(SPEC, folder)
    if change == "drop-history-form":
        forms = folder / f"ResumeCore{speccheck.HISTORY_MODULE}.tla"
        text = forms.read_text(encoding="utf-8")
        assert text.count(", RD |-> HistRD]") == 1
        forms.write_text(text.replace(", RD |-> HistRD]", "]"), encoding="utf-8")
    elif change == "drop-sound-invariant":
        for config in folder.glob("MCResumeCoreSound*.cfg"):
            text = config.read_text(encoding="utf-8")
            config.write_text(text.replace("    HistCV\n", ""), encoding="utf-8")
    elif change == "drop-sound-mutant":
        for mutant in (folder / "mutants").glob("*.mutant"):
            if expected_property(mutant) == "HistEO":
                mutant.unlink()
    else:
        for config in folder.glob("MCResumeCore*.cfg"):
            if "Sound" not in config.name:
                text = config.read_text(encoding="utf-8")
                config.write_text(text.replace("    HistCO\n", ""), encoding="utf-8")
    assert gap in _coverage_detail(folder)
