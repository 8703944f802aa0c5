"""The memory-exclusion bounds of :mod:`coopt.problems.pipeline.bound` with recompute and offload
(hold chain, big pieces, solid union): never above an optimum that the oracle (order enumeration,
or the time-indexed Model T where copies are continuous) or the keep-only sandwich proves, tight
where a hand computation says so, and Model M (with its redundant (M8), (M9)) still equal to the
oracle where they are active."""

from __future__ import annotations

import pytest

from coopt.problem import SolveOptions, close
from coopt.problems.pipeline import PROBLEM, bound, cpmodes
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.brute import tiny
from coopt.run import run
from tests._pipeline_shared import incumbent, optimum

GB = pm.GB
OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)

#: Oracle seeds (recompute or offload, a cap) on which the named bound is the largest part of
#: the dual bound and above the release-plus-tail part.
ACTIVE = {
    "hold": [36, 58, 62],
    "big": [61, 152, 175, 210],
    "solid": [37, 64, 241, 261],
}


def parts(instance: pm.Instance) -> dict[str, float]:
    release, tail = bound.releases(instance), bound.tails(instance)
    return {
        "hold": max(bound._hold_chain(instance, k, release, tail) for k in range(instance.virtual_stages)),
        "big": max(bound._big_pieces(instance, d, release, tail) for d in range(instance.stages)),
        "solid": max(bound._solid_union(instance, k, release, tail) for k in range(instance.virtual_stages)),
        "path": max(release[x] + tail[x] for x in release),
    }


@pytest.mark.parametrize(("name", "seed"), [(n, s) for n, seeds in ACTIVE.items() for s in seeds])
def test_mode_bounds_never_exceed_the_oracle_and_model_m_still_equals_it(name, seed):
    instance = tiny(seed)
    assert cpmodes.applies(instance) and (instance.allow_recompute or instance.allow_offload)
    values = parts(instance)
    assert values[name] > values["path"]  # the seed exercises the bound
    expected = optimum(instance)
    assert expected is not None
    assert all(v <= expected + 1e-9 for v in values.values()), (seed, values, expected)
    assert bound.lower_bound(instance) <= expected + 1e-9
    outcome = cpmodes.solve(instance, OPTIONS, incumbent=incumbent(instance)[1])
    assert outcome.status == "optimal" and pm.check(instance, outcome.solution) == []
    assert close(pm.objective(instance, outcome.solution), expected), (seed, expected, outcome)


def two_stage(**modes: object) -> pm.Instance:
    """p = 2, m = 2, unit passes, a = 2 GB, a_W = 1 GB; stage 0's cap holds one micro-batch."""
    return pm.Instance(
        stages=2, microbatches=2, forward_s=(1.0, 1.0), backward_s=(1.0, 1.0), weight_s=(1.0, 1.0),
        activation_bytes=(2 * GB, 2 * GB), weight_grad_bytes=(GB, GB), memory_cap_bytes=(2 * GB, 10 * GB),
        **modes,
    )


def test_hold_chain_by_hand():
    """Stage 0 holds one item from F to B (recomputing keeps 0.5 GB, and B needs all 2 GB again):
    two holds of the round trip 4, the second after a W (keep: 2 + 1 GB do not fit) or with a
    recompute (1 s longer B), then W(0): 2 * 4 + 1 + 1 = 10. Keep-only runs the items one after
    another on stage 0 (F0 F1 B1 B0 W0 = 5 s each): 10 is the optimum."""
    instance = two_stage(allow_recompute=True, recompute_s=(1.0, 1.0), checkpoint_bytes=(0.5 * GB, 0.5 * GB))
    assert parts(instance)["hold"] == pytest.approx(10.0)
    assert parts(instance)["path"] < 10.0
    assert bound.lower_bound(instance) == pytest.approx(10.0)
    assert optimum(instance) == pytest.approx(10.0)


def test_big_pieces_by_hand():
    """Offload on stage 0 (1 s each way): an offloaded item holds all of a for F + D2H and H2D + B
    (4 s), a kept one for its round trip 4 s, and every W (1 s) excludes both; after the last B
    only that item's W and B(0)'s tail remain: 0 + 2 * (4 + 1) - 1 + 1 = 10."""
    instance = two_stage(allow_offload=True, offload_bytes=(2 * GB, 2 * GB), d2h_s=(1.0, 1.0), h2d_s=(1.0, 1.0))
    assert parts(instance)["big"] == pytest.approx(10.0)
    assert parts(instance)["path"] < 10.0
    assert bound.lower_bound(instance) == pytest.approx(10.0)
    assert optimum(instance) == pytest.approx(10.0)


@pytest.mark.parametrize("family", ["recompute", "both"])
def test_generator_bound_meets_the_keep_only_optimum(family):
    """Generator p = 3 seed 0: keep-only schedules are mode schedules, so Model S's keep-only
    optimum (64) is an upper bound; the dual bound meets it, so 64 is the optimum and ``exact``
    proves it at once."""
    keep = run(PROBLEM, pm.generate(0, 3), "exact", OPTIONS)
    assert keep.status == "optimal" and keep.objective == pytest.approx(64.0)
    instance = pm.generate_modes(0, 3, family)
    assert bound.lower_bound(instance) <= keep.objective + 1e-9
    if family == "recompute":
        assert bound.lower_bound(instance) == pytest.approx(64.0)
        report = run(PROBLEM, instance, "exact", OPTIONS)
        assert report.status == "optimal" and report.objective == pytest.approx(64.0)
        assert report.check["feasible"]


def test_warm_up_never_exceeds_the_oracles_optimum():
    """The stage warm-up bound against the enumeration on every tiny seed it applies to."""
    applied = 0
    for seed in range(100):
        inst = tiny(seed)
        value = bound.warm_up(inst)
        if value <= 0:
            continue
        best = optimum(inst)
        if best is None:
            continue
        applied += 1
        assert value <= best + 1e-9, (seed, value, best)
    assert applied >= 10


def test_warm_up_lifts_the_llama_bound_to_its_hand_value():
    """2-llama70b-l64-pp8-m32: stage 0's first B at 8 T_F + 7 T_B + 14 lags = 0.4897 s, its load
    3.0587 s, six forwards (0.1912 s) before: 3.357 s, above the 3.283 s of the other terms."""
    from coopt import api

    inst = api.load("pipeline/2-llama70b-l64-pp8-m32").instance
    assert abs(bound.warm_up(inst) - (0.4897 + 3.0587 - 0.1912)) < 2e-4
    assert bound.lower_bound(inst) >= 3.357
