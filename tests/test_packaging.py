"""The wheel's package list covers the source tree and spec/ ships whole.

pyproject.toml lists its packages (spec/ is mapped under another name, which automatic discovery
cannot do), so a new package folder or a spec file outside the package-data globs would be left
out of the wheel silently; these checks fail instead. test_wheel.py installs the real thing.
"""

from __future__ import annotations

import fnmatch
import tomllib

from conftest import ROOT, SPEC

SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "setuptools"
]


def test_every_package_folder_is_listed() -> None:
    found = {"resumecheck_spec"}
    for name, folder in SETUPTOOLS["package-dir"].items():
        if name == "resumecheck_spec":
            continue
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *relative)))
    assert sorted(SETUPTOOLS["packages"]) == sorted(found)


def test_every_contract_file_is_package_data() -> None:
    globs = SETUPTOOLS["package-data"]["resumecheck_spec"]
    files = [
        p.relative_to(SPEC).as_posix()
        for p in SPEC.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.name != "__init__.py"
    ]
    assert any(f.endswith(".mutant") for f in files)
    left_out = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert left_out == []
