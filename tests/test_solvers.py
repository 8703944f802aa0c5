"""``--solver NAME``: every MILP route runs on the chosen solver through Pyomo, reaches the same
optima on small shipped files (each judged by the problem's checker), reports the solver that ran,
and an unknown or missing solver is one line and exit status 2 before any work.

The optima below are the shipped files' exact values as HiGHS, Gurobi and SCIP all found them;
a solver whose package is not installed is skipped (CI installs both through the ``test`` extra).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from coopt.cli import main
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.run import run
from coopt.solvers import highs, pyomo_route

INSTANCES = Path(__file__).resolve().parent.parent / "coopt" / "instances"

#: (shipped file, method, optimum): the MILP route itself (chase_arch, pipeline's ``milp``, topoopt),
#: a pipeline model with a partial warm start, and exact methods that solve MILPs inside
#: (provisioning's staged route, mixnet's one MILP per region, mixnet_plan's per-segment MILPs)
OPTIMA = [
    ("chase_arch/0-one-rack-four-types.toml", "exact", 2506.0),
    ("pipeline/0-p2m2-layers.toml", "milp", 10.0),
    ("pipeline/0-p2m3-offload.toml", "milp", 13.0),
    ("topoopt/0-exact-n6-d4.toml", "exact", 75.16931889080152),
    ("provisioning/0-six-node-time-expanded.toml", "exact", 242.0),
    ("mixnet/0-pareto-6-alpha2.toml", "exact", 233.7551835211946),
    ("mixnet_plan/0-moe-2layers-4servers-25ms.toml", "exact", 0.06347292),
]


def installed(name: str) -> bool:
    return name == pyomo_route.DEFAULT or pyomo_route.missing(name) is None


SOLVERS = [pytest.param(name, marks=pytest.mark.skipif(not installed(name), reason=f"{name} not installed"))
           for name in pyomo_route.names()]


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """The solver names every MILP solve was handed to, in order."""
    calls: list[str] = []
    real_highs, real_other = highs.Highs, pyomo_route.prepare

    def highs_route(*args, **kwargs):
        calls.append("highs")
        return real_highs(*args, **kwargs)

    def other_route(name, model):
        calls.append(name)
        return real_other(name, model)

    monkeypatch.setattr(highs, "Highs", highs_route)
    monkeypatch.setattr(pyomo_route, "prepare", other_route)
    return calls


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("name", "method", "optimum"), OPTIMA, ids=[n for n, _, _ in OPTIMA])
def test_every_solver_finds_the_same_optimum(solver, name, method, optimum, counted):
    item = load(str(INSTANCES / name))
    report = run(item.problem, item.instance, method, SolveOptions(time_limit=60, solver=solver))
    assert report.status == "optimal"
    assert report.check["feasible"] is True, report.check
    assert math.isclose(report.objective, optimum, rel_tol=1e-6)
    # the choice reached every MILP the method solved, and no other solver ran
    assert counted and set(counted) == {solver}


@pytest.mark.parametrize("solver", [s for s in SOLVERS if s.values[0] != "highs"])
def test_a_solve_result_names_the_solver_and_its_version(solver):
    item = load(str(INSTANCES / "topoopt/0-exact-n6-d4.toml"))
    model = item.problem.build(item.instance)
    result = highs.solve_model(model, SolveOptions(time_limit=60, solver=solver))
    assert result.solver_name == solver
    assert result.solver_version == pyomo_route.version(solver) != highs.highs_version()
    assert result.status == "optimal"
    assert result.trace[-1][1:] == (result.objective, result.bound)


def test_the_highs_route_is_the_default_and_keeps_its_trace():
    assert SolveOptions().solver == "highs"
    item = load(str(INSTANCES / "pipeline/0-p2m3-offload.toml"))
    model = item.problem.build(item.instance)
    result = highs.solve_model(model, SolveOptions(time_limit=60))
    assert (result.solver_name, result.solver_version) == ("highs", highs.highs_version())
    assert result.size["columns"] > 0 and result.nodes is not None


@pytest.mark.skipif(not installed("scip"), reason="pyscipopt not installed")
def test_the_report_names_the_solver_that_ran():
    item = load(str(INSTANCES / "topoopt/0-exact-n6-d4.toml"))
    report = run(item.problem, item.instance, "exact", SolveOptions(time_limit=60, solver="scip"))
    assert report.to_json()["solver"]["name"] == "scip"
    assert report.to_json()["solver"]["version"] == pyomo_route.version("scip")


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("command", ["solve", "sweep"])
def test_an_unknown_solver_is_one_line_and_exit_2_before_any_work(command, capsys, tmp_path):
    out = tmp_path / "out.json"
    file = INSTANCES / "topoopt/0-exact-n6-d4.toml"
    argv = (["solve", file, "--json", out] if command == "solve"
            else ["sweep", file, "--set", "bandwidth_gbit_per_s=25:100:2", "--csv", out])
    code, _, err = cli(capsys, *argv, "--solver", "glpk")
    assert code == 2
    assert err.strip().splitlines() == [
        "coopt: error: --solver: unknown solver 'glpk'; known: highs, cbc, cplex, gurobi, scip, xpress"]
    assert not out.exists()


def test_a_missing_solver_package_is_one_line_naming_it(capsys, tmp_path, monkeypatch):
    missing = pyomo_route.Route("gurobi_persistent", "coopt_no_such_module", "no-such-package", "Seed")
    monkeypatch.setitem(pyomo_route.SOLVERS, "gurobi", missing)
    out = tmp_path / "out.json"
    code, _, err = cli(capsys, "solve", INSTANCES / "topoopt/0-exact-n6-d4.toml", "--solver", "gurobi",
                       "--json", out)
    assert code == 2
    assert err.strip().splitlines() == [
        "coopt: error: --solver gurobi: the Python package 'no-such-package' is not installed "
        "(pip install no-such-package)"]
    assert not out.exists()


@pytest.mark.skipif(not installed("scip"), reason="pyscipopt not installed")
def test_solve_and_sweep_take_the_solver(capsys, tmp_path):
    file = INSTANCES / "topoopt/0-exact-n6-d4.toml"
    code, _, _ = cli(capsys, "solve", file, "--solver", "scip", "--json", tmp_path / "r.json")
    assert code == 0
    table = tmp_path / "sweep.csv"
    code, _, _ = cli(capsys, "sweep", file, "--set", "bandwidth_gbit_per_s=50:100:2", "--solver", "scip",
                     "--csv", table)
    assert code == 0
    rows = list(csv.DictReader(table.read_text().splitlines()))
    assert [(float(r["bandwidth_gbit_per_s"]), r["solver"], r["status"], r["feasible"]) for r in rows] == [
        (50.0, "scip", "optimal", "True"), (100.0, "scip", "optimal", "True")]
    # the optimum at the file's own bandwidth is the shipped file's
    assert math.isclose(float(rows[1]["objective"]), 75.16931889080152, rel_tol=1e-6)


def test_scip_gets_a_warm_start_only_where_every_discrete_variable_has_a_value():
    import pyomo.environ as pyo

    model = pyo.ConcreteModel()
    model.x = pyo.Var([0, 1], domain=pyo.Binary)
    model.y = pyo.Var(domain=pyo.NonNegativeReals)  # continuous: needs no value
    model.warm_start = True
    model.x[0].value = 1
    scip, gurobi = pyomo_route.SOLVERS["scip"], pyomo_route.SOLVERS["gurobi"]
    assert not pyomo_route._warm_starts(model, scip)
    assert pyomo_route._warm_starts(model, gurobi)  # Gurobi completes a partial start itself
    model.x[1].value = 0
    assert pyomo_route._warm_starts(model, scip)
    model.warm_start = False
    assert not pyomo_route._warm_starts(model, gurobi)


@pytest.mark.parametrize(("solver", "says"), [
    ("cplex", "the Python package 'cplex' is not installed (pip install cplex)"),
    ("xpress", "the Python package 'xpress' is not installed (pip install xpress)"),
    ("cbc", "the 'cbc' executable is not on PATH (install the cbc executable (coinor-cbc))"),
])
def test_the_classic_routes_name_what_is_missing_in_one_line(solver, says, capsys, tmp_path):
    """CPLEX, Xpress and CBC go through Pyomo's classic interfaces; where the package or the
    program is not installed, ``solve`` says which in one line, exit 2, and writes nothing."""
    if installed(solver):
        pytest.skip(f"{solver} is installed here")
    out = tmp_path / "out.json"
    code, _, err = cli(capsys, "solve", INSTANCES / "topoopt/0-exact-n6-d4.toml", "--solver", solver,
                       "--json", out)
    assert code == 2
    assert err.strip().splitlines() == [f"coopt: error: --solver {solver}: {says}"]
    assert not out.exists()


def test_a_classic_result_reads_as_the_contrib_one():
    """The classic results' termination conditions map onto the ones the HiGHS route reads."""
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.common.results import TerminationCondition as New
    from pyomo.opt import TerminationCondition as Old

    assert pyomo_route._termination(Old.optimal) == New.convergenceCriteriaSatisfied
    assert pyomo_route._termination(Old.maxTimeLimit) == New.maxTimeLimit
    assert pyomo_route._termination(Old.infeasible) == New.provenInfeasible
    assert pyomo_route._termination(Old.error) == New.unknown
    assert highs.termination_of(pyomo_route._termination(Old.maxTimeLimit)).name == "LIMIT"
    assert pyomo_route._solution_status(New.maxTimeLimit, True) == SolutionStatus.feasible
    assert pyomo_route._solution_status(New.convergenceCriteriaSatisfied, False) == SolutionStatus.noSolution


@pytest.mark.skipif(not installed("scip"), reason="pyscipopt not installed")
def test_scip_is_reported_with_scips_own_version():
    """Pyomo 6.10's SCIP interface gives PySCIPOpt's version (6.3.0) as the solver's; the report
    names SCIP's (10.0.x with that PySCIPOpt), as SCIP itself states it."""
    import pyscipopt

    major_minor = str(pyscipopt.Model().version()).split(".")[:2]
    assert pyomo_route.version("scip").split(".")[:2] == major_minor
    item = load(str(INSTANCES / "topoopt/0-exact-n6-d4.toml"))
    result = highs.solve_model(item.problem.build(item.instance), SolveOptions(time_limit=60, solver="scip"))
    assert result.solver_version.split(".")[:2] == major_minor


def _classic_outcome(condition, lower_bound: float, monkeypatch) -> object:
    """A classic interface's solve of min x (x integer in [0, 10]) that hands back x = 10 and
    ``lower_bound``, read by the classic route; no solver runs."""
    from types import SimpleNamespace

    import pyomo.environ as pyo
    from pyomo.opt import SolutionStatus, SolverStatus

    model = pyo.ConcreteModel()
    model.x = pyo.Var(domain=pyo.Integers, bounds=(0, 10))
    model.cost = pyo.Objective(expr=model.x)

    class Solutions:
        def __len__(self) -> int:
            return 1

        def __call__(self, index: int) -> object:
            return SimpleNamespace(status=SolutionStatus.optimal)

    legacy = SimpleNamespace(solver=SimpleNamespace(termination_condition=condition, status=SolverStatus.ok),
                             problem=SimpleNamespace(lower_bound=lower_bound, upper_bound=10.0),
                             solution=Solutions())
    solver = SimpleNamespace(options={}, solve=lambda *a, **k: legacy, version=lambda: (2, 10, 12))
    monkeypatch.setattr(model.solutions, "load_from", lambda results: model.x.set_value(10), raising=False)
    return pyomo_route._classic_solve("cbc", pyomo_route.SOLVERS["cbc"], solver, model, SolveOptions(gap=1e-6))


def test_an_optimal_classic_solve_reports_the_bound_its_claim_proves(monkeypatch):
    """CBC can print its root relaxation's bound beside "optimal"; the optimality claim (within the
    gap asked for) proves incumbent - gap, and that is the bound reported. A solve stopped by the
    time limit keeps the bound the solver printed."""
    from pyomo.opt import TerminationCondition as Old

    optimal = _classic_outcome(Old.optimal, 5.0, monkeypatch)
    assert optimal.incumbent_objective == 10.0
    assert optimal.objective_bound == pytest.approx(10.0 - 1e-5, abs=1e-12)
    stopped = _classic_outcome(Old.maxTimeLimit, 5.0, monkeypatch)
    assert stopped.objective_bound == 5.0 and stopped.incumbent_objective == 10.0
    tight = _classic_outcome(Old.optimal, 10.0, monkeypatch)  # a tighter printed bound is kept
    assert tight.objective_bound == 10.0
