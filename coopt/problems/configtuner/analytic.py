"""The analytic time and memory model of one training iteration, written once in SymPy.

Every quantity below is one SymPy expression in the symbols of :data:`SYMBOLS` (model shape,
hardware, and the configuration); :func:`evaluator` lambdifies them together (numpy, common
subexpressions shared) so the search evaluates whole arrays of configurations in one call, and
``coopt bound configtuner.*`` prints the same expressions (:mod:`coopt.problems.configtuner.closed_forms`).

Symbols as in Megatron-LM's papers (Narayanan et al. SC21; Korthikanti et al. 2022, arXiv
2205.05198): ``L`` layers, ``h`` hidden, ``h_f`` FFN hidden, ``a`` heads, ``h_kv`` key/value width
(``h`` for multi-head attention, less for grouped-query), ``V`` vocabulary, ``s`` sequence,
``n_mlp`` FFN matrices (2 for GELU, 3 for SwiGLU), ``E`` experts and ``k`` experts per token,
``B_g`` global batch (sequences); a configuration ``t, p, d, e, b, v`` (tensor, pipeline, data,
expert parallel, micro-batch, interleaved chunks) with ``m = B_g / (b d)`` micro-batches and 0/1
flags ``r_f`` (full recompute), ``r_s`` (selective recompute), ``q`` (sequence parallel), ``z_1,
z_2, z_3`` (ZeRO stage >= 1, >= 2, = 3). Bytes per element are 2 (bf16) throughout.

Per-layer forward, per GPU and micro-batch::

    F_gemm  = 2bsh(2h + 2h_kv)/t + 2 b s h h_f n_mlp k / t      (QKV, projection, FFN/experts)
    F_score = 4 b s^2 h / t                                     (QK^T and AV)
    W = 2 b s h^2 / t,  U = U_max W / (W + W_half)              (GEMM utilization by GEMM size)
    t_gemm = (F_gemm + F_score) / (U F_peak)
    A = (A_lin - 10sbh)/t + 10sbh ((1-q) + q/t) + 5 a s^2 b (1 - f_a)/t     (Korthikanti eq. 2-4)
    A_lin = s b (14h + 4h_kv + 2 h_f n_mlp k)                   (34 sbh for GPT shapes)
    t_ew = kappa A / B_HBM                                      (memory-bound element-wise work)
    AR_tp = 2(t-1)(alpha_tp + 2bsh/(t B_tp))                    (ring all-reduce, Hockney alpha-beta)
    A2A_ep = (e-1)(alpha_ep + 2kbsh/(t e B_ep))                 (all-to-all dispatch or combine)
    t_fwd = t_gemm + t_ew + 2 AR_tp + 2 A2A_ep
    t_bwd = 2(t_gemm + t_ew) + (2 + q) AR_tp + 2 A2A_ep         (SP re-gathers its input: + q AR)
    t_rc  = r_f t_fwd + r_s (F_score/(U F_peak) + kappa 5as^2b(1-f_a)/(t B_HBM))

A stage of ``n = L/p`` layers takes per micro-batch ``tau = n (t_fwd + t_bwd + t_rc) + P2P`` with
``P2P = [p>1] 2v (alpha_pp + 2bsh/(t B_pp))``; the last stage adds the LM head (``3 * 2bshV/t``
FLOPs, logits traffic), the first the embedding. The pipeline (1F1B, or interleaved with ``v``
chunks per stage) takes ``T_pipe = m tau_max + (sum_s tau_s - tau_max)/v``, which is
``(m + p - 1) tau`` for equal stages and ``(m + (p-1)/v) tau`` interleaved. Data parallelism
reduces gradients once (ZeRO 0: all-reduce; 1: reduce-scatter + all-gather of bf16 weights) or
per micro-batch (ZeRO 2: gradients sharded; 3: weights gathered forward and backward); with
``omega = 1`` it overlaps the last backward (ZeRO <= 1) or all compute (ZeRO >= 2). The optimizer
step streams ``optimizer_bytes`` per local parameter through HBM. The iteration time is::

    T = T_pipe + max(0, T_dp - overlap) + T_opt

Memory of the worst stage (Korthikanti sec. 4): weights, gradients and Adam states at ``2, g, 12``
bytes per parameter, each divided by the data-parallel degree from its ZeRO stage on; activations
``A`` per layer (``2sbh`` with full recompute, ``A - 5as^2b/t`` with selective) times the
micro-batches in flight ``min(m, p) (1 + [v>1](p-1)/(p v))`` on the first stage; one micro-batch
and the fp32 logits ``4sbV/t`` on the last; plus the recomputed layer's working set and a reserve.

Model FLOPs (Narayanan et al. SC21, eq. 3 generalised): ``3 B_g (L (2sh(2h+2h_kv) + 2 s h h_f n_mlp
k + 4 s^2 h) + 2 s h V)``; hardware FLOPs add the recomputed forward (``r_f``) or attention
scores (``r_s``). MFU and HFU divide them by ``T N F_peak``.

Which parts are reconstructed: the paper's own equations were not readable (research notes 3.b);
the volumes and memory follow Megatron's accounting, the element-wise traffic factor ``kappa`` and
the overlap rules are ours, each a documented instance parameter.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import sympy as sp

#: Bytes per element of weights and activations (bf16).
ELEMENT = 2

#: name -> (description, unit, domain). Domains as in coopt.closed_forms (same assumptions).
SYMBOLS: dict[str, tuple[str, str, str]] = {
    "L": ("transformer layers", "1", "positive_integer"),
    "h": ("hidden size", "1", "positive_integer"),
    "h_f": ("FFN hidden size", "1", "positive_integer"),
    "a": ("attention heads", "1", "positive_integer"),
    "h_kv": ("key/value width (h for multi-head attention)", "1", "positive"),
    "V": ("vocabulary size", "1", "positive_integer"),
    "s": ("sequence length", "1", "positive_integer"),
    "n_mlp": ("FFN weight matrices (2 GELU, 3 SwiGLU)", "1", "positive_integer"),
    "k": ("experts per token (1 for a dense model)", "1", "positive_integer"),
    "E": ("experts per layer (1 for a dense model)", "1", "positive_integer"),
    "B_g": ("global batch", "sequences", "positive_integer"),
    "N": ("GPUs", "1", "positive_integer"),
    "F_peak": ("peak dense bf16 rate per GPU", "FLOP/s", "positive"),
    "B_HBM": ("achieved HBM bandwidth", "B/s", "positive"),
    "U_max": ("largest GEMM utilization", "1", "efficiency"),
    "W_half": ("GEMM size at half of U_max", "FLOP", "nonnegative"),
    "kappa": ("HBM bytes moved per stored activation byte", "1", "nonnegative"),
    "g": ("gradient bytes per parameter", "B", "positive"),
    "o": ("optimizer-step HBM bytes per parameter", "B", "nonnegative"),
    "M_res": ("memory reserve per GPU", "B", "nonnegative"),
    "f_a": ("flash attention (1) or not (0)", "1", "unit"),
    "tied": ("tied embeddings (1) or not (0)", "1", "unit"),
    "omega": ("data-parallel overlap on (1) or off (0)", "1", "unit"),
    "t": ("tensor-parallel size", "1", "positive_integer"),
    "p": ("pipeline stages", "1", "positive_integer"),
    "d": ("data-parallel size", "1", "positive_integer"),
    "e": ("expert-parallel size", "1", "positive_integer"),
    "b": ("micro-batch size", "sequences", "positive_integer"),
    "v": ("interleaved chunks per stage", "1", "positive_integer"),
    "r_f": ("full recompute (1) or not (0)", "1", "unit"),
    "r_s": ("selective recompute (1) or not (0)", "1", "unit"),
    "q": ("sequence parallel (1) or not (0)", "1", "unit"),
    "z_1": ("ZeRO stage >= 1", "1", "unit"),
    "z_2": ("ZeRO stage >= 2", "1", "unit"),
    "z_3": ("ZeRO stage 3", "1", "unit"),
    "alpha_tp": ("latency of the tensor-parallel link", "s", "nonnegative"),
    "B_tp": ("bandwidth of the tensor-parallel link", "B/s", "positive"),
    "alpha_pp": ("latency of the pipeline link", "s", "nonnegative"),
    "B_pp": ("bandwidth of the pipeline link", "B/s", "positive"),
    "alpha_dp": ("latency of the data-parallel link", "s", "nonnegative"),
    "B_dp": ("bandwidth of the data-parallel link", "B/s", "positive"),
    "alpha_ep": ("latency of the expert-parallel link", "s", "nonnegative"),
    "B_ep": ("bandwidth of the expert-parallel link", "B/s", "positive"),
    "alpha_ed": ("latency of the expert data-parallel link", "s", "nonnegative"),
    "B_ed": ("bandwidth of the expert data-parallel link", "B/s", "positive"),
}

_ASSUME = {"positive": {"positive": True}, "nonnegative": {"nonnegative": True},
           "unit": {"nonnegative": True}, "efficiency": {"positive": True},
           "positive_integer": {"positive": True, "integer": True}}

S = {name: sp.Symbol(name, **_ASSUME[domain]) for name, (_, _, domain) in SYMBOLS.items()}


def _ring(g: sp.Expr, alpha: sp.Expr, bandwidth: sp.Expr, message: sp.Expr) -> sp.Expr:
    """Reduce-scatter or all-gather of ``message`` bytes over ``g`` ranks: (g-1) steps of M/g."""
    return (g - 1) * (alpha + message / (g * bandwidth))


def _step_terms() -> dict[str, sp.Expr]:
    """One layer's step on one micro-batch: GEMM and element-wise time, the TP all-reduce, the EP
    all-to-all, recompute, the pipeline send, the head and the embedding, and its activations."""
    h, a, h_kv, V, s = (S[n] for n in ("h", "a", "h_kv", "V", "s"))
    n_mlp, k, h_f = S["n_mlp"], S["k"], S["h_f"]
    t, p, e, b, v = (S[n] for n in ("t", "p", "e", "b", "v"))
    r_f, r_s, q = S["r_f"], S["r_s"], S["q"]
    peak, hbm, kappa = S["F_peak"], S["B_HBM"], S["kappa"]
    beta = ELEMENT
    # 1 when the model is pipelined, 0 for one stage (p integer >= 1); Min and Max are left
    # unevaluated: SymPy's comparisons of these large terms cost seconds and decide nothing
    multi = sp.Min(p - 1, 1, evaluate=False)
    W = 2 * b * s * h**2 / t
    U = S["U_max"] * W / (W + S["W_half"])
    F_gemm = (2 * b * s * h * (2 * h + 2 * h_kv) + 2 * b * s * h * h_f * n_mlp * k) / t
    F_score = 4 * b * s**2 * h / t
    t_gemm = (F_gemm + F_score) / (U * peak)
    A_lin = s * b * (14 * h + 4 * h_kv + 2 * h_f * n_mlp * k)
    A_rep = 10 * s * b * h
    A_score = 5 * a * s**2 * b * (1 - S["f_a"]) / t
    A = (A_lin - A_rep) / t + A_rep * ((1 - q) + q / t) + A_score
    t_ew = kappa * A / hbm
    AR_tp = 2 * _ring(t, S["alpha_tp"], S["B_tp"], beta * b * s * h)
    A2A = (e - 1) * (S["alpha_ep"] + beta * k * b * s * h / (t * e * S["B_ep"]))
    t_fwd = t_gemm + t_ew + 2 * AR_tp + 2 * A2A
    head_flops = 2 * b * s * h * V / t
    return {
        "multi": multi,
        "interleaved": sp.Min(v - 1, 1, evaluate=False),
        "U": U,
        "t_gemm": t_gemm,
        "t_ew": t_ew,
        "A": A,
        "A_score": A_score,
        "AR_tp": AR_tp,
        "A2A": A2A,
        "t_rc": r_f * t_fwd + r_s * (F_score / (U * peak) + kappa * A_score / hbm),
        "p2p": multi * 2 * v * (S["alpha_pp"] + beta * b * s * h / (t * S["B_pp"])),
        "t_head": 3 * head_flops / (U * peak) + kappa * 3 * 6 * s * b * V / (t * hbm),
        "t_emb": kappa * 3 * beta * s * b * h / hbm,
    }


def _per_param(dd: sp.Expr) -> sp.Expr:
    """Bytes per parameter of weights, gradients and optimizer states, ZeRO-sharded over ``dd``."""
    z1, z2, z3 = S["z_1"], S["z_2"], S["z_3"]
    return (ELEMENT * (1 - z3 + z3 / dd) + S["g"] * (1 - z2 + z2 / dd) + 12 * (1 - z1 + z1 / dd))


def _memory_terms(x: dict[str, sp.Expr]) -> dict[str, sp.Expr]:
    """The worst stage's memory: states on the first (or last) stage, stored activations of the
    micro-batches in flight, the recompute working set, the logits."""
    L, h, h_f, h_kv, V, s = (S[n] for n in ("L", "h", "h_f", "h_kv", "V", "s"))
    n_mlp, E, B_g = S["n_mlp"], S["E"], S["B_g"]
    t, p, d, e, b, v = (S[n] for n in ("t", "p", "d", "e", "b", "v"))
    r_f, r_s, q = S["r_f"], S["r_s"], S["q"]
    m, n, multi, A = B_g / (b * d), L / p, x["multi"], x["A"]
    # parameters per GPU on the first (or last) stage: attention + norms, experts, one embedding
    P_att = h * (2 * h + 2 * h_kv) + 4 * h
    d_exp = d / e
    layer_states = P_att / t * _per_param(d) + n_mlp * h * h_f * E / (t * e) * _per_param(d_exp)
    emb_states = V * h / t * _per_param(d)
    states = n * layer_states + emb_states * (1 + (1 - multi) * (1 - S["tied"]))
    stored = (1 - r_f) * (A - r_s * x["A_score"]) + r_f * ELEMENT * s * b * h * ((1 - q) + q / t)
    in_flight = sp.Min(m, p, evaluate=False) * (1 + x["interleaved"] * (p - 1) / (p * v))
    working = r_f * A
    memory_first = states + n * stored * in_flight + working + S["M_res"]
    memory_last = states + n * stored + working + 4 * s * b * V / t + S["M_res"]
    return {
        "memory": sp.Max(memory_first, memory_last, evaluate=False),
        "P_dense": n * P_att / t + V * h / t * (1 + (1 - multi) * (1 - S["tied"])),
        "P_exp": n * n_mlp * h * h_f * E / (t * e),
        "layer_states": layer_states,
        "emb_states": emb_states,
        "stored": stored,
        "working": working,
        "states": states,
        "activations": n * stored * in_flight,
    }


def _dp_comm(dd: sp.Expr, alpha: sp.Expr, bandwidth: sp.Expr, params: sp.Expr, m: sp.Expr) -> sp.Expr:
    """The data-parallel gradient and weight collectives of ``params`` over ``dd`` ranks, by ZeRO stage."""
    z1, z2, z3 = S["z_1"], S["z_2"], S["z_3"]
    grads, weights = S["g"] * params, ELEMENT * params
    rs, ag = _ring(dd, alpha, bandwidth, grads), _ring(dd, alpha, bandwidth, weights)
    return ((1 - z1) * 2 * rs + z1 * (1 - z2) * (rs + ag) + z2 * (1 - z3) * (m * rs + ag)
            + z3 * (m * rs + 2 * m * ag))


def _expressions() -> dict[str, sp.Expr]:
    """Every output of the model, as expressions of :data:`S`."""
    L, h, h_f, h_kv, V, s = (S[n] for n in ("L", "h", "h_f", "h_kv", "V", "s"))
    n_mlp, k, B_g, N = S["n_mlp"], S["k"], S["B_g"], S["N"]
    p, d, e, b, v = (S[n] for n in ("p", "d", "e", "b", "v"))
    r_f, r_s, q, z1, z2 = S["r_f"], S["r_s"], S["q"], S["z_1"], S["z_2"]
    peak, hbm = S["F_peak"], S["B_HBM"]
    m = B_g / (b * d)
    n = L / p
    x = _step_terms()
    t_gemm, t_ew, AR_tp, A2A, t_rc = x["t_gemm"], x["t_ew"], x["AR_tp"], x["A2A"], x["t_rc"]
    p2p, t_head, t_emb, multi = x["p2p"], x["t_head"], x["t_emb"], x["multi"]

    # the critical (slowest) stage per micro-batch, split by where its time goes
    ends = multi * sp.Max(t_head, t_emb, evaluate=False) + (1 - multi) * (t_head + t_emb)
    compute_mb = n * 3 * (t_gemm + t_ew) + ends
    tp_mb = n * (4 + q) * AR_tp
    ep_mb = n * 4 * A2A
    rc_mb = n * t_rc
    tau_max = compute_mb + tp_mb + ep_mb + rc_mb + p2p
    tau_sum = L * (3 * (t_gemm + t_ew) + (4 + q) * AR_tp + 4 * A2A + t_rc) + p * p2p + t_head + t_emb
    bubble = (tau_sum - tau_max) / v

    mem = _memory_terms(x)
    P_dense, P_exp, d_exp = mem["P_dense"], mem["P_exp"], d / e
    comm = (_dp_comm(d, S["alpha_dp"], S["B_dp"], P_dense, m)
            + _dp_comm(d_exp, S["alpha_ed"], S["B_ed"], P_exp, m))
    backward_last = n * (2 * (t_gemm + t_ew) + (2 + q) * AR_tp + 2 * A2A)
    window = S["omega"] * ((1 - z2) * backward_last + z2 * m * n * 3 * (t_gemm + t_ew))
    dp_exposed = sp.Max(comm - window, 0, evaluate=False)
    optimizer = S["o"] * (P_dense * (1 - z1 + z1 / d) + P_exp * (1 - z1 + z1 / d_exp)) / hbm
    time = m * tau_max + bubble + dp_exposed + optimizer

    layer_flops = 2 * s * h * (2 * h + 2 * h_kv) + 2 * s * h * h_f * n_mlp * k + 4 * s**2 * h
    model_flops = 3 * B_g * (L * layer_flops + 2 * s * h * V)
    hardware_flops = model_flops + B_g * L * (r_f * layer_flops + r_s * 4 * s**2 * h)
    return {
        "time": time,
        "memory": mem["memory"],
        "compute": m * compute_mb,
        "tp": m * tp_mb,
        "ep": m * ep_mb,
        "recompute": m * rc_mb,
        "pp": m * p2p,
        "bubble": bubble,
        "dp": dp_exposed,
        "optimizer": optimizer,
        "model_flops": model_flops,
        "hardware_flops": hardware_flops,
        "mfu": model_flops / (time * N * peak),
        "hfu": hardware_flops / (time * N * peak),
        "gemm_utilization": x["U"],
        "microbatches": m,
        # per-layer and per-stage parts, for the layer-to-stage partition (C2)
        "layer_time": 3 * (t_gemm + t_ew) + (4 + q) * AR_tp + 4 * A2A + t_rc,
        "p2p": p2p,
        "head_time": t_head,
        "emb_time": t_emb,
        "layer_states": mem["layer_states"],
        "emb_states": mem["emb_states"],
        "layer_stored": mem["stored"],
        "working": mem["working"],
        "logits": 4 * s * b * V / S["t"],
        # the first stage's memory by kind (Korthikanti et al. Fig. 1: parameters + optimizer, activations)
        "states": mem["states"],
        "activations": mem["activations"],
    }


@cache
def expressions() -> dict[str, sp.Expr]:
    """The model's outputs (``time`` in s, ``memory`` in B, the breakdown of ``time``, FLOPs)."""
    return _expressions()


#: The terms that add up to ``time`` (the "where does the time go" breakdown).
BREAKDOWN = ("compute", "tp", "ep", "recompute", "pp", "bubble", "dp", "optimizer")
OUTPUTS = ("time", "memory", *BREAKDOWN, "model_flops", "hardware_flops", "mfu", "hfu", "microbatches",
           "layer_time", "p2p", "head_time", "emb_time", "layer_states", "emb_states", "layer_stored",
           "working", "logits", "states", "activations")
ARGUMENTS = tuple(SYMBOLS)


@cache
def evaluator(outputs: tuple[str, ...] = OUTPUTS):
    """One numpy function of every symbol (in :data:`ARGUMENTS` order) returning ``outputs``
    (all of :data:`OUTPUTS` by default; a search that only ranks asks for ``("time", "memory")``
    or ``("memory",)``, a third to a half of the work)."""
    exprs = expressions()
    return sp.lambdify([S[n] for n in ARGUMENTS], [exprs[o] for o in outputs],
                       modules=[{"Max": np.maximum, "Min": np.minimum}, "numpy"], cse=True)


def evaluate(values: dict[str, Any], outputs: tuple[str, ...] = OUTPUTS) -> dict[str, np.ndarray]:
    """The ``outputs`` (all by default) for the given symbol values (scalars or equal-length
    arrays), each an array of the configurations' shape."""
    missing = [n for n in ARGUMENTS if n not in values]
    if missing:
        raise KeyError(f"analytic model: no value for {', '.join(missing)}")
    arguments = [np.asarray(values[n], dtype=float) for n in ARGUMENTS]
    shape = np.broadcast_shapes(*(a.shape for a in arguments))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = evaluator(tuple(outputs))(*arguments)
    # an output that depends on no configuration symbol comes back as a scalar
    return {name: o if isinstance(o, np.ndarray) and o.shape == shape
            else np.broadcast_to(np.asarray(o, dtype=float), shape)
            for name, o in zip(outputs, out, strict=True)}
