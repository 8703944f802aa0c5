"""ConfigTuner's analytic model as closed forms: the iteration time of one configuration and each
term of its breakdown, its memory, MFU/HFU, and the textbook forms they reduce to.

The ``configtuner.time.*`` entries and ``configtuner.iteration_time`` are the very expressions
the search evaluates (:mod:`coopt.problems.configtuner.analytic`), so ``coopt bound
configtuner.iteration_time --set t=4 --set p=8 ...`` prints and prices any configuration, with
the defaults of GPT-3 175B on 64 A100 in Korthikanti et al.'s sequence-parallel + selective run
(t 8, p 8, v 3, b 1, batch 64; TP on NVLink, PP and DP on the NIC). The short forms below are
checked against the full model in tests/test_configtuner_bounds.py:

* bubble share of an interleaved 1F1B pipeline with equal stages: ``(p - 1) / (v m + p - 1)``;
* Hockney's effective bandwidth ``B_eff(M) = M / (alpha + M / B)``, half of ``B`` at ``M = alpha B``;
* GEMM utilization ``U(W) = U_max W / (W + W_half)``;
* model FLOPs of a GPT (Narayanan et al. SC21 eq. 3): ``72 B_g s L h^2 (1 + s/(6h) + V/(12 L h))``;
* the number of ``(t, p, d)`` with ``t p d = N``: ``prod_i C(e_i + 2, 2)`` for ``N = prod p_i^e_i``.
"""

from __future__ import annotations

import math

import sympy as sp

from coopt.closed_forms import Bound, Curve, Quantity
from coopt.problems.configtuner import analytic

SOURCE = ("Li et al., arXiv 2512.24750 (reconstructed, research notes 3.b); Narayanan et al. SC21; "
          "Korthikanti et al. 2022")

#: GPT-3 175B on 64 A100-80GB, Korthikanti et al. 2022 Table 5 (sequence parallel + selective).
DEFAULTS = {
    "L": 96, "h": 12288, "h_f": 49152, "a": 96, "h_kv": 12288, "V": 51200, "s": 2048, "n_mlp": 2, "k": 1,
    "E": 1, "B_g": 64, "N": 64, "F_peak": 312e12, "B_HBM": 1.6e12, "U_max": 0.8, "W_half": 4e9,
    "kappa": 2.0, "g": 4.0, "o": 30.0, "M_res": 2**30, "f_a": 0, "tied": 1, "omega": 0,
    "t": 8, "p": 8, "d": 1, "e": 1, "b": 1, "v": 3, "r_f": 0, "r_s": 1, "q": 1, "z_1": 0, "z_2": 0, "z_3": 0,
    "alpha_tp": 10e-6, "B_tp": 230e9, "alpha_pp": 20e-6, "B_pp": 22.5e9, "alpha_dp": 20e-6, "B_dp": 22.5e9,
    "alpha_ep": 10e-6, "B_ep": 230e9, "alpha_ed": 20e-6, "B_ed": 22.5e9,
}

Q = {name: Quantity(name, description, unit, domain, default=DEFAULTS[name])
     for name, (description, unit, domain) in analytic.SYMBOLS.items()}


def _inputs(expr: sp.Expr) -> tuple[Quantity, ...]:
    free = {str(s) for s in expr.free_symbols}
    return tuple(Q[n] for n in analytic.ARGUMENTS if n in free)


ASSUMPTIONS = ("identical transformer layers, L/p per stage", "ring collectives (Hockney alpha-beta)",
               "ranks laid out TP, EP, DP, PP (inner first)")

TERMS = {
    "compute": "GEMM and element-wise time of the slowest stage, all micro-batches",
    "tp": "tensor-parallel collectives on the critical path",
    "ep": "expert-parallel all-to-all on the critical path",
    "recompute": "recomputation (full: a forward; selective: attention scores)",
    "pp": "pipeline point-to-point transfers",
    "bubble": "pipeline fill and drain",
    "dp": "exposed data-parallel gradient/weight traffic",
    "optimizer": "optimizer step",
}


def _model_bounds() -> list[Bound]:
    exprs = analytic.expressions()
    out = [
        Bound(name="configtuner.iteration_time",
              summary="Iteration time of one configuration (the search's objective)",
              source=SOURCE, output=Quantity("T", "iteration time", "s"), inputs=_inputs(exprs["time"]),
              expr=exprs["time"], assumptions=ASSUMPTIONS,
              notes="The sum of the configtuner.time.* terms."),
        Bound(name="configtuner.memory", summary="Memory of the worst pipeline stage per GPU",
              source=SOURCE + "; Korthikanti et al. sec. 4", output=Quantity("M", "memory per GPU", "B"),
              inputs=_inputs(exprs["memory"]), expr=exprs["memory"], assumptions=ASSUMPTIONS),
        Bound(name="configtuner.mfu", summary="Model FLOPs utilization (no recompute FLOPs counted)",
              source=SOURCE, output=Quantity("MFU", "model FLOPs utilization", "1", "nonnegative"),
              inputs=_inputs(exprs["mfu"]), expr=exprs["mfu"], assumptions=ASSUMPTIONS),
        Bound(name="configtuner.hfu", summary="Hardware FLOPs utilization (recompute FLOPs counted)",
              source=SOURCE, output=Quantity("HFU", "hardware FLOPs utilization", "1", "nonnegative"),
              inputs=_inputs(exprs["hfu"]), expr=exprs["hfu"], assumptions=ASSUMPTIONS),
    ]
    for term, meaning in TERMS.items():
        out.append(Bound(name=f"configtuner.time.{term}", summary=f"Breakdown: {meaning}", source=SOURCE,
                         output=Quantity(f"T_{term}", meaning, "s", "nonnegative"),
                         inputs=_inputs(exprs[term]), expr=exprs[term], assumptions=ASSUMPTIONS))
    return out


def triples(N: float) -> float:
    """Ordered (t, p, d) with t p d = N: prod over N's prime powers p^e of C(e + 2, 2)."""
    return float(math.prod(math.comb(e + 2, 2) for e in sp.factorint(int(N)).values()))


p_, m_, v_ = (sp.Symbol(n, positive=True, integer=True) for n in ("p", "m", "v"))
alpha, bandwidth, message = Q["alpha_tp"], Q["B_tp"], Quantity("M", "message size", "B", default=64e6)
work = Quantity("W", "FLOPs of one GEMM", "FLOP", default=2 * 2048 * 12288**2 / 8)

BOUNDS = [
    *_model_bounds(),
    Bound(name="configtuner.bubble_fraction", summary="Bubble share of interleaved 1F1B with equal stages",
          source="Narayanan et al. SC21 sec. 2.2; research notes 3.d", output=Quantity("beta", "bubble share",
                                                                                       "1", "unit"),
          inputs=(Q["p"], Quantity("m", "micro-batches", "1", "positive_integer", default=8), Q["v"]),
          expr=(p_ - 1) / (v_ * m_ + p_ - 1), assumptions=("equal stage times", "no communication")),
    Bound(name="configtuner.effective_bandwidth", summary="Hockney effective bandwidth of one message",
          source="Hockney 1994; research notes 3.b", output=Quantity("B_eff", "effective bandwidth", "B/s"),
          inputs=(alpha, bandwidth, message),
          expr=message.symbol / (alpha.symbol + message.symbol / bandwidth.symbol),
          notes="Increasing in M, tends to B; half of B at M = alpha B."),
    Bound(name="configtuner.gemm_utilization", summary="GEMM utilization by per-GPU GEMM size",
          source="research notes 3.b", output=Quantity("U", "GEMM utilization", "1", "unit"),
          inputs=(Q["U_max"], Q["W_half"], work),
          expr=Q["U_max"].symbol * work.symbol / (work.symbol + Q["W_half"].symbol)),
    Bound(name="configtuner.model_flops_gpt", summary="Model FLOPs per iteration of a GPT (no recompute)",
          source="Narayanan et al. SC21 eq. 3", output=Quantity("F", "model FLOPs per iteration", "FLOP"),
          inputs=(Q["B_g"], Q["s"], Q["L"], Q["h"], Q["V"]),
          expr=72 * Q["B_g"].symbol * Q["s"].symbol * Q["L"].symbol * Q["h"].symbol**2
          * (1 + Q["s"].symbol / (6 * Q["h"].symbol) + Q["V"].symbol / (12 * Q["L"].symbol * Q["h"].symbol)),
          assumptions=("h_f = 4h", "multi-head attention", "one LM head GEMM")),
    Curve(name="configtuner.triples", summary="Number of (t, p, d) with t p d = N",
          source="research notes 3.c", output=Quantity("n_3", "ordered triples", "1", "positive_integer"),
          inputs=(Quantity("N", "GPUs", "1", "positive_integer", default=1024),), compute=triples,
          method="prime factorisation: prod_i C(e_i + 2, 2)"),
]
