"""MoESD: when speculative decoding pays off for sparse mixture-of-experts models.

Source: Z. Huang, L. Zhu, Z. Zhan, T. Hu, W. Mao, X. Yu, Y. Liu, T. Zhang, "MoESD: Unveil
Speculative Decoding's Potential for Accelerating Sparse MoE", NeurIPS 2025, arXiv 2505.19645.

Notation (research-chiplet-chase-moesd.md section 4): ``E`` routed experts, top-``K`` routing,
``t`` tokens in one forward pass, ``B`` sequences, draft length ``gamma``, per-token acceptance
rate ``alpha`` (i.i.d.), ``beta`` bytes per element, ``F`` FLOP/s and ``BW`` bytes/s.

* Accepted tokens per round (Leviathan et al. 2023): ``sigma = (1 - alpha^(gamma+1)) / (1 - alpha)``.
* Activated experts under uniform independent top-K routing: each expert is chosen by a token with
  probability ``K/E``, so ``N_act(t) = E (1 - (1 - K/E)^t)``.
* Roofline per GEMM of ``W`` elements over ``m`` tokens: ``max(beta W / BW, 2 m W / F)``; the ridge
  is ``m* = beta F / (2 BW)``. A balanced MoE layer with ``W_e = 3 h f_e`` per SwiGLU expert takes
  ``T_moe(t) = max(N_act(t) beta W_e / BW, 2 t K W_e / F)``; a dense FFN ``max(beta W_d/BW, 2 t W_d/F)``.
* Target step time ``T_T(B, q)`` (B sequences, q tokens each) sums attention projections, the KV
  cache read, the shared expert, the router, the routed experts and the tensor-parallel all-reduce
  over the layers, plus the LM head and a fixed per-layer launch overhead.
* SD speedup ``S = sigma T_T(B,1) / (gamma T_D(B,1) + T_T(B,gamma+1) + T_rej)``, decomposed as
  ``S = sigma * eta_T * rho`` with target efficiency ``eta_T = T_T(B,1) / T_T(B,gamma+1)`` and
  verify share ``rho = T_T(B,gamma+1) / (gamma T_D + T_T(B,gamma+1) + T_rej)``.
* Batch window of the routed part: experts saturate (``N_act(B) >= (1-eps) E``) from
  ``B_lo = ln eps / ln(1 - K/E) ~ (E/K) ln(1/eps)``; verification turns compute-bound at
  ``B_hi = (E/K) m* / (gamma+1)`` (dense: ``m* / (gamma+1)``), so the window widens with ``E/K``.

[R] The research notes could read only the paper's abstract. ``sigma`` and ``N_act`` are standard;
the roofline step time, the decomposition and the window are reconstructed, and the paper's own
Algorithm 1 fits a time model to measurements. Our stand-in for that fit is
:func:`coopt.solvers.fit.fit_time_model`,
an L1 linear program solved by HiGHS. Hardware numbers are vendor peak values, the per-layer overhead
and the TP link are assumptions; the predicted speedups are a model, not the paper's measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from coopt.closed_forms import Bound, Curve, Quantity
from coopt.solvers.fit import fit_time_model

SOURCE = "Huang et al., MoESD, NeurIPS 2025, arXiv 2505.19645 (model reconstructed, see module docstring)"


# -- data model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transformer:
    """Shapes of a decoder-only model; ``experts == active`` is a dense FFN ``active * expert_ffn`` wide."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    experts: int
    active: int
    expert_ffn: int
    shared_ffn: int = 0


@dataclass(frozen=True)
class Hardware:
    """Aggregate of ``gpus`` tensor-parallel GPUs (peak values per GPU)."""

    flops: float  # FLOP/s per GPU (dense BF16)
    bandwidth: float  # HBM bytes/s per GPU
    gpus: int = 2
    link: float = 200e9  # bytes/s per direction between GPUs
    link_latency: float = 10e-6  # s per all-reduce
    layer_overhead: float = 20e-6  # s per layer per forward (kernel launches)
    bytes_per_element: int = 2


#: Qwen2-57B-A14B (public config): 28 layers, h 3584, 28 heads / 4 KV heads, 64 experts top-8 of
#: width 2560, shared expert 20480, vocab 151936.
QWEN2_57B_A14B = Transformer(28, 3584, 28, 4, 128, 151936, experts=64, active=8, expert_ffn=2560,
                             shared_ffn=20480)
#: Qwen2-0.5B as the draft (public config): 24 layers, h 896, 14 heads / 2 KV heads, FFN 4864.
QWEN2_0_5B = Transformer(24, 896, 14, 2, 64, 151936, experts=1, active=1, expert_ffn=4864)
#: NVIDIA A800 80GB SXM: 312 TFLOP/s dense BF16, 2.039 TB/s HBM, NVLink 400 GB/s (200 per direction).
A800 = Hardware(flops=312e12, bandwidth=2.039e12)


def activated_experts(experts: int, active: int, tokens: float) -> float:
    """Expected distinct experts hit by ``tokens`` independent uniform top-``active`` routings."""
    return experts * (1.0 - (1.0 - active / experts) ** tokens)


def accepted_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens produced per SD round: ``sum_{i=0}^{gamma} alpha^i``."""
    return float(gamma + 1) if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def _gemm(hw: Hardware, weights: float, tokens: float) -> float:
    """Roofline time of one weight GEMM over ``tokens`` tokens across the TP group."""
    load = hw.bytes_per_element * weights / (hw.gpus * hw.bandwidth)
    return max(load, 2 * tokens * weights / (hw.gpus * hw.flops))


def step_time(model: Transformer, hw: Hardware, batch: float, tokens: float, context: float) -> float:
    """``T(B, q)``: one forward pass of ``batch`` sequences presenting ``tokens`` new tokens each."""
    t = batch * tokens
    h, beta = model.hidden, hw.bytes_per_element
    attention_weights = h * model.heads * model.head_dim * 2 + 2 * h * model.kv_heads * model.head_dim
    kv_bytes = batch * context * 2 * model.kv_heads * model.head_dim * beta
    attention_flops = 4 * t * context * model.heads * model.head_dim
    expert = 3 * h * model.expert_ffn
    routed = max(
        activated_experts(model.experts, model.active, t) * beta * expert / (hw.gpus * hw.bandwidth),
        2 * t * model.active * expert / (hw.gpus * hw.flops),
    )
    allreduce = 0.0 if hw.gpus == 1 else 2 * (
        hw.link_latency + 2 * (hw.gpus - 1) / hw.gpus * t * h * beta / hw.link
    )
    layer = (
        _gemm(hw, attention_weights, t)
        + max(kv_bytes / (hw.gpus * hw.bandwidth), attention_flops / (hw.gpus * hw.flops))
        + (_gemm(hw, 3 * h * model.shared_ffn, t) if model.shared_ffn else 0.0)
        + (_gemm(hw, h * model.experts, t) if model.experts > model.active else 0.0)
        + routed
        + allreduce
        + hw.layer_overhead
    )
    return model.layers * layer + _gemm(hw, h * model.vocab, t)


@dataclass(frozen=True)
class Speedup:
    """One SD operating point and its decomposition ``S = sigma * eta_T * rho``."""

    sigma: float
    target_efficiency: float
    verify_share: float

    @property
    def speedup(self) -> float:
        return self.sigma * self.target_efficiency * self.verify_share


def sd_speedup(
    batch: float,
    gamma: int,
    alpha: float,
    context: float = 512,
    target: Transformer = QWEN2_57B_A14B,
    draft: Transformer = QWEN2_0_5B,
    hw: Hardware = A800,
    rejection: float = 0.0,
) -> Speedup:
    """Predicted SD speedup of ``target`` with ``draft`` on ``hw`` (draft and target share the GPUs)."""
    decode = step_time(target, hw, batch, 1, context)
    verify = step_time(target, hw, batch, gamma + 1, context)
    drafting = gamma * step_time(draft, hw, batch, 1, context)
    return Speedup(accepted_tokens(alpha, gamma), decode / verify, verify / (drafting + verify + rejection))


def best_draft_length(batch: float, alpha: float, longest: int, **kwargs) -> tuple[int, float]:
    """``argmax_{gamma in 1..longest} S``, by enumeration (exact); ties go to the shorter draft."""
    scores = [(sd_speedup(batch, g, alpha, **kwargs).speedup, -g) for g in range(1, longest + 1)]
    speedup, gamma = max(scores)
    return -gamma, speedup


def greedy_draft_length(batch: float, alpha: float, longest: int, **kwargs) -> int:
    """Grow ``gamma`` from 1 while the speedup still improves; stop at ``longest``.

    Guarantee: equals :func:`best_draft_length` whenever ``S`` is unimodal in ``gamma``; not in
    general. Complexity: at most ``longest`` evaluations. Source: research notes section 4.c.
    """
    gamma = 1
    while gamma < longest and sd_speedup(batch, gamma + 1, alpha, **kwargs).speedup > sd_speedup(
        batch, gamma, alpha, **kwargs
    ).speedup:
        gamma += 1
    return gamma


def workload_features(model: Transformer, hw: Hardware, batch: float, tokens: float, context: float):
    """``(X_mem, X_comp)`` of one forward pass: bytes loaded and FLOPs, for fitting a time model."""
    t = batch * tokens
    h, beta = model.hidden, hw.bytes_per_element
    dense = h * model.heads * model.head_dim * 2 + 2 * h * model.kv_heads * model.head_dim
    dense += 3 * h * model.shared_ffn
    expert = 3 * h * model.expert_ffn
    routed = activated_experts(model.experts, model.active, t) * expert
    weights = model.layers * (dense + routed) + h * model.vocab
    kv = model.layers * batch * context * 2 * model.kv_heads * model.head_dim
    flops = 2 * t * (model.layers * (dense + model.active * expert) + h * model.vocab)
    flops += model.layers * 4 * t * context * model.heads * model.head_dim
    return beta * (weights + kv), flops


# -- symbols ---------------------------------------------------------------------------------

experts = Quantity("E", "routed experts", "1", "positive_integer", default=64)
top_k = Quantity("K", "experts per token (top-K)", "1", "positive_integer", default=8)
tokens = Quantity("t", "tokens in one forward pass", "1", "nonnegative", default=8)
alpha = Quantity("alpha", "per-token acceptance rate", "1", "probability_below_one", default=0.8,
                 latex=r"\alpha")
gamma = Quantity("gamma", "draft length (tokens proposed per round)", "1", "nonnegative_integer", default=3,
                 latex=r"\gamma")
batch = Quantity("B", "sequences in the batch", "1", "positive_integer", default=32)
beta = Quantity("beta", "bytes per element", "B", default=2, latex=r"\beta")
flops = Quantity("F", "peak FLOP/s (A800 dense BF16)", "FLOP/s", default=312e12)
bandwidth = Quantity("BW", "memory bandwidth (A800 HBM)", "B/s", default=2.039e12)
hidden = Quantity("h", "hidden size", "1", "positive_integer", default=3584)
expert_ffn = Quantity("f_e", "expert FFN width", "1", "positive_integer", default=2560)
dense_ffn = Quantity("f", "dense FFN width", "1", "positive_integer", default=20480)
saturation = Quantity("epsilon", "tolerated share of experts not yet loaded", "1", "open_unit", default=0.05,
                      latex=r"\varepsilon")
time_decode = Quantity("T_T1", "target step time, one token per sequence", "s", default=10e-3)
time_verify = Quantity("T_Tg", "target step time verifying gamma + 1 tokens per sequence", "s", default=12e-3)
time_draft = Quantity("T_D", "draft step time", "s", default=1e-3)
time_reject = Quantity("T_rej", "rejection-sampling time per round", "s", "nonnegative", default=0.0)
context = Quantity("ctx", "context length (KV cache per sequence)", "tokens", "positive", default=512)
gpus = Quantity("G", "tensor-parallel GPUs", "1", "positive_integer", default=2)
longest = Quantity("Gamma", "longest draft length to consider", "1", "positive_integer", default=8,
                   latex=r"\Gamma")

memory_bytes = Quantity("X_mem", "bytes loaded by one forward pass", "B", default=28e9,
                        latex=r"X_{\mathrm{mem}}")
compute_flops = Quantity("X_comp", "FLOPs of one forward pass", "FLOP", default=28e9,
                         latex=r"X_{\mathrm{comp}}")
fixed_time = Quantity("c0", "fixed time per forward pass (launches, sync)", "s", "nonnegative",
                      default=0.6e-3, latex="c_0")
time_per_byte = Quantity("c_mem", "seconds per byte loaded (1 / effective bandwidth)", "s/B", "nonnegative",
                         default=1 / (2 * 2.039e12), latex=r"c_{\mathrm{mem}}")
time_per_flop = Quantity("c_comp", "seconds per FLOP (1 / effective compute)", "s/FLOP", "nonnegative",
                         default=1 / (2 * 312e12), latex=r"c_{\mathrm{comp}}")
step = Quantity("T", "forward-pass (step) time", "s")


def _fitter(form: str):
    def fit(columns):
        result = fit_time_model(columns["T"], columns["X_mem"], columns["X_comp"], form=form)
        return {"c0": result.c0, "c_mem": result.c_mem, "c_comp": result.c_comp}, result.l1_error

    return fit


n_act = experts.symbol * (1 - (1 - top_k.symbol / experts.symbol) ** tokens.symbol)
expert_weights = 3 * hidden.symbol * expert_ffn.symbol
ridge = beta.symbol * flops.symbol / (2 * bandwidth.symbol)
sigma_expr = (1 - alpha.symbol ** (gamma.symbol + 1)) / (1 - alpha.symbol)
k_le_e = (top_k.symbol <= experts.symbol,)
ROUTING = ("uniform routing, tokens independent, top-K without replacement",)
ROOFLINE = ("roofline: a GEMM takes the larger of its weight-load and compute times", "balanced expert load")


def _model_for(E: float, K: float) -> Transformer:
    return replace(QWEN2_57B_A14B, experts=int(E), active=int(K))


def _hardware_for(G: float, F: float, BW: float) -> Hardware:
    return replace(A800, gpus=int(G), flops=F, bandwidth=BW)


def _point(B, gamma, alpha, ctx, G, F, BW, E, K) -> Speedup:
    return sd_speedup(B, int(gamma), alpha, ctx, target=_model_for(E, K), hw=_hardware_for(G, F, BW))


FULL_MODEL = (
    "target Qwen2-57B-A14B, draft Qwen2-0.5B, both tensor-parallel on the same G GPUs",
    "peak F and BW, 200 GB/s per-direction link with 10 us per all-reduce, 20 us launch overhead per layer",
    "set E = K for the dense comparator (every expert always active)",
)
SPEEDUP_INPUTS = (batch, gamma, alpha, context, gpus, flops, bandwidth, experts, top_k)

BOUNDS = [
    Bound(
        name="moesd.accepted_tokens",
        summary="expected tokens per SD round: (1 - alpha^(gamma+1)) / (1 - alpha)",
        source="Leviathan et al., ICML 2023; used by " + SOURCE,
        output=Quantity("sigma", "expected tokens produced per round", "1", latex=r"\sigma"),
        inputs=(alpha, gamma),
        expr=sigma_expr,
        assumptions=("each draft token accepted independently with probability alpha",),
        notes="Tends to gamma + 1 as alpha -> 1 (SymPy limit in the tests).",
    ),
    Bound(
        name="moesd.activated_experts",
        summary="expected distinct experts activated by t tokens: E (1 - (1 - K/E)^t)",
        source=SOURCE,
        output=Quantity("N_act", "expected activated experts", "1", "nonnegative", latex=r"N_{\mathrm{act}}"),
        inputs=(experts, top_k, tokens),
        expr=n_act,
        relations=k_le_e,
        assumptions=ROUTING,
        notes="N_act(1) = K, N_act -> E; Qwen2-57B-A14B (64, top-8): 8, 15, 26.5, 42.0, 56.4, 63.1 "
        "for t = 1, 2, 4, 8, 16, 32.",
    ),
    Bound(
        name="moesd.tokens_per_expert",
        summary="mean tokens each activated expert processes: t K / N_act(t)",
        source=SOURCE,
        output=Quantity("m", "mean tokens per active expert", "1"),
        inputs=(experts, top_k, tokens),
        expr=tokens.symbol * top_k.symbol / n_act,
        relations=k_le_e,
        assumptions=ROUTING,
    ),
    Bound(
        name="moesd.ridge_tokens",
        summary="tokens per GEMM where the roofline turns compute-bound: beta F / (2 BW)",
        source=SOURCE,
        output=Quantity("m_star", "ridge token count", "1", latex="m^*"),
        inputs=(beta, flops, bandwidth),
        expr=ridge,
        assumptions=ROOFLINE,
        notes="A800 ~ 153, H800 (989 TFLOP/s, 3.35 TB/s) ~ 295, L40 (181, 0.864) ~ 210.",
    ),
    Bound(
        name="moesd.expert_layer_time",
        summary="roofline time of one MoE layer's routed experts over t tokens",
        source=SOURCE,
        output=Quantity("T_moe", "routed-expert layer time", "s", latex=r"T_{\mathrm{moe}}"),
        inputs=(experts, top_k, tokens, hidden, expert_ffn, beta, flops, bandwidth),
        expr=sp.Max(n_act * beta.symbol * expert_weights / bandwidth.symbol,
                    2 * tokens.symbol * top_k.symbol * expert_weights / flops.symbol),
        relations=k_le_e,
        assumptions=(*ROUTING, *ROOFLINE, "SwiGLU experts: 3 h f_e weights each"),
    ),
    Bound(
        name="moesd.dense_layer_time",
        summary="roofline time of one dense FFN over t tokens",
        source=SOURCE,
        output=Quantity("T_dense", "dense FFN layer time", "s", latex=r"T_{\mathrm{dense}}"),
        inputs=(tokens, hidden, dense_ffn, beta, flops, bandwidth),
        expr=sp.Max(beta.symbol * 3 * hidden.symbol * dense_ffn.symbol / bandwidth.symbol,
                    2 * tokens.symbol * 3 * hidden.symbol * dense_ffn.symbol / flops.symbol),
        assumptions=(*ROOFLINE, "SwiGLU FFN: 3 h f weights"),
    ),
    Bound(
        name="moesd.routed_target_efficiency",
        summary="target efficiency of the routed experts alone: T_moe(B) / T_moe(B (gamma+1))",
        source=SOURCE,
        output=Quantity("eta_moe", "routed-part target efficiency", "1", latex=r"\eta_{\mathrm{moe}}"),
        inputs=(experts, top_k, batch, gamma, beta, flops, bandwidth),
        expr=sp.Max(n_act.subs(tokens.symbol, batch.symbol) * beta.symbol / bandwidth.symbol,
                    2 * batch.symbol * top_k.symbol / flops.symbol)
        / sp.Max(n_act.subs(tokens.symbol, batch.symbol * (gamma.symbol + 1)) * beta.symbol
                 / bandwidth.symbol,
                 2 * batch.symbol * (gamma.symbol + 1) * top_k.symbol / flops.symbol),
        relations=k_le_e,
        assumptions=(*ROUTING, *ROOFLINE),
        notes="Expert size cancels. Lies in [1/(gamma+1), 1]; small at B = 1 (more experts woken), ~1 in "
        "the window, -> 1/(gamma+1) when compute-bound. Unimodal in B: rises while verification is "
        "memory-bound, falls once it is compute-bound (at or before B_hi).",
    ),
    Bound(
        name="moesd.speedup",
        summary="SD speedup from step times: sigma T_T1 / (gamma T_D + T_Tg + T_rej) = sigma eta_T rho",
        source=SOURCE,
        output=Quantity("S", "speedup over plain decoding", "1"),
        inputs=(alpha, gamma, time_decode, time_verify, time_draft, time_reject),
        expr=sigma_expr * time_decode.symbol
        / (gamma.symbol * time_draft.symbol + time_verify.symbol + time_reject.symbol),
        assumptions=("one round = gamma draft steps + one verification of gamma + 1 tokens",),
        notes="eta_T = T_T1 / T_Tg is the target efficiency, rho = T_Tg / (gamma T_D + T_Tg + T_rej) the "
        "verify share; S <= sigma whenever T_Tg >= T_T1.",
    ),
    Bound(
        name="moesd.batch_window_low",
        summary="batch from which a share 1 - epsilon of the experts is loaded anyway: ln eps / ln(1 - K/E)",
        source=SOURCE,
        output=Quantity("B_lo", "lower edge of the SD-friendly batch window", "1", latex=r"B_{\mathrm{lo}}"),
        inputs=(experts, top_k, saturation),
        expr=sp.log(saturation.symbol) / sp.log(1 - top_k.symbol / experts.symbol),
        relations=(top_k.symbol < experts.symbol,),
        assumptions=ROUTING,
        notes="~ (E/K) ln(1/epsilon) for sparse MoE. Qwen2-57B-A14B, epsilon = 0.05: 22.4.",
    ),
    Bound(
        name="moesd.batch_window_high",
        summary="batch where verifying gamma + 1 tokens makes experts compute-bound: (E/K) m*/(gamma+1)",
        source=SOURCE,
        output=Quantity("B_hi", "upper edge of the SD-friendly batch window", "1", latex=r"B_{\mathrm{hi}}"),
        inputs=(experts, top_k, gamma, beta, flops, bandwidth),
        expr=experts.symbol / top_k.symbol * ridge / (gamma.symbol + 1),
        relations=k_le_e,
        assumptions=(*ROUTING, *ROOFLINE, "all experts loaded (B >= B_lo)"),
        notes="Dense FFN: m*/(gamma+1) (set E = K). Grows linearly with E/K: sparser MoE, wider window.",
    ),
    Bound(
        name="moesd.time_model",
        summary="step-time model fitted to measurements: c0 + c_mem X_mem + c_comp X_comp (L1 fit by LP)",
        source=SOURCE + "; our stand-in for the paper's Algorithm 1",
        output=step,
        inputs=(memory_bytes, compute_flops, fixed_time, time_per_byte, time_per_flop),
        expr=fixed_time.symbol + time_per_byte.symbol * memory_bytes.symbol
        + time_per_flop.symbol * compute_flops.symbol,
        fit=_fitter("sum"),
        assumptions=("time is affine in bytes loaded and FLOPs", "coefficients >= 0"),
        notes="`--fit DATA.csv` (columns X_mem, X_comp, T) fits c0, c_mem, c_comp by least absolute "
        "deviations, an LP solved by HiGHS. Defaults: 2 x A800 peak, 20 us x 28 layers + 40 us.",
    ),
    Bound(
        name="moesd.time_model_max",
        summary="roofline-form step-time model: c0 + max(c_mem X_mem, c_comp X_comp) (L1 fit by n+1 LPs)",
        source=SOURCE + "; our stand-in for the paper's Algorithm 1",
        output=step,
        inputs=(memory_bytes, compute_flops, fixed_time, time_per_byte, time_per_flop),
        expr=fixed_time.symbol + sp.Max(time_per_byte.symbol * memory_bytes.symbol,
                                        time_per_flop.symbol * compute_flops.symbol),
        fit=_fitter("max"),
        assumptions=("one roofline for the whole pass", "coefficients >= 0"),
        notes="`--fit DATA.csv` labels points memory- or compute-bound by a threshold on X_comp / X_mem "
        "and solves one LP per threshold; the best is the exact L1 optimum.",
    ),
    Curve(
        name="moesd.sd_speedup",
        summary="predicted SD speedup of Qwen2-57B-A14B (draft Qwen2-0.5B) on A800-class GPUs vs batch",
        source=SOURCE,
        output=Quantity("S", "speedup over plain decoding", "1"),
        inputs=SPEEDUP_INPUTS,
        compute=lambda **v: _point(**v).speedup,
        method="sigma * T_T(B,1) / (gamma T_D(B,1) + T_T(B,gamma+1)) with the roofline step-time model",
        relations=k_le_e,
        assumptions=FULL_MODEL,
        notes="The paper measures up to 2.29x at medium batch; see docs/bounds.md for the comparison.",
    ),
    Curve(
        name="moesd.target_efficiency",
        summary="target efficiency T_T(B,1) / T_T(B,gamma+1) of Qwen2-57B-A14B on A800-class GPUs",
        source=SOURCE,
        output=Quantity("eta_T", "target efficiency", "1", latex=r"\eta_T"),
        inputs=SPEEDUP_INPUTS,
        compute=lambda **v: _point(**v).target_efficiency,
        method="ratio of roofline step times at 1 and gamma + 1 tokens per sequence",
        relations=k_le_e,
        assumptions=FULL_MODEL,
    ),
    Curve(
        name="moesd.best_draft_length",
        summary="draft length maximising the predicted speedup, by enumeration over 1..Gamma",
        source=SOURCE,
        output=Quantity("gamma_star", "best draft length", "1", "positive_integer", latex=r"\gamma^*"),
        inputs=(batch, alpha, longest, context, gpus, flops, bandwidth, experts, top_k),
        compute=lambda B, alpha, Gamma, ctx, G, F, BW, E, K: best_draft_length(
            B, alpha, int(Gamma), context=ctx, target=_model_for(E, K), hw=_hardware_for(G, F, BW)
        )[0],
        method="enumerate gamma = 1..Gamma and keep the largest predicted speedup (ties: shorter)",
        relations=k_le_e,
        assumptions=FULL_MODEL,
    ),
]

