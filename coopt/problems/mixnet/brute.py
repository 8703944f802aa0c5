"""Brute force for tiny instances, the oracle of the exact methods: every circuit set the checker
accepts (symmetric, integer, at most ``alpha`` ports per server, on any pair), in every region at
once (``mixnet``) or for every segment of every segmentation at once (``mixnet_plan``), each
evaluated with the closed-form throughput."""

from __future__ import annotations

import itertools

import numpy as np

from coopt.problems.mixnet.model import Instance, worst_case
from coopt.problems.mixnet.plan_model import Instance as PlanInstance
from coopt.problems.mixnet.plan_model import plan_time

#: Beyond this many circuit sets the enumeration refuses (the oracle's instances stay far below).
MAX_SETS = 200_000


def circuit_sets(servers: int, alpha: int) -> list[np.ndarray]:
    """Every symmetric integer matrix with a zero diagonal and row sums <= ``alpha``."""
    pairs = list(itertools.combinations(range(servers), 2))
    found = []
    for counts in itertools.product(range(alpha + 1), repeat=len(pairs)):
        x = np.zeros((servers, servers), dtype=int)
        for (i, j), c in zip(pairs, counts, strict=True):
            x[i, j] = x[j, i] = c
        if (x.sum(axis=1) <= alpha).all():
            found.append(x)
    return found


def optimum(instance: Instance) -> float:
    """The largest worst-case throughput over every circuit set of every region (1/s)."""
    alpha = instance.fabric.alpha
    per_region = [circuit_sets(instance.region_size(r), alpha) for r in range(instance.regions)]
    total = int(np.prod([len(s) for s in per_region]))
    if total > MAX_SETS:
        raise ValueError(f"{total} circuit sets are too many to enumerate (at most {MAX_SETS})")
    return max(worst_case(instance, list(choice)) for choice in itertools.product(*per_region))


def plan_optimum(instance: PlanInstance) -> float:
    """The least plan time over every segmentation of the layers (layer 0 always starts one) and
    every circuit set of every segment at once (s)."""
    layers = len(instance.layers)
    sets = circuit_sets(instance.servers, instance.fabric.alpha)
    best = np.inf
    for cuts in itertools.product((False, True), repeat=layers - 1):
        starts = [0] + [l for l, cut in zip(range(1, layers), cuts, strict=True) if cut]
        if len(sets) ** len(starts) > MAX_SETS:
            raise ValueError(f"{len(sets) ** len(starts)} plans are too many to enumerate "
                             f"(at most {MAX_SETS})")
        for choice in itertools.product(sets, repeat=len(starts)):
            best = min(best, plan_time(instance, starts, list(choice)))
    return float(best)
