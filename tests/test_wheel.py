"""The built wheel works outside the checkout: contracts included, overrides per module.

Builds the wheel, installs it into a fresh virtual environment under tmp_path and, from a
folder that is not the checkout, judges traces, model-checks a mutant with `resume-check spec`
and overrides one base module through $RESUME_CHECK_SPEC_PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SPEC, TRACES

pytestmark = pytest.mark.slow

OK = "ok-effect-aware.jsonl"
VIOLATES = "ap-publish-before-job-done.jsonl"


def _run(argv: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RESUME_CHECK_", "PYTHON"))}
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode in (0, 1), f"{argv} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `resume-check` script of a fresh venv holding only the wheel and its dependencies."""
    base = tmp_path_factory.mktemp("wheel")
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", ROOT, "-w", base / "dist"],
        cwd=base,
    )
    (wheel,) = (base / "dist").glob("resume_check-*.whl")
    _run([sys.executable, "-m", "venv", base / "venv"], cwd=base)
    _run([base / "venv" / "bin" / "python", "-m", "pip", "install", "-q", wheel], cwd=base)
    return base / "venv" / "bin" / "resume-check"


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("elsewhere")
    for name in (OK, VIOLATES):
        shutil.copy(TRACES / "sandbox" / name, folder / name)
    return folder


def test_installed_package_judges_traces_with_its_own_contracts(
    installed: Path, elsewhere: Path
) -> None:
    document = json.loads(_run([installed, "--format", "json", "."], cwd=elsewhere))
    statuses = {Path(t["path"]).name: t["status"] for t in document["traces"]}
    assert statuses == {OK: "conforms", VIOLATES: "violates"}
    files = document["spec_files"]["SandboxCR"]
    bundled = installed.parent.parent / "lib"
    assert all(Path(f).is_relative_to(bundled) and "resumecheck_spec" in f for f in files), files
    assert not any(Path(f).is_relative_to(ROOT) for f in files)


def test_installed_package_model_checks_a_mutant(installed: Path, elsewhere: Path) -> None:
    out = _run([installed, "spec", "--only", "sandbox-chat-only-policy"], cwd=elsewhere)
    assert out.splitlines()[-1] == "1 checked, 0 failed", out


def test_a_folder_with_one_edited_module_overrides_the_bundled_one(
    installed: Path, elsewhere: Path, tmp_path: Path
) -> None:
    text = (SPEC / "SandboxCR.tla").read_text(encoding="utf-8")
    old = "    insp # None => insp.truly \\subseteq insp.said\n"
    assert text.count(old) == 1, "SandboxCR.tla changed shape; update this test"
    (tmp_path / "SandboxCR.tla").write_text(text.replace(old, "    FALSE\n"), encoding="utf-8")
    out = _run([installed, OK], cwd=elsewhere, env={"RESUME_CHECK_SPEC_PATH": str(tmp_path)})
    lines = out.splitlines()
    assert lines[0] == f"{OK}: violates SandboxCR: InspectorSound", out
    footer = lines[-2]
    assert footer.startswith(f"spec SandboxCR: SandboxCR.tla from {tmp_path.resolve()}; "), footer
    assert "TraceSandboxCR.tla" in footer and "resumecheck_spec" in footer
