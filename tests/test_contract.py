"""The contract suite: every registered problem x every method x every small shipped instance
(``instances/<problem>/0-*.toml``). Nothing here knows any problem by name."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from coopt import registry
from coopt.instance import load, to_toml
from coopt.problem import SolveOptions, close
from coopt.run import run
from coopt.shipped import small_shipped
from coopt.solvers.highs import export, lp_relaxation, objective_unit, solve_file

OPTIONS = SolveOptions(time_limit=120, gap=1e-9, threads=1, seed=0)

INSTANCES = [(name, path) for name in registry.names() for path in small_shipped(name)]
RUNS = [(name, path, m) for name, path in INSTANCES for m in registry.get(name).methods]
HEURISTIC_RUNS = [(n, p, m) for n, p, m in RUNS if m in registry.get(n).heuristics]
MILP_INSTANCES = [(n, p) for n, p in INSTANCES if registry.get(n).build is not None]


def ids(case) -> str:
    return "-".join(Path(str(c)).stem for c in case)


@cache
def solved(path: Path, method: str, seed: int = 0):
    item = load(path)
    options = SolveOptions(OPTIONS.time_limit, OPTIONS.gap, OPTIONS.threads, seed)
    return run(item.problem, item.instance, method, options, path=str(path), sha256=item.sha256)


def optimum(name: str, path: Path) -> float | None:
    report = solved(path, "exact")
    return report.objective if report.status == "optimal" else None


def test_every_problem_ships_a_small_instance():
    assert registry.names(), "no problem is registered"
    for name in registry.names():
        assert small_shipped(name), f"{name} ships no small (0-*) instance"


@pytest.mark.parametrize("case", RUNS, ids=ids)
def test_checker_accepts_and_recomputes_the_objective(case):
    name, path, method = case
    report = solved(path, method)
    if report.status == "no_solution" and method in registry.get(name).heuristics:
        assert report.solution is None
        pytest.skip(f"{method} does not apply here: {report.check['violations'][0]}")
    assert report.status in ("optimal", "feasible"), report.check["violations"]
    assert report.check["feasible"], report.check["violations"]
    assert close(report.check["objective_recomputed"], report.objective), (
        report.check["objective_recomputed"],
        report.objective,
    )


@pytest.mark.parametrize("case", INSTANCES, ids=ids)
def test_exact_route_proves_optimality(case):
    name, path = case
    assert solved(path, "exact").status == "optimal"


@pytest.mark.parametrize("case", HEURISTIC_RUNS, ids=ids)
def test_no_heuristic_beats_the_optimum(case):
    name, path, method = case
    problem = registry.get(name)
    best = optimum(name, path)
    if best is None:
        pytest.skip("exact route did not prove optimality")
    value = solved(path, method).objective
    if value is None:
        pytest.skip(f"{method} found no solution here")
    assert not problem.better(value, best), f"{method} claims {value}, proven optimum {best}"


@pytest.mark.parametrize("case", [(n, p) for n, p in INSTANCES if registry.get(n).heuristics], ids=ids)
def test_some_heuristic_solves_every_small_instance(case):
    name, path = case
    found = [m for m in registry.get(name).heuristics if solved(path, m).status == "feasible"]
    assert found, f"no heuristic of {name} finds a solution on {path.name}"


@pytest.mark.parametrize("case", [(n, p) for n, p in MILP_INSTANCES if registry.get(n).exact], ids=ids)
def test_milp_agrees_with_the_natural_exact_method(case):
    name, path = case
    milp, exact = solved(path, "milp"), solved(path, "exact")
    assert milp.status == exact.status == "optimal"
    assert close(milp.objective, exact.objective), (milp.objective, exact.objective)


@pytest.mark.parametrize("case", MILP_INSTANCES, ids=ids)
def test_lp_relaxation_lies_on_the_right_side(case):
    name, path = case
    problem = registry.get(name)
    best = optimum(name, path)
    relaxed = lp_relaxation(problem, load(path).instance, OPTIONS)
    assert relaxed is not None
    assert not problem.better(best, relaxed), f"LP relaxation {relaxed} is worse than the optimum {best}"


@pytest.mark.parametrize("case", RUNS, ids=ids)
def test_same_seed_same_output(case):
    name, path, method = case
    first, again = solved(path, method, 7), solved.__wrapped__(path, method, 7)
    assert first.status == again.status
    assert json.dumps(first.solution, sort_keys=True) == json.dumps(again.solution, sort_keys=True)


@pytest.mark.parametrize("fmt", ["lp", "mps"])
@pytest.mark.parametrize("case", MILP_INSTANCES, ids=ids)
def test_exported_model_resolves_to_the_same_optimum(case, fmt, tmp_path):
    name, path = case
    problem = registry.get(name)
    model = problem.build(load(path).instance)
    target = tmp_path / f"model.{fmt}"
    export(model, target)
    reference = solved(path, "milp" if problem.exact else "exact")
    value = solve_file(target)
    assert value is not None
    assert close(value * objective_unit(model), reference.objective, rel=1e-6)


@pytest.mark.parametrize("case", INSTANCES, ids=ids)
def test_dump_then_load_gives_the_same_instance(case, tmp_path):
    name, path = case
    item = load(path)
    copy = tmp_path / "copy.toml"
    copy.write_text(to_toml(item.problem, item.instance))
    assert load(copy).instance == item.instance


@pytest.mark.parametrize("name", registry.names())
def test_generator_is_seeded_and_its_instances_are_valid(name, tmp_path):
    problem = registry.get(name)
    size = problem.sizes[0]
    a, b = problem.generate(11, size), problem.generate(11, size)
    assert a == b
    path = tmp_path / "gen.toml"
    path.write_text(to_toml(problem, a))
    instance = load(path).instance
    assert instance == a
    for method in sorted(problem.heuristics):
        report = run(problem, instance, method, SolveOptions(seed=0))
        if report.status != "no_solution":
            assert report.check["feasible"], (method, report.check["violations"])


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.get(n).showcase], ids=str)
def test_showcase_file_is_a_small_shipped_instance(name):
    names = [p.name for p in small_shipped(name)]
    assert registry.get(name).showcase in names


# -- declared fields, dual bounds and brute force (each over the problems that have them) -----------

SCHEMA_PROBLEMS = [n for n in registry.names() if registry.get(n).schema is not None]
BOUND_INSTANCES = [(n, p) for n, p in INSTANCES if registry.get(n).bound is not None]
ORACLE_PROBLEMS = [n for n in registry.names() if registry.get(n).oracle is not None]
#: Tiny instances per problem in CI; benchmarks/differential.py runs thousands.
ORACLE_SEEDS = 12


@pytest.mark.parametrize("name", registry.names())
def test_every_problem_declares_its_fields_and_objective(name):
    problem = registry.get(name)
    assert problem.schema is not None, f"{name}: fields not declared with coopt.schema"
    # the contract's defaults ("objective", no unit) mean the problem never said what it optimises
    assert problem.objective_name != "objective" and problem.objective_unit != "", (
        f"{name}: objective_name / objective_unit not registered")


@pytest.mark.parametrize("name", SCHEMA_PROBLEMS)
def test_schema_example_validates(name, tmp_path):
    from coopt.commands.schema import example

    problem = registry.get(name)
    path = tmp_path / "example.toml"
    path.write_text(example(problem))
    load(path)
    rows = problem.schema.rows()
    assert rows and all(row[5] for row in rows), f"{name}: a field without a meaning"


@pytest.mark.parametrize("case", BOUND_INSTANCES, ids=ids)
def test_dual_bound_never_cuts_off_the_optimum(case):
    name, path = case
    problem = registry.get(name)
    report = solved(path, "bound")
    assert report.status == "bound" and report.bound is not None, report.check["violations"]
    best = optimum(name, path)
    assert best is not None
    # for a min problem every feasible value, the optimum included, lies at or above the bound
    assert not problem.better(best, report.bound), f"bound {report.bound} cuts off the optimum {best}"
    if problem.build is not None:
        relaxed = lp_relaxation(problem, load(path).instance, OPTIONS)
        if relaxed is not None:
            # at least as tight: for a min problem the bound lies at or above the relaxation
            assert not problem.better(report.bound, relaxed), (
                f"bound {report.bound} is weaker than the LP relaxation {relaxed}")


@pytest.mark.parametrize("name", ORACLE_PROBLEMS)
def test_every_exact_method_equals_brute_force_on_tiny_instances(name):
    problem = registry.get(name)
    for seed in range(ORACLE_SEEDS):
        instance = problem.oracle.generate(seed)
        truth = problem.oracle.solve(instance)
        for method in problem.exact_methods:
            report = run(problem, instance, method, OPTIONS)
            if truth is None:
                assert report.status == "infeasible", (seed, method, report.status)
                continue
            assert report.status == "optimal", (seed, method, report.status, report.check["violations"])
            assert report.check["feasible"], (seed, method, report.check["violations"])
            assert close(report.objective, truth, rel=1e-7), (seed, method, report.objective, truth)


# -- numbers that are not numbers -----------------------------------------------------------------


def numeric_leaves(value, path=()):
    """Every (path, number) in a JSON-like solution, booleans excluded."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numeric_leaves(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from numeric_leaves(item, (*path, i))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def replaced(value, path, new):
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = replaced(value[head], rest, new)
    return copy


@pytest.mark.parametrize("name", registry.names())
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
def test_no_non_finite_number_passes_the_checker(name, bad):
    """Any number of a feasible solution (decision or claimed objective) made non-finite is refused,
    with a violation and without the checker raising."""
    from coopt.run import judge

    path = small_shipped(name)[0]
    report = solved(path, "exact")
    assert report.check["feasible"], report.check["violations"]
    leaves = list(numeric_leaves(report.solution))
    assert leaves, f"{name}: the solution holds no number"
    step = max(1, len(leaves) // 12)
    instance = load(path).instance
    for where, _ in leaves[::step] + [(("objective",), None)]:
        verdict = judge(registry.get(name), instance, replaced(report.solution, where, bad))
        assert not verdict["feasible"], f"{name}: {bad} at {where} passed the checker"
        assert not any(v.startswith("checker raised") for v in verdict["violations"]), (
            f"{name}: {bad} at {where}: {verdict['violations']}")
