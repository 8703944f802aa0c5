"""Closed forms for pipeline-parallel schedules: bubbles, makespans, activation peaks, Megatron's
activation bytes and the largest trainable model under an HBM budget.

Conventions (as in the simulator of :mod:`coopt.problems.pipeline.model`): uniform stages, lag
c = 0 unless stated, ``T_Bf = T_B + T_W`` the fused backward, peaks in units of one micro-batch's
activations over one device's layers (``A_st``). Each form is checked in tests/test_pipeline_bounds.py
against the simulator and the MILP.
"""

from __future__ import annotations

import sympy as sp

from coopt.closed_forms import Bound, Quantity

p = Quantity("p", "pipeline stages (devices)", domain="positive_integer", default=4)
m = Quantity("m", "micro-batches per iteration", domain="positive_integer", default=8)
v = Quantity("v", "model chunks per device (interleaving)", domain="positive_integer", default=2)
s = Quantity("s", "stage index (0 = first)", domain="nonnegative_integer", default=0)
T_F = Quantity("T_F", "forward time of one micro-batch on one stage", "s", default=1.0)
T_B = Quantity("T_B", "input-gradient backward time", "s", default=1.0)
T_W = Quantity("T_W", "weight-gradient backward time", "s", "nonnegative", default=1.0)
T_Bf = Quantity("T_Bf", "fused backward time (T_B + T_W)", "s", default=2.0)
c = Quantity("c", "point-to-point lag between stages", "s", "nonnegative", default=0.0)
alpha_W = Quantity(
    "alpha_W", "share of activations kept after B until W (a_W / a)", domain="unit", default=0.5
)
seq = Quantity("seq", "sequence length", "tokens", default=4096)
b = Quantity("b", "micro-batch size", "sequences", default=1)
h = Quantity("h", "hidden size", default=8192)
a_h = Quantity("a_h", "attention heads", default=64)
t = Quantity("t", "tensor-parallel degree", domain="positive", default=8)
beta = Quantity("beta", "static bytes per parameter (weights, grads, optimizer)", "B", default=18)
P_layer = Quantity("P_layer", "parameters per transformer layer", default=855_654_400)
A_dev = Quantity("A_dev", "activation bytes per layer and micro-batch on one device", "B", default=1.11e9)
n_X = Quantity("n_X", "peak in-flight micro-batches of the schedule on the fullest device", default=8)
HBM = Quantity("HBM", "device memory", "B", default=80e9)
R = Quantity("R", "reserve plus embedding and buffer memory per device", "B", "nonnegative", default=5e9)

C = Quantity("C", "iteration makespan", "s")
ratio = Quantity("bubble", "bubble ratio 1 - busy / (p C)", domain="unit")
peak = Quantity(
    "peak", "peak activations on a device, in micro-batches of that device's layers", domain="nonnegative"
)
bytes_layer = Quantity("A_layer", "activation bytes per layer and micro-batch", "B")
L_max = Quantity(
    "L_max", "largest number of layers that fits (round down to a multiple of p v)", domain="nonnegative"
)

_uniform = ("uniform stages", "lag c = 0", "micro-batches identical")

BOUNDS = [
    Bound(
        name="pipeline.bubble_1f1b",
        summary="Bubble ratio of GPipe and 1F1B",
        source="Huang et al., GPipe, NeurIPS 2019; Narayanan et al., SC 2021",
        output=ratio,
        inputs=(p, m),
        expr=(p.symbol - 1) / (m.symbol + p.symbol - 1),
        assumptions=_uniform,
        notes="Megatron reports bubble / ideal time = (p - 1)/m, the same quantity in another unit.",
    ),
    Bound(
        name="pipeline.bubble_interleaved",
        summary="Bubble ratio of interleaved 1F1B with v chunks per device",
        source="Narayanan et al., SC 2021",
        output=ratio,
        inputs=(p, m, v),
        expr=(p.symbol - 1) / (v.symbol * m.symbol + p.symbol - 1),
        assumptions=(*_uniform, "m a multiple of p", "fused backward"),
    ),
    Bound(
        name="pipeline.makespan_1f1b",
        summary="Makespan of GPipe and 1F1B with a fused backward",
        source="Huang et al. 2019; Narayanan et al. 2021",
        output=C,
        inputs=(p, m, T_F, T_Bf),
        expr=(m.symbol + p.symbol - 1) * (T_F.symbol + T_Bf.symbol),
        assumptions=(*_uniform, "fused backward"),
        notes="With the B/W split and W run right after B, 1F1B is shorter: the next stage's B waits "
        "only for B.",
    ),
    Bound(
        name="pipeline.makespan_interleaved",
        summary="Makespan of interleaved 1F1B",
        source="Narayanan et al., SC 2021",
        output=C,
        inputs=(p, m, v, T_F, T_Bf),
        expr=m.symbol * (T_F.symbol + T_Bf.symbol) + (p.symbol - 1) * (T_F.symbol + T_Bf.symbol) / v.symbol,
        assumptions=(
            *_uniform,
            "m a multiple of p",
            "fused backward",
            "T_F, T_Bf are per device (all chunks)",
        ),
    ),
    Bound(
        name="pipeline.makespan_zbh1",
        summary="Makespan of ZB-H1 (Zero Bubble, B/W split)",
        source="Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024",
        output=C,
        inputs=(p, m, T_F, T_B, T_W),
        expr=m.symbol * (T_F.symbol + T_B.symbol + T_W.symbol)
        + (p.symbol - 1) * (T_F.symbol + T_B.symbol - T_W.symbol),
        assumptions=(*_uniform, "T_W <= T_F + T_B", "m >= p"),
    ),
    Bound(
        name="pipeline.fill_lower_bound",
        summary="Lower bound on any schedule's makespan: the last stage starts after p-1 forwards and "
        "then does all its work",
        source="research-pipeline-memory.md d.1 (load argument)",
        output=C,
        inputs=(p, m, T_F, T_B, T_W, c),
        expr=(p.symbol - 1) * (T_F.symbol + c.symbol) + m.symbol * (T_F.symbol + T_B.symbol + T_W.symbol),
        assumptions=("uniform stages",),
        notes="Model P's load cut (P7) is this bound per device; ZB-H1 attains it when T_W = T_B = T_F.",
    ),
    Bound(
        name="pipeline.peak_gpipe",
        summary="Peak in-flight micro-batches per device under GPipe",
        source="Huang et al. 2019",
        output=peak,
        inputs=(m,),
        expr=m.symbol,
        assumptions=_uniform,
    ),
    Bound(
        name="pipeline.peak_1f1b",
        summary="Peak in-flight micro-batches on stage s under 1F1B",
        source="Narayanan et al. 2021 (warm-up p - s - 1 forwards)",
        output=peak,
        inputs=(p, m, s),
        expr=sp.Min(p.symbol - s.symbol, m.symbol),
        assumptions=_uniform,
    ),
    Bound(
        name="pipeline.peak_interleaved",
        summary="Peak activations on device s under interleaved 1F1B (device micro-batches)",
        source="Megatron warm-up count 2(p - s - 1) + (v - 1)p; Korthikanti et al. 2023 factor "
        "1 + (p - 1)/(p v) on device 0",
        output=peak,
        inputs=(p, v, s),
        expr=(2 * (p.symbol - s.symbol - 1) + (v.symbol - 1) * p.symbol + 1) / v.symbol,
        assumptions=(*_uniform, "m >= p, m a multiple of p"),
    ),
    Bound(
        name="pipeline.peak_zbh1",
        summary="Peak activations on stage s under ZB-H1 (units of a)",
        source="Qi et al. 2024; research-pipeline-memory.md d.2",
        output=peak,
        inputs=(p, s, alpha_W),
        expr=(p.symbol - s.symbol) + s.symbol * alpha_W.symbol,
        assumptions=(*_uniform, "m >= p"),
    ),
    Bound(
        name="pipeline.megatron_activation_bytes",
        summary="Activation bytes per transformer layer and micro-batch with tensor + sequence parallelism",
        source="Korthikanti et al., Reducing Activation Recomputation in Large Transformers, MLSys 2023",
        output=bytes_layer,
        inputs=(seq, b, h, a_h, t),
        expr=seq.symbol * b.symbol * h.symbol * (34 + 5 * a_h.symbol * seq.symbol / h.symbol) / t.symbol,
        assumptions=("16-bit activations", "dropout masks 1 byte", "no fused attention"),
        notes="Selective recompute drops the 5 a_h seq / h term; full recompute keeps 2 seq b h (the "
        "layer input); FlashAttention also drops the 5 a_h seq / h term.",
    ),
    Bound(
        name="pipeline.megatron_full_recompute_bytes",
        summary="Activation bytes per layer and micro-batch kept under full recomputation",
        source="Korthikanti et al., MLSys 2023",
        output=bytes_layer,
        inputs=(seq, b, h, t),
        expr=2 * seq.symbol * b.symbol * h.symbol / t.symbol,
        assumptions=("16-bit layer input checkpoint", "sequence-parallel checkpoint (divided by t)"),
    ),
    Bound(
        name="pipeline.largest_model_layers",
        summary="Largest layer count that fits a device's HBM for a schedule with peak n_X in-flight "
        "micro-batches on its fullest device",
        source="research-pipeline-memory.md d.4 (static + activation memory per device)",
        output=L_max,
        inputs=(p, HBM, R, beta, P_layer, t, n_X, A_dev),
        expr=p.symbol
        * (HBM.symbol - R.symbol)
        / (beta.symbol * P_layer.symbol / t.symbol + n_X.symbol * A_dev.symbol),
        assumptions=("L / p layers per device", "per-device memory (L/p)(beta P_layer / t + n_X A_dev) + R"),
        notes="Recompute / offload enter through A_dev (kept bytes); ratios between schedules "
        "(beta P/t + p A)/(beta P/t + n_X A) -> p / n_X when activations dominate.",
    ),
]
