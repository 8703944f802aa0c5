"""``--solver NAME``: every MILP route runs on the chosen solver through Pyomo, reaches the same
optima on small shipped files (each judged by the problem's checker), reports the solver that ran,
and an unknown or missing solver is one line and exit status 2 before any work.

The optima below are the shipped files' exact values as HiGHS, Gurobi and SCIP all found them;
a solver whose package is not installed is skipped (CI installs both through the ``test`` extra).
"""

from __future__ import annotations

import csv
import importlib.util
import math
from pathlib import Path

import pytest

from coopt.cli import main
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.run import run
from coopt.solvers import highs, pyomo_route

INSTANCES = Path(__file__).resolve().parent.parent / "coopt" / "instances"

#: (shipped file, optimum): the MILP route itself (chase_arch, pipeline, topoopt), a pipeline model
#: with a partial warm start, and exact methods that solve MILPs inside (provisioning's staged
#: route, mixnet's one MILP per region, mixnet_plan's per-segment MILPs)
OPTIMA = [
    ("chase_arch/0-one-rack-four-types.toml", 2506.0),
    ("pipeline/0-p2m2-layers.toml", 10.0),
    ("pipeline/0-p2m3-offload.toml", 13.0),
    ("topoopt/0-exact-n6-d4.toml", 75.16931889080152),
    ("provisioning/0-six-node-time-expanded.toml", 242.0),
    ("mixnet/0-pareto-6-alpha2.toml", 233.7551835211946),
    ("mixnet_plan/0-moe-2layers-4servers-25ms.toml", 0.06347292),
]


def installed(name: str) -> bool:
    route = pyomo_route.SOLVERS.get(name)
    return route is None or importlib.util.find_spec(route.module) is not None


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
@pytest.mark.parametrize(("name", "optimum"), OPTIMA, ids=[n for n, _ in OPTIMA])
def test_every_solver_finds_the_same_optimum(solver, name, optimum, counted):
    item = load(str(INSTANCES / name))
    report = run(item.problem, item.instance, "exact", SolveOptions(time_limit=60, solver=solver))
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
    code, _, err = cli(capsys, *argv, "--solver", "cbc")
    assert code == 2
    assert err.strip().splitlines() == ["coopt: error: --solver: unknown solver 'cbc'; known: highs, gurobi, scip"]
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
