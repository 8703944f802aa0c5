"""The table of Pareto fronts the scope DP and heuristics share (:mod:`coopt.problems.scope.fronts`)
and the greedy probe of the search: properties of the live code against the cost model itself.
(The comparison with the code they replaced is ``benchmarks/regression/scope_reference.py``.)"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problems.scope import fronts
from coopt.problems.scope import heuristics as solvers
from coopt.problems.scope import model as scope_model
from coopt.problems.scope.model import Instance, cluster_options, segment_weight_bytes

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "scope"


@pytest.mark.parametrize("checkpoint", [fronts.CHECKPOINT, 2, 3])
@pytest.mark.parametrize("seed,size", [(0, 3), (1, 8), (2, 20), (4, 12)])
def test_fronts_equal_the_cost_model_s_cluster_options(seed, size, checkpoint, monkeypatch):
    # short checkpoint strides make the clusters here resume from stored sums mid-way
    monkeypatch.setattr(fronts, "CHECKPOINT", checkpoint)
    inst = scope_model.generate(seed, size)
    pairs = [(first, last) for first in range(inst.n_layers) for last in range(first, min(inst.n_layers, first + 9))]
    # in order (each cluster grows the running sums of the one before) and shuffled (sums resumed
    # from a longer or a shorter cluster, or started afresh)
    for order in (pairs, random.Random(seed).sample(pairs, len(pairs))):
        table = fronts.Table(inst)
        for first, last in order:
            fits = segment_weight_bytes(inst, first, last) <= inst.chiplets * inst.sram_bytes
            assert table.front(first, last) == (cluster_options(inst, first, last) if fits else [])


def _variants(seed: int, size: int) -> list[Instance]:
    """A generated instance, the same with clusters allowed to span the chain, with one
    partition only, and with SRAM so tight that some segments and clusters do not fit."""
    inst = scope_model.generate(seed, size)
    return [inst, replace(inst, max_cluster_layers=inst.n_layers), replace(inst, partitions=("WS",)),
            replace(inst, sram_bytes=inst.sram_bytes / 3)]


@pytest.mark.parametrize("seed,size", [(0, 6), (3, 9)])
def test_a_probe_s_interval_is_where_it_repeats_its_answer(seed, size):
    """[low, high) of a greedy probe: the same answer and interval at low, and at high (where a
    need it looked up changes) an interval starting at or above high."""
    for inst in _variants(seed, size):
        cost, rng = solvers.StructureCost(inst), random.Random(seed)
        width = len(inst.partitions)
        for first in range(inst.n_layers):
            for last in range(first, inst.n_layers):
                top = sum(cost.single_stages[first * width:(last + 1) * width])
                for theta in (top, top * rng.random(), top * rng.random() ** 4):
                    answer = solvers._greedy_pack(cost, first, last, theta)
                    low, high = answer[1:]
                    assert low <= theta < high
                    if math.isfinite(low):
                        assert solvers._greedy_pack(cost, first, last, low) == answer
                    if math.isfinite(high):
                        assert solvers._greedy_pack(cost, first, last, high)[1] >= high


def test_fronts_honour_the_partition_list_and_its_order():
    tail6 = load(INSTANCES / "0-resnet152-conv4-tail6-m8.toml").instance
    for partitions in (("WS",), ("IS",), ("WS", "IS")):
        inst = replace(tail6, partitions=partitions)
        table = fronts.Table(inst)
        for first in range(inst.n_layers):
            for last in range(first, inst.n_layers):
                assert table.front(first, last) == cluster_options(inst, first, last)
