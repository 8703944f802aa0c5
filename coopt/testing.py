"""The contract suite as a public function: every promise a registered problem makes, checked.

:func:`check_problem` runs every check on one problem and raises :class:`ContractError` listing each
one that fails; :func:`checks` yields the checks one by one, named, for a test runner to
parametrise over (coopt's own ``tests/test_contract.py`` does that for every registered problem). A
problem written outside the tree runs the same suite::

    from coopt.testing import check_problem
    check_problem(MY_PROBLEM, instances=["my/0-small.toml"])

The instances are small files of that problem that every exact method proves within the time limit.
What is checked, per instance and method (heuristics, the exact routes, ``bound``):

* the checker accepts the solution and recomputes the claimed objective; a heuristic that declares it
  does not apply is declined by the runner, without a solution, saying so;
* the exact route proves optimality; the MILP and the natural exact method agree; no heuristic beats
  the optimum; the LP relaxation and the dual bound lie on the right side of it, the bound at least as
  tight as the relaxation;
* the same seed gives the same output; the model exported to LP and to MPS reads back as one model,
  with the model's integer variables, that re-solves to the same optimum; an instance written to
  TOML reads back equal;
* no non-finite number in a solution passes the checker;

and once per problem: the fields and the objective are declared, the generator is seeded and makes
valid instances, and every exact method equals the brute-force oracle on tiny seeded instances.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopt.instance import load, to_toml
from coopt.problem import Problem, SolveOptions, applies, close
from coopt.run import SolveReport, judge, run
from coopt.shipped import small_shipped
from coopt.solvers.highs import export, lp_relaxation, objective_unit, read_file, solve_read, symbol_map

#: The options of every contract solve: a generous limit, a tight gap, one thread, seed 0.
OPTIONS = SolveOptions(time_limit=120, gap=1e-9, threads=1, seed=0)
#: Tiny instances per problem compared with brute force (benchmarks/differential.py runs thousands).
ORACLE_SEEDS = 12


class ContractError(AssertionError):
    """One or more checks of the contract failed; the message lists each with its reason."""


@dataclass
class Suite:
    """One problem's instances and a cache of their solves, shared by the checks."""

    problem: Problem
    paths: list[Path]
    _solved: dict[tuple[Path, str, int], SolveReport] = field(default_factory=dict)
    _loaded: dict[Path, Any] = field(default_factory=dict)
    _relaxed: dict[Path, float | None] = field(default_factory=dict)

    def instance(self, path: Path) -> Any:
        if path not in self._loaded:
            self._loaded[path] = load(path, registry_get=self._get).instance
        return self._loaded[path]

    def _get(self, name: str) -> Problem:
        if name != self.problem.name:
            raise KeyError(name)
        return self.problem

    def solved(self, path: Path, method: str, seed: int = 0, fresh: bool = False) -> SolveReport:
        key = (path, method, seed)
        if fresh or key not in self._solved:
            options = SolveOptions(OPTIONS.time_limit, OPTIONS.gap, OPTIONS.threads, seed)
            report = run(self.problem, self.instance(path), method, options, path=str(path))
            if fresh:
                return report
            self._solved[key] = report
        return self._solved[key]

    def declined(self, path: Path, method: str) -> bool:
        """``method`` is a heuristic that declares it does not apply here; the runner must then
        decline it, without a solution, saying so."""
        heuristic = self.problem.heuristics.get(method)
        if heuristic is None or applies(heuristic, self.instance(path)):
            return False
        report = self.solved(path, method)
        assert report.status == "no_solution" and report.solution is None, report.status
        assert "does not apply" in report.check["violations"][0], report.check["violations"]
        return True

    def relaxed(self, path: Path) -> float | None:
        """The LP relaxation's optimum (:func:`coopt.solvers.highs.lp_relaxation`), solved once."""
        if path not in self._relaxed:
            self._relaxed[path] = lp_relaxation(self.problem, self.instance(path), OPTIONS)
        return self._relaxed[path]

    def optimum(self, path: Path) -> float:
        report = self.solved(path, "exact")
        violations = report.check["violations"]
        assert report.status == "optimal", f"the exact route ends {report.status}: {violations}"
        return report.objective


# -- per instance and method ------------------------------------------------------------------------


def checker_accepts_and_recomputes(suite: Suite, path: Path, method: str) -> None:
    if suite.declined(path, method):
        return
    report = suite.solved(path, method)
    assert report.status in ("optimal", "feasible"), report.check["violations"]
    assert report.check["feasible"], report.check["violations"]
    recomputed = report.check["objective_recomputed"]
    assert close(recomputed, report.objective), (recomputed, report.objective)


def same_seed_same_output(suite: Suite, path: Path, method: str) -> None:
    first, again = suite.solved(path, method), suite.solved(path, method, fresh=True)
    assert first.status == again.status
    assert json.dumps(first.solution, sort_keys=True) == json.dumps(again.solution, sort_keys=True)


def no_heuristic_beats_the_optimum(suite: Suite, path: Path, method: str) -> None:
    if suite.declined(path, method):
        return
    best = suite.optimum(path)
    value = suite.solved(path, method).objective
    assert value is not None, f"{method} applies here and found no solution"
    assert not suite.problem.better(value, best), f"{method} claims {value}, proven optimum {best}"


# -- per instance -------------------------------------------------------------------------------------


def some_heuristic_solves_it(suite: Suite, path: Path) -> None:
    found = [m for m in suite.problem.heuristics if suite.solved(path, m).status == "feasible"]
    assert found, f"no heuristic finds a solution on {path.name}"


def exact_route_proves_optimality(suite: Suite, path: Path) -> None:
    suite.optimum(path)


def milp_agrees_with_the_natural_exact_method(suite: Suite, path: Path) -> None:
    milp, exact = suite.solved(path, "milp"), suite.solved(path, "exact")
    assert milp.status == exact.status == "optimal", (milp.status, exact.status)
    assert close(milp.objective, exact.objective), (milp.objective, exact.objective)


def lp_relaxation_lies_on_the_right_side(suite: Suite, path: Path) -> None:
    best = suite.optimum(path)
    relaxed = suite.relaxed(path)
    assert relaxed is not None
    assert not suite.problem.better(best, relaxed), f"LP relaxation {relaxed} is worse than optimum {best}"


def _read_back(highs: Any) -> dict[str, Any]:
    """The model a ``highspy.Highs`` read from a file (:func:`~coopt.solvers.highs.read_file`), by
    name: the sense and offset, every column's (cost, lower, upper, integer), every row's (lower,
    upper) and every nonzero ``(row, column) -> coefficient``. A row that fixes a single column is
    read as that column's bounds: the LP format writes an objective constant as a fixed column, the
    MPS format as a column and such a row."""
    import highspy

    lp = highs.getLp()
    columns, rows = list(lp.col_names_), list(lp.row_names_)
    integer = {j for j, kind in enumerate(lp.integrality_) if kind == highspy.HighsVarType.kInteger}
    matrix = lp.a_matrix_  # each attribute read copies the whole array: read each once
    assert matrix.format_ == highspy.MatrixFormat.kColwise, matrix.format_
    start, index, value = list(matrix.start_), list(matrix.index_), [float(v) for v in matrix.value_]
    entries = {}
    for j, column in enumerate(columns):
        for k in range(start[j], start[j + 1]):
            entries[rows[index[k]], column] = value[k]
    cost, lower, upper = ([float(v) for v in array] for array in (lp.col_cost_, lp.col_lower_, lp.col_upper_))
    bounds = {name: [lower[j], upper[j]] for j, name in enumerate(columns)}
    row_bounds = dict(zip(rows, zip(map(float, lp.row_lower_), map(float, lp.row_upper_), strict=True),
                          strict=True))
    by_row: dict[str, list[tuple[str, float]]] = {}
    for (row, column), value in entries.items():
        by_row.setdefault(row, []).append((column, value))
    for row, [(column, value)] in [(row, on) for row, on in by_row.items() if len(on) == 1]:
        low, high = row_bounds[row]
        if low == high and value != 0:  # a row that fixes one column (how MPS writes a constant): a bound
            bounds[column] = [max(bounds[column][0], low / value), min(bounds[column][1], low / value)]
            del row_bounds[row], entries[row, column]
    return {
        "sense": str(lp.sense_),
        "offset": lp.offset_,
        "columns": {name: (cost[j], *bounds[name], j in integer)
                    for j, name in enumerate(columns)},
        "rows": row_bounds,
        "entries": entries,
    }


def _same_numbers(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_same_numbers, a, b))
    if isinstance(a, float):
        return isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


def exported_model_resolves_to_the_same_optimum(suite: Suite, path: Path) -> None:
    """The model written as LP and as MPS: both files read back as one and the same model (every
    column's cost, bounds and integrality, every row's bounds and coefficients, by name), its integer
    columns are exactly the model's integer variables, and the file re-solves to the optimum. Since
    the two files hold the same model, one re-solve answers for both."""
    model = suite.problem.build(suite.instance(path))
    reference = suite.solved(path, "milp" if suite.problem.exact else "exact")
    with tempfile.TemporaryDirectory() as folder:
        files, read = {}, {}
        for fmt in ("lp", "mps"):
            target = Path(folder) / f"model.{fmt}"
            export(model, target)
            files[fmt] = read_file(target)
            read[fmt] = _read_back(files[fmt])
    assert _same_numbers(read["lp"], read["mps"]), "the LP and MPS files hold different models"
    integers = {name for name, var in symbol_map(model).items() if var.is_integer()}
    marked = {name for name, column in read["lp"]["columns"].items() if column[3]}
    assert marked == integers, ("integer columns", sorted(marked ^ integers)[:5])
    value = solve_read(files["lp"])  # the LP file: HiGHS solves it faster than the MPS one
    assert value is not None, "the exported file has no optimum"
    resolved = value * objective_unit(model)
    assert close(resolved, reference.objective, rel=1e-6), (resolved, reference.objective)


def dump_then_load_gives_the_same_instance(suite: Suite, path: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "copy.toml"
        copy.write_text(to_toml(suite.problem, suite.instance(path)))
        assert load(copy, registry_get=suite._get).instance == suite.instance(path)


def dual_bound_never_cuts_off_the_optimum(suite: Suite, path: Path) -> None:
    problem = suite.problem
    report = suite.solved(path, "bound")
    assert report.status == "bound" and report.bound is not None, report.check["violations"]
    best = suite.optimum(path)
    # for a min problem every feasible value, the optimum included, lies at or above the bound
    assert not problem.better(best, report.bound), f"bound {report.bound} cuts off the optimum {best}"
    if "bound" in (report.solver or {}):  # the bound says it is the optimum itself: it must be
        assert math.isclose(report.bound, best, rel_tol=1e-6, abs_tol=1e-9), (
            f"bound {report.bound} is reported as the optimum, which is {best}")
    if problem.build is not None:
        relaxed = suite.relaxed(path)
        if relaxed is not None:
            assert not problem.better(report.bound, relaxed), (
                f"bound {report.bound} is weaker than the LP relaxation {relaxed}")


def _numeric_leaves(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every (path, number) in a JSON-like solution, booleans excluded."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numeric_leaves(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numeric_leaves(item, (*path, i))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, value


def _replaced(value: Any, path: Sequence, new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _replaced(value[head], rest, new)
    return copy


def no_non_finite_number_passes_the_checker(suite: Suite, path: Path) -> None:
    """Any number of a feasible solution (decision or claimed objective) made non-finite is refused,
    with a violation and without the checker raising."""
    report = suite.solved(path, "exact")
    assert report.check["feasible"], report.check["violations"]
    leaves = list(_numeric_leaves(report.solution))
    assert leaves, "the solution holds no number"
    step = max(1, len(leaves) // 12)
    for bad in (float("nan"), float("inf"), -float("inf")):
        for where, _ in [*leaves[::step], (("objective",), None)]:
            verdict = judge(suite.problem, suite.instance(path), _replaced(report.solution, where, bad))
            assert not verdict["feasible"], f"{bad} at {where} passed the checker"
            assert not any(v.startswith("checker raised") for v in verdict["violations"]), (
                f"{bad} at {where}: {verdict['violations']}")


# -- per problem ---------------------------------------------------------------------------------------


def declares_its_fields_and_objective(suite: Suite) -> None:
    problem = suite.problem
    assert problem.schema is not None, "fields not declared with coopt.schema"
    # the contract's defaults ("objective", no unit) mean the problem never said what it optimises
    assert problem.objective_name != "objective" and problem.objective_unit != "", (
        "objective_name / objective_unit not registered")
    rows = problem.schema.rows()
    assert rows and all(row[5] for row in rows), "a field without a meaning"


def generator_is_seeded_and_its_instances_are_valid(suite: Suite) -> None:
    problem = suite.problem
    size = problem.sizes[0]
    a, b = problem.generate(11, size), problem.generate(11, size)
    assert a == b
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gen.toml"
        path.write_text(to_toml(problem, a))
        instance = load(path, registry_get=suite._get).instance
    assert instance == a
    for method in sorted(problem.heuristics):
        report = run(problem, instance, method, SolveOptions(seed=0))
        if report.status != "no_solution":
            assert report.check["feasible"], (method, report.check["violations"])


def every_exact_method_equals_brute_force(suite: Suite) -> None:
    problem = suite.problem
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


# -- the suite ------------------------------------------------------------------------------------------


def checks(
    problem: Problem, instances: Sequence[str | Path] | None = None
) -> Iterator[tuple[str, Callable[[], None]]]:
    """Every check of the contract for ``problem`` as (name, check): the per-problem checks, then per
    instance (default: the problem's small shipped files) and per method. A check raises
    AssertionError when it fails; the checks share one cache of solves."""
    paths = [Path(p) for p in instances] if instances is not None else small_shipped(problem.name)
    suite = Suite(problem, paths)

    def bind(check: Callable[..., None], *args: Any) -> Callable[[], None]:
        return lambda: check(suite, *args)

    yield f"{problem.name}-declares_its_fields_and_objective", bind(declares_its_fields_and_objective)
    yield f"{problem.name}-generator", bind(generator_is_seeded_and_its_instances_are_valid)
    if problem.oracle is not None:
        yield f"{problem.name}-brute_force", bind(every_exact_method_equals_brute_force)
    for path in paths:
        case = f"{problem.name}-{path.stem}"
        yield f"{case}-exact_route_proves_optimality", bind(exact_route_proves_optimality, path)
        yield f"{case}-dump_then_load", bind(dump_then_load_gives_the_same_instance, path)
        yield f"{case}-no_non_finite_number", bind(no_non_finite_number_passes_the_checker, path)
        if problem.heuristics:
            yield f"{case}-some_heuristic_solves_it", bind(some_heuristic_solves_it, path)
        if problem.build is not None:
            yield f"{case}-lp_relaxation", bind(lp_relaxation_lies_on_the_right_side, path)
            yield f"{case}-export", bind(exported_model_resolves_to_the_same_optimum, path)
            if problem.exact is not None:
                yield f"{case}-milp_agrees", bind(milp_agrees_with_the_natural_exact_method, path)
        if problem.bound is not None:
            yield f"{case}-bound", bind(dual_bound_never_cuts_off_the_optimum, path)
        for method in problem.methods:
            yield f"{case}-{method}-checker", bind(checker_accepts_and_recomputes, path, method)
            yield f"{case}-{method}-same_seed", bind(same_seed_same_output, path, method)
            if method in problem.heuristics:
                yield f"{case}-{method}-not_above_optimum", bind(no_heuristic_beats_the_optimum, path, method)


def check_problem(problem: Problem, instances: Sequence[str | Path] | None = None) -> None:
    """Run every check of :func:`checks`; raise :class:`ContractError` naming each failure."""
    failures = []
    for name, check in checks(problem, instances):
        try:
            check()
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    if failures:
        raise ContractError(f"{len(failures)} contract check(s) failed:\n" + "\n".join(failures))
