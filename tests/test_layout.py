"""The floors of the layout (README, "Layout"): formulations import the contract, never the solvers,
the CLI or the commands; no two coopt modules import each other, directly or round a longer loop.

Imports are read from the source (ast), at module level: a function-level import runs when the
function does, after every module has loaded, so it cannot form an import-time cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "coopt"


def modules_under(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    def name(path: Path) -> str:
        parts = path.relative_to(root.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    return {name(p): p for p in sorted(root.rglob("*.py"))}


def module_level_imports(name: str, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``name`` imports when it is itself imported (``from pkg
    import sub`` counts as importing ``pkg.sub`` where that is a module, else ``pkg``)."""
    path = modules[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parents, base]).strip(".")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def import_graph(modules: dict[str, Path]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    graph.add_edges_from((name, dep) for name in modules for dep in module_level_imports(name, modules))
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]


MODULES = modules_under(ROOT)
GRAPH = import_graph(MODULES)


def test_the_module_table_sees_the_whole_package():
    assert "coopt.problem" in MODULES and "coopt.formulations.pipeline.model" in MODULES
    assert GRAPH.has_edge("coopt.formulations.pipeline", "coopt.formulations.pipeline.model")


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("coopt.formulations")))
def test_formulations_stay_below_solvers_and_commands(name):
    upward = sorted(
        dep for dep in module_level_imports(name, MODULES)
        if dep.startswith(("coopt.solvers", "coopt.cli", "coopt.commands", "coopt.analysis", "coopt.run"))
    )
    assert not upward, f"{name} imports {upward} at module level"


def test_no_import_cycle_among_coopt_modules():
    assert not cycles(GRAPH), f"modules that import each other: {cycles(GRAPH)}"


def test_each_multi_file_problem_is_one_folder():
    flat = sorted(p.name for p in (ROOT / "formulations").glob("*.py") if p.name != "__init__.py")
    assert not flat, f"flat formulation modules (give each problem its own package): {flat}"


def test_the_cycle_check_finds_two_modules_that_import_each_other(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import a\n")
    (pkg / "sub" / "a.py").write_text("from . import b\n")
    (pkg / "sub" / "b.py").write_text("import os\n\ndef f():\n    from pkg.sub import a\n")
    assert cycles(import_graph(modules_under(pkg))) == []  # the import inside f() is not at module level
    (pkg / "sub" / "b.py").write_text("from pkg.sub.a import thing\n")
    assert cycles(import_graph(modules_under(pkg))) == [["pkg.sub.a", "pkg.sub.b"]]
