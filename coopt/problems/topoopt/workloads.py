"""The six models of TopoOpt's simulations, configured as the authors' scripts run them, with the
compute times FlexFlow measured.

Configurations: hipersys-team/TopoOpt ``simulation/scripts/fig11_17/{bert,dlrm,candle,ncf,resnet,vgg}
128_dc.sh`` (4 GPUs per server, ``--big-gpu 4``; local batch per GPU 16 / 128 / 256 / 128 / 128 / 64;
BERT as transformersim with 12 layers, hidden 1024, 16 heads, sequence 64). Layer structure: the
simulator's model files in hipersys-team/FlexFlow at b1526834, ``examples/cpp/{Transformersim/
transformer.cc, DLRMsim/dlrm.cc, candle_unosim/candle_uno.cc, ncfsim/ncf.cc, ResNetsim/resnet.cc,
vgg16sim/vgg16.cc}``.

Compute: forward and backward milliseconds per operator from FlexFlow's measurement files
``measures/{transformer128,dlrm128,candle_128,ncf128,resnet128,vgg128}.json`` (line of each entry
given below), at the configuration that splits the batch 128 ways (``pc_str`` ending in ``-128``):
one server's share of a global batch of 128 servers x 4 GPUs x the local batch, which is also the
per-server work at any ``n`` with that local batch. Embedding tables are measured only on one
device for the whole batch (``-1``); a server's share is that time over 128. Under our strategy
model a server's compute does not depend on how an operator is split (each server does ``1/m`` of
the operator for ``m`` times the samples), so the iteration's compute is the sum over operators.

Parameters are fp32 (4 bytes); ``activation`` is the bytes of an operator's output per sample, what
it exchanges when it is split (see ``search.strategy_traffic``).
"""

from __future__ import annotations

from dataclasses import dataclass

FP32 = 4
MS = 1e-3
SCRIPTS = "hipersys-team/TopoOpt simulation/scripts/fig11_17/"


@dataclass(frozen=True)
class Op:
    """One layer or embedding table: parameter bytes, output bytes per sample, and one server's
    forward and backward seconds per iteration."""

    name: str
    params: float
    activation: float
    forward: float
    backward: float


@dataclass(frozen=True)
class Workload:
    name: str
    ops: tuple[Op, ...]
    batch_per_server: int
    source: str

    @property
    def forward(self) -> float:
        return sum(op.forward for op in self.ops)

    @property
    def backward(self) -> float:
        return sum(op.backward for op in self.ops)


def _op(name: str, params: float, activation: float, measured: tuple[float, float], per: float = 1.0) -> Op:
    forward, backward = measured
    return Op(name, params * FP32, activation * FP32, forward * MS / per, backward * MS / per)


def _dense(name: str, fan_in: int, fan_out: int, measured: tuple[float, float]) -> Op:
    return _op(name, fan_in * fan_out + fan_out, fan_out, measured)


# (forward ms, backward ms) at the 128-way split; the line of the "name" entry in the measure file.
TRANSFORMER = {  # measures/transformer128.json
    "attention": (0.301261, 0.602522),  # MultiHeadAttention_102416, l.6
    "add": (0.007168, 0.0136192),  # ElementBinary_31, l.41
    "dense": (0.146534, 0.279142),  # Dense_1024_1024, l.97
    "out": (0.0108544, 0.0468992),  # Dense_1024_1, l.153
}
DLRM = {  # measures/dlrm128.json
    "bottom": (0.193536, 0.296346),  # Dense_2048_2048, l.6
    "embedding": (4.30858, 8.61716),  # Embed_10000000x128 at 2-1-1 (whole batch, one device), l.62
    "concat": (0.226202, 0.226406),  # Concat_1, l.69
    "top0": (0.614707, 1.21088),  # Dense_10240_4096, l.125
    "top": (0.269824, 0.521523),  # Dense_4096_4096, l.181
    "out": (0.0151552, 0.040448),  # Dense_4096_1, l.237
}
NCF = {  # measures/ncf128.json
    "gmf_table": (6.28716, 12.57432),  # Embed_1000000x64 at 2-1-1, l.6
    "mlp_table": (4.36347, 8.72694),  # Embed_1000000x128 at 2-1-1, l.13
    "concat": (0.194355, 0.19497),  # Concat_1, l.20
    "multiply": (0.0053248, 0.0103424),  # ElementBinary_32, l.76
    "gmf_out": (0.0141312, 0.044032),  # Dense_2048_1, l.132
    "mlp0": (0.53719, 0.97536),  # Dense_8192_4096, l.188
    "mlp": (0.285389, 0.533606),  # Dense_4096_4096, l.244
    "out": (0.0187392, 0.044032),  # Dense_4097_1, l.300
}
CANDLE = {  # measures/candle_128.json
    "rna0": (0.90583, 1.83716),  # Dense_942_16384, l.6
    "wide": (7.7867, 15.01),  # Dense_16384_16384, l.55
    "descriptors0": (2.58171, 5.35675),  # Dense_5270_16384, l.104
    "fingerprints0": (1.02236, 2.0481),  # Dense_2048_16384, l.153
    "concat": (0.198656, 0.241254),  # Concat_1, l.202
    "top0": (43.6252, 73.2448),  # Dense_81922_16384, l.258
    "out": (0.0264192, 0.0452608),  # Dense_16384_1, l.307
    "out1": (0.0113664, 0.0237568),  # Dense_1_1, l.363
}
RESNET = {  # measures/resnet128.json
    "Conv2D_7_7_64": (3.49901, 9.31635),  # l.6
    "Pool2D_3_3": (0.63488, 1.49903),  # l.27
    "Conv2D_1_1_64": (0.260096, 0.809984),  # l.48
    "Conv2D_3_3_64": (0.65024, 1.7367),  # l.83
    "Conv2D_1_1_256": (0.698368, 1.98656),  # l.118
    "ElementBinary_31": (0.969216, 1.93976),  # l.139 (the residual add)
    "ElementUnary_13": (0.671642, 0.969626),  # l.153 (the ReLU)
    "Conv2D_1_1_128": (1.21651, 3.06688),  # l.167
    "Conv2D_3_3_128": (0.800768, 1.8688),  # l.188
    "Conv2D_1_1_512": (0.755712, 1.3824),  # l.216
    "Conv2D_3_3_256": (0.610304, 1.29434),  # l.244
    "Conv2D_1_1_1024": (0.521216, 0.943104),  # l.279
    "Conv2D_3_3_512": (0.521216, 1.15712),  # l.314
    "Conv2D_1_1_2048": (0.3328, 0.772096),  # l.356
    "Pool2D_7_7": (0.113459, 0.961024),  # l.391
    "Flat": (0.0060416, 0.006144),  # l.426
    "Dense_8192_10": (0.0217088, 0.0284672),  # l.482
    "Softmax": (0.0050176, 0.0039936),  # l.538
}
VGG = {  # measures/vgg128.json
    "Conv2D_3_3_64": (1.88518, 6.18906),  # l.6
    "Pool2D_3_3": (1.34922, 3.10139),  # l.20
    "Conv2D_3_3_128": (1.51757, 4.69914),  # l.34
    "Conv2D_3_3_256": (1.6855, 3.21741),  # l.55
    "Conv2D_3_3_512": (1.45613, 3.30035),  # l.83
    "Flat": (0.0176128, 0.0314368),  # l.111
    "Dense_61952_4096": (2.08957, 3.78675),  # l.167
    "Dense_4096_4096": (0.174182, 0.300442),  # l.223
    "Dense_4096_1000": (0.0525312, 0.0977920),  # l.279
    "Softmax": (0.0070656, 0.004096),  # l.335
}
#: Servers whose share each 128-way measurement is, and whose share of a one-device measurement a
#: server does (a table measured for the whole batch on one device: 1/128 of it per server).
MEASURED_SERVERS = 128


def bert(layers: int = 12, hidden: int = 1024, sequence: int = 64) -> Workload:
    """transformersim as bert128_dc.sh runs it: ``layers`` encoder-decoder layers (an encoder
    self-attention + 2 dense; a decoder self- and cross-attention + 2 dense; three residual adds),
    hidden 1024, 16 heads, sequence 64, a final dense to 1; 16 samples per GPU (transformer.cc l.34-54,
    l.122-136)."""
    act = sequence * hidden
    ops = []
    for i in range(layers):
        for part in ("encoder_attention", "decoder_attention", "cross_attention"):
            ops.append(_op(f"{part}{i}", 4 * hidden * hidden, act, TRANSFORMER["attention"]))
            ops.append(_op(f"{part}_add{i}", 0, act, TRANSFORMER["add"]))
        ops += [_dense(f"dense{i}_{j}", hidden, hidden, TRANSFORMER["dense"]) for j in range(4)]
    ops.append(_dense("out", hidden, 1, TRANSFORMER["out"]))
    return Workload("BERT", tuple(ops), 4 * 16, SCRIPTS + "bert128_dc.sh")


def dlrm(tables: int = 64) -> Workload:
    """dlrmsim as dlrm128_dc.sh runs it: 64 tables of 1e7 x 128 (bag 100), bottom MLP 2048 x 8 (7
    dense layers), the concatenation, top MLP 10240 -> 4096, 14 x 4096 -> 4096, 4096 -> 1; 128
    samples per GPU (dlrm.cc l.26-39, l.116-125)."""
    ops = [_dense(f"bottom{i}", 2048, 2048, DLRM["bottom"]) for i in range(7)]
    ops += [_op(f"embedding{t}", 1e7 * 128, 128, DLRM["embedding"], MEASURED_SERVERS) for t in range(tables)]
    ops.append(_op("concat", 0, tables * 128 + 2048, DLRM["concat"]))
    ops.append(_dense("top0", tables * 128 + 2048, 4096, DLRM["top0"]))
    ops += [_dense(f"top{i}", 4096, 4096, DLRM["top"]) for i in range(1, 15)]
    ops.append(_dense("out", 4096, 1, DLRM["out"]))
    return Workload("DLRM", tuple(ops), 4 * 128, SCRIPTS + "dlrm128_dc.sh")


def candle_uno() -> Workload:
    """candle_unosim as candle128_dc.sh runs it: five feature models (cell RNA-seq 942, two drug
    descriptors 5270, two drug fingerprints 2048) of 16 dense layers of 16384, the concatenation
    with two doses (81922), 8 dense layers of 16384, dense to 1 and to 1; 256 samples per GPU
    (candle_uno.cc l.35-45, l.88-125)."""
    ops = []
    for feature, width, first in (("rna", 942, "rna0"), ("drug1_descriptors", 5270, "descriptors0"),
                                  ("drug1_fingerprints", 2048, "fingerprints0"),
                                  ("drug2_descriptors", 5270, "descriptors0"),
                                  ("drug2_fingerprints", 2048, "fingerprints0")):
        ops.append(_dense(f"{feature}0", width, 16384, CANDLE[first]))
        ops += [_dense(f"{feature}{i}", 16384, 16384, CANDLE["wide"]) for i in range(1, 16)]
    ops.append(_op("concat", 0, 5 * 16384 + 2, CANDLE["concat"]))
    ops.append(_dense("top0", 5 * 16384 + 2, 16384, CANDLE["top0"]))
    ops += [_dense(f"top{i}", 16384, 16384, CANDLE["wide"]) for i in range(1, 8)]
    ops += [_dense("out", 16384, 1, CANDLE["out"]), _dense("out1", 1, 1, CANDLE["out1"])]
    return Workload("CANDLE", tuple(ops), 4 * 256, SCRIPTS + "candle128_dc.sh")


def ncf(tables: int = 32) -> Workload:
    """ncfsim as ncf128_dc.sh runs it: 32 tables each of user and item GMF embeddings (1e6 x 64) and
    user and item MLP embeddings (1e6 x 128), three concatenations, the GMF product and its dense to
    1, the MLP 8192 -> 4096 and 6 x 4096 -> 4096, the final concatenation and dense 4097 -> 1; 128
    samples per GPU (ncf.cc l.97-160)."""
    ops = []
    for side in ("user", "item"):
        ops += [_op(f"gmf_{side}{t}", 1e6 * 64, 64, NCF["gmf_table"], MEASURED_SERVERS)
                for t in range(tables)]
    for side in ("user", "item"):
        ops += [_op(f"mlp_{side}{t}", 1e6 * 128, 128, NCF["mlp_table"], MEASURED_SERVERS)
                for t in range(tables)]
    ops += [_op(f"concat_{part}", 0, width, NCF["concat"])
            for part, width in (("mlp", 2 * tables * 128), ("gmf_user", tables * 64),
                                ("gmf_item", tables * 64))]
    ops.append(_op("gmf_product", 0, tables * 64, NCF["multiply"]))
    ops.append(_dense("gmf_out", tables * 64, 1, NCF["gmf_out"]))
    ops.append(_dense("mlp0", 2 * tables * 128, 4096, NCF["mlp0"]))
    ops += [_dense(f"mlp{i}", 4096, 4096, NCF["mlp"]) for i in range(1, 7)]
    ops.append(_op("concat_final", 0, 4097, NCF["concat"]))
    ops.append(_dense("out", 4097, 1, NCF["out"]))
    return Workload("NCF", tuple(ops), 4 * 128, SCRIPTS + "ncf128_dc.sh")


def resnet50() -> Workload:
    """resnetsim as resnet128_dc.sh runs it: ResNet-50 (bottlenecks 3, 4, 6, 3) on 229 x 229 inputs,
    average pool, dense to 10, softmax; 128 samples per GPU (resnet.cc l.41-59, l.93-116)."""
    measured = RESNET
    ops = [_op("conv1", 3 * 49 * 64, 64 * 115 * 115, measured["Conv2D_7_7_64"]),
           _op("pool1", 0, 64 * 58 * 58, measured["Pool2D_3_3"])]
    channels, side = 64, 58
    for stage, (width, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3))):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 else 1
            side = (side + 1) // 2 if stride == 2 else side
            name = f"stage{stage + 1}_{b}"
            area = side * side
            ops.append(_op(f"{name}_reduce", channels * width, width * area, measured[f"Conv2D_1_1_{width}"]))
            ops.append(_op(f"{name}_conv", 9 * width * width, width * area, measured[f"Conv2D_3_3_{width}"]))
            ops.append(_op(f"{name}_expand", width * 4 * width, 4 * width * side * side,
                           measured[f"Conv2D_1_1_{4 * width}"]))
            if stride > 1 or channels != 4 * width:
                ops.append(_op(f"{name}_project", channels * 4 * width, 4 * width * side * side,
                               measured[f"Conv2D_1_1_{4 * width}"]))
            ops.append(_op(f"{name}_add", 0, 4 * width * side * side, measured["ElementBinary_31"]))
            ops.append(_op(f"{name}_relu", 0, 4 * width * side * side, measured["ElementUnary_13"]))
            channels = 4 * width
    ops += [_op("pool", 0, 8192, measured["Pool2D_7_7"]), _op("flat", 0, 8192, measured["Flat"]),
            _dense("fc", 8192, 10, measured["Dense_8192_10"]), _op("softmax", 0, 10, measured["Softmax"])]
    return Workload("ResNet-50", tuple(ops), 4 * 128, SCRIPTS + "resnet128_dc.sh")


def vgg16() -> Workload:
    """vggsim as vgg128_dc.sh runs it: VGG-16 on 229 x 229 inputs (3 x 3 convolutions with padding
    2, so each grows the side by 2; five pools), dense 61952 -> 4096 -> 4096 -> 1000, softmax; 64
    samples per GPU (vgg16.cc l.75-97)."""
    ops = []
    channels, side = 3, 229
    for block, (width, convs) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))):
        for c in range(convs):
            side += 2
            ops.append(_op(f"block{block + 1}_conv{c}", 9 * channels * width, width * side * side,
                           VGG[f"Conv2D_3_3_{width}"]))
            channels = width
        side = (side - 3) // 2 + 1
        ops.append(_op(f"block{block + 1}_pool", 0, width * side * side, VGG["Pool2D_3_3"]))
    ops.append(_op("flat", 0, channels * side * side, VGG["Flat"]))
    ops += [_dense("fc6", channels * side * side, 4096, VGG["Dense_61952_4096"]),
            _dense("fc7", 4096, 4096, VGG["Dense_4096_4096"]),
            _dense("fc8", 4096, 1000, VGG["Dense_4096_1000"]), _op("softmax", 0, 1000, VGG["Softmax"])]
    return Workload("VGG-16", tuple(ops), 4 * 64, SCRIPTS + "vgg128_dc.sh")


WORKLOADS = {w.name: w for w in (dlrm(), bert(), candle_uno(), ncf(), resnet50(), vgg16())}
