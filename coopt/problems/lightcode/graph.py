"""LightCode's Stacked Graph: the operator DAG of one prefill pass, built from the model
description, with each operator's realization stack and each edge's transfer tables priced by the
parametric cost model below.

The Stacked Graph is an operator DAG ``G = (V, E)`` of one prefill pass. Every operator ``v`` carries
a stack of realizations ``R_v``, one per device able to run it (GPUs and CPUs run every operator;
photonic tensor units, PTUs, only ``dense`` and ``bmm`` matrix products), each with its own latency
``t_vd`` and energy ``e_vd``. Every data edge ``(u, v)`` carries ``s_uv`` elements, of which
``s1_uv`` are ``v``'s first operand (the activation of a dense product, Q of Q K^T, the
probabilities of A V), and a transfer cost per device pair, energy ``eps_uv^{dd'}`` and latency
``tau_uv^{dd'}``.

Cost model (every quantity SI; the loader converts the file's units once):

* GPU and CPU (roofline): a matrix product of ``MACs`` multiply-accumulates takes
  ``max(2 MACs / Phi, b (in + weights + out) / BW) + t_launch`` (no memory term when BW = 0) and
  costs ``MACs e_mac``; an elementwise operator of ``w`` operations takes
  ``max(w / Phi_elem, b (in + out) / BW) + t_launch`` and costs ``w e_op``. A CPU with
  ``large_dense_min_dim > 0`` times a dense product with an input dimension (K, or the weights'
  N) above it by the authors' second fit, ``max(0, a MACs + c)`` (their lm_head fit, a = 3.555e-10
  s, c = -7.06 ms; clamped at 0 so that no latency is negative).
* PTU (repo ``hardware.py``, generalised with the paper's wavelength/space multiplexing): an operator
  with ``D`` output dot products of inner length ``K`` takes
  ``cycles = ceil(D / (m_lambda m_s c)) ceil(K / k_s)`` cycles at ``f_PTU`` and costs
  ``MACs e_mac,PTU + P_laser t``.
* ``transfer_model = "sram_hop"`` (the authors'): every hop goes through SRAM, same device or not.
  A leg device -> SRAM costs ``E_out(d) = E_SRAM + E_port (+ E_ADC on a PTU)`` per element, a leg
  SRAM -> device ``E_in(d) = E_SRAM + E_port (+ E_DAC on a PTU)``, each ``1/f_mem (+ t_conv on a
  PTU)`` of latency. ``eps_uv^{dd'} = s_uv E_out(d) + s_in E_in(d')``. Weights come from DRAM
  through HBM to SRAM, ``w (E_DRAM + 2 E_HBM + E_SRAM)``, and then take the leg to the device
  (latency ``1/f_mem`` plus that leg); the final output leaves by one ``E_out`` leg.
  ``photonic_legs`` says what a PTU's legs carry (the readings of the authors' split node):
  ``every_operand`` (coopt): ``s_in = s_uv``, weights too; ``first_operand`` (a424e5e): only the
  first operand pays ``E_in(PTU)``, ``s_in = s1_uv``, weights and second operands stop in SRAM;
  ``free`` (237609f): a PTU leg costs no energy at all (``E_in = E_out = 0`` on a PTU). GPU and
  CPU legs are the same under every reading; latencies too. Energy and latency-sum stay sums of
  per-operator terms (see ``lightcode.milp``).
* ``transfer_model = "realistic"``: the PTU pays its own conversions (``E_DAC`` per input and
  weight element, ``E_ADC`` per output, ``2 t_conv``); a same-device edge costs only the local
  hand-off ``s E_local(d)`` and no latency; a cross-device edge pays the link,
  ``s (E_local(d)/2 + E_local(d')/2 + 8 b E_link)`` and ``t_link + s b / BW_link``. Weights live in
  the HBM of the first electronic device; other devices fetch them over the link (prefetched, so
  no latency), and send the final output back over it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from coopt.problems.lightcode.data import (
    MATMUL_KINDS,
    Electronic,
    Instance,
    Photonic,
    TransformerModel,
)


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
    widest: int = 0  # a matrix product's largest input dimension (L, K or N): the CPU's large-dense fit


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    elements: int
    leading: int = 0  # of which the destination's first operand (a matrix product's activation)


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


Assignment = list[str]  # device per operator, in the graph's operator order


#: Primitive elementwise steps of the full graph's composites: (step, operations per element,
#: inputs), an input being an earlier step or "x", the composite's input.
LAYER_NORM_STEPS = (
    ("mean", 1, ["x"]),
    ("sub", 1, ["x", "mean"]),
    ("pow", 1, ["sub"]),
    ("var", 1, ["pow"]),
    ("add_eps", 1, ["var"]),
    ("sqrt", 1, ["add_eps"]),
    ("div", 1, ["sub", "sqrt"]),
    ("mul", 1, ["div"]),
    ("add", 1, ["mul"]),
)
RMS_NORM_STEPS = (
    ("pow", 1, ["x"]),
    ("mean", 1, ["pow"]),
    ("add_eps", 1, ["mean"]),
    ("rsqrt", 1, ["add_eps"]),
    ("scale", 1, ["x", "rsqrt"]),
    ("mul", 1, ["scale"]),
)
HEAD_SPLIT_STEPS = (("reshape", 1, ["x"]), ("transpose", 1, ["reshape"]))
ROPE_STEPS = (
    ("slice1", 1, ["x"]),
    ("slice2", 1, ["x"]),
    ("neg", 1, ["slice2"]),
    ("concat", 1, ["neg", "slice1"]),
    ("mul_cos", 1, ["x"]),
    ("mul_sin", 1, ["concat"]),
    ("add", 1, ["mul_cos", "mul_sin"]),
)
SOFTMAX_STEPS = (
    ("scale", 1, ["x"]),
    ("mask", 1, ["scale"]),
    ("max", 1, ["mask"]),
    ("sub", 1, ["mask", "max"]),
    ("exp", 1, ["sub"]),
    ("sum", 1, ["exp"]),
    ("div", 1, ["exp", "sum"]),
)
HEAD_MERGE_STEPS = (("transpose", 1, ["x"]), ("reshape", 1, ["transpose"]))
GELU_STEPS = (
    ("pow3", 1, ["x"]),
    ("mul_c", 1, ["pow3"]),
    ("add", 1, ["x", "mul_c"]),
    ("mul_s", 1, ["add"]),
    ("tanh", 4, ["mul_s"]),
    ("add1", 1, ["tanh"]),
    ("half", 1, ["x"]),
    ("mul", 1, ["half", "add1"]),
)


class _Builder:
    """Appends the prefill operators of one model in topological order: per-block composites, or
    (``full``) the primitive list. A matrix product's first input edge carries its first operand
    (``Edge.leading``)."""

    def __init__(self, model: TransformerModel, full: bool) -> None:
        self.ops: list[Operator] = []
        self.edges: list[Edge] = []
        self.full = full
        self.gpt2 = model.family == "gpt2"
        self.L, self.d, self.h = model.sequence_length, model.d_model, model.heads
        self.f, self.dh = model.d_ff, model.d_head

    def add(self, op: Operator, inputs: list[tuple[int, ...]]) -> int:
        """Append ``op`` fed by ``inputs``: (source, elements) or (source, elements, leading)."""
        self.ops.append(op)
        k = len(self.ops) - 1
        self.edges.extend(Edge(src, k, *rest) for src, *rest in inputs)
        return k

    def elem(
        self, name: str, role: str, block: int, n: int, ops_per: float, inputs: list[int],
        x_size: int | None = None,
    ) -> int:
        """An elementwise operator; ``x_size`` overrides the elements taken from the first input."""
        sizes = [self.ops[i].outputs for i in inputs]
        if x_size is not None:
            sizes[0] = x_size
        return self.add(
            Operator(name, "elementwise", role, block, n, work=n * ops_per),
            list(zip(inputs, sizes, strict=True)),
        )

    def chain(
        self, prefix: str, block: int, n: int, steps: tuple, x: int, rows: dict[str, int] | None = None,
        x_size: int | None = None,
    ) -> int:
        """Primitive elementwise steps; a step's inputs are earlier step names or 'x'."""
        named = {"x": x}
        last = x
        for step, ops_per, args in steps:
            out = (rows or {}).get(step, n)
            role = f"{prefix.split('.', 1)[-1]}.{step}"
            last = self.elem(f"{prefix}.{step}", role, block, out, ops_per, [named[a] for a in args],
                             x_size if args[0] == "x" else None)
            named[step] = last
        return last

    def norm(self, block: int, tag: str, x: int) -> int:
        name = f"b{block}.{tag}" if block >= 0 else tag
        L, d = self.L, self.d
        if not self.full:
            return self.elem(name, tag, block, L * d, 9.0 if self.gpt2 else 6.0, [x])
        if self.gpt2:
            rows = {"mean": L, "var": L, "add_eps": L, "sqrt": L}
            return self.chain(name, block, L * d, LAYER_NORM_STEPS, x, rows)
        return self.chain(name, block, L * d, RMS_NORM_STEPS, x, {"mean": L, "add_eps": L, "rsqrt": L})

    def dense(self, block: int, tag: str, x: int, k_in: int, n_out: int) -> int:
        name = f"b{block}.{tag}" if block >= 0 else tag
        L = self.L
        op = Operator(
            name, "dense", tag, block, L * n_out, macs=L * k_in * n_out, inner=k_in, weights=k_in * n_out,
            widest=max(L, k_in, n_out),
        )
        size = self.ops[x].outputs
        mm = self.add(op, [(x, size, size)])
        if self.full and self.gpt2:
            return self.elem(f"{name}.bias", f"{tag}.bias", block, L * n_out, 1.0, [mm])
        return mm

    def bmm(
        self, block: int, tag: str, inputs: list[tuple[int, ...]], rows: int, inner: int, cols: int
    ) -> int:
        h = self.h
        op = Operator(
            f"b{block}.{tag}", "bmm", tag, block, h * rows * cols, macs=h * rows * inner * cols, inner=inner,
            widest=max(h, rows, inner, cols),
        )
        return self.add(op, inputs)

    def embedding(self) -> int:
        """Token (and, for GPT-2, position) embedding rows gathered from the tables in memory."""
        rows = (2 if self.gpt2 else 1) * self.L * self.d
        op = Operator("embed", "elementwise", "embed", -1, self.L * self.d, weights=rows, work=rows)
        return self.add(op, [])

    def queries_keys_values(self, b: int, a: int) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """Q, K, V of block ``b`` from its normalised input ``a``: the inputs of Q K^T and V's edge."""
        L, d = self.L, self.d
        if self.gpt2:
            qkv = self.dense(b, "qkv", a, d, 3 * d)
            split = self.elem(f"b{b}.split", "split", b, 3 * L * d, 1.0, [qkv])
            if not self.full:
                return [(split, 2 * L * d, L * d)], (split, L * d, 0)
            q, k, v = (self.chain(f"b{b}.{t}", b, L * d, HEAD_SPLIT_STEPS, split, x_size=L * d)
                       for t in "qkv")
            return [(q, L * d, L * d), (k, L * d, 0)], (v, L * d, 0)
        q, k, v = (self.dense(b, t, a, d, d) for t in ("q", "k", "v"))
        if self.full:
            half = {"slice1": L * d // 2, "slice2": L * d // 2, "neg": L * d // 2}
            rq = self.chain(f"b{b}.rope_q", b, L * d, ROPE_STEPS, q, half)
            rk = self.chain(f"b{b}.rope_k", b, L * d, ROPE_STEPS, k, half)
        else:
            rq = self.elem(f"b{b}.rope_q", "rope_q", b, L * d, 5.0, [q])
            rk = self.elem(f"b{b}.rope_k", "rope_k", b, L * d, 5.0, [k])
        return [(rq, L * d, L * d), (rk, L * d, 0)], (v, L * d, 0)

    def attention(self, b: int, x: int) -> int:
        """Block ``b``'s attention half, residual add included; returns the add."""
        L, d, h = self.L, self.d, self.h
        qk_in, v_in = self.queries_keys_values(b, self.norm(b, "ln1" if self.gpt2 else "rms1", x))
        scores = self.bmm(b, "qk", qk_in, L, self.dh, L)
        if self.full:
            rows = {"max": h * L, "sum": h * L}
            probs = self.chain(f"b{b}.softmax", b, h * L * L, SOFTMAX_STEPS, scores, rows)
        else:
            probs = self.elem(f"b{b}.softmax", "softmax", b, h * L * L, 7.0, [scores])
        context = self.bmm(b, "av", [(probs, h * L * L, h * L * L), v_in], L, L, self.dh)
        if self.full:
            merged = self.chain(f"b{b}.merge", b, L * d, HEAD_MERGE_STEPS, context)
        else:
            merged = self.elem(f"b{b}.merge", "merge", b, L * d, 1.0, [context])
        proj = self.dense(b, "proj" if self.gpt2 else "o", merged, d, d)
        return self.elem(f"b{b}.add1", "add1", b, L * d, 1.0, [proj, x])

    def feed_forward(self, b: int, x: int) -> int:
        """Block ``b``'s MLP half (GELU for GPT-2, SwiGLU for Llama), residual add included."""
        L, d, f = self.L, self.d, self.f
        a = self.norm(b, "ln2" if self.gpt2 else "rms2", x)
        if self.gpt2:
            hidden = self.dense(b, "fc1", a, d, f)
            if self.full:
                act = self.chain(f"b{b}.gelu", b, L * f, GELU_STEPS, hidden)
            else:
                act = self.elem(f"b{b}.gelu", "gelu", b, L * f, 8.0, [hidden])
            out = self.dense(b, "fc2", act, f, d)
        else:
            gate, up = self.dense(b, "gate", a, d, f), self.dense(b, "up", a, d, f)
            if self.full:
                sig = self.elem(f"b{b}.silu.sigmoid", "silu.sigmoid", b, L * f, 4.0, [gate])
                silu = self.elem(f"b{b}.silu.mul", "silu.mul", b, L * f, 1.0, [gate, sig])
                act = self.elem(f"b{b}.swiglu", "swiglu", b, L * f, 1.0, [silu, up])
            else:
                act = self.elem(f"b{b}.swiglu", "swiglu", b, L * f, 5.0, [gate, up])
            out = self.dense(b, "down", act, f, d)
        return self.elem(f"b{b}.add2", "add2", b, L * d, 1.0, [out, x])


def _operators(model: TransformerModel, full: bool) -> tuple[list[Operator], list[Edge]]:
    """The prefill operator DAG of ``model`` (see :class:`_Builder`)."""
    g = _Builder(model, full)
    x = g.embedding()
    for b in range(model.layers):
        x = g.feed_forward(b, g.attention(b, x))
    final = g.norm(-1, "ln_f" if g.gpt2 else "rms_f", x)
    g.dense(-1, "lm_head", final, g.d, model.vocab)
    return g.ops, g.edges


# ------------------------------------------------------------------------------------------------
# The cost model (SI)
# ------------------------------------------------------------------------------------------------
def _electronic_cost(op: Operator, dev: Electronic, inputs: int, b: int) -> tuple[float, float]:
    traffic = b * (inputs + op.weights + op.outputs) / dev.memory_bandwidth if dev.memory_bandwidth else 0.0
    if op.kind in MATMUL_KINDS:
        if dev.large_dense_min_dim and op.widest > dev.large_dense_min_dim:
            fitted = dev.large_dense_s_per_mac * op.macs + dev.large_dense_intercept
            return max(0.0, fitted), op.macs * dev.mac_energy
        compute = 2 * op.macs / dev.peak_flops
        energy = op.macs * dev.mac_energy
    else:
        compute = op.work / dev.elementwise_rate
        energy = op.work * dev.op_energy
    return max(compute, traffic) + dev.launch_latency, energy


def ptu_cycles(op: Operator, dev: Photonic) -> int:
    """``ceil(D / (m_lambda m_s c)) ceil(K / k_s)``: output dot products spread over the lanes,
    each accumulating its inner length over time."""
    return math.ceil(op.outputs / dev.multiplexing) * math.ceil(op.inner / dev.fan_in)


def _photonic_cost(op: Operator, dev: Photonic, inputs: int, realistic: bool) -> tuple[float, float]:
    latency = ptu_cycles(op, dev) / dev.clock
    energy = op.macs * dev.mac_energy
    if realistic:
        latency += 2 * dev.conversion_latency
        energy += (inputs + op.weights) * dev.dac_energy + op.outputs * dev.adc_energy
    return latency, energy + dev.laser_power * latency


def hop_energy(instance: Instance, device: str, incoming: bool) -> float:
    """sram_hop model: energy per element of the leg SRAM -> device (incoming) or device -> SRAM
    (a PTU's legs are free under ``photonic_legs = "free"``)."""
    mem, dev = instance.memory, instance.device(device)
    if dev.photonic:
        if instance.photonic_legs == "free":
            return 0.0
        return mem.sram_energy + mem.port_energy + (dev.dac_energy if incoming else dev.adc_energy)
    return mem.sram_energy + mem.port_energy


def hop_latency(instance: Instance, device: str) -> float:
    """sram_hop model: latency of one leg between SRAM and ``device``."""
    dev = instance.device(device)
    extra = dev.conversion_latency if dev.photonic else 0.0
    return 1.0 / instance.memory.clock + extra


def _entering(instance: Instance, edge: Edge, device: str) -> int:
    """Elements of ``edge`` that pay the SRAM -> ``device`` leg (``photonic_legs``)."""
    if instance.photonic_legs == "first_operand" and instance.device(device).photonic:
        return edge.leading
    return edge.elements


def _transfer(instance: Instance, edge: Edge, src: str, dst: str) -> tuple[float, float]:
    """(energy, latency) of moving ``edge``'s elements from device ``src`` to ``dst``."""
    mem, elements = instance.memory, edge.elements
    if instance.transfer_model == "sram_hop":
        energy = elements * hop_energy(instance, src, False)
        energy += _entering(instance, edge, dst) * hop_energy(instance, dst, True)
        return energy, hop_latency(instance, src) + hop_latency(instance, dst)
    local_src, local_dst = instance.device(src).local_energy, instance.device(dst).local_energy
    if src == dst:
        return elements * local_src, 0.0
    link = 8 * mem.bytes_per_element * mem.link_energy_per_bit
    energy = elements * (local_src / 2 + local_dst / 2 + link)
    latency = mem.link_latency + elements * mem.bytes_per_element / mem.link_bandwidth
    return energy, latency


def _weight_cost(instance: Instance, op: Operator, device: str) -> tuple[float, float]:
    """(energy, latency) of bringing ``op``'s weights to ``device``."""
    if op.weights == 0:
        return 0.0, 0.0
    mem = instance.memory
    if instance.transfer_model == "sram_hop":
        fetch = mem.dram_energy + 2 * mem.hbm_energy + mem.sram_energy
        leg = 0.0 if instance.photonic_legs == "first_operand" and instance.device(device).photonic else 1.0
        energy = op.weights * (fetch + leg * hop_energy(instance, device, True))
        return energy, 1.0 / mem.clock + hop_latency(instance, device)
    link = 0.0 if device == instance.baseline else 8 * mem.bytes_per_element * mem.link_energy_per_bit
    return op.weights * (mem.hbm_energy + link), 0.0


def _output_cost(instance: Instance, op: Operator, device: str) -> tuple[float, float]:
    """(energy, latency) of writing the graph's final output (the logits) back to memory: one
    device-to-SRAM leg under ``sram_hop``; the link home under ``realistic`` unless already there."""
    if instance.transfer_model == "sram_hop":
        return op.outputs * hop_energy(instance, device, False), hop_latency(instance, device)
    if device == instance.baseline:
        return 0.0, 0.0
    mem = instance.memory
    energy = op.outputs * 8 * mem.bytes_per_element * mem.link_energy_per_bit
    latency = mem.link_latency + op.outputs * mem.bytes_per_element / mem.link_bandwidth
    return energy, latency


def _stack(
    instance: Instance, op: Operator, inputs: int, b: int, realistic: bool, sink: bool
) -> dict[str, Realization]:
    """The realizations of ``op``: one per device able to run it."""
    stack = {}
    for dev in instance.devices:
        if not dev.photonic:
            latency, energy = _electronic_cost(op, dev, inputs, b)
        elif op.kind in MATMUL_KINDS:
            latency, energy = _photonic_cost(op, dev, inputs, realistic)
        else:
            continue
        w_energy, w_latency = _weight_cost(instance, op, dev.name)
        o_energy, o_latency = _output_cost(instance, op, dev.name) if sink else (0.0, 0.0)
        stack[dev.name] = Realization(dev.name, latency + w_latency + o_latency, energy + w_energy + o_energy)
    return stack


@lru_cache(maxsize=64)
def stacked_graph(instance: Instance) -> StackedGraph:
    """Build the Stacked Graph of ``instance``: operators, realization stacks, transfer tables (shared,
    read-only, by every operator or edge with the same shape)."""
    ops, edges = _operators(instance.model, instance.graph == "full")
    inputs = [0] * len(ops)
    sinks = set(range(len(ops)))
    for e in edges:
        inputs[e.dst] += e.elements
        sinks.discard(e.src)
    b = instance.memory.bytes_per_element
    realistic = instance.transfer_model == "realistic"
    # repeated blocks repeat their costs: identical operators and edges share one table
    stack_memo: dict[tuple, dict[str, Realization]] = {}
    stacks = []
    for k, op in enumerate(ops):
        key = (op.kind, op.outputs, op.macs, op.inner, op.weights, op.work, op.widest, inputs[k], k in sinks)
        stack = stack_memo.get(key)
        if stack is None:
            stack = stack_memo[key] = _stack(instance, op, inputs[k], b, realistic, k in sinks)
        stacks.append(stack)
    table_memo: dict[tuple, tuple[dict, dict]] = {}
    energies, latencies = [], []
    for e in edges:
        key = (e.elements, e.leading, tuple(stacks[e.src]), tuple(stacks[e.dst]))
        tables = table_memo.get(key)
        if tables is None:
            table_e, table_t = {}, {}
            for du in stacks[e.src]:
                for dv in stacks[e.dst]:
                    table_e[du, dv], table_t[du, dv] = _transfer(instance, e, du, dv)
            tables = table_memo[key] = (table_e, table_t)
        energies.append(tables[0])
        latencies.append(tables[1])
    return StackedGraph(ops, edges, stacks, energies, latencies)
