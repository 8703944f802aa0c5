"""Model O (:mod:`coopt.problems.pipeline.oracle_ti`), the order-encoded time-indexed oracle: its
least makespan equals the order enumeration of :mod:`coopt.problems.pipeline.brute` and the
time-indexed MILP (Model T) on tiny seeds, it follows the checker's tie rule, its yes/no answers
bracket the optimum, and it declines what it cannot model exactly."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from coopt.problem import SolveOptions
from coopt.problems.pipeline import brute, oracle_ti
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.timeindexed import build_time_indexed
from coopt.solvers.highs import solve_model
from tests import _pipeline_shared

#: Tiny seeds without offload (keep, whole-item and per-layer recompute (16, 73), two chunks, infeasible
#: caps), whose order enumeration takes well under a second.
ENUMERATED = [1, 2, 3, 4, 8, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 73]
#: Tiny seeds with offload whose Model T answers within a second (one and two chunks, with and
#: without recompute, one infeasible).
WITH_T = [0, 5, 9, 12, 27, 74]


def _least(instance: pm.Instance) -> float | None:
    answer = oracle_ti.least_makespan(instance, brute.horizon(instance))
    assert answer.status in ("optimal", "infeasible")
    if answer.status == "infeasible":
        return None
    assert pm.check(instance, answer.solution) == []
    assert pm.objective(instance, answer.solution) == pytest.approx(answer.makespan)
    return answer.makespan


@pytest.mark.parametrize("seed", ENUMERATED)
def test_model_o_equals_the_enumeration(seed):
    instance = brute.tiny(seed)
    assert not instance.allow_offload
    assert _least(instance) == _pipeline_shared.enumerate_optimum(instance)


@pytest.mark.parametrize("seed", WITH_T)
def test_model_o_equals_model_t_with_offload(seed):
    instance = brute.tiny(seed)
    assert instance.allow_offload
    model = build_time_indexed(instance, brute.horizon(instance))
    result = solve_model(model, SolveOptions(time_limit=60, gap=1e-9, threads=1))
    assert result.status in ("optimal", "infeasible")
    if result.status == "infeasible":
        assert _least(instance) is None
    else:
        assert _least(instance) == pytest.approx(result.objective)


@pytest.mark.parametrize("seed", [2, 6, 10, 13, 23])
def test_the_symmetry_row_keeps_the_optimum(seed):
    """The last stage's backward passes in micro-batch order lose nothing (the docstring's
    renumbering): the least makespan is the same without the row."""
    instance = brute.tiny(seed)
    assert instance.microbatches >= 2
    horizon = brute.horizon(instance)
    with_row = oracle_ti.least_makespan(instance, horizon)
    without = oracle_ti.least_makespan(instance, horizon, symmetry=False)
    assert (with_row.status, with_row.makespan) == (without.status, without.makespan)
    assert with_row.status == "optimal"


def _one_stage(cap_gb: float, **fields) -> pm.Instance:
    """One device, two micro-batches, fused backward, unit times, 2 GB of activations each."""
    base = dict(stages=1, microbatches=2, forward_s=(1.0,), backward_s=(1.0,), weight_s=(0.0,),
                activation_bytes=(2 * pm.GB,), weight_grad_bytes=(0.0,), split_backward=False,
                memory_cap_bytes=(cap_gb * pm.GB,))
    base.update(fields)
    return pm.Instance(**base)


def test_releases_come_first_at_equal_times():
    """Cap = one micro-batch: F(0,1) may start at the instant B(0,0) ends (4 s in all); with a
    cap of half a micro-batch nothing fits; with no cap F, F, B, B also takes 4 s."""
    assert _least(_one_stage(2.0)) == 4.0
    assert _least(_one_stage(1.0)) is None
    assert _least(replace(_one_stage(2.0), memory_cap_bytes=None)) == 4.0


def test_recompute_lets_the_first_stage_overlap_two_micro_batches():
    """Two stages, two micro-batches, unit F and B, 2 GB each, caps 2 / 4 GB: stage 0 holds one
    micro-batch at a time, so F B of micro-batch 0 (4 s) precede micro-batch 1's (8 s). With
    recompute (checkpoint 0 GB, 1 s) F(0,1) keeps nothing and runs at 1, and B(0,1), which takes
    2 s and brings the 2 GB back, runs after B(0,0) has released them: F(0,0) 0-1, F(0,1) 1-2,
    stage 1 F F B B from 1 to 5, B(0,0) 4-5, B(0,1) 5-7: 7 s (6 s would need both B of stage 1
    to end by 4, i.e. stage 1 busy from 0)."""
    keep = pm.Instance(stages=2, microbatches=2, forward_s=(1.0, 1.0), backward_s=(1.0, 1.0),
                       weight_s=(0.0, 0.0), activation_bytes=(2 * pm.GB,) * 2, weight_grad_bytes=(0.0, 0.0),
                       split_backward=False, memory_cap_bytes=(2 * pm.GB, 4 * pm.GB))
    recompute = replace(keep, allow_recompute=True, recompute_s=(1.0, 1.0), checkpoint_bytes=(0.0, 0.0))
    assert _least(keep) == 8.0 == brute.enumerate_optimum(keep)
    assert _least(recompute) == 7.0 == brute.enumerate_optimum(recompute)


def test_yes_no_answers_bracket_the_optimum():
    """Seed 665 of the differential (two chunks, recompute and offload; Model M and Model P both
    prove 21): no schedule of 20 s, one of 21 s that the checker accepts."""
    instance = brute.tiny(665)
    assert instance.chunks == 2 and instance.allow_offload and instance.allow_recompute
    no, yes = oracle_ti.feasible(instance, 20.0), oracle_ti.feasible(instance, 21.0)
    assert no.status == "infeasible" and no.solution is None
    assert yes.status == "feasible" and pm.check(instance, yes.solution) == []
    assert yes.makespan <= 21.0
    assert _pipeline_shared.optimum(instance) == 21.0


def test_model_o_declines_what_it_cannot_model_exactly():
    """The per-stage span, and a grid of more than 10^5 slots per pass; a third of a second is a
    grid (a sixth with two chunks)."""
    base = brute.tiny(665)
    assert oracle_ti.applies(base)
    assert oracle_ti.applies(replace(base, d2h_s=(1 / 3, 1.0)))
    assert oracle_ti.time_unit(replace(base, d2h_s=(1 / 3, 1.0))) == Fraction(1, 6)
    assert not oracle_ti.applies(replace(base, objective="stage_span"))
    assert not oracle_ti.applies(replace(base, d2h_s=(1e-6, 1.0)))
    with pytest.raises(ValueError):
        oracle_ti.build(replace(base, objective="stage_span"), 10)
