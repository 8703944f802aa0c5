"""Brute force for tiny instances, the oracle of the exact methods: every combination of every
decision's values (each parallel degree 1..N, every micro-batch, chunk count, recompute mode,
sequence-parallel setting and ZeRO stage up to the space's limits), each judged by the checker and
priced by the objective, one at a time. It shares no code with :func:`.model.space`, the
enumeration the exact methods use, so a rule that one drops and the other keeps shows up as a
disagreement."""

from __future__ import annotations

import itertools
import math

from coopt.problems.configtuner.model import RECOMPUTE, ZERO_STAGES, Instance, check, objective


def solve(instance: Instance) -> float | None:
    """The least iteration time over every configuration the checker accepts (None if none)."""
    n = instance.gpus
    best = math.inf
    degrees = range(1, n + 1)
    for t, p, d in itertools.product(degrees, degrees, degrees):
        if t * p * d != n:  # the product rule, cheap; the checker judges everything else
            continue
        for e, b, v, r, q, z in itertools.product(
            range(1, max(instance.experts, 1) + 1), range(1, instance.max_microbatch + 1),
            range(1, instance.max_interleave + 1), RECOMPUTE, (False, True), ZERO_STAGES,
        ):
            config = {"tp": t, "pp": p, "dp": d, "ep": e, "microbatch": b, "interleave": v,
                      "recompute": r, "sequence_parallel": q, "zero": z}
            solution = {"config": config}
            if not check(instance, solution):
                best = min(best, objective(instance, solution))
    return None if best == math.inf else best
