"""Hecaton's closed forms: per-die NoP volume of each tensor-parallel scheme, the AG-RS vs 1D
crossover in N, compute-to-communication ratios and their weak-scaling limits, and the DRAM side
with the DRAM bandwidth per die as a pluggable function of N.

Source: research-chiplet-chase-moesd.md section 1.d, a reconstruction [R] of Huang et al.,
"Hecaton", arXiv 2407.05784 (ring all-reduce / all-gather / reduce-scatter and SUMMA broadcast
cost models). One Llama block (GQA ratio g, FFN ratio phi = f/h), T tokens per iteration, training
(forward + backward), elements moved per die:

    S_kn  = sum over the four linears of (k + n) = h (6 + 2g + 3 phi)
    W_blk = sum of k n                           = h^2 (2 + 2g + 3 phi)
    V_1D    = 8 (N - 1)/N T h
    V_SUMMA = 2 (sqrt N - 1)/N (T S_kn + W_blk)
    V_AGRS  = kappa_b (sqrt N - 1)/N T S_kn    (kappa_b = 2 keeps the gathered inputs; 3 re-gathers)

The formulation (coopt.problems.hecaton.model) moves exactly V_1D and V_SUMMA (no recompute,
one micro-batch), V_AGRS with kappa_b = 2 (gathered inputs kept) or 3 (recompute), and
hecaton.nop_volume_agrs_regather (inputs re-gathered) on a square mesh when attention is local;
tests/test_hecaton_bounds.py checks that.

Weak scaling: T fixed, h = h0 sqrt(N/N0), so per-die compute T h^2/N stays constant. Then
R_AGRS tends to a constant, R_1D and R_SUMMA to 0. DRAM: the per-die compute-to-DRAM ratio of the
weight, gradient and optimizer traffic is 6 T B_d / (c_w F), independent of h and N except through
B_d(N): constant for DRAM distributed under the dies (B_d = B_port), vanishing like N^(-1/2) for
DRAM on the package edge (B_d = B_port 4 (sqrt N - 1)/N).
"""

from __future__ import annotations

import sympy as sp

from coopt.closed_forms import Bound, Quantity

SOURCE = "research-chiplet-chase-moesd.md 1.d [R], reconstructing Hecaton (arXiv 2407.05784)"

N = Quantity("N", "compute dies in the package", domain="positive", default=256)
N0 = Quantity("N0", "die count of the reference design (weak scaling)", default=256, latex="N_0")
T = Quantity("T", "tokens per iteration (b s)", default=4096)
h = Quantity("h", "hidden size", default=16384)
h0 = Quantity("h0", "hidden size of the reference design (weak scaling)", default=16384, latex="h_0")
g = Quantity("g", "GQA ratio n_kv / n_h", default=1 / 16)
phi = Quantity("phi", "FFN ratio f / h", default=3.25, latex=r"\phi")
kappa_b = Quantity("kappa_b", "AG-RS passes (2 caches gathered inputs, 3 re-gathers)", default=2,
                   latex=r"\kappa_b")
beta = Quantity("beta", "bytes per element", "B", default=2, latex=r"\beta")
link_per_flop = Quantity("B_over_F", "ring bandwidth B_eff over peak FLOP/s per die", "B/FLOP", default=1,
                         latex=r"B_{\mathrm{eff}}/F")
port = Quantity("B_port", "DRAM bandwidth of one port", "B/s", default=64e9, latex=r"B_{\mathrm{port}}")
dram_per_die = Quantity("B_d", "DRAM bandwidth available to one die", "B/s", default=64e9)
flops = Quantity("F", "peak FLOP/s per die", "FLOP/s", default=100e12)
c_w = Quantity("c_w", "DRAM bytes per parameter per iteration (weights, gradient, optimizer)", "B",
               default=22, latex="c_w")

_root = sp.sqrt(N.symbol)
_s_kn = h.symbol * (6 + 2 * g.symbol + 3 * phi.symbol)
_w_blk = h.symbol**2 * (2 + 2 * g.symbol + 3 * phi.symbol)
_compute = 6 * T.symbol * _w_blk / N.symbol  # training FLOPs per die per block (time x F)
_elements = Quantity("V", "elements sent per die per block per training iteration", "elements")
_ratio = Quantity("R", "per-die compute time over NoP time")

_v_1d = 8 * (N.symbol - 1) / N.symbol * T.symbol * h.symbol
_v_summa = 2 * (_root - 1) / N.symbol * (T.symbol * _s_kn + _w_blk)
_v_agrs = kappa_b.symbol * (_root - 1) / N.symbol * T.symbol * _s_kn


def _comm_ratio(volume: sp.Expr) -> sp.Expr:
    """(compute FLOPs / F) / (volume beta / B_eff), simplified."""
    return sp.simplify(_compute * link_per_flop.symbol / (volume * beta.symbol))


def _weak(expr: sp.Expr) -> sp.Expr:
    """Substitute h = h0 sqrt(N / N0): workload and die count grow together."""
    return sp.simplify(expr.subs(h.symbol, h0.symbol * sp.sqrt(N.symbol / N0.symbol)))


_r_agrs, _r_1d, _r_summa = _comm_ratio(_v_agrs), _comm_ratio(_v_1d), _comm_ratio(_v_summa)
_weak_inputs = (N, N0, T, h0, g, phi, beta, link_per_flop)
_edge_bandwidth = port.symbol * 4 * (_root - 1) / N.symbol

BOUNDS = [
    Bound(
        name="hecaton.nop_volume_1d",
        summary="Per-die NoP elements of one block under 1D (Megatron) tensor parallelism",
        source=SOURCE,
        output=_elements,
        inputs=(N, T, h),
        expr=_v_1d,
        assumptions=("four ring all-reduces of T x h per block (two forward, two backward)",),
        notes="Tends to 8 T h as N grows: 1D never gets cheaper per die.",
    ),
    Bound(
        name="hecaton.nop_volume_summa",
        summary="Per-die NoP elements of one block under 2D SUMMA (Optimus) on a sqrt N x sqrt N mesh",
        source=SOURCE,
        output=_elements,
        inputs=(N, T, h, g, phi),
        expr=_v_summa,
        assumptions=("square mesh", "one micro-batch (weight panels cross the NoP once per micro-batch)"),
        notes="The W_blk term: weights cross the NoP.",
    ),
    Bound(
        name="hecaton.nop_volume_agrs",
        summary="Per-die NoP elements of one block under Hecaton's 2D weight-stationary AG-RS",
        source=SOURCE,
        output=_elements,
        inputs=(N, T, h, g, phi, kappa_b),
        expr=_v_agrs,
        assumptions=("square mesh", "attention local (every row block holds whole sequences)"),
        notes="V_AGRS(kappa_b = 2) = V_SUMMA - 2 (sqrt N - 1)/N W_blk: SUMMA without moving weights. "
        "V_AGRS N / (sqrt N - 1) does not depend on N.",
    ),
    Bound(
        name="hecaton.nop_volume_agrs_regather",
        summary="Per-die NoP elements of one block under AG-RS when the backward pass re-gathers X",
        source=SOURCE,
        output=_elements,
        inputs=(N, T, h, g, phi),
        expr=(_root - 1) / N.symbol * T.symbol * (2 * _s_kn + h.symbol * (3 + phi.symbol)),
        assumptions=("square mesh", "attention local", "sharded inputs stashed, gathered again in backward"),
        notes="The exact form of the notes' kappa_b = 3 're-gathered' case: only the inputs (sum k = "
        "h (3 + phi)) cross a third time, so it lies between kappa_b = 2 and 3.",
    ),
    Bound(
        name="hecaton.crossover_agrs_1d",
        summary="Die count above which AG-RS moves fewer bytes per die than 1D tensor parallelism",
        source=SOURCE,
        output=Quantity("N_star", "crossover die count", latex="N^*"),
        inputs=(g, phi, kappa_b),
        expr=(kappa_b.symbol * (6 + 2 * g.symbol + 3 * phi.symbol) / 8 - 1) ** 2,
        assumptions=("kappa_b (6 + 2g + 3 phi) > 8 (else AG-RS moves less at every N)",),
        notes="From V_AGRS = V_1D <=> sqrt N + 1 = kappa_b (6 + 2g + 3 phi)/8. Llama-3.1-405B "
        "(g = 1/16, phi = 3.25): N* = 8.8 (kappa_b = 2), 24.5 (kappa_b = 3).",
    ),
    Bound(
        name="hecaton.ratio_agrs",
        summary="Compute-to-NoP time ratio per die under AG-RS",
        source=SOURCE,
        output=_ratio,
        inputs=(N, h, g, phi, kappa_b, beta, link_per_flop),
        expr=_r_agrs,
        assumptions=("training compute 6 T W_blk / N per die", "square mesh, attention local"),
    ),
    Bound(
        name="hecaton.ratio_1d",
        summary="Compute-to-NoP time ratio per die under 1D tensor parallelism",
        source=SOURCE,
        output=_ratio,
        inputs=(N, h, g, phi, beta, link_per_flop),
        expr=_r_1d,
        assumptions=("training compute 6 T W_blk / N per die",),
    ),
    Bound(
        name="hecaton.ratio_summa",
        summary="Compute-to-NoP time ratio per die under 2D SUMMA",
        source=SOURCE,
        output=_ratio,
        inputs=(N, T, h, g, phi, beta, link_per_flop),
        expr=_r_summa,
        assumptions=("training compute 6 T W_blk / N per die", "square mesh, one micro-batch"),
    ),
    Bound(
        name="hecaton.ratio_agrs_weak",
        summary="AG-RS compute-to-NoP ratio under weak scaling (h = h0 sqrt(N/N0), T fixed)",
        source=SOURCE,
        output=_ratio,
        inputs=(*_weak_inputs, kappa_b),
        expr=_weak(_r_agrs),
        notes="Tends to the constant hecaton.ratio_agrs_weak_limit; the factor sqrt N/(sqrt N - 1) "
        "is the 'nearly' of 'nearly constant'.",
    ),
    Bound(
        name="hecaton.ratio_1d_weak",
        summary="1D compute-to-NoP ratio under weak scaling: vanishes like N^(-1/2)",
        source=SOURCE,
        output=_ratio,
        inputs=_weak_inputs,
        expr=_weak(_r_1d),
    ),
    Bound(
        name="hecaton.ratio_summa_weak",
        summary="SUMMA compute-to-NoP ratio under weak scaling: vanishes (the weight term takes over)",
        source=SOURCE,
        output=_ratio,
        inputs=_weak_inputs,
        expr=_weak(_r_summa),
    ),
    Bound(
        name="hecaton.ratio_agrs_weak_limit",
        summary="The constant AG-RS compute-to-NoP ratio approaches under weak scaling",
        source=SOURCE,
        output=_ratio,
        inputs=(N0, h0, g, phi, kappa_b, beta, link_per_flop),
        expr=6 * h0.symbol * (2 + 2 * g.symbol + 3 * phi.symbol) * link_per_flop.symbol
        / (kappa_b.symbol * sp.sqrt(N0.symbol) * (6 + 2 * g.symbol + 3 * phi.symbol) * beta.symbol),
        notes="lim_{N -> oo} of hecaton.ratio_agrs_weak (checked with sympy.limit in the tests).",
    ),
    Bound(
        name="hecaton.dram_bandwidth_distributed",
        summary="DRAM bandwidth per die with a DRAM port under every die: independent of N",
        source=SOURCE,
        output=dram_per_die,
        inputs=(port,),
        expr=port.symbol,
        assumptions=("one port per die (3D-stacked or interleaved memory dies)",),
    ),
    Bound(
        name="hecaton.dram_bandwidth_edge",
        summary="DRAM bandwidth per die with DRAM on the package edge only: 4 (sqrt N - 1)/N ports per die",
        source=SOURCE,
        output=dram_per_die,
        inputs=(N, port),
        expr=_edge_bandwidth,
        assumptions=("square sqrt N x sqrt N grid, one port per perimeter die",),
    ),
    Bound(
        name="hecaton.compute_to_dram_ratio",
        summary="Per-die compute time over DRAM time for weights, gradients and optimizer state",
        source=SOURCE,
        output=Quantity("R_D", "per-die compute time over DRAM time"),
        inputs=(T, dram_per_die, c_w, flops),
        expr=6 * T.symbol * dram_per_die.symbol / (c_w.symbol * flops.symbol),
        assumptions=("layer-major schedule: weights read once per pass, not once per micro-batch",),
        notes="h and N cancel: under weak scaling the ratio follows B_d(N) alone. Distributed DRAM: "
        "constant (weak scaling holds). Edge DRAM: substitute hecaton.dram_bandwidth_edge, the ratio "
        "falls like 24 T B_port/(c_w F sqrt N): weak scaling fails unless T grows like sqrt N.",
    ),
]
