"""SemanticRecovery's contract: its MC configurations pass, each property is broken by a mutant
TLC rejects for exactly it, and the witness run shows a reachable state in which a restore is
legal for the controller yet not admissible.

Two `resume-check spec` runs (configurations, then mutants), about 40 s of TLC in all.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import SPEC, Run, run_cli
from resumecheck.speccheck import parse_mutant
from test_spec import add_to_manifest, expected_property, rows_of

pytestmark = pytest.mark.slow

MUTANTS = sorted((SPEC / "mutants").glob("recovery-*.mutant"))
WITNESS = SPEC / "mutants" / "recovery-witness-legal-not-admissible.mutant"


def properties_record() -> set[str]:
    text = (SPEC / "SemanticRecovery.tla").read_text(encoding="utf-8")
    record = re.search(r"^Properties == \[(.*?)\]", text, re.M | re.S)
    assert record
    return set(re.findall(r"(\w+)\s*\|->", record.group(1)))


@pytest.fixture(scope="module")
def configs_run() -> Run:
    run = run_cli("spec", "--only", "MCSemanticRecovery", "--jobs", "1", timeout=600)
    run.assert_no_traceback()
    return run


@pytest.fixture(scope="module")
def mutants_run() -> Run:
    run = run_cli("spec", "--only", "recovery-", "--jobs", "1", timeout=600)
    run.assert_no_traceback()
    return run


def test_every_configuration_passes(configs_run: Run) -> None:
    assert configs_run.returncode == 0, configs_run
    rows = rows_of(configs_run)
    names = {p.name for p in SPEC.glob("MCSemanticRecovery*.cfg") if not p.stem.endswith("Large")}
    assert len(names) >= 2
    assert {n: (r.kind, r.outcome, r.mark) for n, r in rows.items()} == {
        n: ("config", "ok", "PASS") for n in names
    }


def test_every_mutant_is_rejected_for_exactly_its_property(mutants_run: Run) -> None:
    assert mutants_run.returncode == 0, mutants_run
    rows = rows_of(mutants_run)
    assert {n: (r.outcome, r.mark) for n, r in rows.items()} == {
        m.stem: (f"violates {expected_property(m)}", "PASS") for m in MUTANTS
    }


def test_every_property_has_a_mutant() -> None:
    props = properties_record()
    assert props == {"RestoreSound", "BlockWhenNone", "PreserveCommitted", "NoResurrectedEffect"}
    assert props <= {expected_property(m) for m in MUTANTS}


def test_every_property_has_a_one_sentence_comment() -> None:
    from resumecheck.contract import property_comments

    comments = property_comments((SPEC / "SemanticRecovery.tla").read_text(encoding="utf-8"))
    for name in properties_record():
        assert comments.get(name, "").startswith(f"{name}:"), name


def test_the_witness_is_the_unchanged_protocol_with_one_invariant_added(mutants_run: Run) -> None:
    mutant = parse_mutant(WITNESS, expected_property(WITNESS))
    assert mutant.patches == ()
    assert mutant.invariant == mutant.expect == "NoLegalButInadmissibleRestore"
    row = rows_of(mutants_run)[WITNESS.stem]
    assert (row.outcome, row.mark) == ("violates NoLegalButInadmissibleRestore", "PASS")


HOLDING_WITNESS = """\
# A witness whose invariant holds in every reachable state: the row must fail.
module: SemanticRecovery
config: MCSemanticRecoverySchedule.cfg
invariant: TypeOK
"""


def test_a_witness_that_finds_nothing_fails_its_row(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    shutil.copytree(SPEC, folder)
    (folder / "mutants" / "zz-holding-witness.mutant").write_text(HOLDING_WITNESS, "utf-8")
    add_to_manifest(folder, zz_holding_witness="TypeOK")
    run = run_cli("spec", "--spec-dir", folder, "--only", "zz-", "--jobs", "1", timeout=300)
    run.assert_no_traceback()
    assert run.returncode == 1, run
    row = rows_of(run)["zz-holding-witness"]
    assert (row.outcome, row.expected, row.mark) == ("ok", "TypeOK", "FAIL")
