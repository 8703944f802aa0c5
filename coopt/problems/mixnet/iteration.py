"""An iteration-time model of MoE training on four fabrics, for the normalized times and the
performance per dollar of the MixNet calculator.

Set-up (:data:`MIXNET_SIM`, mixnet-project/mixnet-sim README: 1024 GPUs = 128 servers x 8 GPUs x
8 NICs, one NIC per GPU; DP 2, TP 8 inside a server, PP 8, EP 8, so a region is 8 servers;
sequence 4096, micro-batch 8, global batch 128) and the models (:data:`MODELS`) are data with their
sources. Per micro-batch and pipeline stage (``L / PP`` MoE layers), with ``tokens = micro-batch x
sequence`` per server::

    forward  = sum over its layers [ compute + 2 TP all-reduces (NVLink) + 2 all-to-alls ]
    backward = 2 x compute + 2 TP all-reduces + 2 all-to-alls, per layer
    p2p      = tokens x hidden x 2 B / TP per GPU to the next stage, each way
    step     = (m + PP - 1) (forward + backward + 2 p2p)           (1F1B, m micro-batches)
    T        = step + ring all-reduce of the gradients over DP (experts) and DP x EP (the rest)

Compute: ``2 x`` the multiply-adds per token of the attention (Q, K, V, O projections with ``kv``
of ``heads`` heads for K and V, causal scores ``s h``), the ``top_k`` SwiGLU experts and a shared
expert, at ``mfu`` of the GPU's peak. All-to-all: the region's matrix is the authors' measured
EP8 shares (``wm_ep8.txt``, each row a rank's tokens to each rank's experts) times ``tokens x
top_k x hidden x 2`` bytes; its time per fabric:

* fat-tree and rail-optimized: non-blocking, every NIC electrical, ``max_i max(row_i, col_i) /
  (N B)`` (the all-to-all is rail-aligned: TP rank ``t`` of one server talks to TP rank ``t`` of
  another, so a rail fabric carries it as the fat-tree does);
* MixNet: ``1 / theta`` of M1 on the region (``alpha`` circuits, ``N - alpha`` NICs electrical),
  passed in by the caller (it solves M1); reconfiguration hidden (the README's 25 us switch);
* TopoOpt: a static direct-connect topology over ``N - 1`` NICs, one circuit to each of the 7
  region partners (no electrical fabric, so every pair needs one), ``max_ij D_ij / B``; the last
  NIC carries the data-parallel ring.

DP and PP traffic runs on each fabric's electrical share per GPU (fat-tree ``B``, MixNet
``(N - alpha) B / N``, TopoOpt ``B / N``: one ring NIC per server). The model ignores congestion,
stragglers and overlap of communication with compute: it is the bandwidth arithmetic, and
benchmarks/figures/mixnet.py sets its figures beside the calculator's simulated ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Optical circuit switch port, US$, at every rate: the calculator's ``CostTable`` default
#: ("optical": 520 for 100/200/400/800 Gbit/s), mixnet-project/mixnet-project.github.io
#: assets/index-BhJHecqu.js (commit 60a7636d). TopoOpt's shared price table has no OCS entry.
OCS_PORT_USD = 520.0


@dataclass(frozen=True)
class MoeModel:
    name: str
    layers: int
    hidden: int
    expert_hidden: int
    experts: int
    top_k: int
    heads: int
    kv_heads: int
    shared_expert_hidden: int
    source: str

    def forward_flops(self, sequence: int) -> float:
        """Forward FLOPs per token per layer."""
        h = self.hidden
        projections = 2 * h * h * (2 + 2 * self.kv_heads / self.heads)
        scores = 2 * sequence * h  # QK^T and AV, 4 s h, halved by the causal mask
        experts = self.top_k * 3 * 2 * h * self.expert_hidden + 3 * 2 * h * self.shared_expert_hidden
        router = 2 * h * self.experts
        return projections + scores + experts + router

    def dense_params(self) -> float:
        """Attention and router parameters of one layer."""
        h = self.hidden
        shared = 3 * h * self.shared_expert_hidden
        return h * h * (2 + 2 * self.kv_heads / self.heads) + h * self.experts + shared

    def expert_params(self) -> float:
        """All routed experts' parameters of one layer."""
        return self.experts * 3 * self.hidden * self.expert_hidden


#: The calculator's four models. Mixtral's shapes are those of the mixnet-sim README (hidden 6144,
#: expert FFN 16384, top-2 of 8, 56 layers) and the public model configs; the other two are the
#: public configs of the sizes a fork's file names suggest (research notes 2(e), [verify]).
MODELS = {
    "Mixtral 8*22B": MoeModel("Mixtral 8*22B", 56, 6144, 16384, 8, 2, 48, 8, 0,
                              "mixnet-sim README; mistralai/Mixtral-8x22B-v0.1 config (48 heads, 8 KV)"),
    "Mixtral 8*7B": MoeModel("Mixtral 8*7B", 32, 4096, 14336, 8, 2, 32, 8, 0,
                             "mistralai/Mixtral-8x7B-v0.1 config"),
    "Llama-MoE": MoeModel("Llama-MoE", 32, 4096, 688, 16, 4, 32, 32, 0,
                          "llama-moe/LLaMA-MoE-v1-3_5B-4_16 config (6.7 B, 16 experts of 11008 / 16, top-4)"),
    "Qwen-MoE": MoeModel("Qwen-MoE", 24, 2048, 1408, 60, 4, 16, 16, 5632,
                         "Qwen/Qwen1.5-MoE-A2.7B config (14.3 B, 60 experts of 1408, top-4, shared 5632)"),
}


@dataclass(frozen=True)
class Setup:
    dp: int
    tp: int
    pp: int
    ep: int
    micro_batch: int
    global_batch: int
    sequence: int
    nics: int
    gpu_flops: float  # FLOP/s, bf16 peak
    mfu: float
    nvlink: float  # byte/s per GPU each way
    source: str

    @property
    def micro_batches(self) -> int:
        return max(1, self.global_batch // (self.dp * self.micro_batch))

    @property
    def tokens(self) -> int:
        """Tokens one server (one EP rank, TP-sharded over its GPUs) holds in a micro-batch."""
        return self.micro_batch * self.sequence


MIXNET_SIM = Setup(dp=2, tp=8, pp=8, ep=8, micro_batch=8, global_batch=128, sequence=4096, nics=8,
                   gpu_flops=312e12, mfu=0.5, nvlink=300e9,
                   source="mixnet-project/mixnet-sim README (parallelism, batch, 1024 GPUs); A100 bf16 peak "
                          "312 TFLOP/s and NVLink 3 (600 GB/s both ways); mfu 0.5 is our assumption")


@dataclass(frozen=True)
class FabricRates:
    """What one fabric gives the step: the region's all-to-all time and the per-GPU rate of the
    data- and pipeline-parallel traffic."""

    all_to_all: float  # s, one all-to-all of the region
    gpu_rate: float  # bit/s per GPU for DP and PP traffic


def region_traffic(model: MoeModel, setup: Setup, shares: np.ndarray) -> np.ndarray:
    """Bytes server i sends server j in one dispatch: the rank-to-rank token shares (rows sum to 1)
    times ``tokens x top_k x hidden x 2`` (bf16), zero diagonal."""
    out = np.asarray(shares, dtype=float) * setup.tokens * model.top_k * model.hidden * 2
    np.fill_diagonal(out, 0.0)
    return out


def fattree_all_to_all(demand: np.ndarray, nics: int, rate: float) -> float:
    """Non-blocking fabric, every NIC electrical: ``8 max_i max(row_i, col_i) / (N B)`` (s)."""
    return 8 * float(max(demand.sum(axis=1).max(), demand.sum(axis=0).max())) / (nics * rate)


def topoopt_all_to_all(demand: np.ndarray, rate: float) -> float:
    """One static circuit per region pair, nothing else: ``8 max_ij D_ij / B`` (s)."""
    return 8 * float(demand.max()) / rate


def ring_factor(ranks: int) -> float:
    """A ring all-reduce moves ``2 (k - 1) / k`` times the tensor through each of its ``k`` ranks."""
    return 2 * (ranks - 1) / ranks


def iteration_time(model: MoeModel, setup: Setup, fabric: FabricRates) -> float:
    """One training step (s), as the module docstring states it."""
    layers = model.layers / setup.pp
    compute = setup.tokens * model.forward_flops(setup.sequence) / setup.tp / (setup.gpu_flops * setup.mfu)
    activation = setup.tokens * model.hidden * 2  # bytes, one server
    tp_all_reduce = ring_factor(setup.tp) * activation / setup.nvlink
    forward = layers * (compute + 2 * tp_all_reduce + 2 * fabric.all_to_all)
    backward = layers * (2 * compute + 2 * tp_all_reduce + 2 * fabric.all_to_all)
    p2p = 8 * activation / setup.tp / fabric.gpu_rate
    step = (setup.micro_batches + setup.pp - 1) * (forward + backward + 2 * p2p)
    dense = 2 * model.dense_params() * layers / setup.tp  # gradient bytes per GPU
    experts = 2 * model.expert_params() / setup.ep * layers / setup.tp
    moved = ring_factor(setup.dp * setup.ep) * dense + ring_factor(setup.dp) * experts
    reduce = 8 * moved / fabric.gpu_rate
    return step + reduce


#: The calculator's normalized iteration times (lower is better; 1 = the model's best fabric and
#: rate), mixnet-project/mixnet-project.github.io ``data/normalized_performance.csv`` (commit
#: 60a7636d): model -> rate (Gbit/s) -> (fat-tree, MixNet, rail-optimized, TopoOpt).
CALCULATOR_TIMES = {
    "Mixtral 8*22B": {100: (1.3743484582184033, 1.4541709245236023, 1.3605676627542203, 2.6965232221381488),
                      200: (1.1940221720447362, 1.2006052855934743, 1.1627305978454807, 1.976022747758196),
                      400: (1.0816994101601314, 1.1138412705013914, 1.0957273449419245, 1.5752009814837324),
                      800: (1.0241518770911373, 1.0126344225828576, 1.0, 1.2669499895979803)},
    "Mixtral 8*7B": {100: (1.2098142915084984, 1.2487696208629178, 1.18901751330757, 2.273173855176166),
                     200: (1.0786571639450722, 1.0975801537020935, 1.0572437640673087, 1.6250242344739871),
                     400: (1.0302239853908406, 1.0309467182793302, 1.0131054620380215, 1.268446530603671),
                     800: (1.0002911778848984, 1.0012663602248657, 1.0, 1.1430216689505082)},
    "Llama-MoE": {100: (3.9323615746392275, 5.009859032475658, 5.313842693382581, 9.530616035052265),
                  200: (2.18810393086488, 2.7265517950688967, 2.93217810896891, 5.7370263124111975),
                  400: (1.3461747361073735, 1.599192937232423, 1.6753529690602926, 3.9805083110814157),
                  800: (1.0, 1.1916720240604728, 1.1241446927688727, 2.3033673919069124)},
    "Qwen-MoE": {100: (5.09418619126068, 6.173743766918513, 6.1104215995427635, 7.7748681115061045),
                 200: (2.730045083711109, 3.204935316618282, 3.237759588382703, 4.552568365377442),
                 400: (1.563193883429469, 1.7643737444680594, 1.8302325953740541, 2.801891096673249),
                 800: (1.0, 1.0534585618520547, 1.154757853315136, 1.7886986063968866)},
}
FABRICS = ("fat-tree", "MixNet", "rail-optimized", "TopoOpt")
