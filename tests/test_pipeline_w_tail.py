"""The weight-pass cool-down bound (``bound.w_tail_idle``): the idle a device must have after its
last B, when the cap limits the W passes it can leave for the end. Checked by hand on the
generator's instance it was built for, against the enumeration oracle's optima on the tiny seeds
where it lifts the rest of the bound, and for what it needs (a pending W holds memory)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coopt.problems.pipeline import bound, brute
from coopt.problems.pipeline import model as pm
from tests import _pipeline_shared

GB = pm.GB

#: Tiny seeds on which the weight-pass cool-down lifts the rest of the dual bound (found by a scan
#: of seeds 0-4999; each is rechecked below, so a change that stops the lift fails the test).
LIFTED = (56, 425, 641, 763, 785, 961, 990)


def without_w_tail(monkeypatch: pytest.MonkeyPatch, inst: pm.Instance) -> float:
    with monkeypatch.context() as patch:
        patch.setattr(bound, "w_tail_idle", lambda _instance, _d: 0.0)
        return bound.lower_bound(inst)


@pytest.mark.parametrize("family", pm.MODE_FAMILIES)
def test_by_hand_on_the_generators_p6_seed2(family: str):
    """Device 5 (F 3, B 3, W 2; a = 4 GB, a_W = 2 GB, cap 8 GB): at its last B's start the item
    holds 4 GB, so at most (8 - 4) / 2 = 2 W passes are pending, and after that B only 3 W passes
    (6 s) remain, while the upstream chain B(4..0) and W(0) takes 1 + 3 + 2 + 2 + 3 + 1 = 12 s.
    Idle 6 s; with the head F(0..4) = 6 s and the load 12 x 8 = 96 s the bound is 108."""
    inst = pm.generate_modes(2, 6, family)
    assert (inst.forward_s[5], inst.backward_s[5], inst.weight_s[5]) == (3.0, 3.0, 2.0)
    assert bound.w_tail_idle(inst, 5) == pytest.approx(6.0)
    assert bound.lower_bound(inst) == pytest.approx(108.0)


def test_the_pending_count_comes_from_the_cap():
    """More room leaves more W passes for the end (10 GB: 3 pending, 4 x 2 = 8 s, idle 4 s; 20 GB:
    8 pending, 9 x 2 = 18 s cover the 12 s chain, no idle); W passes that hold nothing may all wait (no idle); without a
    split backward there is no W (no idle from this bound)."""
    inst = pm.generate_modes(2, 6, "recompute")
    caps = list(inst.memory_cap_bytes)
    assert bound.w_tail_idle(replace(inst, memory_cap_bytes=tuple(caps[:5] + [10 * GB])), 5) == (
        pytest.approx(12.0 - 4 * 2.0))
    assert bound.w_tail_idle(replace(inst, memory_cap_bytes=tuple(caps[:5] + [20 * GB])), 5) == 0.0
    assert bound.w_tail_idle(replace(inst, weight_grad_bytes=(0.0,) * 6), 5) == 0.0
    assert bound.w_tail_idle(replace(inst, memory_cap_bytes=None), 5) == 0.0


def test_never_above_the_enumerations_optimum_and_lifts_where_scanned(monkeypatch):
    """On the tiny seeds where it lifts the rest of the bound, the bound stays at or under the
    enumeration's optimum (an oracle that shares nothing with it) and is strictly above the bound
    without it; and on the seeds below 120 where the idle is positive it never exceeds the optimum."""
    for seed in LIFTED:
        inst = brute.tiny(seed)
        best = _pipeline_shared.optimum(inst)
        assert best is not None, seed
        value = bound.lower_bound(inst)
        assert value <= best + 1e-9, (seed, value, best)
        assert value > without_w_tail(monkeypatch, inst) + 1e-9, seed
    checked = 0
    for seed in range(120):
        inst = brute.tiny(seed)
        if max(bound.w_tail_idle(inst, d) for d in range(inst.stages)) <= 0:
            continue
        best = _pipeline_shared.optimum(inst)
        if best is None:
            continue
        checked += 1
        assert bound.lower_bound(inst) <= best + 1e-9, seed
    assert checked >= 12
