"""Bad input never crashes: every registered problem's loader answers a damaged instance file with
an InstanceError (exit 2 at the CLI) or accepts it, and its checker answers a damaged solution
with violations, never with an exception. Nothing here knows any problem by name."""

from __future__ import annotations

import copy
import tomllib
from functools import cache
from pathlib import Path

import pytest
import tomli_w

from coopt import registry
from coopt.errors import InstanceError
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.run import run
from coopt.shipped import small_shipped

HEAD = {"problem", "schema_version", "name", "description", "source"}
CASES = [(name, small_shipped(name)[0]) for name in registry.names() if small_shipped(name)]
JUNK = ("x", -1, -1.5, 0, 1e300, True, [], {})


def ids(case) -> str:
    return case[0]


def damaged_tables(data: dict):
    """Each top-level field and each field of a top-level table, removed or replaced by junk."""
    for key, value in data.items():
        if key in HEAD:
            continue
        gone = copy.deepcopy(data)
        del gone[key]
        yield f"-{key}", gone
        for junk in JUNK:
            bad = copy.deepcopy(data)
            bad[key] = junk
            yield f"{key}={junk!r}", bad
        rows = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
        for i, row in enumerate(rows[:1]):
            if not isinstance(row, dict):
                continue
            for field in row:
                for junk in ("x", -1, []):
                    bad = copy.deepcopy(data)
                    target = bad[key] if isinstance(value, dict) else bad[key][i]
                    target[field] = junk
                    yield f"{key}.{field}={junk!r}", bad


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_damaged_instance_files_give_instance_errors(case, tmp_path):
    name, path = case
    data = tomllib.loads(path.read_text())
    rejected = 0
    for label, damaged in damaged_tables(data):
        target = tmp_path / "damaged.toml"
        target.write_text(tomli_w.dumps(damaged))
        try:
            load(target)
        except InstanceError as exc:
            rejected += 1
            assert str(target) in str(exc), (label, str(exc))
        except Exception as exc:  # anything else would be a traceback at the CLI
            pytest.fail(f"{name}: {label}: {type(exc).__name__}: {exc}")
    assert rejected, f"{name}: no damaged variant was rejected"


@cache
def a_solution(path: Path) -> dict:
    item = load(path)
    for method in item.problem.methods:
        report = run(item.problem, item.instance, method, SolveOptions(time_limit=60))
        if report.solution is not None:
            return report.solution
    raise AssertionError(f"no method solves {path}")


def damaged_solutions(solution: dict):
    yield "empty", {}
    for key in solution:
        if key == "objective":
            continue
        gone = dict(solution)
        del gone[key]
        yield f"-{key}", gone
        for junk in (None, "x", -1, [], {}, [[-1]]):
            yield f"{key}={junk!r}", {**solution, key: junk}
        value = solution[key]
        # one level down: an entry of a table or a list of the wrong kind (a list where a name
        # was expected cannot be a dictionary key, a table cannot be compared with a number)
        inner = list(value)[:2] if isinstance(value, dict) else range(min(len(value), 2)) \
            if isinstance(value, list) else ()
        for k in inner:
            for junk in (None, ["x"], {"x": 1}, float("nan")):
                damaged = copy.deepcopy(solution)
                damaged[key][k] = junk
                yield f"{key}[{k!r}]={junk!r}", damaged


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_checker_reports_damaged_solutions_without_raising(case):
    name, path = case
    problem, instance = registry.get(name), load(path).instance
    solution = a_solution(path)
    assert problem.check(instance, solution) == []
    for label, damaged in damaged_solutions(solution):
        try:
            violations = problem.check(instance, damaged)
        except Exception as exc:
            pytest.fail(f"{name}: checker raised on {label}: {type(exc).__name__}: {exc}")
        assert isinstance(violations, list), label
        if label == "empty":
            assert violations, f"{name}: checker accepts an empty solution"
        elif not violations:
            # Accepted (a derived field, or a decision whose default is what was there): then the
            # objective must still be computable from what is left.
            try:
                problem.objective(instance, damaged)
            except Exception as exc:
                pytest.fail(f"{name}: checker accepts {label} but objective raises {type(exc).__name__}")


SOLVERS = Path(__file__).parent.parent / "coopt" / "solvers"
SOLVER_MODULES = sorted(
    ".".join(p.relative_to(SOLVERS).with_suffix("").parts)
    for p in SOLVERS.rglob("*.py") if p.name != "__init__.py"
)


@pytest.mark.parametrize("module", SOLVER_MODULES)
def test_solver_module_imports_first_without_a_cycle(module):
    """A user may import a heuristics module before its problem module; a fresh interpreter
    must then still register every problem."""
    import subprocess
    import sys

    code = f"import coopt.solvers.{module}; from coopt import registry; registry.problems()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1:]
