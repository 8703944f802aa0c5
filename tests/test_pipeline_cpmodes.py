"""Model M (the CP-SAT constraint program with recompute and offload,
:mod:`coopt.problems.pipeline.cpmodes`), pipeline's ``exact`` method on recompute / offload grid
instances: its optimum against the oracle (order enumeration, or the time-indexed Model T where
copies are continuous; neither shares a row with it), against Model P's proven optima and the
research note's I1 value, and the dispatch of ``exact``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coopt.errors import UsageError
from coopt.instance import load
from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM, cpmodes, cpsat
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.brute import tiny
from coopt.run import run
from coopt.shipped import instances_dir
from tests._pipeline_shared import incumbent, optimum

OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)

#: Oracle seeds with recompute or offload whose oracle answers in well under a second.
SEEDS = [0, 5, 6, 7, 9, 10, 11, 12, 16, 17, 23, 24, 25, 27, 29, 30, 34, 35, 36, 38]


@pytest.mark.parametrize("seed", SEEDS)
def test_model_m_equals_the_oracle(seed):
    """Same optimum (or same infeasibility) as the oracle, with and without the warm start; the
    schedule returned is accepted by the checker and worth what it claims."""
    instance = tiny(seed)
    assert cpmodes.applies(instance) and not cpsat.applies(instance)
    expected = optimum(instance)
    for warm in (incumbent(instance)[1], None):
        outcome = cpmodes.solve(instance, OPTIONS, incumbent=warm)
        if expected is None:
            assert outcome.status == "infeasible", (seed, outcome)
            continue
        assert outcome.status == "optimal", (seed, outcome)
        assert pm.check(instance, outcome.solution) == []
        assert close(pm.objective(instance, outcome.solution), expected), (seed, expected, outcome)


#: Model P's proven optima (``coopt solve FILE --method milp``), and I1 at cap 6 GB, whose optimum
#: 29 the research note gives (research-pipeline-memory.md, I1).
PROVEN = {
    "0-p2m3-offload": 13.0,
    "0-p3m3-offload-overtake": 22.0,
    "0-p3m4-recompute": 16.0,
    "0-p3m4-v2-cap6": 13.0,  # keep-only with two chunks: Model M with FIFO lanes
    "1-i1-p4m8-cap6": 29.0,
}


@pytest.mark.parametrize("name", sorted(PROVEN))
def test_exact_on_shipped_mode_files_is_model_m_and_proves_the_known_optimum(name):
    instance = load(instances_dir() / "pipeline" / f"{name}.toml").instance
    assert PROBLEM.runs_exact(instance) and cpmodes.applies(instance)
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.solver["name"] == "cp-sat"
    assert report.status == "optimal" and report.check["feasible"], report.check
    assert report.objective == pytest.approx(PROVEN[name])


def test_model_m_declines_what_it_cannot_model_exactly():
    """Keep-only one-chunk instances stay with Model S, the per-stage span and off-grid times
    with Model P."""
    base = pm.generate_modes(0, 3, "both")
    assert cpmodes.applies(base)
    assert not cpmodes.applies(pm.generate(0, 3))
    assert not cpmodes.applies(replace(base, objective="stage_span"))
    assert not cpmodes.applies(replace(base, d2h_s=(1 / 3,) * 3))
    assert not PROBLEM.runs_exact(replace(base, d2h_s=(1 / 3,) * 3))


@pytest.mark.parametrize("family", pm.MODE_FAMILIES)
def test_mode_families_allow_their_modes(family):
    instance = pm.generate_modes(1, 2, family)
    assert instance.allow_recompute == (family != "offload")
    assert instance.allow_offload == (family != "recompute")
    assert cpmodes.applies(instance)
    with pytest.raises(UsageError):
        pm.generate_modes(1, 2, "swap")


@pytest.mark.parametrize(("mode", "level"), [("keep", 8), ("r1", 7), ("r2", 6), ("offload", 2)])
def test_split_memory_holds_each_modes_level_before_b(mode, level):
    """(M10): with the mode fixed, the intervals ``[S_F, S_B)`` present are exactly those of that
    mode and their demands add up to what the item holds there by the model's definition (keep:
    a = 8; recompute r of L = 2 layers: a - r (a - a_c) / 2 with a_c = 6, in units of 1 GB;
    offload: a - a_o with a_o = 6, the copy windows being the caller's)."""
    from ortools.sat.python import cp_model

    GB = pm.GB
    instance = pm.Instance(
        stages=1, microbatches=1, forward_s=(1.0,), backward_s=(1.0,), weight_s=(1.0,),
        activation_bytes=(8 * GB,), weight_grad_bytes=(GB,), memory_cap_bytes=(8 * GB,),
        allow_recompute=True, recompute_s=(2.0,), checkpoint_bytes=(6 * GB,), recompute_layers=(2,),
        allow_offload=True, offload_bytes=(6 * GB,), d2h_s=(1.0,), h2d_s=(1.0,))
    assert cpmodes.units(instance)[1] == pytest.approx(GB)
    model = cp_model.CpModel()
    s_f, s_b = model.NewIntVar(0, 10, ""), model.NewIntVar(0, 10, "")
    r, o = model.NewIntVar(0, 2, ""), model.NewBoolVar("")
    model.Add(r + 2 * o <= 2)
    model.Add(s_b == s_f + 3)
    model.Add(r == (int(mode[1]) if mode.startswith("r") else 0))
    model.Add(o == (mode == "offload"))
    parts = cpmodes._split_memory(model, instance, 0, s_f, s_b, r, o, 10)
    solver = cp_model.CpSolver()
    assert solver.Solve(model) == cp_model.OPTIMAL
    values = solver.ResponseProto().solution

    def present(interval) -> bool:
        literals = list(model.Proto().constraints[interval.Index()].enforcement_literal)
        return all(values[x] == 1 if x >= 0 else values[-x - 1] == 0 for x in literals)

    assert sum(demand for interval, demand in parts if present(interval)) == level
