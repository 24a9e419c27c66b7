"""`spec/manifest.json`: `resume-check spec` compares every row with it -- a configuration's
result and distinct-state count, a simulation's walks and result, a mutant's property -- fails
a file it does not list (naming the line to add) and an entry with no file, and
`--update-manifest` writes the counts.

On a toy spec (a counter, four configurations, three simulations, five mutants) in tmp_path:
two in-process runs of a few seconds; the shipped manifest is checked against the folder
without TLC.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from conftest import SPEC, run_cli
from resumecheck import specmanifest
from resumecheck.speccheck import Row, check_all, update_manifest

TOY = """---- MODULE Toy ----
EXTENDS Naturals
CONSTANT Top
VARIABLE x
Init == x = 0
Next == x < Top /\\ x' = x + 1
Small == x <= Top
====
"""
MC_TOY = "---- MODULE MCToy ----\nEXTENDS Toy\n====\n"
SIM_TOY = "---- MODULE SimToy ----\nEXTENDS Toy\nBelow3 == x < 3\n====\n"
# Walked at random: the counter reaches Top in every walk deep enough.
SIMS = {"SimToy.cfg": "Small", "SimToyDeep.cfg": "Below3", "SimToyNew.cfg": "Small"}
CONFIG = "CONSTANT Top = {top}\nINIT Init\nNEXT Next\nINVARIANT Small\n"
# Top = N reaches N + 1 distinct states.
CONFIGS = {"MCToy.cfg": 3, "MCToyWide.cfg": 5, "MCToyLoose.cfg": 2, "MCToyTiny.cfg": 1}
BREAK = "--- replace\nSmall == x <= Top\n--- with\nSmall == x < Top\n--- end\n"
MUTANT = "# Small forgets Top itself.\nmodule: Toy\nconfig: MCToy.cfg\n{extra}" + BREAK
MUTANTS = {
    "toy-breaks-small": "",
    "toy-wrong-property": "",
    "toy-unlisted": "",
    "toy-legacy": "expect: Small\n",  # where the property lived before the manifest
}
MANIFEST = {
    "configurations": {
        "MCToy.cfg": {"result": "ok", "distinctStates": 5},  # reaches 4
        "MCToyLoose.cfg": {"result": "invariant-violation", "distinctStates": 3},  # passes
        "MCToyGone.cfg": {"result": "ok", "distinctStates": 1},  # no such file
        "MCToyTiny.cfg": {"result": "ok"},  # reaches 2, not measured yet
    },  # MCToyWide.cfg: not listed
    "walks": {
        "SimToy.cfg": {"result": "ok", "walks": 5, "depth": 10, "seed": 1},
        "SimToyDeep.cfg": {"result": "ok", "walks": 5, "depth": 10, "seed": 1},  # x reaches 3
        "SimToyGone.cfg": {"result": "ok", "walks": 5, "depth": 10, "seed": 1},  # no such file
    },  # SimToyNew.cfg: not listed
    "mutants": {
        "toy-breaks-small": {"property": "Small"},
        "toy-wrong-property": {"property": "TypeOK"},
        "toy-gone": {"property": "Small"},  # no such file
    },  # toy-unlisted, toy-legacy: not listed
}


def toy_spec(folder: Path) -> Path:
    (folder / "mutants").mkdir(parents=True)
    (folder / "Toy.tla").write_text(TOY, encoding="utf-8")
    (folder / "MCToy.tla").write_text(MC_TOY, encoding="utf-8")
    for name, top in CONFIGS.items():
        (folder / name).write_text(CONFIG.format(top=top), encoding="utf-8")
    (folder / "SimToy.tla").write_text(SIM_TOY, encoding="utf-8")
    for name, invariant in SIMS.items():
        text = CONFIG.format(top=5).replace("INVARIANT Small", f"INVARIANT {invariant}")
        (folder / name).write_text(text, encoding="utf-8")
    for name, extra in MUTANTS.items():
        text = MUTANT.format(extra=extra)
        (folder / "mutants" / f"{name}.mutant").write_text(text, encoding="utf-8")
    (folder / "manifest.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    return folder


def by_name(rows: list[Row]) -> dict[str, Row]:
    assert len({row.name for row in rows}) == len(rows), rows
    return {row.name: row for row in rows}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Row]:
    folder = toy_spec(tmp_path_factory.mktemp("toy") / "spec")
    return by_name(check_all(folder, jobs=1))


# --- the shipped manifest, without TLC ---------------------------------------------------------


def test_the_shipped_manifest_lists_exactly_the_shipped_files() -> None:
    """Every MC*.cfg with a result and a count, every mutant with a property, nothing else; and
    the file is in the form --update-manifest writes (one entry a line, sorted)."""
    text = (SPEC / "manifest.json").read_text(encoding="utf-8")
    data = json.loads(text)
    jsonschema.validate(data, specmanifest.schema())
    assert set(data["configurations"]) == {p.name for p in SPEC.glob("MC*.cfg")}
    assert set(data["mutants"]) == {p.stem for p in (SPEC / "mutants").glob("*.mutant")}
    assert set(data["walks"]) == {p.name for p in SPEC.glob("Sim*.cfg")}
    assert all(e["result"] == "ok" for e in data["configurations"].values())
    small = [e for name, e in data["configurations"].items() if "Large" not in name]
    assert all("distinctStates" in e for e in small)
    assert specmanifest.dump(specmanifest.load(SPEC)) == text


def test_no_mutant_file_names_its_property() -> None:
    """The manifest is the one source of the property a mutant must break."""
    for mutant in (SPEC / "mutants").glob("*.mutant"):
        assert "\nexpect:" not in mutant.read_text(encoding="utf-8"), mutant


# --- the comparison ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_row_that_matches_its_entry_passes(checked: dict[str, Row]) -> None:
    row = checked["toy-breaks-small"]
    assert (row.outcome, row.expected, row.passed) == ("violates Small", "Small", True)


@pytest.mark.slow
def test_a_file_missing_from_the_manifest_fails_with_the_line_to_add(
    checked: dict[str, Row],
) -> None:
    wide = checked["MCToyWide.cfg"]
    assert (wide.outcome, wide.passed, wide.distinct) == ("ok, not in manifest", False, 6)
    assert (
        'not in manifest.json: add "MCToyWide.cfg": {"result": "ok", "distinctStates": 6} '
        'to its "configurations"'
    ) in wide.detail
    unlisted = checked["toy-unlisted"]
    assert (unlisted.expected, unlisted.passed) == ("-", False)
    assert unlisted.detail == (
        'not in manifest.json: add "toy-unlisted": {"property": "PROPERTY"} to its "mutants", '
        "the property it must break (TLC reports Small violated)"
    )
    legacy = checked["toy-legacy"]
    assert (legacy.outcome, legacy.passed) == ("violates Small, not in manifest", False)
    assert legacy.detail == (
        'not in manifest.json: add "toy-legacy": {"property": "Small"} to its "mutants" '
        "and delete the expect: line"
    )


@pytest.mark.slow
def test_walks_pass_when_no_walk_breaks_an_invariant_and_fail_when_one_does(
    checked: dict[str, Row],
) -> None:
    """A simulation row is TLC's random walks, deeper than the bounds of a model: a walk that
    breaks an invariant fails the row, with TLC's trace of it in the detail."""
    got = {
        name: (checked[name].kind, checked[name].outcome, checked[name].passed)
        for name in ("SimToy.cfg", "SimToyDeep.cfg", "SimToyNew.cfg")
    }
    assert got == {
        "SimToy.cfg": ("walks", "ok, 5 walks", True),
        "SimToyDeep.cfg": ("walks", "invariant-violation Below3, 5 walks", False),
        "SimToyNew.cfg": ("walks", "not in manifest", False),
    }
    deep = checked["SimToyDeep.cfg"].detail
    assert deep.startswith("Invariant Below3 is violated. -- in a walk of 4 states")
    assert "tlc -simulate num=5 -depth 10 -seed 1 -deadlock -config SimToyDeep.cfg SimToy" in deep
    line = '"SimToyNew.cfg": {"result": "ok", "walks": 500, "depth": 400, "seed": 1}'
    assert checked["SimToyNew.cfg"].detail == f'not in manifest.json: add {line} to its "walks"'


@pytest.mark.slow
def test_an_entry_without_its_file_fails(checked: dict[str, Row]) -> None:
    for name in ("MCToyGone.cfg", "SimToyGone.cfg", "toy-gone"):
        row = checked[name]
        assert (row.outcome, row.passed) == ("no file", False)
        assert f"manifest.json lists {name} but" in row.detail
        assert row.detail.endswith("remove its entry")


@pytest.mark.slow
def test_a_wrong_expected_result_fails(checked: dict[str, Row]) -> None:
    loose = checked["MCToyLoose.cfg"]
    assert (loose.outcome, loose.expected, loose.passed) == ("ok", "invariant-violation", False)
    wrong = checked["toy-wrong-property"]
    assert (wrong.outcome, wrong.expected, wrong.passed) == ("violates Small", "TypeOK", False)


@pytest.mark.slow
def test_a_changed_state_count_fails_and_says_how_to_refresh(checked: dict[str, Row]) -> None:
    row = checked["MCToy.cfg"]
    assert (row.outcome, row.distinct, row.expected_distinct) == ("ok, states differ", 4, 5)
    assert not row.passed
    assert row.detail == (
        "4 distinct states, manifest.json says 5: if the module or configuration changed on "
        "purpose, run `resume-check spec --update-manifest`"
    )


@pytest.mark.slow
def test_an_entry_without_a_count_fails_until_it_is_measured(checked: dict[str, Row]) -> None:
    row = checked["MCToyTiny.cfg"]
    assert (row.outcome, row.distinct, row.expected_distinct, row.passed) == (
        "ok, no count",
        2,
        None,
        False,
    )
    assert row.detail == (
        "manifest.json has no distinctStates for it (2 now): run "
        "`resume-check spec --update-manifest`"
    )


# --- regeneration ------------------------------------------------------------------------------


@pytest.mark.slow
def test_update_manifest_writes_the_counts_and_nothing_else(tmp_path: Path) -> None:
    folder = toy_spec(tmp_path / "spec")
    rows = by_name(check_all(folder, jobs=1, only="MCToy", update=True))
    assert (rows["MCToy.cfg"].outcome, rows["MCToy.cfg"].passed) == ("ok (was 5)", True)
    assert (rows["MCToyWide.cfg"].outcome, rows["MCToyWide.cfg"].passed) == ("ok (new)", True)
    assert (rows["MCToyTiny.cfg"].outcome, rows["MCToyTiny.cfg"].passed) == ("ok (measured)", True)
    assert not rows["MCToyLoose.cfg"].passed  # a result is a claim: never rewritten
    assert update_manifest(folder, list(rows.values())) == folder / "manifest.json"
    after = specmanifest.load(folder)
    assert after.configurations == {
        "MCToy.cfg": specmanifest.ConfigEntry("ok", 4),
        "MCToyWide.cfg": specmanifest.ConfigEntry("ok", 6),
        "MCToyLoose.cfg": specmanifest.ConfigEntry("invariant-violation", 3),
        "MCToyGone.cfg": specmanifest.ConfigEntry("ok", 1),
        "MCToyTiny.cfg": specmanifest.ConfigEntry("ok", 2),
    }
    assert after.mutants == {k: v["property"] for k, v in MANIFEST["mutants"].items()}
    again = check_all(folder, jobs=1, only="MCToyWide", update=True)
    assert update_manifest(folder, again) is None  # the same count: the file is left alone


@pytest.mark.slow
def test_the_command_fails_then_update_manifest_refreshes_it(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    shutil.copytree(toy_spec(tmp_path / "toy"), folder)
    run = run_cli("spec", "--spec-dir", folder, "--only", "MCToy.cfg", "--jobs", "1")
    run.assert_no_traceback()
    assert run.returncode == 1, run
    assert "MCToy.cfg: 4 distinct states, manifest.json says 5" in run.stderr
    run = run_cli("spec", "--spec-dir", folder, "--only", "MCToy.cfg", "--update-manifest")
    run.assert_no_traceback()
    assert run.returncode == 0, run
    assert f"{folder / 'manifest.json'}: written" in run.stderr
    assert specmanifest.load(folder).configurations["MCToy.cfg"].distinct == 4


@pytest.mark.slow
def test_skip_leaves_out_the_rows_its_globs_match_and_nothing_else(tmp_path: Path) -> None:
    folder = toy_spec(tmp_path / "spec")
    rows = by_name(check_all(folder, jobs=1, only="MCToy", skip=("MCToy?*.cfg",)))
    # MCToyGone.cfg has an entry but no file: its row is left out like the others it matches
    assert [name for name in rows if name.startswith("MCToy")] == ["MCToy.cfg"]
    assert by_name(check_all(folder, jobs=1, only="MCToyTiny", skip=("*Wide*",))).keys() == {
        "MCToyTiny.cfg"
    }
