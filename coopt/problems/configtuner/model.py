"""ConfigTuner's data model: the declared fields, the configuration space, the checker.

An instance is a model (dense or MoE), a cluster and a global batch. A *configuration* is
``(tp, pp, dp, ep, microbatch, interleave, recompute, sequence_parallel, zero)``; its iteration
time and memory come from the analytic model of :mod:`.analytic`. A solution is::

    {"config": {"tp": 8, "pp": 4, "dp": 2, "ep": 1, "microbatch": 1, "interleave": 2,
                "recompute": "selective", "sequence_parallel": true, "zero": 1},
     "objective": <iteration time, s>, "breakdown": {...}, "evaluated": <configurations priced>}

The rules (model row -> checker violation, and back). The exact MILP (:mod:`.milp`) has one binary
per configuration of :func:`space`, which enumerates exactly the configurations these rules admit;
its only row is ``sum z = 1``. Memory and divisibility are data: a configuration is in the space
if and only if the checker accepts it (tests/test_configtuner.py checks this both ways).

=====================================  ===============================================
rule (space / MILP)                    checker violation
=====================================  ===============================================
``sum_c z_c = 1``                      ``config`` (exactly one well-formed configuration)
``t p d = N``                          ``product``
``a mod t = 0``, ``a_kv mod t = 0``    ``divisibility`` (Megatron splits heads over TP)
``L mod p = 0``                        ``divisibility`` (uniform layers per stage; C2 lifts it)
``B_g mod (b d) = 0``                  ``divisibility`` (whole micro-batches per replica)
``e | d``, ``e | E``                   ``divisibility`` (EP groups inside DP; experts split evenly)
``(L/p) mod v = 0``; ``v > 1`` needs   ``interleave`` (Megatron's interleaved 1F1B schedule)
``p > 1`` and ``m mod p = 0``
``b <= max_microbatch``, ``v <=        ``search_space`` (the instance's search space)
max_interleave``, recompute, zero and
sequence parallel among those allowed
``memory(c) <= gpu_memory``            ``memory`` (worst stage, :mod:`.analytic`)
=====================================  ===============================================

No configuration is dropped for being equivalent to another (``sequence_parallel`` with ``tp = 1``,
ZeRO stages with ``dp = 1`` are kept, priced equal): the space is the rule set, nothing less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from coopt.errors import UsageError
from coopt.problem import TOL, Solution, Violation
from coopt.problems.configtuner import analytic
from coopt.schema import Field, Schema

RECOMPUTE = ("none", "selective", "full")
ZERO_STAGES = (0, 1, 2, 3)
CONFIG_KEYS = ("tp", "pp", "dp", "ep", "microbatch", "interleave", "recompute", "sequence_parallel", "zero")
GIB = 2**30

MODEL_FIELDS = (
    Field("layers", "int", "transformer layers L", min=1, max=4096, example=24),
    Field("hidden", "int", "hidden size h", min=1, max=1_000_000, example=2048),
    Field("ffn_hidden", "int", "FFN hidden size h_f (per expert)", min=1, max=4_000_000, example=8192),
    Field("heads", "int", "attention heads a", min=1, max=100_000, example=16),
    Field("kv_heads", "int", "key/value heads (grouped-query attention); 0 = as many as heads",
          default=0, min=0, max=100_000),
    Field("vocab", "int", "vocabulary size V", min=1, max=10_000_000, example=50304),
    Field("seq_length", "int", "sequence length s", min=1, max=10_000_000, example=2048),
    Field("gated_mlp", "bool", "SwiGLU-style FFN with three matrices (Llama) instead of two (GPT)",
          default=False),
    Field("experts", "int", "experts per MoE layer E; 1 = dense model", default=1, min=1, max=4096),
    Field("top_k", "int", "experts per token k (MoE)", default=1, min=1, max=4096),
    Field("tied_embeddings", "bool", "input embedding and LM head share weights", default=True),
    Field("flash_attention", "bool", "attention scores are never stored (FlashAttention)", default=False),
)

CLUSTER_FIELDS = (
    Field("gpus", "int", "GPUs N", min=1, max=1_000_000, example=16),
    Field("gpus_per_node", "int", "GPUs per node G (the NVLink domain)", default=8, min=1, max=1024),
    Field("gpu_memory_gib", "float", "memory per GPU", unit="GiB", si=GIB, default=80.0, positive=True,
          max=1e6),
    Field("memory_reserve_gib", "float", "memory per GPU held back (CUDA context, workspaces)",
          unit="GiB", si=GIB, default=1.0, min=0.0, max=1e6),
    Field("peak_tflops", "float", "peak dense bf16 rate per GPU (A100 312, H100 SXM 989)",
          unit="TFLOP/s", si=1e12, default=312.0, positive=True, max=1e6),
    Field("hbm_tbyte_per_s", "float", "achieved HBM bandwidth per GPU (A100-80GB: 2.039 peak)",
          unit="TB/s", si=1e12, default=1.6, positive=True, max=1e4),
    Field("gemm_max_utilization", "float", "utilization U_max of the largest GEMMs", default=0.8,
          positive=True, max=1.0),
    Field("gemm_half_gflop", "float", "GEMM size W_half (FLOPs of one b s h^2/t GEMM) at half of U_max",
          unit="GFLOP", si=1e9, default=4.0, min=0.0, max=1e9),
    Field("elementwise_traffic", "float", "HBM bytes moved per stored activation byte (kappa)",
          default=2.0, min=0.0, max=1e3),
    Field("optimizer_bytes", "float", "HBM bytes per parameter of one Adam step (fp32 master, m, v)",
          unit="B", default=30.0, min=0.0, max=1e4),
    Field("nvlink_gbyte_per_s", "float", "achieved NVLink bus bandwidth per GPU (large messages)",
          unit="GB/s", si=1e9, default=230.0, positive=True, max=1e6),
    Field("nvlink_latency_us", "float", "NVLink collective step latency", unit="us", si=1e-6,
          default=10.0, min=0.0, max=1e6),
    Field("nic_gbit_per_s", "float", "achieved network bandwidth per GPU between nodes",
          unit="Gbit/s", si=1e9 / 8, default=180.0, positive=True, max=1e6),
    Field("nic_latency_us", "float", "network step latency between nodes", unit="us", si=1e-6,
          default=20.0, min=0.0, max=1e6),
)

TRAINING_FIELDS = (
    Field("global_batch", "int", "global batch B_g", unit="sequences", min=1, max=100_000_000,
          example=256),
    Field("fp32_gradients", "bool", "gradients kept and reduced in fp32 (Megatron's bf16 default)",
          default=True),
    Field("dp_overlap", "bool", "data-parallel gradient traffic overlaps backward compute",
          default=False),
)

SEARCH_FIELDS = (
    Field("max_microbatch", "int", "largest micro-batch tried", default=8, min=1, max=4096),
    Field("max_interleave", "int", "most interleaved chunks per stage tried", default=4, min=1, max=1024),
    Field("recompute", "strs", "recompute modes tried (none, selective, full)",
          default=RECOMPUTE, min_length=1),
    Field("zero_stages", "ints", "ZeRO stages tried (0: none, 1: distributed optimizer, 2, 3)",
          default=(0, 1), min=0, max=3, min_length=1),
    Field("sequence_parallel", "bool", "sequence parallelism may be switched on", default=True),
)

CALIBRATION_FIELDS = (
    Field("kind", "str", "what was measured: a point-to-point message on NVLink or the NIC, or a GEMM",
          choices=("nvlink", "nic", "gemm")),
    Field("size", "float", "message bytes (nvlink, nic) or GEMM FLOPs (gemm)", positive=True, max=1e18),
    Field("time_us", "float", "measured time", unit="us", si=1e-6, positive=True, max=1e12),
)

SCHEMA = Schema(
    (
        Field("model", "table", "the network to train", fields=MODEL_FIELDS),
        Field("cluster", "table", "the GPUs, their memory, compute and links", fields=CLUSTER_FIELDS),
        Field("training", "table", "the batch and the framework's fixed choices", fields=TRAINING_FIELDS),
        Field("search", "table", "the configuration space searched", fields=SEARCH_FIELDS, default={}),
        Field("calibration", "tables", "measured points; two or more of a kind replace that curve's "
              "parameters by an L1 fit (latency + bytes/bandwidth, or (FLOPs + W_half)/(U_max peak))",
              fields=CALIBRATION_FIELDS, default=()),
    ),
    version=1,
)


@dataclass(frozen=True)
class Instance:
    # model
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    seq_length: int
    gated_mlp: bool
    experts: int
    top_k: int
    tied_embeddings: bool
    flash_attention: bool
    # cluster (SI)
    gpus: int
    gpus_per_node: int
    gpu_memory: float
    memory_reserve: float
    peak_flops: float
    hbm_bandwidth: float
    gemm_max_utilization: float
    gemm_half_flop: float
    elementwise_traffic: float
    optimizer_bytes: float
    nvlink_bandwidth: float
    nvlink_latency: float
    nic_bandwidth: float
    nic_latency: float
    # training
    global_batch: int
    fp32_gradients: bool
    dp_overlap: bool
    # search space
    max_microbatch: int
    max_interleave: int
    recompute: tuple[str, ...]
    zero_stages: tuple[int, ...]
    sequence_parallel: bool
    #: (kind, size, time s) measured points, as given
    calibration: tuple[tuple[str, float, float], ...] = ()

    @property
    def kv_width(self) -> float:
        """h_kv: the key/value projection width."""
        return self.hidden * self.kv_heads / self.heads

    def curve(self, kind: str) -> tuple[float, float]:
        """(latency s, bandwidth B/s) of a link, or (U_max, W_half FLOP) of the GEMM curve: the
        L1 fit of the calibration points of that kind where two or more are given, else the
        declared parameters."""
        declared = {"nvlink": (self.nvlink_latency, self.nvlink_bandwidth),
                    "nic": (self.nic_latency, self.nic_bandwidth),
                    "gemm": (self.gemm_max_utilization, self.gemm_half_flop)}[kind]
        return _fitted(self, kind) or declared


def _fitted(instance: Instance, kind: str) -> tuple[float, float] | None:
    points = [(size, time) for k, size, time in instance.calibration if k == kind]
    if len(points) < 2:
        return None
    return fit_curve(kind, [p[0] for p in points], [p[1] for p in points], instance.peak_flops)


def fit_curve(kind: str, sizes: list[float], times: list[float], peak_flops: float) -> tuple[float, float]:
    """Least-absolute-deviation fit of ``time = c0 + c1 size`` (HiGHS LP, the MoESD fit of
    :func:`coopt.solvers.fit.fit_time_model`). A link: latency ``c0``, bandwidth
    ``1/c1``. A GEMM of ``F`` FLOPs at ``U = U_max F/(F + W_half)`` takes ``(F + W_half)/(U_max
    peak)``: ``U_max = 1/(c1 peak)``, ``W_half = c0/c1``. Raises ValueError when the points give no
    positive slope (they cannot be a link or a GEMM)."""
    from coopt.solvers.fit import fit_time_model

    fit = fit_time_model(times, sizes, [0.0] * len(sizes), form="sum")
    if fit.c_mem <= 0:
        raise ValueError(f"the {kind} calibration points do not grow with size")
    if kind == "gemm":
        return min(1.0, 1.0 / (fit.c_mem * peak_flops)), fit.c0 / fit.c_mem
    return fit.c0, 1.0 / fit.c_mem


def load(fields: Any) -> Instance:
    values = SCHEMA.read(fields)
    model, cluster, training, search = values.model, values.cluster, values.training, values.search
    kv = model.kv_heads or model.heads
    if model.heads % kv:
        fields.fail("model.kv_heads", f"expected a divisor of heads = {model.heads}, got {kv}")
    if model.top_k > model.experts:
        fields.fail("model.top_k", f"expected at most experts = {model.experts}, got {model.top_k}")
    bad = [r for r in search.recompute if r not in RECOMPUTE]
    if bad:
        fields.fail("search.recompute", f"expected modes among {', '.join(RECOMPUTE)}, got {bad[0]!r}")
    calibration = tuple((c.kind, c.size, c.time_us) for c in values.calibration)
    instance = Instance(
        layers=model.layers, hidden=model.hidden, ffn_hidden=model.ffn_hidden, heads=model.heads,
        kv_heads=kv, vocab=model.vocab, seq_length=model.seq_length, gated_mlp=model.gated_mlp,
        experts=model.experts, top_k=model.top_k, tied_embeddings=model.tied_embeddings,
        flash_attention=model.flash_attention,
        gpus=cluster.gpus, gpus_per_node=cluster.gpus_per_node, gpu_memory=cluster.gpu_memory_gib,
        memory_reserve=cluster.memory_reserve_gib, peak_flops=cluster.peak_tflops,
        hbm_bandwidth=cluster.hbm_tbyte_per_s, gemm_max_utilization=cluster.gemm_max_utilization,
        gemm_half_flop=cluster.gemm_half_gflop, elementwise_traffic=cluster.elementwise_traffic,
        optimizer_bytes=cluster.optimizer_bytes, nvlink_bandwidth=cluster.nvlink_gbyte_per_s,
        nvlink_latency=cluster.nvlink_latency_us, nic_bandwidth=cluster.nic_gbit_per_s,
        nic_latency=cluster.nic_latency_us,
        global_batch=training.global_batch, fp32_gradients=training.fp32_gradients,
        dp_overlap=training.dp_overlap,
        max_microbatch=search.max_microbatch, max_interleave=search.max_interleave,
        recompute=tuple(dict.fromkeys(search.recompute)),
        zero_stages=tuple(sorted(set(search.zero_stages))), sequence_parallel=search.sequence_parallel,
        calibration=calibration,
    )
    for kind in ("nvlink", "nic", "gemm"):
        try:
            _fitted(instance, kind)
        except ValueError as exc:
            fields.fail("calibration", str(exc))
    return instance


def _file(x: float, si: float) -> float:
    """An SI value back in file units, rounded to 15 digits so that load(dump(x)) == x."""
    return float(f"{x / si:.15g}")


def dump(instance: Instance) -> dict[str, Any]:
    i = instance
    out: dict[str, Any] = {
        "model": {"layers": i.layers, "hidden": i.hidden, "ffn_hidden": i.ffn_hidden, "heads": i.heads,
                  "kv_heads": i.kv_heads, "vocab": i.vocab, "seq_length": i.seq_length,
                  "gated_mlp": i.gated_mlp, "experts": i.experts, "top_k": i.top_k,
                  "tied_embeddings": i.tied_embeddings, "flash_attention": i.flash_attention},
        "cluster": {"gpus": i.gpus, "gpus_per_node": i.gpus_per_node,
                    "gpu_memory_gib": _file(i.gpu_memory, GIB),
                    "memory_reserve_gib": _file(i.memory_reserve, GIB),
                    "peak_tflops": _file(i.peak_flops, 1e12), "hbm_tbyte_per_s": _file(i.hbm_bandwidth, 1e12),
                    "gemm_max_utilization": i.gemm_max_utilization,
                    "gemm_half_gflop": _file(i.gemm_half_flop, 1e9),
                    "elementwise_traffic": i.elementwise_traffic, "optimizer_bytes": i.optimizer_bytes,
                    "nvlink_gbyte_per_s": _file(i.nvlink_bandwidth, 1e9),
                    "nvlink_latency_us": _file(i.nvlink_latency, 1e-6),
                    "nic_gbit_per_s": _file(i.nic_bandwidth, 1e9 / 8),
                    "nic_latency_us": _file(i.nic_latency, 1e-6)},
        "training": {"global_batch": i.global_batch, "fp32_gradients": i.fp32_gradients,
                     "dp_overlap": i.dp_overlap},
        "search": {"max_microbatch": i.max_microbatch, "max_interleave": i.max_interleave,
                   "recompute": list(i.recompute), "zero_stages": list(i.zero_stages),
                   "sequence_parallel": i.sequence_parallel},
    }
    if i.calibration:
        out["calibration"] = [{"kind": k, "size": size, "time_us": _file(time, 1e-6)}
                              for k, size, time in i.calibration]
    return out


# -- the configuration space ------------------------------------------------------------------

def divisors(n: int) -> list[int]:
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return sorted(set(small + [n // k for k in small]))


def triples(instance: Instance, tp_within_node: bool = False) -> list[tuple[int, int, int]]:
    """(t, p, d) with t p d = N, heads and kv heads divisible by t, layers by p; with
    ``tp_within_node``, t also divides the node."""
    out = []
    for t in divisors(instance.gpus):
        if instance.heads % t or instance.kv_heads % t:
            continue
        if tp_within_node and instance.gpus_per_node % t:
            continue
        for p in divisors(instance.gpus // t):
            if instance.layers % p == 0:
                out.append((t, p, instance.gpus // (t * p)))
    return out


def structures(instance: Instance, tp_within_node: bool = False, ep_within_node: bool = False,
               max_interleave: int | None = None, expert_parallel: bool = True) -> list[tuple]:
    """(t, p, d, e, b, v) satisfying every divisibility rule of the module docstring."""
    out = []
    vmax = instance.max_interleave if max_interleave is None else min(max_interleave, instance.max_interleave)
    for t, p, d in triples(instance, tp_within_node):
        per_replica = instance.global_batch // d if instance.global_batch % d == 0 else 0
        eps = [e for e in divisors(d) if instance.experts % e == 0] if expert_parallel else [1]
        for e in eps:
            if ep_within_node and t * e > instance.gpus_per_node and e > 1:
                continue
            for b in range(1, min(instance.max_microbatch, per_replica) + 1):
                if per_replica % b:
                    continue
                m = per_replica // b
                for v in range(1, vmax + 1):
                    if (instance.layers // p) % v:
                        continue
                    if v > 1 and (p == 1 or m % p):
                        continue
                    out.append((t, p, d, e, b, v))
    return out


@dataclass(frozen=True)
class Space:
    """Configurations as parallel arrays (one entry per configuration)."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    ep: np.ndarray
    microbatch: np.ndarray
    interleave: np.ndarray
    recompute: np.ndarray  # index into RECOMPUTE
    sequence_parallel: np.ndarray  # 0/1
    zero: np.ndarray

    def __len__(self) -> int:
        return len(self.tp)

    def config(self, i: int) -> dict[str, Any]:
        return {"tp": int(self.tp[i]), "pp": int(self.pp[i]), "dp": int(self.dp[i]), "ep": int(self.ep[i]),
                "microbatch": int(self.microbatch[i]), "interleave": int(self.interleave[i]),
                "recompute": RECOMPUTE[int(self.recompute[i])],
                "sequence_parallel": bool(self.sequence_parallel[i]), "zero": int(self.zero[i])}


def space(instance: Instance, rows: list[tuple] | None = None, recompute: tuple[str, ...] | None = None,
          zero_stages: tuple[int, ...] | None = None,
          sequence_parallel: tuple[bool, ...] | None = None) -> Space:
    """Every configuration of the instance's space (or of the given structures and flag choices,
    each a subset of the instance's): the structures of :func:`structures` crossed with the allowed
    recompute modes, sequence-parallel settings and ZeRO stages."""
    rows = structures(instance) if rows is None else rows
    modes = [RECOMPUTE.index(r) for r in (recompute or instance.recompute)]
    zeros = list(zero_stages if zero_stages is not None else instance.zero_stages)
    sps = [int(x) for x in (sequence_parallel if sequence_parallel is not None
                            else ((False, True) if instance.sequence_parallel else (False,)))]
    flags = np.array([(r, q, z) for r in modes for q in sps for z in zeros], dtype=np.int64).reshape(-1, 3)
    base = np.array(rows, dtype=np.int64).reshape(-1, 6)
    grid_base = np.repeat(base, len(flags), axis=0)
    grid_flags = np.tile(flags, (len(base), 1))
    return Space(*(grid_base[:, j] for j in range(6)), *(grid_flags[:, j] for j in range(3)))


def _links(instance: Instance, stride: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(latency, bandwidth) of a group of ``size`` ranks ``stride`` apart: NVLink when the whole
    group sits in one node, else the NIC (the ranks are laid out TP, EP, rest of DP, PP, inner first)."""
    (a_nv, b_nv), (a_nic, b_nic) = instance.curve("nvlink"), instance.curve("nic")
    inside = stride * size <= instance.gpus_per_node
    return np.where(inside, a_nv, a_nic), np.where(inside, b_nv, b_nic)


def symbol_values(instance: Instance, configs: Space) -> dict[str, Any]:
    """The analytic model's symbols for every configuration of ``configs``."""
    i = instance
    t, p, d, e = (configs.tp.astype(float), configs.pp.astype(float), configs.dp.astype(float),
                  configs.ep.astype(float))
    u_max, w_half = i.curve("gemm")
    values: dict[str, Any] = {
        "L": i.layers, "h": i.hidden, "h_f": i.ffn_hidden, "a": i.heads, "h_kv": i.kv_width,
        "V": i.vocab, "s": i.seq_length, "n_mlp": 3 if i.gated_mlp else 2, "k": i.top_k, "E": i.experts,
        "B_g": i.global_batch, "N": i.gpus, "F_peak": i.peak_flops, "B_HBM": i.hbm_bandwidth,
        "U_max": u_max, "W_half": w_half, "kappa": i.elementwise_traffic,
        "g": 4.0 if i.fp32_gradients else 2.0, "o": i.optimizer_bytes, "M_res": i.memory_reserve,
        "f_a": float(i.flash_attention), "tied": float(i.tied_embeddings), "omega": float(i.dp_overlap),
        "t": t, "p": p, "d": d, "e": e, "b": configs.microbatch.astype(float),
        "v": configs.interleave.astype(float),
        "r_f": (configs.recompute == 2).astype(float), "r_s": (configs.recompute == 1).astype(float),
        "q": configs.sequence_parallel.astype(float),
        "z_1": (configs.zero >= 1).astype(float), "z_2": (configs.zero >= 2).astype(float),
        "z_3": (configs.zero >= 3).astype(float),
    }
    ones = np.ones_like(t)
    for name, stride, size in (("tp", ones, t), ("ep", t, e), ("dp", t, d), ("ed", t * e, d / e),
                               ("pp", t * d, p)):
        values[f"alpha_{name}"], values[f"B_{name}"] = _links(i, stride, size)
    return values


def evaluate(instance: Instance, configs: Space, outputs: tuple[str, ...] = analytic.OUTPUTS
             ) -> dict[str, np.ndarray]:
    """Time, memory, breakdown and FLOPs of every configuration (arrays); ``("memory",)`` for the
    memory alone."""
    return analytic.evaluate(symbol_values(instance, configs), outputs)


def select(values: dict[str, Any], index: np.ndarray) -> dict[str, Any]:
    """The symbol values of configurations ``index`` (arrays sliced, scalars kept)."""
    return {k: v[index] if isinstance(v, np.ndarray) and v.ndim else v for k, v in values.items()}


def space_of(config: dict[str, Any]) -> Space:
    """A one-configuration Space from a solution's ``config``."""
    return Space(*(np.array([int(config[k])]) for k in ("tp", "pp", "dp", "ep", "microbatch", "interleave")),
                 np.array([RECOMPUTE.index(config["recompute"])]),
                 np.array([int(bool(config["sequence_parallel"]))]), np.array([int(config["zero"])]))


def subset(configs: Space, index: np.ndarray) -> Space:
    """The configurations ``index`` of ``configs``."""
    return Space(*(getattr(configs, f)[index] for f in Space.__dataclass_fields__))


def priced(configs: Space, out: dict[str, np.ndarray], index: int, evaluated: int) -> Solution:
    """The solution for configuration ``index`` of ``configs``, from the outputs ``out`` of one
    :func:`evaluate` call over them (no second pricing)."""
    return {"config": configs.config(index), "objective": float(out["time"][index]),
            "breakdown": {k: float(out[k][index]) for k in analytic.BREAKDOWN},
            "memory_gib": float(out["memory"][index]) / GIB, "mfu": float(out["mfu"][index]),
            "hfu": float(out["hfu"][index]), "evaluated": int(evaluated)}


def solution_of(instance: Instance, config: dict[str, Any], evaluated: int) -> Solution:
    """The solution for one configuration, priced on its own."""
    configs = space_of(config)
    return priced(configs, evaluate(instance, configs), 0, evaluated)


# -- the checker --------------------------------------------------------------------------------

def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _config_violations(instance: Instance, config: Any) -> list[Violation]:
    if not isinstance(config, dict):
        got = type(config).__name__
        return [Violation("config", f"expected a table of {', '.join(CONFIG_KEYS)}, got {got}")]
    missing = [k for k in CONFIG_KEYS if k not in config]
    if missing:
        return [Violation("config", f"missing {', '.join(missing)}")]
    ints = ("tp", "pp", "dp", "ep", "microbatch", "interleave", "zero")
    bad = [k for k in ints if not _is_int(config[k]) or config[k] < (0 if k == "zero" else 1)]
    if bad:
        return [Violation("config", f"{', '.join(bad)} must be positive integers (zero >= 0)")]
    if config["recompute"] not in RECOMPUTE or not isinstance(config["sequence_parallel"], bool):
        return [Violation("config", "recompute must be none|selective|full, sequence_parallel a boolean")]
    return []


def rule_violations(instance: Instance, config: dict[str, Any]) -> list[Violation]:
    """Every rule of the module docstring but memory, for a well-formed ``config``."""
    i, c = instance, config
    t, p, d, e, b, v = (c[k] for k in ("tp", "pp", "dp", "ep", "microbatch", "interleave"))
    out = []
    if t * p * d != i.gpus:
        out.append(Violation("product", f"tp {t} x pp {p} x dp {d} = {t * p * d}, not the {i.gpus} GPUs"))
    if i.heads % t or i.kv_heads % t:
        out.append(Violation("divisibility", f"tp {t} does not divide heads {i.heads} / kv heads "
                             f"{i.kv_heads}"))
    if i.layers % p:
        out.append(Violation("divisibility", f"pp {p} does not divide the {i.layers} layers"))
    if i.global_batch % (b * d):
        out.append(Violation("divisibility", f"microbatch {b} x dp {d} does not divide batch "
                             f"{i.global_batch}"))
    if d % e or i.experts % e:
        out.append(Violation("divisibility", f"ep {e} does not divide dp {d} and the {i.experts} experts"))
    if i.layers % p == 0 and (i.layers // p) % v:
        out.append(Violation("interleave", f"{v} chunks do not divide the {i.layers // p} layers per stage"))
    if v > 1 and p == 1:
        out.append(Violation("interleave", "interleaving needs more than one pipeline stage"))
    if v > 1 and p > 1 and i.global_batch % (b * d) == 0 and (i.global_batch // (b * d)) % p:
        out.append(Violation("interleave", f"{i.global_batch // (b * d)} micro-batches are not a "
                             f"multiple of pp {p}"))
    if b > i.max_microbatch or v > i.max_interleave:
        out.append(Violation("search_space", f"microbatch {b} / interleave {v} exceed the space's "
                             f"{i.max_microbatch} / {i.max_interleave}"))
    if c["recompute"] not in i.recompute or c["zero"] not in i.zero_stages:
        out.append(Violation("search_space", f"recompute {c['recompute']} / zero {c['zero']} not among "
                             f"{list(i.recompute)} / {list(i.zero_stages)}"))
    if c["sequence_parallel"] and not i.sequence_parallel:
        out.append(Violation("search_space", "sequence parallelism is not allowed by this instance"))
    return out


def check(instance: Instance, solution: Solution) -> list[Violation]:
    config = solution.get("config") if isinstance(solution, dict) else None
    bad = _config_violations(instance, config)
    if bad:
        return bad
    out = rule_violations(instance, config)
    if out:
        return out
    memory = float(evaluate(instance, space_of(config), ("memory",))["memory"][0])
    if not math.isfinite(memory) or memory > instance.gpu_memory:
        out.append(Violation("memory", f"{memory / GIB:.6g} GiB on the worst stage, "
                             f"{instance.gpu_memory / GIB:.6g} GiB per GPU"))
    claimed = solution.get("objective")
    if isinstance(claimed, int | float) and math.isfinite(claimed):
        actual = objective(instance, solution)
        if not math.isclose(claimed, actual, rel_tol=TOL, abs_tol=1e-12):
            out.append(Violation("objective", f"claims {claimed!r}, the configuration takes {actual!r} s"))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """The iteration time in seconds of the solution's configuration (NaN if it is malformed)."""
    config = solution.get("config") if isinstance(solution, dict) else None
    if _config_violations(instance, config):
        return math.nan
    return float(evaluate(instance, space_of(config))["time"][0])


# -- generators ------------------------------------------------------------------------------------

#: (layers, hidden, heads) of GPT-style shapes the generator draws from.
SHAPES = ((16, 1024, 16), (24, 2048, 16), (32, 2560, 32), (32, 4096, 32), (40, 5120, 40), (80, 8192, 64),
          (96, 12288, 96))


#: The generator's largest size: nodes of 8 GPUs, at most 10^6 GPUs.
MAX_SIZE = 125_000


def generate(seed: int, size: int = 1) -> Instance:
    """A GPT-style model on ``size`` nodes of 8 A100-80GB (NVLink 230 GB/s, 180 Gbit/s NIC per GPU);
    the shape grows with the cluster, the global batch is 8 to 32 sequences per GPU."""
    if size < 1 or size > MAX_SIZE:
        raise UsageError(f"configtuner: --size is 1..{MAX_SIZE} nodes (at most 10^6 GPUs), got {size}")
    if seed < 0:
        raise UsageError(f"configtuner: --seed must be >= 0, got {seed}")
    rng = np.random.default_rng(seed)
    gpus = 8 * size
    reach = min(len(SHAPES), 2 + int(math.log2(size)))
    layers, hidden, heads = SHAPES[int(rng.integers(0, reach))]
    batch = gpus * int(rng.choice([2, 4, 8])) * 4
    return Instance(
        layers=layers, hidden=hidden, ffn_hidden=4 * hidden, heads=heads, kv_heads=heads, vocab=50304,
        seq_length=int(rng.choice([1024, 2048, 4096])), gated_mlp=False, experts=1, top_k=1,
        tied_embeddings=True, flash_attention=bool(rng.integers(0, 2)),
        # file value x unit factor, as the loader computes it, so that a written file reads back equal
        gpus=gpus, gpus_per_node=8, gpu_memory=80.0 * GIB, memory_reserve=1.0 * GIB, peak_flops=312.0 * 1e12,
        hbm_bandwidth=1.6 * 1e12, gemm_max_utilization=0.8, gemm_half_flop=4.0 * 1e9, elementwise_traffic=2.0,
        optimizer_bytes=30.0, nvlink_bandwidth=230.0 * 1e9, nvlink_latency=10.0 * 1e-6,
        nic_bandwidth=180.0 * (1e9 / 8), nic_latency=20.0 * 1e-6, global_batch=batch, fp32_gradients=True,
        dp_overlap=bool(rng.integers(0, 2)),
        max_microbatch=8, max_interleave=4, recompute=RECOMPUTE, zero_stages=(0, 1, 2, 3),
        sequence_parallel=True,
    )


def generate_tiny(seed: int) -> Instance:
    """A tiny instance for brute force: 1-8 GPUs, a few layers, a tight memory cap (some seeds
    admit no configuration at all)."""
    rng = np.random.default_rng(10_000 + seed)
    gpus = int(rng.choice([1, 2, 4, 4, 6, 8, 8]))
    heads = int(rng.choice([1, 2, 4, 8]))
    hidden = heads * int(rng.choice([16, 32, 64]))
    experts = int(rng.choice([1, 1, 2, 4]))
    layers = int(rng.choice([1, 2, 3, 4, 6]))
    seq = int(rng.choice([64, 128, 256]))
    zero = tuple(sorted({int(z) for z in rng.choice(4, size=int(rng.integers(1, 5)), replace=False)}))
    modes = tuple(r for r in RECOMPUTE if rng.random() < 0.7) or ("full",)
    params = layers * 12 * hidden**2 * experts
    return Instance(
        layers=layers, hidden=hidden, ffn_hidden=4 * hidden, heads=heads,
        kv_heads=heads // int(rng.choice([1, heads])) if heads > 1 else 1,
        vocab=int(rng.choice([256, 1000])), seq_length=seq, gated_mlp=bool(rng.integers(0, 2)),
        experts=experts, top_k=int(rng.integers(1, experts + 1)), tied_embeddings=bool(rng.integers(0, 2)),
        flash_attention=bool(rng.integers(0, 2)),
        gpus=gpus, gpus_per_node=int(rng.choice([1, 2, 4])),
        gpu_memory=float(round(params * float(rng.uniform(2.0, 24.0))
                               + seq * hidden * 40 * float(rng.uniform(0, 16)))),
        memory_reserve=0.0, peak_flops=1e12, hbm_bandwidth=1e11, gemm_max_utilization=0.8,
        gemm_half_flop=float(rng.choice([0.0, 1e6])), elementwise_traffic=2.0, optimizer_bytes=30.0,
        nvlink_bandwidth=1e11, nvlink_latency=1e-6, nic_bandwidth=1e10, nic_latency=5e-6,
        global_batch=int(rng.choice([1, 4, 6, 8, 12, 16, 24])), fp32_gradients=bool(rng.integers(0, 2)),
        dp_overlap=bool(rng.integers(0, 2)), max_microbatch=int(rng.integers(1, 5)),
        max_interleave=int(rng.integers(1, 4)), recompute=modes, zero_stages=zero,
        sequence_parallel=bool(rng.integers(0, 2)),
    )
