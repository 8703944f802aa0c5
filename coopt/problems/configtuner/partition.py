"""C2, the layer-to-stage partition of one pipelined configuration: a MILP, an exact DP and the
brute force they are tested against.

For a fixed 1F1B configuration (``pp = p >= 2``, ``interleave = 1``) choose ``n_s >= 1`` layers
per stage, ``sum_s n_s = L``, to minimise the pipeline time ``(m - 1) max_s tau_s + sum_s tau_s``
with ``tau_s = n_s tau_l + P2P + [s = 0] t_emb + [s = p-1] t_head`` and each stage's memory
``n_s (states_l + stored_l min(m, p - s)) + [s in {0, p-1}] emb + [s = p-1] logits + working +
reserve <= M_GPU`` (:mod:`.analytic`). The transformer layers are identical, so a contiguous split
is determined by the counts ``n_s``: integer ``n_s`` lose nothing against binaries per
(layer, stage). ``sum_s tau_s`` is a constant, so the MILP is::

    min (m - 1) T / T_ref    s.t.  T >= n_s tau_l + c_s,  n_s a_s + b_s <= M_GPU,  sum n_s = L,
                                   n_s in {1..L} integer

and the reported objective adds the constant back. Megatron's uniform split (``n_s = L/p``) is
C1's pipeline; :func:`partition_dp` is the exact DP, :func:`partition_brute` the brute force.
Data-parallel and optimizer tails are outside C2 (their overlap differs per stage): C2 is the pipeline time.

Memory rows are scaled to GiB and checked again exactly by :func:`partition_feasible`.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.configtuner.model import Instance, evaluate, space_of


def stage_data(instance: Instance, config: dict) -> dict[str, float]:
    """The per-layer and per-stage parts of a 1F1B configuration (``interleave = 1``, ``pp > 1``):
    layer time per micro-batch, p2p, head and embedding time; memory per layer (states, stored
    activations), embedding states, logits, working set; micro-batches ``m``."""
    if config["interleave"] != 1 or config["pp"] < 2:
        raise ValueError("the partition is for a pipelined 1F1B configuration (pp >= 2, interleave = 1)")
    out = evaluate(instance, space_of(config))
    keys = ("layer_time", "p2p", "head_time", "emb_time", "layer_states", "emb_states",
            "layer_stored", "working", "logits", "microbatches")
    return {k: float(out[k][0]) for k in keys}


def stage_time(data: dict[str, float], stage: int, stages: int, layers: int) -> float:
    """tau_s: one micro-batch's forward and backward on stage ``stage`` holding ``layers`` layers."""
    extra = data["emb_time"] if stage == 0 else data["head_time"] if stage == stages - 1 else 0.0
    return layers * data["layer_time"] + data["p2p"] + extra


def stage_memory(instance: Instance, data: dict[str, float], stage: int, stages: int, layers: int) -> float:
    """Memory of stage ``stage`` holding ``layers`` layers: its layers' states and the activations
    of the ``min(m, p - s)`` micro-batches 1F1B keeps in flight there, one embedding copy on the
    first and on the last stage, the logits on the last."""
    in_flight = min(data["microbatches"], stages - stage)
    ends = data["emb_states"] if stage in (0, stages - 1) else 0.0
    logits = data["logits"] if stage == stages - 1 else 0.0
    return (layers * (data["layer_states"] + data["layer_stored"] * in_flight) + ends + logits
            + data["working"] + instance.memory_reserve)


def pipeline_time(data: dict[str, float], counts: list[int]) -> float:
    """1F1B with stage times tau_s: (m - 1) max_s tau_s + sum_s tau_s."""
    taus = [stage_time(data, s, len(counts), n) for s, n in enumerate(counts)]
    return (data["microbatches"] - 1) * max(taus) + sum(taus)


def partition_feasible(instance: Instance, data: dict[str, float], counts: list[int]) -> bool:
    p = len(counts)
    return all(n >= 1 for n in counts) and sum(counts) == instance.layers and all(
        stage_memory(instance, data, s, p, n) <= instance.gpu_memory for s, n in enumerate(counts))


def uniform_partition(instance: Instance, config: dict) -> list[int] | None:
    """Megatron's split: L/p layers on every stage (None if p does not divide L)."""
    p = config["pp"]
    return None if instance.layers % p else [instance.layers // p] * p


def build_partition(instance: Instance, config: dict) -> pyo.ConcreteModel:
    """The C2 MILP above; ``model.constant`` is ``sum_s tau_s`` and ``objective_unit`` the scale."""
    data = stage_data(instance, config)
    p, L = config["pp"], instance.layers
    m = pyo.ConcreteModel()
    m.S = pyo.RangeSet(0, p - 1)
    m.n = pyo.Var(m.S, domain=pyo.Integers, bounds=(1, max(1, L)))
    scale = max(stage_time(data, p - 1, p, max(1, L // p)), 1e-12)
    m.T = pyo.Var(domain=pyo.NonNegativeReals)
    m.layers = pyo.Constraint(expr=sum(m.n[s] for s in m.S) == L)

    def bottleneck(m, s):
        fixed = stage_time(data, s, p, 0)
        return (m.n[s] * data["layer_time"] + fixed) / scale <= m.T

    m.bottleneck = pyo.Constraint(m.S, rule=bottleneck)

    def memory(m, s):
        per_layer = stage_memory(instance, data, s, p, 1) - stage_memory(instance, data, s, p, 0)
        fixed = stage_memory(instance, data, s, p, 0)
        return m.n[s] * per_layer / 2**30 + fixed / 2**30 <= instance.gpu_memory / 2**30

    m.memory = pyo.Constraint(m.S, rule=memory)
    m.time = pyo.Objective(expr=(data["microbatches"] - 1) * m.T, sense=pyo.minimize)
    m.objective_unit = scale
    m.constant = sum(stage_time(data, s, p, 0) for s in range(p)) + L * data["layer_time"]
    m.data = data
    return m


def partition_dp(instance: Instance, config: dict) -> tuple[list[int], float] | None:
    """C2 exact: layers per stage minimising the 1F1B pipeline time under each stage's memory.

    ``sum_s tau_s = L tau_l + p P2P + t_emb + t_head`` does not depend on the split, so the
    pipeline time is minimised by minimising ``max_s tau_s``; ``f[s][l]``, the least bottleneck of
    stages 0..s holding the first ``l`` layers, is ``min_n max(f[s-1][l-n], tau_s(n))`` over the
    ``n >= 1`` layers stage ``s`` can hold in memory. O(p L^2) (numpy over l). Returns (counts,
    pipeline time) or None when no split fits."""
    data = stage_data(instance, config)
    p, L = config["pp"], instance.layers
    if p > L:
        return None
    inf = np.inf
    f = np.full(L + 1, inf)
    f[0] = 0.0
    choice = np.zeros((p, L + 1), dtype=np.int64)
    for s in range(p):
        new = np.full(L + 1, inf)
        for n in range(1, L + 1):
            if stage_memory(instance, data, s, p, n) > instance.gpu_memory:
                break  # memory grows with n
            candidate = np.maximum(f[: L + 1 - n], stage_time(data, s, p, n))
            better = candidate < new[n:]
            new[n:] = np.where(better, candidate, new[n:])
            choice[s, n:][better] = n
        f = new
    if not np.isfinite(f[L]):
        return None
    counts, left = [], L
    for s in range(p - 1, -1, -1):
        n = int(choice[s, left])
        counts.append(n)
        left -= n
    counts.reverse()
    return counts, pipeline_time(data, counts)


def partition_brute(instance: Instance, config: dict) -> float | None:
    """Every composition of L into p positive parts (tiny cases only): the least pipeline time."""
    import itertools

    data = stage_data(instance, config)
    p, L = config["pp"], instance.layers
    best = None
    for cuts in itertools.combinations(range(1, L), p - 1):
        bounds = (0, *cuts, L)
        counts = [bounds[j + 1] - bounds[j] for j in range(p)]
        if partition_feasible(instance, data, counts):
            value = pipeline_time(data, counts)
            best = value if best is None or value < best else best
    return best


def partition_milp(
    instance: Instance, config: dict, options: SolveOptions | None = None
) -> tuple[list[int], float] | None:
    """C2 by the MILP of :mod:`coopt.problems.configtuner.partition` (HiGHS); (counts,
    pipeline time) or None when no split fits."""
    from coopt.solvers.highs import solve_model

    if instance.layers < config["pp"]:
        return None
    model = build_partition(instance, config)
    result = solve_model(model, options or SolveOptions(gap=1e-9))
    if result.status == "infeasible":
        return None
    if result.status != "optimal":
        raise RuntimeError(f"HiGHS ended the partition MILP with status {result.status}")
    counts = [round(pyo.value(model.n[s])) for s in model.S]
    if not partition_feasible(instance, model.data, counts):
        raise RuntimeError(f"the partition MILP returned an infeasible split {counts}")
    return counts, pipeline_time(model.data, counts)
