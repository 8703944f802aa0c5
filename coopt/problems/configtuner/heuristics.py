"""The searches of ``configtuner`` compared in the paper: ConfigTuner's pruned search, the
Megatron-LM rule of thumb, Calculon's search and a two-phase search. The exact enumeration (C1) and
the dual bound are in :mod:`.exact`, the layer-to-stage partition (C2) in :mod:`.partition`.

Every search prices its configurations in one or two vectorised calls of the analytic model
(:func:`coopt.problems.configtuner.model.evaluate`), so its cost is the number of
configurations it prices (``evaluated`` in each solution) times about a microsecond, plus a
fraction of a millisecond per call. ``|S|`` below is the size of the instance's space: the
(t, p, d) triples of N (``prod_i C(e_i + 2, 2)`` for ``N = prod_i p_i^e_i``), times the EP
degrees, micro-batches, interleavings, recompute modes, sequence-parallel settings and ZeRO stages
allowed.
"""

from __future__ import annotations

import numpy as np

from coopt.problem import Heuristic, NoSolution, Solution
from coopt.problems.configtuner import analytic
from coopt.problems.configtuner.exact import best_of
from coopt.problems.configtuner.model import (
    RECOMPUTE,
    Instance,
    evaluate,
    priced,
    select,
    space,
    structures,
    subset,
    symbol_values,
)


def configtuner(instance: Instance, seed: int = 0) -> Solution:
    """ConfigTuner's pruned search (arXiv 2512.24750, sec. ConfigTuner; reconstructed, no public
    code): predictability rules cut the space before any time is priced.

    1. Communication-volume ordering: tensor parallelism stays in a node (``t | G``) and so does
       expert parallelism (``t e <= G``): the two dimensions with the largest per-GPU volume get
       NVLink; pipeline and data parallelism (smaller volumes) cross nodes.
    2. Memory first: the memory of every remaining configuration is computed (a third of the
       work of pricing it); only those that fit go on.
    3. Recompute only as much as memory needs: among configurations that differ only in the
       recompute mode, only the fastest mode that fits is priced (recompute adds time and saves
       memory, none < selective < full, so this rule loses nothing).
    4. ZeRO-0 is not priced where ZeRO-1 is allowed and ``d > 1`` (the distributed optimizer moves
       no more bytes, keeps less memory and steps 1/d of the parameters: it loses nothing).

    Guarantee: optimal among configurations with TP and EP inside a node. Running time: memory
    of O(|S| / TP degrees beyond a node) configurations, time of about a third of those."""
    i = instance
    rows = structures(i, tp_within_node=True, ep_within_node=True)
    modes = tuple(r for r in RECOMPUTE if r in i.recompute)  # fastest first
    configs = space(i, rows, recompute=modes)
    if not len(configs):
        raise NoSolution("no configuration has TP and EP inside a node")
    values = symbol_values(i, configs)
    fits = analytic.evaluate(values, ("memory",))["memory"] <= i.gpu_memory
    if 1 in i.zero_stages:
        fits &= (configs.zero != 0) | (configs.dp == 1)
    # space() lists, per structure, every recompute mode (outer) x every other flag setting
    # (inner): per (structure, flags), keep the first mode that fits
    blocks = fits.reshape(len(rows), len(modes), -1)
    first = np.argmax(blocks, axis=1)
    structure, flag = np.nonzero(blocks.any(axis=1))
    width = blocks.shape[2]
    chosen = structure * len(modes) * width + first[structure, flag] * width + flag
    if not len(chosen):
        raise NoSolution("no configuration with TP and EP inside a node fits in memory")
    out = analytic.evaluate(select(values, chosen))
    index = int(np.argmin(out["time"]))
    solution = priced(subset(configs, chosen), out, index, len(chosen))
    solution["memory_checked"] = len(configs)
    return solution


def _rule_tp_degrees(instance: Instance) -> list[int]:
    """The tensor-parallel degrees the rule of thumb tries: at most 8, dividing the node, the
    (KV) heads and N."""
    i = instance
    return [t for t in range(1, min(8, i.gpus_per_node) + 1)
            if i.gpus_per_node % t == 0 and i.heads % t == 0 and i.kv_heads % t == 0 and i.gpus % t == 0]


def megatron(instance: Instance, seed: int = 0) -> Solution:
    """Megatron-LM's rule of thumb (Narayanan et al. SC21 sec. 3.3, "tensor parallelism up to the
    node, then pipeline parallelism across nodes"; research notes 3.c): the smallest tensor-parallel
    degree ``t`` (dividing the node, at most 8) with which one pipeline stage fits memory; if none
    does, ``t`` at its largest and the fewest pipeline stages that fit; data parallelism over the
    rest. Micro-batch 1, no interleaving, sequence parallel with selective recompute (full where
    selective does not fit), the distributed optimizer (ZeRO-1) where allowed.

    Guarantee: feasible when it returns. Running time O(TP degrees + pipeline degrees)."""
    i = instance
    ts = _rule_tp_degrees(i)
    if not ts:
        raise NoSolution("no tensor-parallel degree divides the node, the heads and N")
    modes = [r for r in ("selective", "full", "none") if r in i.recompute]
    zero = 1 if 1 in i.zero_stages else i.zero_stages[0]
    sp = (True,) if i.sequence_parallel else (False,)
    rows = [r for r in structures(i, max_interleave=1, expert_parallel=False) if r[4] == 1 and r[0] in ts]
    # the rule's order of preference: p = 1 with t ascending, then t largest with p ascending
    order = sorted(rows, key=lambda r: (0, r[0], 0) if r[1] == 1 else (1, -r[0], r[1]))
    order = [r for r in order if r[1] == 1 or r[0] == ts[-1]]
    evaluated = 0
    for mode in modes:
        configs = space(i, order, recompute=(mode,), zero_stages=(zero,), sequence_parallel=sp)
        if not len(configs):
            continue
        out = evaluate(i, configs)
        evaluated += len(configs)
        fits = np.flatnonzero(out["memory"] <= i.gpu_memory)
        if len(fits):
            return priced(configs, out, int(fits[0]), evaluated)
    raise NoSolution("the rule of thumb finds no pipeline depth that fits in memory")


def _calculon_zeros(instance: Instance) -> tuple[int, ...]:
    """The ZeRO stages of the instance that Calculon's space has (0 and 1)."""
    return tuple(z for z in instance.zero_stages if z <= 1)


def calculon(instance: Instance, seed: int = 0) -> Solution:
    """Calculon-style exhaustive search (calculon-ai/calculon, calculon/llm/optimal_execution.py
    lines 80-95 and 191-210): every TP, PP and DP degree, interleaving, recompute mode
    (none/attention-only/full), sequence parallelism and micro-batch, and optimizer sharding on or
    off; Calculon has no expert parallelism and no ZeRO-2/3, so here ``e = 1`` and ZeRO <= 1.
    Calculon prices one execution at a time in Python; this prices its space in one call.

    Guarantee: optimal within Calculon's space. Running time O(|S| / (EP degrees x ZeRO stages))."""
    zeros = _calculon_zeros(instance)
    if not zeros:
        raise NoSolution("Calculon's space has ZeRO 0 or 1 only; this instance allows neither")
    rows = structures(instance, expert_parallel=False)
    solution = best_of(instance, space(instance, rows, zero_stages=zeros))
    if solution is None:
        raise NoSolution("no configuration of Calculon's space fits in memory")
    return solution


#: Most layouts kept from the first phase of :func:`two_phase`, and how close to the best they must be.
KEEP, WITHIN = 4, 1.25


def two_phase(instance: Instance, seed: int = 0) -> Solution:
    """Ours: price the parallel layout first, then tune the rest. Phase one prices every
    ``(t, p, d, e)`` with every recompute, sequence-parallel and ZeRO choice at micro-batch 1 and
    no interleaving; phase two prices every micro-batch and interleaving (and flag) for the
    layouts within :data:`WITHIN` of the best phase-one time (at most :data:`KEEP`). The layout
    decides the communication and the memory; micro-batch and interleaving mostly trade the bubble
    against GEMM utilization, so a layout far behind at ``b = 1`` rarely wins (measured in
    docs/configtuner.md: 0 % gap on every shipped and generated instance).

    Guarantee: feasible; optimal when the best layout is among those kept. Running time: pricing
    of O(|S| / (micro-batches x interleavings) + KEEP x micro-batches x interleavings x flags)."""
    i = instance
    configs = space(i)
    values = symbol_values(i, configs)
    first = np.flatnonzero((configs.microbatch == 1) & (configs.interleave == 1))
    if not len(first):
        raise NoSolution("the space has no configuration at micro-batch 1 without interleaving")
    out = analytic.evaluate(select(values, first), ("time", "memory"))
    times = np.where(out["memory"] <= i.gpu_memory, out["time"], np.inf)
    # one integer per layout (t, p, d, e), each degree at most N
    n = i.gpus + 1
    layout = ((configs.tp * n + configs.pp) * n + configs.dp) * n + configs.ep
    keys, which = np.unique(layout[first], return_inverse=True)
    best = np.full(len(keys), np.inf)
    np.minimum.at(best, which, times)
    if not np.isfinite(best.min()):
        raise NoSolution("no layout fits in memory at micro-batch 1 (and so at none)")
    ranked = np.argsort(best, kind="stable")[:KEEP]
    kept = keys[ranked[best[ranked] <= WITHIN * best.min()]]
    second = np.flatnonzero(np.isin(layout, kept))
    out = analytic.evaluate(select(values, second))
    times = np.where(out["memory"] <= i.gpu_memory, out["time"], np.inf)
    return priced(subset(configs, second), out, int(np.argmin(times)), len(first) + len(second))


HEURISTICS = {
    "calculon": Heuristic(calculon, applies=lambda instance: bool(_calculon_zeros(instance)),
                          scope="instances allowing ZeRO 0 or 1, the only stages in Calculon's space"),
    "configtuner": configtuner,
    "megatron": Heuristic(megatron, applies=lambda instance: bool(_rule_tp_degrees(instance)),
                          scope="instances where some TP degree up to 8 divides the node, the heads and N"),
    "two_phase": two_phase,
}
