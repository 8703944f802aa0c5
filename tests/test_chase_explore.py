"""The outer loop over architectures: every evaluated design is feasible, the best so far never
gets worse, and on a small space the loop reaches the exhaustive optimum."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from coopt.problems.chase import explore
from coopt.problems.chase.arch_model import ARCH_TYPES, ArchInstance, check, design_solution, make_types
from coopt.problems.chase.workloads import Task, Workload, random_layered, sparse_kernel, transformer_step


@pytest.fixture(scope="module")
def space() -> ArchInstance:
    gpu, old, npu, cpu = make_types(ARCH_TYPES, 1)
    types = (replace(gpu, max_count=2), replace(npu, max_count=3), replace(cpu, max_count=1))
    return ArchInstance(
        types=types, racks=2, rack_power=2500.0, rack_units=42, switch_radix=16, switch_power=300.0,
        switch_units=1.0, switch_cost=5000.0, uplink_bandwidth=50e9, copper_cost=100.0, optical_cost=1000.0,
        copper_latency=1e-6, optical_latency=2e-6, island_latency=0.5e-6, budget=90_000.0,
        oversubscription=2.0, memory_required=0.0)


@pytest.fixture(scope="module")
def portfolio() -> list[Workload]:
    return [transformer_step(layers=1, tp=2, hidden=2048, sequence=1024),
            sparse_kernel(random.Random(1), blocks=3, iterations=1),
            random_layered(random.Random(2), 8, ccr=1.0)]


@pytest.fixture(scope="module")
def optimum(space, portfolio):
    return explore.exhaustive(space, portfolio)


def test_the_exhaustive_search_covers_the_feasible_space(space, portfolio, optimum):
    best, count = optimum
    designs = explore.designs(space)
    assert count == len(designs) > 5
    assert all(check(space, design_solution(space, d)) == [] for d in designs)
    scores = [explore.evaluate(space, d, portfolio).score for d in designs]
    assert best.score == min(scores)


def test_the_outer_loop_reaches_the_exhaustive_optimum(space, portfolio, optimum):
    best, count = optimum
    trace = explore.explore(space, portfolio, ((1, 0, 0), (0, 0, 0)), iterations=count)
    assert all(later.score <= earlier.score for earlier, later in zip(trace, trace[1:], strict=False))
    assert all(check(space, design_solution(space, e.design)) == [] for e in trace)
    assert trace[-1].score == pytest.approx(best.score, rel=1e-12)


def test_random_search_is_monotone_and_feasible(space, portfolio):
    trace = explore.random_search(space, portfolio, iterations=8, seed=3)
    assert len(trace) == 8
    assert all(later.score <= earlier.score for earlier, later in zip(trace, trace[1:], strict=False))
    assert all(check(space, design_solution(space, e.design)) == [] for e in trace)


def test_a_design_that_cannot_run_a_task_scores_inf(space):
    cpu_only = explore.feasible(space, ((0, 0, 1), (0, 0, 0)))
    assert cpu_only is not None
    gpu_task = Workload((Task("t", flops=1e12, types=("gpu",)),))
    assert math.isinf(explore.evaluate(space, cpu_only, [gpu_task]).score)


def test_telemetry_blames_compute_on_a_compute_bound_portfolio(space):
    design = explore.feasible(space, ((1, 0, 0), (0, 0, 0)))
    heavy = [Workload(tuple(Task(f"t{k}", flops=5e13) for k in range(4)))]
    result = explore.evaluate(space, design, heavy)
    assert result.blame[("compute", "gpu")] == pytest.approx(1.0)
    assert result.utilisation["gpu"] == pytest.approx(1.0)
