"""LightCode's data model: the instance, the Stacked Graph built from a model description, the
parametric cost model, and the cost of an assignment or a schedule.

Source: R. Tomich et al., "LightCode: compiling LLM inference for photonic-electronic systems",
arXiv 2509.16443, and the authors' public code (``RyanTomich/LightCode``, ``lightcode/hardware.py``)
for the cost constants. Notes: ``research-lightcode-netcast.md`` section 1.

The Stacked Graph is an operator DAG ``G = (V, E)`` of one prefill pass. Every operator ``v`` carries
a stack of realizations ``R_v``, one per device able to run it (electronic devices run every
operator; photonic tensor units, PTUs, only ``dense`` and ``bmm`` matrix products), each with its
own latency ``t_vd`` and energy ``e_vd``. Every data edge ``(u, v)`` carries ``s_uv`` elements and a
transfer cost per device pair, energy ``eps_uv^{dd'}`` and latency ``tau_uv^{dd'}``.

Cost model (SI inside; the instance keeps the file's customary units and converts here, once):

* electronic device (GPU, CPU; roofline): a matrix product of ``MACs`` multiply-accumulates takes
  ``max(2 MACs / Phi, b (in + weights + out) / BW) + t_launch`` and costs ``MACs e_mac``; an
  elementwise operator of ``w`` operations takes ``max(w / Phi_elem, b (in + out) / BW) + t_launch``
  and costs ``w e_op``.
* PTU (repo ``hardware.py``, generalised with the paper's wavelength/space multiplexing): an operator
  with ``D`` output dot products of inner length ``K`` takes
  ``cycles = ceil(D / (m_lambda m_s c)) ceil(K / k_s)`` cycles at ``f_PTU`` and costs
  ``MACs e_mac,PTU + P_laser t``.
* ``transfer_model = "sram_hop"`` (the authors'): every hop goes through SRAM, same device or not.
  ``eps_uv^{dd'} = s_uv (E_out(d) + E_in(d'))`` with ``E_in = E_SRAM + E_port (+ E_DAC on a PTU)``
  and ``E_out = E_SRAM + E_port (+ E_ADC on a PTU)``; ``tau = 1/f_mem (+ t_conv on a PTU)`` per leg.
  Weights come from DRAM through HBM and SRAM: ``w (E_DRAM + 2 E_HBM + E_SRAM + E_in(d))`` and
  latency ``1/f_mem + L_in(d)``; the final output leaves by one ``E_out(d)`` leg. This makes energy
  and latency-sum separable (see ``lightcode``).
* ``transfer_model = "realistic"``: the PTU pays its own conversions (``E_DAC`` per input and
  weight element, ``E_ADC`` per output, ``2 t_conv``); a same-device edge costs only the local
  hand-off ``s E_local(d)`` and no latency; a cross-device edge pays the link,
  ``s (E_local(d)/2 + E_local(d')/2 + 8 b E_link)`` and ``t_link + s b / BW_link``. Weights live in
  the HBM of the first electronic device; other devices fetch them over the link (prefetched, so
  no latency), and send the final output back over it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import Any

from coopt.problem import Solution, Violation

OBJECTIVES = ("energy", "latency_sum", "makespan")
TRANSFER_MODELS = ("sram_hop", "realistic")
GRAPHS = ("block", "full")
FAMILIES = ("gpt2", "llama")
MATMUL_KINDS = ("dense", "bmm")

MICRO = 1e6  # problem units of the objective: microjoules, microseconds
PJ = 1e-12
NS = 1e-9
US = 1e-6


# ------------------------------------------------------------------------------------------------
# The instance
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TransformerModel:
    """The model description the Stacked Graph is built from (prefill of one prompt)."""

    family: str  # gpt2: LayerNorm, GELU MLP, biases | llama: RMSNorm, RoPE, SwiGLU MLP
    layers: int
    d_model: int
    heads: int
    d_ff: int
    vocab: int
    sequence_length: int

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


@dataclass(frozen=True)
class Electronic:
    """A GPU or CPU as a roofline; fields in the file's units."""

    name: str
    peak_tflops: float  # matrix throughput Phi
    elementwise_tops: float  # elementwise throughput Phi_elem (1e12 op/s)
    memory_bandwidth_tbps: float  # TB/s
    launch_latency_us: float
    mac_energy_pj: float
    op_energy_pj: float  # per elementwise operation
    local_energy_pj: float  # realistic model: same-device hand-off per element
    kind: str = field(default="electronic", init=False)


@dataclass(frozen=True)
class Photonic:
    """A photonic tensor unit: cores x wavelengths x spatial replicas of time-integrating lanes."""

    name: str
    clock_ghz: float
    cores: int  # c
    wavelengths: int  # m_lambda (WDM channels)
    spatial: int  # m_s, spatial replicas per core
    fan_in: int  # k_s, products summed optically per cycle
    mac_energy_pj: float
    dac_energy_pj: float
    adc_energy_pj: float
    conversion_latency_ns: float
    laser_power_w: float
    local_energy_pj: float
    weight_capacity_mb: float  # 0: unlimited
    kind: str = field(default="photonic", init=False)

    @property
    def multiplexing(self) -> int:
        """Dot products evaluated per cycle, ``m_lambda m_s c``."""
        return self.wavelengths * self.spatial * self.cores


Device = Electronic | Photonic


@dataclass(frozen=True)
class Memory:
    """The memory hierarchy and the inter-device link."""

    clock_ghz: float  # f_mem, one SRAM hop per cycle in the sram_hop model
    sram_energy_pj: float
    hbm_energy_pj: float
    dram_energy_pj: float
    port_energy_pj: float  # device <-> SRAM port (repo: 1 + 1 pJ)
    bytes_per_element: int
    link_energy_pj_per_bit: float
    link_bandwidth_gbps: float  # GB/s
    link_latency_ns: float


@dataclass(frozen=True)
class Limits:
    """Side constraints; 0 means absent."""

    energy_budget_mj: float = 0.0
    power_cap_w: float = 0.0
    max_conversion_elements: float = 0.0  # elements crossing the photonic/electronic boundary


@dataclass(frozen=True)
class Instance:
    objective: str
    transfer_model: str
    graph: str
    uniform_blocks: bool
    model: TransformerModel
    devices: tuple[Device, ...]
    memory: Memory
    limits: Limits = Limits()

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def device(self, name: str) -> Device:
        return next(d for d in self.devices if d.name == name)

    @property
    def baseline(self) -> str:
        """The first electronic device: the all-electronic baseline and the home of the weights."""
        return next(d.name for d in self.devices if d.kind == "electronic")


def load(fields: Any) -> Instance:
    objective = fields.str("objective", choices=OBJECTIVES)
    transfer_model = fields.str("transfer_model", choices=TRANSFER_MODELS)
    graph = fields.str("graph", choices=GRAPHS, default="block")
    uniform = fields.bool("uniform_blocks", default=False)
    m = fields.table("model")
    model = TransformerModel(
        family=m.str("family", choices=FAMILIES),
        layers=m.int("layers", min=1, max=256),
        d_model=m.int("d_model", min=1),
        heads=m.int("heads", min=1),
        d_ff=m.int("d_ff", min=1),
        vocab=m.int("vocab", min=1),
        sequence_length=m.int("sequence_length", min=1),
    )
    if model.d_model % model.heads:
        m.fail("heads", f"expected a divisor of d_model = {model.d_model}, got {model.heads}")
    devices: list[Device] = []
    for d in fields.tables("device", min_length=1):
        name = d.str("name")
        if not name or name in {x.name for x in devices}:
            d.fail("name", f"expected a non-empty name used once, got {name!r}")
        kind = d.str("kind", choices=("electronic", "photonic"))
        if kind == "electronic":
            devices.append(
                Electronic(
                    name=name,
                    peak_tflops=d.float("peak_tflops", positive=True),
                    elementwise_tops=d.float("elementwise_tops", positive=True),
                    memory_bandwidth_tbps=d.float("memory_bandwidth_tbps", positive=True),
                    launch_latency_us=d.float("launch_latency_us", min=0.0),
                    mac_energy_pj=d.float("mac_energy_pj", min=0.0),
                    op_energy_pj=d.float("op_energy_pj", min=0.0),
                    local_energy_pj=d.float("local_energy_pj", min=0.0),
                )
            )
        else:
            devices.append(
                Photonic(
                    name=name,
                    clock_ghz=d.float("clock_ghz", positive=True),
                    cores=d.int("cores", min=1),
                    wavelengths=d.int("wavelengths", min=1),
                    spatial=d.int("spatial", min=1, default=1),
                    fan_in=d.int("fan_in", min=1, default=1),
                    mac_energy_pj=d.float("mac_energy_pj", min=0.0),
                    dac_energy_pj=d.float("dac_energy_pj", min=0.0),
                    adc_energy_pj=d.float("adc_energy_pj", min=0.0),
                    conversion_latency_ns=d.float("conversion_latency_ns", min=0.0),
                    laser_power_w=d.float("laser_power_w", min=0.0, default=0.0),
                    local_energy_pj=d.float("local_energy_pj", min=0.0),
                    weight_capacity_mb=d.float("weight_capacity_mb", min=0.0, default=0.0),
                )
            )
    if not any(d.kind == "electronic" for d in devices):
        fields.fail("device", 'expected at least one electronic device (kind = "electronic")')
    mem = fields.table("memory")
    memory = Memory(
        clock_ghz=mem.float("clock_ghz", positive=True),
        sram_energy_pj=mem.float("sram_energy_pj", min=0.0),
        hbm_energy_pj=mem.float("hbm_energy_pj", min=0.0),
        dram_energy_pj=mem.float("dram_energy_pj", min=0.0),
        port_energy_pj=mem.float("port_energy_pj", min=0.0),
        bytes_per_element=mem.int("bytes_per_element", min=1, max=16),
        link_energy_pj_per_bit=mem.float("link_energy_pj_per_bit", min=0.0),
        link_bandwidth_gbps=mem.float("link_bandwidth_gbps", positive=True),
        link_latency_ns=mem.float("link_latency_ns", min=0.0),
    )
    lim = fields.table("limits", default={})
    limits = Limits(
        energy_budget_mj=lim.float("energy_budget_mj", min=0.0, default=0.0),
        power_cap_w=lim.float("power_cap_w", min=0.0, default=0.0),
        max_conversion_elements=lim.float("max_conversion_elements", min=0.0, default=0.0),
    )
    return Instance(objective, transfer_model, graph, uniform, model, tuple(devices), memory, limits)


def dump(instance: Instance) -> dict[str, Any]:
    out: dict[str, Any] = {
        "objective": instance.objective,
        "transfer_model": instance.transfer_model,
        "graph": instance.graph,
        "uniform_blocks": instance.uniform_blocks,
        "model": dict(vars(instance.model)),
        "device": [],
        "memory": dict(vars(instance.memory)),
    }
    for device in instance.devices:
        row = {"name": device.name, "kind": device.kind}
        row.update({k: v for k, v in vars(device).items() if k not in ("name", "kind")})
        out["device"].append(row)
    limits = {k: v for k, v in vars(instance.limits).items() if v}
    if limits:
        out["limits"] = limits
    return out


# ------------------------------------------------------------------------------------------------
# The Stacked Graph
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Operator:
    name: str  # "b3.qkv"
    kind: str  # dense | bmm | elementwise
    role: str  # the name inside its block ("qkv"): operators with one role are one class
    block: int  # -1 outside the transformer blocks (embedding, head)
    outputs: int  # elements produced (D for a matrix product)
    macs: int = 0
    inner: int = 0  # K, inner length of each dot product
    weights: int = 0  # weight elements read from memory
    work: float = 0.0  # elementwise operations


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    elements: int


@dataclass(frozen=True)
class Realization:
    device: str
    latency: float  # s, own compute plus weight fetch
    energy: float  # J, own compute plus weight fetch


@dataclass
class StackedGraph:
    """Operators in topological order, their realization stacks and the edges' transfer tables."""

    ops: list[Operator]
    edges: list[Edge]
    stacks: list[dict[str, Realization]]
    transfer_energy: list[dict[tuple[str, str], float]]
    transfer_latency: list[dict[tuple[str, str], float]]
    preds: list[list[int]] = field(default_factory=list)
    succs: list[list[int]] = field(default_factory=list)
    in_edges: list[list[int]] = field(default_factory=list)
    out_edges: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.ops)
        self.preds, self.succs = [[] for _ in range(n)], [[] for _ in range(n)]
        self.in_edges, self.out_edges = [[] for _ in range(n)], [[] for _ in range(n)]
        for k, e in enumerate(self.edges):
            self.preds[e.dst].append(e.src)
            self.succs[e.src].append(e.dst)
            self.in_edges[e.dst].append(k)
            self.out_edges[e.src].append(k)
        self.index = {op.name: i for i, op in enumerate(self.ops)}

    @property
    def free(self) -> list[int]:
        """Operators with more than one realization: the actual decisions."""
        return [i for i, s in enumerate(self.stacks) if len(s) > 1]

    def classes(self, uniform: bool) -> list[list[int]]:
        """Decision classes: one per free operator, or one per role across blocks when uniform."""
        if not uniform:
            return [[i] for i in self.free]
        groups: dict[str, list[int]] = {}
        for i in self.free:
            op = self.ops[i]
            groups.setdefault(op.role if op.block >= 0 else op.name, []).append(i)
        return list(groups.values())


class _Builder:
    def __init__(self) -> None:
        self.ops: list[Operator] = []
        self.edges: list[tuple[int, int, int]] = []

    def add(self, op: Operator, inputs: list[tuple[int, int]]) -> int:
        self.ops.append(op)
        k = len(self.ops) - 1
        self.edges.extend((src, k, elements) for src, elements in inputs)
        return k


def _operators(model: TransformerModel, full: bool) -> tuple[list[Operator], list[tuple[int, int, int]]]:
    """The prefill operator DAG of ``model``: per-block composites, or the full primitive list."""
    g = _Builder()
    L, d, h, f, dh = model.sequence_length, model.d_model, model.heads, model.d_ff, model.d_head
    gpt2 = model.family == "gpt2"

    def elem(
        name: str, role: str, block: int, n: int, ops_per: float, inputs: list[int], x_size: int | None = None
    ) -> int:
        """An elementwise operator; ``x_size`` overrides the elements taken from the first input."""
        sizes = [g.ops[i].outputs for i in inputs]
        if x_size is not None:
            sizes[0] = x_size
        return g.add(
            Operator(name, "elementwise", role, block, n, work=n * ops_per),
            list(zip(inputs, sizes, strict=True)),
        )

    def chain(
        prefix: str,
        block: int,
        n: int,
        steps: list[tuple[str, float, list[str]]],
        x: int,
        rows: dict[str, int] | None = None,
        x_size: int | None = None,
    ) -> int:
        """Primitive elementwise steps; a step's inputs are earlier step names or 'x'."""
        named = {"x": x}
        last = x
        for step, ops_per, args in steps:
            out = (rows or {}).get(step, n)
            last = elem(
                f"{prefix}.{step}",
                f"{prefix.split('.', 1)[-1]}.{step}",
                block,
                out,
                ops_per,
                [named[a] for a in args],
                x_size if args[0] == "x" else None,
            )
            named[step] = last
        return last

    def norm(block: int, tag: str, x: int) -> int:
        name = f"b{block}.{tag}" if block >= 0 else tag
        if not full:
            return elem(name, tag, block, L * d, 9.0 if gpt2 else 6.0, [x])
        if gpt2:
            steps = [
                ("mean", 1, ["x"]),
                ("sub", 1, ["x", "mean"]),
                ("pow", 1, ["sub"]),
                ("var", 1, ["pow"]),
                ("add_eps", 1, ["var"]),
                ("sqrt", 1, ["add_eps"]),
                ("div", 1, ["sub", "sqrt"]),
                ("mul", 1, ["div"]),
                ("add", 1, ["mul"]),
            ]
            rows = {"mean": L, "var": L, "add_eps": L, "sqrt": L}
        else:
            steps = [
                ("pow", 1, ["x"]),
                ("mean", 1, ["pow"]),
                ("add_eps", 1, ["mean"]),
                ("rsqrt", 1, ["add_eps"]),
                ("scale", 1, ["x", "rsqrt"]),
                ("mul", 1, ["scale"]),
            ]
            rows = {"mean": L, "add_eps": L, "rsqrt": L}
        return chain(name, block, L * d, steps, x, rows)

    def dense(block: int, tag: str, x: int, k_in: int, n_out: int, size_in: int | None = None) -> int:
        name = f"b{block}.{tag}" if block >= 0 else tag
        op = Operator(
            name, "dense", tag, block, L * n_out, macs=L * k_in * n_out, inner=k_in, weights=k_in * n_out
        )
        mm = g.add(op, [(x, size_in if size_in is not None else g.ops[x].outputs)])
        if full and gpt2:
            return elem(f"{name}.bias", f"{tag}.bias", block, L * n_out, 1.0, [mm])
        return mm

    def bmm(block: int, tag: str, inputs: list[tuple[int, int]], rows: int, inner: int, cols: int) -> int:
        op = Operator(
            f"b{block}.{tag}", "bmm", tag, block, h * rows * cols, macs=h * rows * inner * cols, inner=inner
        )
        return g.add(op, inputs)

    # token (and, for GPT-2, position) embedding rows gathered from the tables in memory
    x = g.add(
        Operator(
            "embed",
            "elementwise",
            "embed",
            -1,
            L * d,
            weights=(2 if gpt2 else 1) * L * d,
            work=(2 if gpt2 else 1) * L * d,
        ),
        [],
    )
    for b in range(model.layers):
        a = norm(b, "ln1" if gpt2 else "rms1", x)
        if gpt2:
            qkv = dense(b, "qkv", a, d, 3 * d)
            if full:
                split = elem(f"b{b}.split", "split", b, 3 * L * d, 1.0, [qkv])
                heads = [("reshape", 1, ["x"]), ("transpose", 1, ["reshape"])]
                q, k, v = (chain(f"b{b}.{t}", b, L * d, heads, split, x_size=L * d) for t in "qkv")
                qk_in, v_in = [(q, L * d), (k, L * d)], (v, L * d)
            else:
                split = elem(f"b{b}.split", "split", b, 3 * L * d, 1.0, [qkv])
                qk_in, v_in = [(split, 2 * L * d)], (split, L * d)
        else:
            q, k, v = (dense(b, t, a, d, d) for t in ("q", "k", "v"))
            if full:
                rope = [
                    ("slice1", 1, ["x"]),
                    ("slice2", 1, ["x"]),
                    ("neg", 1, ["slice2"]),
                    ("concat", 1, ["neg", "slice1"]),
                    ("mul_cos", 1, ["x"]),
                    ("mul_sin", 1, ["concat"]),
                    ("add", 1, ["mul_cos", "mul_sin"]),
                ]
                half = {"slice1": L * d // 2, "slice2": L * d // 2, "neg": L * d // 2}
                rq = chain(f"b{b}.rope_q", b, L * d, rope, q, half)
                rk = chain(f"b{b}.rope_k", b, L * d, rope, k, half)
            else:
                rq = elem(f"b{b}.rope_q", "rope_q", b, L * d, 5.0, [q])
                rk = elem(f"b{b}.rope_k", "rope_k", b, L * d, 5.0, [k])
            qk_in, v_in = [(rq, L * d), (rk, L * d)], (v, L * d)
        scores = bmm(b, "qk", qk_in, L, dh, L)
        if full:
            soft = [
                ("scale", 1, ["x"]),
                ("mask", 1, ["scale"]),
                ("max", 1, ["mask"]),
                ("sub", 1, ["mask", "max"]),
                ("exp", 1, ["sub"]),
                ("sum", 1, ["exp"]),
                ("div", 1, ["exp", "sum"]),
            ]
            probs = chain(f"b{b}.softmax", b, h * L * L, soft, scores, {"max": h * L, "sum": h * L})
        else:
            probs = elem(f"b{b}.softmax", "softmax", b, h * L * L, 7.0, [scores])
        context = bmm(b, "av", [(probs, h * L * L), v_in], L, L, dh)
        if full:
            merged = chain(
                f"b{b}.merge", b, L * d, [("transpose", 1, ["x"]), ("reshape", 1, ["transpose"])], context
            )
        else:
            merged = elem(f"b{b}.merge", "merge", b, L * d, 1.0, [context])
        proj = dense(b, "proj" if gpt2 else "o", merged, d, d)
        x = elem(f"b{b}.add1", "add1", b, L * d, 1.0, [proj, x])
        a = norm(b, "ln2" if gpt2 else "rms2", x)
        if gpt2:
            hidden = dense(b, "fc1", a, d, f)
            if full:
                gelu = [
                    ("pow3", 1, ["x"]),
                    ("mul_c", 1, ["pow3"]),
                    ("add", 1, ["x", "mul_c"]),
                    ("mul_s", 1, ["add"]),
                    ("tanh", 4, ["mul_s"]),
                    ("add1", 1, ["tanh"]),
                    ("half", 1, ["x"]),
                    ("mul", 1, ["half", "add1"]),
                ]
                act = chain(f"b{b}.gelu", b, L * f, gelu, hidden)
            else:
                act = elem(f"b{b}.gelu", "gelu", b, L * f, 8.0, [hidden])
            out = dense(b, "fc2", act, f, d)
        else:
            gate, up = dense(b, "gate", a, d, f), dense(b, "up", a, d, f)
            if full:
                sig = elem(f"b{b}.silu.sigmoid", "silu.sigmoid", b, L * f, 4.0, [gate])
                silu = elem(f"b{b}.silu.mul", "silu.mul", b, L * f, 1.0, [gate, sig])
                act = elem(f"b{b}.swiglu", "swiglu", b, L * f, 1.0, [silu, up])
            else:
                act = elem(f"b{b}.swiglu", "swiglu", b, L * f, 5.0, [gate, up])
            out = dense(b, "down", act, f, d)
        x = elem(f"b{b}.add2", "add2", b, L * d, 1.0, [out, x])
    final = norm(-1, "ln_f" if gpt2 else "rms_f", x)
    dense(-1, "lm_head", final, d, model.vocab)
    return g.ops, g.edges


def _electronic_cost(op: Operator, dev: Electronic, inputs: int, b: int) -> tuple[float, float]:
    traffic = b * (inputs + op.weights + op.outputs) / (dev.memory_bandwidth_tbps * 1e12)
    if op.kind in MATMUL_KINDS:
        compute = 2 * op.macs / (dev.peak_tflops * 1e12)
        energy = op.macs * dev.mac_energy_pj * PJ
    else:
        compute = op.work / (dev.elementwise_tops * 1e12)
        energy = op.work * dev.op_energy_pj * PJ
    return max(compute, traffic) + dev.launch_latency_us * US, energy


def ptu_cycles(op: Operator, dev: Photonic) -> int:
    """``ceil(D / (m_lambda m_s c)) ceil(K / k_s)``: output dot products spread over the lanes,
    each accumulating its inner length over time."""
    return math.ceil(op.outputs / dev.multiplexing) * math.ceil(op.inner / dev.fan_in)


def _photonic_cost(op: Operator, dev: Photonic, inputs: int, realistic: bool) -> tuple[float, float]:
    latency = ptu_cycles(op, dev) / (dev.clock_ghz * 1e9)
    energy = op.macs * dev.mac_energy_pj * PJ
    if realistic:
        latency += 2 * dev.conversion_latency_ns * NS
        energy += ((inputs + op.weights) * dev.dac_energy_pj + op.outputs * dev.adc_energy_pj) * PJ
    return latency, energy + dev.laser_power_w * latency


def hop_energy(instance: Instance, device: str, incoming: bool) -> float:
    """sram_hop model: energy per element of the leg SRAM -> device (incoming) or device -> SRAM."""
    mem, dev = instance.memory, instance.device(device)
    base = mem.sram_energy_pj + mem.port_energy_pj
    if dev.kind == "photonic":
        base += dev.dac_energy_pj if incoming else dev.adc_energy_pj
    return base * PJ


def hop_latency(instance: Instance, device: str) -> float:
    """sram_hop model: latency of one leg between SRAM and ``device``."""
    dev = instance.device(device)
    extra = dev.conversion_latency_ns * NS if dev.kind == "photonic" else 0.0
    return 1.0 / (instance.memory.clock_ghz * 1e9) + extra


def _transfer(instance: Instance, elements: int, src: str, dst: str) -> tuple[float, float]:
    """(energy, latency) of moving ``elements`` from device ``src`` to ``dst``."""
    mem = instance.memory
    if instance.transfer_model == "sram_hop":
        energy = elements * (hop_energy(instance, src, False) + hop_energy(instance, dst, True))
        return energy, hop_latency(instance, src) + hop_latency(instance, dst)
    local_src, local_dst = instance.device(src).local_energy_pj, instance.device(dst).local_energy_pj
    if src == dst:
        return elements * local_src * PJ, 0.0
    link = 8 * mem.bytes_per_element * mem.link_energy_pj_per_bit
    energy = elements * (local_src / 2 + local_dst / 2 + link) * PJ
    latency = mem.link_latency_ns * NS + elements * mem.bytes_per_element / (mem.link_bandwidth_gbps * 1e9)
    return energy, latency


def _weight_cost(instance: Instance, op: Operator, device: str) -> tuple[float, float]:
    """(energy, latency) of bringing ``op``'s weights to ``device``."""
    if op.weights == 0:
        return 0.0, 0.0
    mem = instance.memory
    if instance.transfer_model == "sram_hop":
        fetch = (mem.dram_energy_pj + 2 * mem.hbm_energy_pj + mem.sram_energy_pj) * PJ
        energy = op.weights * (fetch + hop_energy(instance, device, True))
        return energy, 1.0 / (mem.clock_ghz * 1e9) + hop_latency(instance, device)
    link = 0.0 if device == instance.baseline else 8 * mem.bytes_per_element * mem.link_energy_pj_per_bit
    return op.weights * (mem.hbm_energy_pj + link) * PJ, 0.0


def _output_cost(instance: Instance, op: Operator, device: str) -> tuple[float, float]:
    """(energy, latency) of writing the graph's final output (the logits) back to memory: one
    device-to-SRAM leg under ``sram_hop``; the link home under ``realistic`` unless already there."""
    if instance.transfer_model == "sram_hop":
        return op.outputs * hop_energy(instance, device, False), hop_latency(instance, device)
    if device == instance.baseline:
        return 0.0, 0.0
    mem = instance.memory
    energy = op.outputs * 8 * mem.bytes_per_element * mem.link_energy_pj_per_bit * PJ
    latency = mem.link_latency_ns * NS + op.outputs * mem.bytes_per_element / (mem.link_bandwidth_gbps * 1e9)
    return energy, latency


@lru_cache(maxsize=64)
def stacked_graph(instance: Instance) -> StackedGraph:
    """Build the Stacked Graph of ``instance``: operators, realization stacks, transfer tables."""
    ops, raw_edges = _operators(instance.model, instance.graph == "full")
    edges = [Edge(s, t, n) for s, t, n in raw_edges]
    inputs = [0] * len(ops)
    sinks = set(range(len(ops)))
    for e in edges:
        inputs[e.dst] += e.elements
        sinks.discard(e.src)
    b = instance.memory.bytes_per_element
    realistic = instance.transfer_model == "realistic"
    stacks = []
    for k, op in enumerate(ops):
        stack = {}
        for dev in instance.devices:
            if dev.kind == "electronic":
                latency, energy = _electronic_cost(op, dev, inputs[k], b)
            elif op.kind in MATMUL_KINDS:
                latency, energy = _photonic_cost(op, dev, inputs[k], realistic)
            else:
                continue
            w_energy, w_latency = _weight_cost(instance, op, dev.name)
            o_energy, o_latency = _output_cost(instance, op, dev.name) if k in sinks else (0.0, 0.0)
            stack[dev.name] = Realization(
                dev.name, latency + w_latency + o_latency, energy + w_energy + o_energy
            )
        stacks.append(stack)
    energies, latencies = [], []
    for e in edges:
        table_e, table_t = {}, {}
        for du in stacks[e.src]:
            for dv in stacks[e.dst]:
                table_e[du, dv], table_t[du, dv] = _transfer(instance, e.elements, du, dv)
        energies.append(table_e)
        latencies.append(table_t)
    return StackedGraph(ops, edges, stacks, energies, latencies)


# ------------------------------------------------------------------------------------------------
# Costs of an assignment and of a schedule
# ------------------------------------------------------------------------------------------------
Assignment = list[str]  # device per operator, in the graph's operator order


def energy(graph: StackedGraph, assign: Assignment) -> float:
    own = sum(graph.stacks[i][d].energy for i, d in enumerate(assign))
    return own + sum(
        graph.transfer_energy[k][assign[e.src], assign[e.dst]] for k, e in enumerate(graph.edges)
    )


def latency_sum(graph: StackedGraph, assign: Assignment) -> float:
    own = sum(graph.stacks[i][d].latency for i, d in enumerate(assign))
    return own + sum(
        graph.transfer_latency[k][assign[e.src], assign[e.dst]] for k, e in enumerate(graph.edges)
    )


def sum_cost(graph: StackedGraph, assign: Assignment, objective: str) -> float:
    """Energy, or latency-sum (also the surrogate heuristics use when the objective is makespan)."""
    return energy(graph, assign) if objective == "energy" else latency_sum(graph, assign)


def makespan(graph: StackedGraph, assign: Assignment, start: list[float]) -> float:
    return max(s + graph.stacks[i][assign[i]].latency for i, s in enumerate(start))


def conversion_elements(instance: Instance, graph: StackedGraph, assign: Assignment) -> int:
    """Elements crossing the photonic/electronic boundary on data edges."""
    photonic = {d.name for d in instance.devices if d.kind == "photonic"}
    return sum(e.elements for e in graph.edges if (assign[e.src] in photonic) != (assign[e.dst] in photonic))


def ptu_weight_bytes(instance: Instance, graph: StackedGraph, assign: Assignment, device: str) -> int:
    return (
        sum(op.weights for op, d in zip(graph.ops, assign, strict=True) if d == device)
        * instance.memory.bytes_per_element
    )


def side_violations(instance: Instance, graph: StackedGraph, assign: Assignment, span: float) -> list[str]:
    """The side constraints an assignment breaks (``span`` = its latency: makespan or sum)."""
    out = []
    for dev in instance.devices:
        if dev.kind == "photonic" and dev.weight_capacity_mb > 0:
            used = ptu_weight_bytes(instance, graph, assign, dev.name)
            if used > dev.weight_capacity_mb * 1e6 * (1 + 1e-9):
                out.append(
                    f"capacity: {dev.name} holds {used:.6g} B of weights > {dev.weight_capacity_mb} MB"
                )
    lim = instance.limits
    if lim.max_conversion_elements > 0:
        crossing = conversion_elements(instance, graph, assign)
        if crossing > lim.max_conversion_elements * (1 + 1e-9):
            out.append(f"conversion: {crossing} elements cross > {lim.max_conversion_elements:.6g}")
    used = energy(graph, assign)
    if lim.energy_budget_mj > 0 and used > lim.energy_budget_mj * 1e-3 * (1 + 1e-6):
        out.append(f"energy_budget: {used:.9g} J > {lim.energy_budget_mj * 1e-3:.9g} J")
    if lim.power_cap_w > 0 and used > lim.power_cap_w * span * (1 + 1e-6):
        out.append(f"power_cap: {used:.9g} J over {span:.9g} s > {lim.power_cap_w} W")
    if instance.uniform_blocks:
        first: dict[str, str] = {}
        for op, d in zip(graph.ops, assign, strict=True):
            if op.block >= 0 and first.setdefault(op.role, d) != d:
                out.append(f"uniform_blocks: {op.name} on {d}, block 0's {op.role} on {first[op.role]}")
                break
    return out


def as_solution(graph: StackedGraph, assign: Assignment, start: list[float] | None = None) -> dict[str, Any]:
    """The JSON form: device per operator name (and start time per operator for schedules)."""
    out: dict[str, Any] = {"assignment": {op.name: d for op, d in zip(graph.ops, assign, strict=True)}}
    if start is not None:
        out["start"] = {op.name: s for op, s in zip(graph.ops, start, strict=True)}
    return out


def read_assignment(graph: StackedGraph, solution: Mapping[str, Any]) -> tuple[Assignment | None, str]:
    """The assignment of a solution in operator order, or None and why it is malformed."""
    raw = solution.get("assignment")
    if not isinstance(raw, Mapping):
        return None, "expected 'assignment': a table operator -> device"
    assign = []
    for op, stack in zip(graph.ops, graph.stacks, strict=True):
        d = raw.get(op.name)
        if d not in stack:
            return None, f"{op.name}: device {d!r} is not one of its realizations {sorted(stack)}"
        assign.append(d)
    extra = set(raw) - set(graph.index)
    if extra:
        return None, f"unknown operators {sorted(extra)[:3]}"
    return assign, ""


def earliest_starts(graph: StackedGraph, assign: Assignment, rank: list[float]) -> list[float]:
    """Earliest start times when every device runs its operators one at a time in increasing
    ``rank`` (ties by operator order) and each operator waits for its inputs' transfers.

    Raises ValueError when the device orders contradict the precedence (a cycle)."""
    n = len(graph.ops)
    after: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    indegree = [0] * n
    for k, e in enumerate(graph.edges):
        lag = (
            graph.stacks[e.src][assign[e.src]].latency
            + graph.transfer_latency[k][assign[e.src], assign[e.dst]]
        )
        after[e.src].append((e.dst, lag))
        indegree[e.dst] += 1
    by_device: dict[str, list[int]] = {}
    for i in sorted(range(n), key=lambda i: (rank[i], i)):
        by_device.setdefault(assign[i], []).append(i)
    for order in by_device.values():
        for u, v in pairwise(order):
            after[u].append((v, graph.stacks[u][assign[u]].latency))
            indegree[v] += 1
    start = [0.0] * n
    ready = [i for i in range(n) if indegree[i] == 0]
    done = 0
    while ready:
        u = ready.pop()
        done += 1
        for v, lag in after[u]:
            start[v] = max(start[v], start[u] + lag)
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    if done < n:
        raise ValueError("device orders contradict the data dependencies")
    return start


# ------------------------------------------------------------------------------------------------
# Checker and objective
# ------------------------------------------------------------------------------------------------
def _read_start(graph: StackedGraph, solution: Solution) -> tuple[list[float] | None, str]:
    raw = solution.get("start")
    if not isinstance(raw, dict):
        return None, "expected 'start': a table operator -> start time in seconds"
    start = []
    for op in graph.ops:
        s = raw.get(op.name)
        if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s < 0:
            return None, f"{op.name}: expected a start time >= 0, got {s!r}"
        start.append(float(s))
    return start, ""


def schedule_violations(graph: StackedGraph, assign: list[str], start: list[float]) -> list[Violation]:
    """Precedence with transfer delays, and one operator at a time on every device."""
    out = []
    tol = 1e-9 * max(1e-12, makespan(graph, assign, start))
    for k, e in enumerate(graph.edges):
        ready = (
            start[e.src]
            + graph.stacks[e.src][assign[e.src]].latency
            + graph.transfer_latency[k][assign[e.src], assign[e.dst]]
        )
        if start[e.dst] < ready - tol:
            out.append(
                Violation(
                    "precedence",
                    f"{graph.ops[e.dst].name} starts at {start[e.dst]:.9g} s before "
                    f"its input from {graph.ops[e.src].name} arrives at {ready:.9g} s",
                )
            )
    by_device: dict[str, list[int]] = {}
    for v in sorted(range(len(assign)), key=lambda v: (start[v], v)):
        by_device.setdefault(assign[v], []).append(v)
    for d, order in by_device.items():
        for u, v in pairwise(order):
            if start[v] < start[u] + graph.stacks[u][d].latency - tol:
                out.append(
                    Violation(
                        "device_exclusive", f"{graph.ops[u].name} and {graph.ops[v].name} overlap on {d}"
                    )
                )
    return out


def check(instance: Instance, solution: Solution) -> list[Violation]:
    graph = stacked_graph(instance)
    assign, why = read_assignment(graph, solution)
    if assign is None:
        return [Violation("assignment", why)]
    out: list[Violation] = []
    if instance.objective == "makespan":
        start, why = _read_start(graph, solution)
        if start is None:
            return [Violation("schedule", why)]
        out += schedule_violations(graph, assign, start)
        span = makespan(graph, assign, start)
    else:
        span = latency_sum(graph, assign)
    for text in side_violations(instance, graph, assign, span):
        family, detail = text.split(": ", 1)
        out.append(Violation(family, detail))
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """Energy in microjoules, or latency (serial sum or makespan) in microseconds."""
    graph = stacked_graph(instance)
    assign, why = read_assignment(graph, solution)
    if assign is None:
        raise ValueError(why)
    if instance.objective == "energy":
        return energy(graph, assign) * MICRO
    if instance.objective == "latency_sum":
        return latency_sum(graph, assign) * MICRO
    start, why = _read_start(graph, solution)
    if start is None:
        raise ValueError(why)
    return makespan(graph, assign, start) * MICRO


# ------------------------------------------------------------------------------------------------
# Hardware presets and the seeded generator
# ------------------------------------------------------------------------------------------------
def h100(name: str = "gpu") -> Electronic:
    """H100-SXM-like GPU (repo docs: 494.7 TFLOP/s TF32, 144 SMs x 128 lanes x 1.98 GHz; MAC 0.07 pJ;
    HBM 3.35 TB/s from NVIDIA's public spec; launch latency and elementwise energy assumed)."""
    return Electronic(
        name,
        peak_tflops=494.7,
        elementwise_tops=36.5,
        memory_bandwidth_tbps=3.35,
        launch_latency_us=2.0,
        mac_energy_pj=0.07,
        op_energy_pj=0.1,
        local_energy_pj=24.0,
    )


def ptu(name: str = "ptu", *, cores: int = 1, wavelengths: int = 20, spatial: int = 1) -> Photonic:
    """The repo's PHU: 9.7 GHz, multiplex 20, MAC 0.04 pJ, DAC 3.18 pJ, ADC 1.6 pJ, 10 ns conversion."""
    return Photonic(
        name,
        clock_ghz=9.7,
        cores=cores,
        wavelengths=wavelengths,
        spatial=spatial,
        fan_in=1,
        mac_energy_pj=0.04,
        dac_energy_pj=3.18,
        adc_energy_pj=1.6,
        conversion_latency_ns=10.0,
        laser_power_w=0.0,
        local_energy_pj=24.0,
        weight_capacity_mb=0.0,
    )


def repo_memory() -> Memory:
    """Repo hop constants (SRAM 12, HBM 40, DRAM 160 pJ per element, port 1 + 1 pJ, f_mem 6 GHz, 32-bit
    numbers); the link is an NVLink-C2C-like assumption (1.3 pJ/bit, 900 GB/s, 0.5 us)."""
    return Memory(
        clock_ghz=6.0,
        sram_energy_pj=12.0,
        hbm_energy_pj=40.0,
        dram_energy_pj=160.0,
        port_energy_pj=2.0,
        bytes_per_element=4,
        link_energy_pj_per_bit=1.3,
        link_bandwidth_gbps=900.0,
        link_latency_ns=500.0,
    )


def generate(seed: int, size: int) -> Instance:
    """A small random transformer (``size`` blocks) on a GPU and a PTU with perturbed parameters."""
    rng = random.Random(seed)
    family = rng.choice(("gpt2", "llama"))
    heads = rng.choice((1, 2, 4))
    d_model = heads * rng.choice((8, 16, 32))
    model = TransformerModel(
        family,
        size,
        d_model,
        heads,
        rng.choice((2, 3, 4)) * d_model,
        rng.choice((64, 128, 256)),
        rng.choice((4, 16, 64, 256)),
    )

    def jitter(x: float) -> float:
        return round(x * math.exp(rng.uniform(-1.0, 1.0)), 6)

    gpu = h100()
    gpu = Electronic(
        "gpu",
        jitter(gpu.peak_tflops / 1000),
        jitter(gpu.elementwise_tops / 1000),
        jitter(gpu.memory_bandwidth_tbps / 100),
        jitter(gpu.launch_latency_us / 100),
        jitter(gpu.mac_energy_pj),
        jitter(gpu.op_energy_pj),
        jitter(gpu.local_energy_pj),
    )
    photonic = ptu(wavelengths=rng.choice((4, 16, 64)), spatial=rng.choice((1, 4)), cores=rng.choice((1, 2)))
    photonic = Photonic(
        "ptu",
        jitter(photonic.clock_ghz),
        photonic.cores,
        photonic.wavelengths,
        photonic.spatial,
        1,
        jitter(photonic.mac_energy_pj),
        jitter(photonic.dac_energy_pj),
        jitter(photonic.adc_energy_pj),
        jitter(photonic.conversion_latency_ns) / 100,
        0.0,
        jitter(photonic.local_energy_pj),
        0.0,
    )
    return Instance(
        objective=rng.choice(("energy", "latency_sum", "makespan")),
        transfer_model=rng.choice(("sram_hop", "realistic")),
        graph="block",
        uniform_blocks=rng.random() < 0.25,
        model=model,
        devices=(gpu, photonic),
        memory=repo_memory(),
        limits=Limits(),
    )
