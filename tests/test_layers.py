"""The import drawing of the code, kept as the architecture says (docs/architecture.md): spec ->
checker -> tools. The checker imports nothing of the tools; the recording framework
(`rctools.suite`) imports no suite; and no module imports itself back through others -- a
circle that works today only because of the order Python happens to run the imports in.

Read from the source (`ast`), module-level imports only: an import inside a function runs when
it is called, after every module is loaded, and one under `if TYPE_CHECKING:` never runs. `from
PKG import NAME` where PKG.NAME is a module counts as importing that module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
from conftest import ROOT

ROOTS = {"resumecheck": ROOT / "checker" / "resumecheck", "rctools": ROOT / "tools" / "rctools"}


def _modules(roots: dict[str, Path]) -> dict[str, Path]:
    found = {}
    for root in roots.values():
        for path in root.rglob("*.py"):
            parts = path.relative_to(root.parent).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _runs_at_import(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements that run when it is imported, `if` bodies included, but not
    those under `if TYPE_CHECKING:`."""
    out: list[ast.stmt] = []
    for statement in tree.body:
        if isinstance(statement, ast.If):
            if "TYPE_CHECKING" not in ast.dump(statement.test):
                out += statement.body + statement.orelse
        else:
            out.append(statement)
    return out


def _drawing(roots: dict[str, Path] = ROOTS) -> nx.DiGraph:
    modules = _modules(roots)
    drawing = nx.DiGraph()
    drawing.add_nodes_from(modules)
    for name, path in modules.items():
        for node in _runs_at_import(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                subs = [s for s in subs if s in modules]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            drawing.add_edges_from((name, t) for t in targets if t in modules and t != name)
    return drawing


def test_no_module_imports_itself_back() -> None:
    drawing = _drawing()
    assert len(drawing) > 150  # the whole tree was read
    assert list(nx.simple_cycles(drawing)) == []


def test_a_circle_is_seen_and_one_that_never_runs_is_not(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("import pkg.a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n"
    )
    (package / "d.py").write_text("def f():\n    from pkg import c\n\nfrom pkg.c import x\n")
    assert sorted(map(sorted, nx.simple_cycles(_drawing({"pkg": package})))) == [["pkg.a", "pkg.b"]]


def test_the_checker_imports_nothing_of_the_tools() -> None:
    arrows = [(a, b) for a, b in _drawing().edges if a.startswith("resumecheck")]
    assert arrows and not [(a, b) for a, b in arrows if b.startswith("rctools")]


def test_the_recording_framework_imports_no_suite() -> None:
    """Every suite stands on `rctools.suite`; nothing in it points back up at one."""
    arrows = [(a, b) for a, b in _drawing().edges if a.startswith("rctools.suite")]
    assert arrows
    assert not [
        (a, b) for a, b in arrows if b.startswith("rctools.") and b.split(".")[1] != "suite"
    ]
