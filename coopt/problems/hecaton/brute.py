"""Brute force for Hecaton instances small enough to enumerate: the oracle of the exact methods.

:func:`solve` tries every tuple of per-block options the instance allows (:func:`.model.options`:
no dominance pruning, no SRAM screen borrowed from the exact methods), keeps the tuples the checker's
own rows accept (SRAM per block, the DRAM stash total, one scheme) and returns the least objective.
The winner is then judged by :func:`.model.check` itself, so a brute-force optimum is always a
checker-accepted solution.

:func:`tiny` draws the instances: 2 or 3 blocks on 1 to 8 dies, random subsets of schemes,
micro-batch counts and recompute flags, either objective and overlap model, ``one_scheme`` on a
third of them, SRAM drawn between the least and the largest need of the options (so the SRAM screen
bites), and DRAM drawn around the stash of the optimum without the DRAM row (so the row binds on
most seeds, and a few instances are infeasible).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace

from coopt.problems.hecaton.model import (
    SCHEMES,
    Instance,
    Model,
    Option,
    Package,
    check,
    cost,
    options,
    to_solution,
    transition,
)

#: Most option tuples :func:`tiny` lets an instance have (a few tenths of a second to enumerate).
MAX_TUPLES = 30_000


def best(instance: Instance, dram: bool = True) -> tuple[float, list[Option]] | None:
    """The least objective over every allowed option tuple and one tuple reaching it (None: no
    tuple is feasible); ``dram=False`` drops the DRAM stash row."""
    ffn = instance.model.block_ffn
    sram = instance.package.sram_bytes
    rows = [[(o, cost(instance, f, o)) for o in options(instance) if cost(instance, f, o).sram_bytes <= sram]
            for f in ffn]
    layouts = sorted({o.layout for o in options(instance)})
    tau = {(a, b): transition(instance, a, b) for a in layouts for b in layouts}
    found: tuple[float, list[Option]] | None = None
    for chosen in itertools.product(*rows):
        if instance.one_scheme and len({o.scheme for o, _ in chosen}) > 1:
            continue
        if dram and sum(c.stash_bytes for _, c in chosen) > instance.stash_capacity:
            continue
        value = sum(c.objective for _, c in chosen)
        value += sum(tau[a.layout, b.layout] for (a, _), (b, _) in itertools.pairwise(chosen))
        if found is None or value < found[0]:
            found = (value, [o for o, _ in chosen])
    return found


def solve(instance: Instance) -> float | None:
    """The brute-force optimum (None when nothing is feasible), its solution judged by the checker."""
    found = best(instance)
    if found is None:
        return None
    violations = check(instance, to_solution(instance, found[1]))
    if violations:
        raise AssertionError(f"the brute-force optimum fails the checker: {violations[:2]}")
    return found[0]


def tiny(seed: int) -> Instance:
    """A seeded instance with at most :data:`MAX_TUPLES` option tuples (module docstring)."""
    rng = random.Random(seed)
    heads = rng.choice((2, 4, 8))
    hidden = heads * rng.choice((16, 32, 64))
    widths = [hidden * rng.choice((2, 3, 4)) for _ in range(2)]
    blocks = rng.choice(((3,), (2, 1), (1, 2), (2,), (1, 1)))
    model = Model(
        hidden=hidden, heads=heads, kv_heads=heads // rng.choice((1, 2)),
        sequence_length=rng.choice((32, 64, 128)), sequences=rng.choice((1, 2, 4)), causal=rng.random() < 0.8,
        bytes_per_element=rng.choice((1, 2)), segment_blocks=blocks, segment_ffn=tuple(widths[: len(blocks)]),
    )
    package = Package(
        dies=rng.choice((1, 2, 4, 4, 8)), flops=rng.choice((1.0, 4.0, 16.0)) * 1e12,
        sram_bytes=1e18, link_bandwidth=rng.choice((8, 32, 128)) * 1e9, ring_directions=rng.choice((1, 2)),
        hop_latency=rng.choice((0.0, 20e-9, 1e-6)), dram_placement=rng.choice(("distributed", "edge")),
        dram_port_bandwidth=rng.choice((4, 16, 64)) * 1e9, dram_bytes=1e18,
        optimizer_state_bytes_per_param=rng.choice((0.0, 12.0)),
        optimizer_traffic_bytes_per_param=rng.choice((0.0, 16.0)),
        mac_energy=rng.choice((0.1, 0.3, 1.0)) * 1e-12,
        nop_energy_per_bit=rng.choice((0.1, 0.5, 2.0)) * 1e-12,
        dram_energy_per_bit=rng.choice((1.0, 5.0, 20.0)) * 1e-12, static_power=rng.choice((0.0, 0.5, 5.0)),
    )
    schemes = tuple(s for s in SCHEMES if rng.random() < 0.7) or (rng.choice(SCHEMES),)
    microbatches = tuple(mu for mu in (1, 2, 4) if rng.random() < 0.6 and model.tokens % mu == 0) or (1,)
    instance = Instance(
        model=model, package=package, schemes=schemes, microbatches=microbatches,
        recompute=rng.choice(((False,), (True,), (False, True), (False, True))),
        objective=rng.choice(("time", "energy")), overlap=rng.choice(("full", "none")),
        one_scheme=rng.random() < 0.3,
    )
    while len(options(instance)) ** instance.blocks > MAX_TUPLES and len(instance.microbatches) > 1:
        instance = replace(instance, microbatches=instance.microbatches[:-1])
    if len(options(instance)) ** instance.blocks > MAX_TUPLES:
        instance = replace(instance, model=replace(model, segment_blocks=(2,), segment_ffn=(widths[0],)))
    # SRAM between the least and the largest need of the options: the screen bites, and now and
    # then (below the least) nothing fits
    needs = sorted(cost(instance, f, o).sram_bytes for f in set(instance.model.block_ffn)
                   for o in options(instance))
    if not needs:  # e.g. summa alone on a non-square die count: nothing to choose from
        return instance
    share = rng.choice((0.0, 0.3, 0.6, 1.0, 1.0)) if rng.random() < 0.95 else -0.1
    sram = needs[0] * 0.999 if share < 0 else needs[min(len(needs) - 1, int(share * len(needs)))]
    instance = replace(instance, package=replace(package, sram_bytes=float(sram)))
    # DRAM around the stash of the optimum without the row (resident state always fits)
    free = best(instance, dram=False)
    if free is None:
        return instance
    ffn = instance.model.block_ffn
    stashes = [cost(instance, f, o).stash_bytes for f, o in zip(ffn, free[1], strict=True)]
    least = sum(min(cost(instance, f, o).stash_bytes for o in options(instance)
                    if cost(instance, f, o).sram_bytes <= sram) for f in instance.model.block_ffn)
    share = rng.choice((0.0, 0.3, 0.7, 1.0, 1.5)) if rng.random() < 0.95 else -0.2
    stash = least + share * (sum(stashes) - least)
    dram = math.ceil(max(stash, 0.0) + instance.resident_bytes) * package.dies
    return replace(instance, package=replace(instance.package, dram_bytes=float(dram)))
