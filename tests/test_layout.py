"""The floors of the layout (README, "Layout"), counting every import, the ones inside functions too.

* The foundation (the contract, fields and schema, limits, output, the closed-form machinery and the
  shared solver routes in :mod:`coopt.solvers`) imports nothing above it.
* A problem package (``coopt.problems.<name>``) imports the foundation and its own modules: never
  another problem, the registry, the runner, the bench or the commands.
* No two coopt modules import each other, directly or round a longer loop.

Imports are read from the source (ast), wherever they stand in a module: one inside a function runs
when the function does, and is as real an arrow as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent / "coopt"

FOUNDATION = ("coopt.errors", "coopt.problem", "coopt.schema", "coopt.fields", "coopt.limits", "coopt.output",
              "coopt.console", "coopt.progress", "coopt.shipped", "coopt.closed_forms", "coopt.prices", "coopt.solvers",
              "coopt.figures")


def modules_under(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    def name(path: Path) -> str:
        parts = path.relative_to(root.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    return {name(p): p for p in sorted(root.rglob("*.py"))}


def imports_of(name: str, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that ``name`` imports anywhere in its source (``from pkg import
    sub`` counts as importing ``pkg.sub`` where that is a module, else ``pkg``)."""
    path = modules[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
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
    graph.add_edges_from((name, dep) for name in modules for dep in imports_of(name, modules))
    return graph


def cycles(graph: nx.DiGraph) -> list[list[str]]:
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def in_foundation(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FOUNDATION)


def problem_of(name: str) -> str | None:
    """``coopt.problems.<name>`` for a module of a problem package, else None."""
    parts = name.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["coopt", "problems"] and len(parts) > 2 else None


def floor_violations(graph: nx.DiGraph) -> list[str]:
    """One line per import that runs up a floor or across to another problem."""
    found = []
    for name, dep in sorted(graph.edges):
        if in_foundation(name) and not in_foundation(dep):
            found.append(f"{name} (foundation) imports {dep}")
        own = problem_of(name)
        if own is not None and not in_foundation(dep) and problem_of(dep) != own:
            found.append(f"{name} (problem) imports {dep}")
    return found


MODULES = modules_under(ROOT)
GRAPH = import_graph(MODULES)


def test_the_module_table_sees_the_whole_package():
    assert "coopt.problem" in MODULES and "coopt.problems.pipeline.model" in MODULES
    assert GRAPH.has_edge("coopt.problems.pipeline", "coopt.problems.pipeline.model")
    assert GRAPH.has_edge("coopt.registry", "coopt.problems.pipeline")


def test_no_import_runs_up_a_floor_or_across_problems():
    assert floor_violations(GRAPH) == []


def test_no_import_cycle_among_coopt_modules():
    assert cycles(GRAPH) == []


def test_every_problem_module_sits_in_a_problem_package():
    flat = sorted(p.name for p in (ROOT / "problems").glob("*.py") if p.name != "__init__.py")
    assert not flat, f"modules outside a problem's folder: {flat}"


def test_registry_names_problems_by_reference():
    """No problem is registered, and no problem module reaches another, through a module path in a
    string: the arrow would be invisible to this test."""
    for name, path in MODULES.items():
        if name == "coopt.registry" or problem_of(name) is not None:
            text = path.read_text(encoding="utf-8")
            assert "import_module(" not in text and "__import__(" not in text, f"{name} imports by string"


def test_the_checks_find_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import a\n")
    (pkg / "sub" / "a.py").write_text("from . import b\n")
    (pkg / "sub" / "b.py").write_text("import os\n")
    assert cycles(import_graph(modules_under(pkg))) == []
    (pkg / "sub" / "b.py").write_text("import os\n\ndef f():\n    from pkg.sub import a\n")
    assert cycles(import_graph(modules_under(pkg))) == [["pkg.sub.a", "pkg.sub.b"]]
    (pkg / "sub" / "c.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    import pkg.sub.c\n")
    (pkg / "sub" / "a.py").write_text("")
    assert cycles(import_graph(modules_under(pkg))) == [["pkg.sub.b", "pkg.sub.c"]]


def test_the_floor_check_finds_an_upward_and_a_sideways_import(tmp_path):
    pkg = tmp_path / "coopt"
    for folder in ("problems/a", "problems/b", "solvers"):
        (pkg / folder).mkdir(parents=True)
    for init in ("", "problems/", "problems/a/", "problems/b/", "solvers/"):
        (pkg / init / "__init__.py").write_text("")
    (pkg / "run.py").write_text("")
    (pkg / "solvers" / "highs.py").write_text("def f():\n    from coopt import run\n")
    (pkg / "problems" / "a" / "model.py").write_text("from coopt.solvers import highs\n")
    (pkg / "problems" / "b" / "model.py").write_text("def f():\n    from coopt.problems.a import model\n")
    assert floor_violations(import_graph(modules_under(pkg))) == [
        "coopt.problems.b.model (problem) imports coopt.problems.a.model",
        "coopt.solvers.highs (foundation) imports coopt.run",
    ]
