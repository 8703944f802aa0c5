"""Hecaton's data model and per-layer cost model: what one training iteration of one Llama block
costs on a package of N compute dies under each parallelization option.

Source: Huang et al., "Hecaton: Training Large Language Models with Scalable Waferscale Chiplet
Systems", arXiv 2407.05784. Only the abstract of the paper could be read, so the collective and
memory formulas below are the reconstruction in research-chiplet-chase-moesd.md section 1.d
(ring and SUMMA cost models; tagged [R] there), made exact per linear layer here.

Workload (Llama-style block: GQA attention, SwiGLU FFN). Per iteration T = b*s tokens,
g = n_kv/n_h, f the FFN width of the block's segment, beta bytes per element. The four linears
Y = X W with (k, n):  QKV (h, h(1+2g)),  O (h, h),  up+gate (h, 2f),  down (f, h);
W_blk = sum k n = h^2 (2 + 2g) + 3 h f.  Forward FLOPs 2 T W_blk + 4 b s^2 h kappa_c
(kappa_c = 1/2 with a causal mask); training = 3x forward, 4x with recompute.

An option o = (scheme, r x c, mu, rho, gamma): scheme in {1d, summa, agrs}; the logical mesh r x c with
r c = N (1d uses the whole package as one ring: r = 1, c = N; summa needs r = c); mu micro-batches
(token tiles of T/mu tokens, run one after another through each layer); rho = 1 recomputes the
forward pass in the backward pass; gamma = 1 (agrs without recompute only) stashes the sharded
inputs and re-gathers them in the backward pass instead of stashing the gathered ones.
Per die and per block, with T_mu = T/mu and "swapped" marking the O and down linears (they take the
previous linear's output layout, so r and c trade places for them):

* 1d (Megatron tensor parallelism): 4 all-reduces of T x h (6 with recompute),
  V = (4+2 rho) 2(N-1)/N T h elements, (4+2 rho) 2(N-1) ring steps per micro-batch.
  SRAM: T_mu k + kn/N + T_mu n/N (column-parallel), T_mu k/N + kn/N + T_mu n (row-parallel).
  Attention splits heads: at most n_h dies busy.
* agrs (our reading of Hecaton's 2D weight-stationary method): die (i, j) keeps W[k_i, n_j];
  forward all-gathers X along its row and reduce-scatters Y along its column,
  (c-1)/c T k/r + (r-1)/r T n/c per linear (r, c swapped for O and down); backward mirrors it
  (all-gather dY, reduce-scatter dX) and reuses the gathered X kept in DRAM; recompute repeats
  the forward collectives. V = (2 + rho) sum_linears forward volume, i.e. kappa_b = 2 + rho in
  the notes' V_AGRS = kappa_b (sqrt N - 1)/N T S_kn. With gamma = 1 the backward pass all-gathers
  X again ((c-1)/c T k/r more per linear) and the stash holds T k/N instead of T k/r: the notes'
  kappa_b = 3 "re-gathered" case made exact (research notes 1.d list both; the choice is the
  solver's, since it trades NoP time for DRAM capacity and traffic). Attention is local when every row block
  of a tile holds whole sequences (mu | b and (b/mu) mod r = 0); otherwise K and V are
  all-gathered along the column, (r-1)/r 2 T h g/c per pass. SRAM: T_mu k/r + kn/N + T_mu n/c.
* summa (Optimus 2D tensor parallelism, q x q): per linear and micro-batch the forward moves
  (q-1)/q^2 (T_mu k + kn), dX (q-1)/q^2 (T_mu n + kn), dW (q-1)/q^2 (T_mu (k+n)); weight panels
  cross the NoP once per micro-batch. SRAM: 2(T_mu k + kn)/N + T_mu n/N.

Times: t_C = FLOPs / (busy dies F); t_N = V beta / (kappa B_l) + steps alpha (kappa = ring
directions); t_D = DRAM bytes / B_d with DRAM bytes = beta W_blk/N (2 + rho) weight reads (layer-major
schedule: every micro-batch passes a layer before the next, so weights are read once per pass) +
beta W_blk/N gradient write + c_opt W_blk/N optimizer traffic + 2 x activation stash. B_d(N) is
the pluggable DRAM model: "distributed" (a DRAM port per die) or "edge" (ports on the perimeter
dies of the most-square physical R x C grid only). Op time: max(t_C, t_N, t_D) (full overlap) or
their sum (no overlap). Energy: e_mac MACs + e_nop bits moved (one hop per ring step) + e_dram
bits + P_static N t.

Activation stash kept in DRAM until backward (bytes per die, integers: rounded up):
without recompute, every linear's input in its layout plus Q, K, V and the SwiGLU gate/up outputs;
with recompute, the block input only. 1d keeps the QKV and up inputs replicated (2 T h per die),
which is its DRAM-capacity handicap.

Re-layout between consecutive blocks whose layouts differ (charged once forward, once backward):
1d -> 2D is free forward and an all-gather of the gradient backward, 2D -> 1d the reverse; two
different 2D layouts exchange T h/N per die in an all-to-all over the physical mesh (mean hop
distance H of the R x C grid), both ways.

Assumptions (beyond the notes): rings embed with unit-hop neighbours (a Hamiltonian cycle of the
mesh); RMSNorm, residual and embedding/LM-head work is not modelled; dies compute at peak.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from functools import cache, cached_property
from typing import Any

from coopt.errors import UsageError
from coopt.fields import Fields
from coopt.problem import Solution, Violation, close
from coopt.schema import Field, Schema

SCHEMES = ("1d", "summa", "agrs")
OBJECTIVES = ("time", "energy")
OVERLAPS = ("full", "none")
PLACEMENTS = ("distributed", "edge")
#: Most blocks a segment may hold (no model has a thousandth of it; the generator's limit too).
MAX_BLOCKS = 10**6
#: The ``recompute`` field: which recompute flags the options may take.
RECOMPUTE = {"never": (False,), "always": (True,), "choose": (False, True)}


# -- data model ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Model:
    """A Llama-style decoder: runs of identical blocks (segments) that differ only in FFN width."""

    hidden: int
    heads: int
    kv_heads: int
    sequence_length: int
    sequences: int  # b: sequences per iteration
    causal: bool
    bytes_per_element: int
    segment_blocks: tuple[int, ...]
    segment_ffn: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return self.sequences * self.sequence_length

    @property
    def gqa_ratio(self) -> float:
        return self.kv_heads / self.heads

    @property
    def block_ffn(self) -> tuple[int, ...]:
        """FFN width of every block in execution order (one op per block)."""
        return tuple(f for n, f in zip(self.segment_blocks, self.segment_ffn, strict=True) for _ in range(n))

    def block_weights(self, ffn: int) -> float:
        """W_blk = h^2 (2 + 2g) + 3 h f parameters."""
        h = self.hidden
        return h * h * (2 + 2 * self.gqa_ratio) + 3 * h * ffn

    def linears(self, ffn: int) -> tuple[tuple[float, float, bool], ...]:
        """(k, n, swapped) of QKV, O, up+gate, down; swapped = takes the previous output layout."""
        h, g = self.hidden, self.gqa_ratio
        return ((h, h * (1 + 2 * g), False), (h, h, True), (h, 2 * ffn, False), (ffn, h, True))


@dataclass(frozen=True)
class Package:
    """N identical compute dies on a 2D mesh NoP, with DRAM behind ports. Every quantity is SI
    (FLOP/s, bytes, bytes/s, s, J, W); the file's customary units are converted at load."""

    dies: int
    flops: float  # F: peak FLOP/s of one die
    sram_bytes: float  # S_sram per die
    link_bandwidth: float  # B_l: bytes/s, one direction of one die-to-die link
    ring_directions: int  # kappa
    hop_latency: float  # alpha: seconds per ring step
    dram_placement: str
    dram_port_bandwidth: float  # bytes/s of one DRAM port
    dram_bytes: float  # whole package
    optimizer_state_bytes_per_param: float
    optimizer_traffic_bytes_per_param: float
    mac_energy: float  # J per MAC
    nop_energy_per_bit: float  # J per bit per hop
    dram_energy_per_bit: float  # J per bit
    static_power: float  # W per die

    @cached_property
    def grid(self) -> tuple[int, int]:
        """The physical R x C die grid: the most square factorization of N (R <= C)."""
        rows = max(d for d in range(1, math.isqrt(self.dies) + 1) if self.dies % d == 0)
        return rows, self.dies // rows

    @property
    def ring_bandwidth(self) -> float:
        """B_eff = kappa B_l in bytes/s."""
        return self.ring_directions * self.link_bandwidth

    @property
    def dram_ports(self) -> int:
        rows, cols = self.grid
        if self.dram_placement == "distributed" or rows <= 2:
            return self.dies
        return 2 * (rows + cols) - 4

    @property
    def dram_bandwidth_per_die(self) -> float:
        """B_d(N): DRAM bytes/s available to one die."""
        return self.dram_port_bandwidth * self.dram_ports / self.dies

    @property
    def dram_bytes_per_die(self) -> float:
        return self.dram_bytes / self.dies

    @property
    def mean_hops(self) -> float:
        """Mean Manhattan distance between two dies of the R x C grid (all-to-all re-layouts)."""
        rows, cols = self.grid
        return (rows - 1 / rows) / 3 + (cols - 1 / cols) / 3


@dataclass(frozen=True)
class Instance:
    model: Model
    package: Package
    schemes: tuple[str, ...]
    microbatches: tuple[int, ...]
    recompute: tuple[bool, ...]
    objective: str
    overlap: str
    one_scheme: bool

    def __hash__(self) -> int:
        # cost() and candidates() are cached per instance: hash the nested fields once
        return self._hash

    @cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, f) for f in self.__dataclass_fields__))

    @property
    def blocks(self) -> int:
        return len(self.model.block_ffn)

    @cached_property
    def resident_bytes(self) -> float:
        """Weights, gradients and optimizer state per die, in DRAM for the whole iteration."""
        per_param = 2 * self.model.bytes_per_element + self.package.optimizer_state_bytes_per_param
        weights = sum(self.model.block_weights(f) for f in self.model.block_ffn)
        return per_param * weights / self.package.dies

    @cached_property
    def stash_capacity(self) -> int:
        """D_cap: DRAM bytes per die left for the activation stash (negative: nothing fits)."""
        return math.floor(self.package.dram_bytes_per_die - self.resident_bytes)


# -- the file: declared fields (coopt schema hecaton) ----------------------------------------
_MODEL_FIELDS = (
    Field("hidden", "int", "hidden size h", min=1, max=2**20, example=4096),
    Field("heads", "int", "attention heads n_h (divides hidden)", min=1, max=2**14, example=32),
    Field("kv_heads", "int", "key/value heads n_kv (divides heads; GQA when fewer)", min=1, max=2**14,
          example=8),
    Field("sequence_length", "int", "tokens per sequence s", min=1, max=2**24, example=2048),
    Field("sequences", "int", "sequences per iteration b (tokens T = b s)", min=1, max=2**20, example=2),
    Field("causal", "bool", "causal attention mask (halves the attention FLOPs)", default=True),
    Field("bytes_per_element", "int", "bytes per activation and weight element beta", unit="bytes",
          min=1, max=8, default=2),
    Field("segment_blocks", "ints", "blocks per segment (runs of identical blocks, in order)", min=1,
          max=MAX_BLOCKS, min_length=1, example=[2]),
    Field("segment_ffn", "ints", "FFN width f of each segment's blocks", length="segment_blocks", min=1,
          max=2**22, example=[11008]),
)
_PACKAGE_FIELDS = (
    Field("dies", "int", "compute dies N on the 2D mesh", min=1, max=2**16, example=16),
    Field("die_tflops", "float", "peak compute F of one die", unit="TFLOP/s", si=1e12, positive=True,
          max=1e6, example=100.0),
    Field("sram_mib", "float", "SRAM per die S_sram", unit="MiB", si=2.0**20, positive=True, max=1e9,
          example=64.0),
    Field("link_gbyte_per_s", "float", "bandwidth B_l of one die-to-die link, one direction",
          unit="GB/s", si=1e9, positive=True, max=1e7, example=256.0),
    Field("ring_directions", "int", "ring directions kappa (2: bidirectional rings)", min=1, max=2,
          default=2),
    Field("hop_latency_ns", "float", "latency alpha of one ring step", unit="ns", si=1e-9, min=0.0,
          max=1e9, default=20.0),
    Field("dram_placement", "str", "DRAM ports on every die, or on the perimeter dies only",
          choices=PLACEMENTS, default="distributed"),
    Field("dram_port_gbyte_per_s", "float", "bandwidth of one DRAM port", unit="GB/s", si=1e9,
          positive=True, max=1e7, example=64.0),
    Field("dram_gb", "float", "DRAM capacity of the whole package", unit="GB", si=1e9, positive=True,
          max=1e12, example=1000.0),
    Field("optimizer_state_bytes_per_param", "float", "optimizer state resident in DRAM",
          unit="bytes/param", min=0.0, max=1e3, default=12.0),
    Field("optimizer_traffic_bytes_per_param", "float", "optimizer DRAM traffic per step",
          unit="bytes/param", min=0.0, max=1e3, default=16.0),
    Field("mac_pj", "float", "energy of one MAC", unit="pJ", si=1e-12, min=0.0, max=1e6, default=0.3),
    Field("nop_pj_per_bit", "float", "NoP energy per bit and hop", unit="pJ/bit", si=1e-12, min=0.0,
          max=1e6, default=0.5),
    Field("dram_pj_per_bit", "float", "DRAM energy per bit", unit="pJ/bit", si=1e-12, min=0.0, max=1e6,
          default=5.0),
    Field("die_static_w", "float", "static power of one die", unit="W", min=0.0, max=1e6, default=0.0),
)
SCHEMA = Schema(
    [
        Field("objective", "str", "what to minimise: iteration time or iteration energy",
              choices=OBJECTIVES, default="time"),
        Field("overlap", "str", "compute, NoP and DRAM overlap fully (max) or not at all (sum)",
              choices=OVERLAPS, default="full"),
        Field("one_scheme", "bool", "every block uses the same scheme (the Hecaton vs Megatron runs)",
              default=False),
        Field("schemes", "strs", f"schemes the options may use, from {', '.join(SCHEMES)}", min_length=1,
              default=SCHEMES),
        Field("microbatches", "ints", "micro-batch counts mu the options may use (divide T)", min=1,
              max=2**44, min_length=1, default=(1,)),
        Field("recompute", "str", "recompute flags the options may take", choices=tuple(RECOMPUTE),
              default="choose"),
        Field("model", "table", "the LLM (Llama-style blocks)", fields=_MODEL_FIELDS),
        Field("package", "table", "the chiplet package", fields=_PACKAGE_FIELDS),
    ],
    version=2,
    changes={1: "package.link_gb_per_s and dram_port_gb_per_s (GB/s) are now link_gbyte_per_s and "
                "dram_port_gbyte_per_s, tflops_per_die is die_tflops, static_w_per_die is die_static_w"},
)


def load(fields: Fields) -> Instance:
    v = SCHEMA.read(fields)
    m, p = v.model, v.package
    if m.kv_heads > m.heads or m.heads % m.kv_heads:
        fields.fail("model.kv_heads", f"expected a divisor of heads = {m.heads}, got {m.kv_heads}")
    if m.hidden % m.heads:
        fields.fail("model.hidden", f"expected a multiple of heads = {m.heads}, got {m.hidden}")
    model = Model(m.hidden, m.heads, m.kv_heads, m.sequence_length, m.sequences, m.causal,
                  m.bytes_per_element, m.segment_blocks, m.segment_ffn)
    package = Package(
        dies=p.dies, flops=p.die_tflops, sram_bytes=p.sram_mib, link_bandwidth=p.link_gbyte_per_s,
        ring_directions=p.ring_directions, hop_latency=p.hop_latency_ns, dram_placement=p.dram_placement,
        dram_port_bandwidth=p.dram_port_gbyte_per_s, dram_bytes=p.dram_gb,
        optimizer_state_bytes_per_param=p.optimizer_state_bytes_per_param,
        optimizer_traffic_bytes_per_param=p.optimizer_traffic_bytes_per_param,
        mac_energy=p.mac_pj, nop_energy_per_bit=p.nop_pj_per_bit, dram_energy_per_bit=p.dram_pj_per_bit,
        static_power=p.die_static_w,
    )
    for i, s in enumerate(v.schemes):
        if s not in SCHEMES:
            fields.fail(f"schemes[{i}]", f"expected one of {', '.join(map(repr, SCHEMES))}, got {s!r}")
    if len(set(v.schemes)) != len(v.schemes):
        fields.fail("schemes", "expected each scheme at most once")
    for i, mu in enumerate(v.microbatches):
        if model.tokens % mu:
            fields.fail(f"microbatches[{i}]", "expected a divisor of the tokens per iteration (sequences x "
                        f"sequence_length = {model.tokens}), got {mu}")
    if len(set(v.microbatches)) != len(v.microbatches):
        fields.fail("microbatches", "expected distinct micro-batch counts")
    return Instance(model, package, tuple(v.schemes), tuple(v.microbatches), RECOMPUTE[v.recompute],
                    v.objective, v.overlap, v.one_scheme)


def dump(instance: Instance) -> dict[str, Any]:
    m, p = instance.model, instance.package
    recompute = next(k for k, v in RECOMPUTE.items() if v == instance.recompute)
    return {
        "objective": instance.objective,
        "overlap": instance.overlap,
        "one_scheme": instance.one_scheme,
        "schemes": list(instance.schemes),
        "microbatches": list(instance.microbatches),
        "recompute": recompute,
        "model": {
            "hidden": m.hidden,
            "heads": m.heads,
            "kv_heads": m.kv_heads,
            "sequence_length": m.sequence_length,
            "sequences": m.sequences,
            "causal": m.causal,
            "bytes_per_element": m.bytes_per_element,
            "segment_blocks": list(m.segment_blocks),
            "segment_ffn": list(m.segment_ffn),
        },
        "package": {
            "dies": p.dies,
            "die_tflops": p.flops / 1e12,
            "sram_mib": p.sram_bytes / 2**20,
            "link_gbyte_per_s": p.link_bandwidth / 1e9,
            "ring_directions": p.ring_directions,
            "hop_latency_ns": p.hop_latency / 1e-9,
            "dram_placement": p.dram_placement,
            "dram_port_gbyte_per_s": p.dram_port_bandwidth / 1e9,
            "dram_gb": p.dram_bytes / 1e9,
            "optimizer_state_bytes_per_param": p.optimizer_state_bytes_per_param,
            "optimizer_traffic_bytes_per_param": p.optimizer_traffic_bytes_per_param,
            "mac_pj": p.mac_energy / 1e-12,
            "nop_pj_per_bit": p.nop_energy_per_bit / 1e-12,
            "dram_pj_per_bit": p.dram_energy_per_bit / 1e-12,
            "die_static_w": p.static_power,
        },
    }


# -- options and their costs -----------------------------------------------------------------
@dataclass(frozen=True, order=True)
class Option:
    """One way to run one block: the decision the solution records per op."""

    scheme: str
    rows: int
    cols: int
    microbatches: int
    recompute: bool
    regather: bool = False

    @property
    def layout(self) -> tuple[str, int, int]:
        """What the next block sees: the activation layout (re-layout costs depend on it only)."""
        return (self.scheme, self.rows, self.cols)

    def to_json(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "rows": self.rows,
            "cols": self.cols,
            "microbatches": self.microbatches,
            "recompute": self.recompute,
            "regather": self.regather,
        }


@dataclass(frozen=True)
class Cost:
    """Per-die figures of one block under one option (SI units)."""

    compute_s: float
    nop_s: float
    dram_s: float
    time_s: float  # max or sum of the three, by the instance's overlap model
    sram_bytes: float
    stash_bytes: int
    nop_bytes: float
    dram_bytes: float
    energy_j: float  # dynamic + static over time_s, whole package
    objective: float  # time_s or energy_j, by the instance's objective


def options(instance: Instance) -> tuple[Option, ...]:
    """Every option of the instance (the same set for every block), sorted."""
    n = instance.package.dies
    meshes = [(r, n // r) for r in range(1, n + 1) if n % r == 0]
    out = []
    for scheme in instance.schemes:
        for rows, cols in meshes:
            if scheme == "1d" and rows != 1:
                continue
            if scheme == "summa" and rows != cols:
                continue
            for mu in instance.microbatches:
                for rho in instance.recompute:
                    out.append(Option(scheme, rows, cols, mu, rho))
                    if scheme == "agrs" and not rho:
                        out.append(Option(scheme, rows, cols, mu, rho, regather=True))
    return tuple(sorted(out))


def valid_option(instance: Instance, option: Option) -> str | None:
    """Why ``option`` is not an option of this instance, or None."""
    n = instance.package.dies
    if option.scheme not in instance.schemes:
        return f"scheme {option.scheme!r} not in {list(instance.schemes)}"
    if option.rows * option.cols != n or option.rows < 1:
        return f"mesh {option.rows}x{option.cols} does not factor N = {n}"
    if option.scheme == "1d" and option.rows != 1:
        return "1d runs one ring over all dies: rows must be 1"
    if option.scheme == "summa" and option.rows != option.cols:
        return f"summa needs a square mesh, got {option.rows}x{option.cols}"
    if option.microbatches not in instance.microbatches:
        return f"micro-batch count {option.microbatches} not in {list(instance.microbatches)}"
    if option.recompute not in instance.recompute:
        return f"recompute={option.recompute} not allowed"
    if option.regather and (option.scheme != "agrs" or option.recompute):
        return "regather applies to agrs without recompute only"
    return None


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-9 * max(1.0, x))


def _split(instance: Instance, ffn: int, option: Option) -> tuple[float, float, float, float, int]:
    """What the scheme's split of one block implies (module docstring): NoP volume (elements),
    ring steps, the SRAM working set and activation stash (elements per die), and the dies busy
    in attention."""
    m, p = instance.model, instance.package
    n, T, h, g = p.dies, m.tokens, m.hidden, m.gqa_ratio
    mu, rho = option.microbatches, int(option.recompute)
    r, c = option.rows, option.cols
    t_mu = T / mu
    linears = m.linears(ffn)
    elementwise = T * h * (1 + 2 * g) / n + 2 * T * ffn / n  # Q, K, V and SwiGLU gate/up, sharded
    attention_split = m.sequences % mu == 0 and (m.sequences // mu) % r == 0
    if option.scheme == "1d":
        volume = (4 + 2 * rho) * 2 * (n - 1) / n * T * h
        steps = mu * (4 + 2 * rho) * 2 * (n - 1)
        sram = max(
            (t_mu * k / n + k * nn / n + t_mu * nn) if row_par else (t_mu * k + k * nn / n + t_mu * nn / n)
            for k, nn, row_par in linears
        )
        stash = (T * h if rho else sum(T * k / n if rp else T * k for k, _, rp in linears) + elementwise)
        busy_attention = min(n, m.heads)
    elif option.scheme == "agrs":
        forward = sum(
            ((r - 1) / r * T * k / c + (c - 1) / c * T * nn / r) if sw
            else ((c - 1) / c * T * k / r + (r - 1) / r * T * nn / c)
            for k, nn, sw in linears
        )
        volume = (2 + rho) * forward
        steps = mu * (2 + rho) * 4 * (r + c - 2)
        if option.regather:
            volume += sum((r - 1) / r * T * k / c if sw else (c - 1) / c * T * k / r for k, _, sw in linears)
            steps += mu * 2 * (r + c - 2)
        if not attention_split:
            volume += (2 + rho) * (r - 1) / r * 2 * T * h * g / c
            steps += mu * (2 + rho) * (r - 1)
        sram = max(
            (t_mu * k / c + k * nn / n + t_mu * nn / r) if sw else (t_mu * k / r + k * nn / n + t_mu * nn / c)
            for k, nn, sw in linears
        )
        if rho:
            stash = T * h / n
        elif option.regather:
            stash = sum(T * k / n for k, _, _ in linears) + elementwise
        else:
            stash = sum(T * k / (c if sw else r) for k, _, sw in linears) + elementwise
        busy_attention = r * min(c, m.heads)
    else:  # summa on q x q
        q = r
        share = (q - 1) / (q * q)
        volume = share * sum(
            (1 + rho) * (T * k + mu * k * nn) + (T * nn + mu * k * nn) + T * (k + nn) for k, nn, _ in linears
        )
        steps = mu * (3 + rho) * 4 * 2 * (q - 1)
        if not attention_split:
            volume += (2 + rho) * (r - 1) / r * 2 * T * h * g / c
            steps += mu * (2 + rho) * (r - 1)
        sram = max(2 * (t_mu * k + k * nn) / n + t_mu * nn / n for k, nn, _ in linears)
        stash = T * h / n if rho else sum(T * k / n for k, _, _ in linears) + elementwise
        busy_attention = r * min(c, m.heads)
    return volume, steps, sram, stash, busy_attention


@cache
def cost(instance: Instance, ffn: int, option: Option) -> Cost:
    """The closed-form cost of one block of FFN width ``ffn`` under ``option`` (module docstring)."""
    m, p = instance.model, instance.package
    n, T, h = p.dies, m.tokens, m.hidden
    rho = int(option.recompute)
    w_blk = m.block_weights(ffn)
    volume, steps, sram, stash, busy_attention = _split(instance, ffn, option)
    beta = m.bytes_per_element
    stash_bytes = _ceil(beta * stash)
    nop_bytes = beta * volume
    flops_linear = 2 * T * w_blk
    flops_attention = 4 * m.sequences * m.sequence_length**2 * h * (0.5 if m.causal else 1.0)
    passes = 3 + rho
    compute_s = passes * (flops_linear / (n * p.flops) + flops_attention / (busy_attention * p.flops))
    nop_s = nop_bytes / p.ring_bandwidth + steps * p.hop_latency
    dram_bytes = (
        beta * w_blk / n * (2 + rho + 1) + p.optimizer_traffic_bytes_per_param * w_blk / n + 2 * stash_bytes
    )
    dram_s = dram_bytes / p.dram_bandwidth_per_die
    time_s = max(compute_s, nop_s, dram_s) if instance.overlap == "full" else compute_s + nop_s + dram_s
    macs = passes * (flops_linear + flops_attention) / 2
    energy = (
        p.mac_energy * macs
        + p.nop_energy_per_bit * 8 * nop_bytes * n
        + p.dram_energy_per_bit * 8 * dram_bytes * n
        + p.static_power * n * time_s
    )
    return Cost(
        compute_s=compute_s,
        nop_s=nop_s,
        dram_s=dram_s,
        time_s=time_s,
        sram_bytes=beta * sram,
        stash_bytes=stash_bytes,
        nop_bytes=nop_bytes,
        dram_bytes=dram_bytes,
        energy_j=energy,
        objective=time_s if instance.objective == "time" else energy,
    )


@cache
def transition(instance: Instance, before: tuple[str, int, int], after: tuple[str, int, int]) -> float:
    """tau: re-layout cost (objective units) between consecutive blocks with these layouts."""
    if before == after:
        return 0.0
    m, p = instance.model, instance.package
    n, beta = p.dies, m.bytes_per_element
    activation = m.tokens * m.hidden
    if before[0] == "1d" or after[0] == "1d":  # one all-gather (forward or backward), ring hops
        volume, hops, steps = (n - 1) / n * activation, 1.0, n - 1
    else:  # all-to-all of the local shard, forward and backward, across the physical grid
        volume, hops, steps = 2 * activation / n, p.mean_hops, 2 * math.ceil(p.mean_hops)
    time_s = beta * volume * hops / p.ring_bandwidth + steps * p.hop_latency
    if instance.objective == "time":
        return time_s
    return p.nop_energy_per_bit * 8 * beta * volume * hops * n + p.static_power * n * time_s


# -- reading and scoring a solution ----------------------------------------------------------
def parse(instance: Instance, solution: Solution) -> tuple[list[Option] | None, list[str]]:
    """The per-block options of ``solution`` (None if unreadable) and what is wrong with them."""
    ops = solution.get("ops") if isinstance(solution, dict) else None
    if not isinstance(ops, list):
        return None, ["solution has no list 'ops'"]
    if len(ops) != instance.blocks:
        return None, [f"expected {instance.blocks} ops (one per block), got {len(ops)}"]
    chosen, problems = [], []
    for i, op in enumerate(ops):
        try:
            option = Option(
                scheme=str(op["scheme"]),
                rows=_as_int(op["rows"]),
                cols=_as_int(op["cols"]),
                microbatches=_as_int(op["microbatches"]),
                recompute=_as_bool(op["recompute"]),
                regather=_as_bool(op["regather"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            return None, [f"op {i}: unreadable option ({type(exc).__name__}: {exc})"]
        why = valid_option(instance, option)
        if why is not None:
            problems.append(f"op {i}: {why}")
        chosen.append(option)
    return chosen, problems


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or int(value) != value:
        raise ValueError(f"expected an integer, got {value!r}")
    return int(value)


def _as_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def total(instance: Instance, chosen: list[Option]) -> float:
    """The objective of a per-block choice: sum of block costs plus re-layout costs."""
    ffn = instance.model.block_ffn
    value = sum(cost(instance, f, o).objective for f, o in zip(ffn, chosen, strict=True))
    value += sum(transition(instance, a.layout, b.layout) for a, b in zip(chosen, chosen[1:], strict=False))
    return value


def stash_total(instance: Instance, chosen: list[Option]) -> int:
    ffn = instance.model.block_ffn
    return sum(cost(instance, f, o).stash_bytes for f, o in zip(ffn, chosen, strict=True))


def to_solution(instance: Instance, chosen: list[Option]) -> Solution:
    return {"objective": total(instance, chosen), "ops": [o.to_json() for o in chosen]}


# -- the candidate table the exact methods and heuristics share ------------------------------
@cache
def candidates(instance: Instance, ffn: int) -> tuple[Option, ...]:
    """The SRAM-feasible options of a block, with dominated ones removed.

    Re-layout costs depend only on an option's layout and the DRAM row only on its stash, so
    among options sharing (layout, stash) only the cheapest can be in an optimum (ties: the first
    in sorted order). Exact for every method that uses it.
    """
    best: dict[tuple, Option] = {}
    for option in options(instance):
        c = cost(instance, ffn, option)
        if c.sram_bytes > instance.package.sram_bytes:
            continue
        key = (option.layout, c.stash_bytes)
        if key not in best or c.objective < cost(instance, ffn, best[key]).objective:
            best[key] = option
    return tuple(sorted(best.values()))


# -- checker ---------------------------------------------------------------------------------
def check(instance: Instance, solution: Solution) -> list[Violation]:
    """The violated rows of the MILP (:mod:`coopt.problems.hecaton.milp`), recomputed from the
    instance: option validity, SRAM per block, the DRAM stash total, one scheme, the claimed
    objective. Never raises on a malformed solution."""
    chosen, problems = parse(instance, solution)
    violations = [Violation("option", p) for p in problems]
    if chosen is None or violations:
        return violations
    sram = instance.package.sram_bytes
    for b, (f, o) in enumerate(zip(instance.model.block_ffn, chosen, strict=True)):
        need = cost(instance, f, o).sram_bytes
        if need > sram:
            violations.append(Violation("sram", f"op {b}: needs {need:.6g} B per die > {sram:.6g} B"))
    stash = stash_total(instance, chosen)
    if stash > instance.stash_capacity:
        violations.append(
            Violation(
                "dram",
                f"activation stash {stash} B + resident {instance.resident_bytes:.6g} B per die exceeds "
                f"{instance.package.dram_bytes_per_die:.6g} B",
            )
        )
    if instance.one_scheme and len({o.scheme for o in chosen}) > 1:
        violations.append(Violation("one_scheme", f"schemes used: {sorted({o.scheme for o in chosen})}"))
    claimed, value = solution.get("objective"), total(instance, chosen)
    if isinstance(claimed, bool) or not isinstance(claimed, int | float) or not math.isfinite(claimed) \
            or not close(claimed, value):
        violations.append(Violation("objective", f"claimed {claimed!r}, recomputed {value!r}"))
    return violations


def objective(instance: Instance, solution: Solution) -> float:
    """Iteration time in seconds (or energy in joules): blocks plus re-layouts."""
    chosen, problems = parse(instance, solution)
    if chosen is None or problems:
        return math.nan
    return total(instance, chosen)


# -- instance families -----------------------------------------------------------------------
def generate(seed: int, size: int) -> Instance:
    """A seeded slice of a Llama-style model: ``size`` blocks in up to 3 segments of different
    FFN width, on 4, 8 or 16 dies, with DRAM sized so that the stash row often binds: the stash
    allowed lies between the least any choice needs and the stash of every block's cheapest
    option (the optimum without the row, when re-layouts do not decide it). At most
    :data:`MAX_BLOCKS` blocks, the loader's limit."""
    if not 1 <= size <= MAX_BLOCKS:
        raise UsageError(f"hecaton generates 1 to {MAX_BLOCKS} blocks, got --size {size}")
    rng = random.Random(seed)
    heads = rng.choice((8, 16))
    hidden = heads * rng.choice((64, 128))
    segments = rng.randint(1, min(3, size))
    cuts = sorted(rng.sample(range(1, size), segments - 1)) if segments > 1 else []
    blocks = [b - a for a, b in zip([0, *cuts], [*cuts, size], strict=True)]
    model = Model(
        hidden=hidden,
        heads=heads,
        kv_heads=heads // rng.choice((1, 2, 4)),
        sequence_length=rng.choice((512, 1024, 2048)),
        sequences=rng.choice((2, 4, 8)),
        causal=True,
        bytes_per_element=2,
        segment_blocks=tuple(blocks),
        segment_ffn=tuple(hidden * rng.choice((2, 3, 4)) for _ in blocks),
    )
    dies = rng.choice((4, 8, 16))
    package = Package(
        dies=dies,
        flops=float(rng.choice((25, 50, 100))) * 1e12,
        sram_bytes=float(rng.choice((32, 64, 128))) * 2**20,
        link_bandwidth=float(rng.choice((32, 64, 128, 256))) * 1e9,
        ring_directions=2,
        hop_latency=20e-9,
        dram_placement=rng.choice(("distributed", "edge")),
        dram_port_bandwidth=float(rng.choice((32, 64, 128))) * 1e9,
        dram_bytes=1e9,
        optimizer_state_bytes_per_param=12.0,
        optimizer_traffic_bytes_per_param=16.0,
        mac_energy=0.3e-12,
        nop_energy_per_bit=0.5e-12,
        dram_energy_per_bit=5e-12,
        static_power=float(rng.choice((0, 2, 5))),
    )
    draft = Instance(
        model=model,
        package=package,
        schemes=SCHEMES,
        microbatches=(1, 2, 4),
        recompute=(False, True),
        objective=rng.choice(("time", "energy")),
        overlap=rng.choice(("full", "none")),
        one_scheme=False,
    )
    widths = sorted(set(model.block_ffn))
    rows = {f: [cost(draft, f, o) for o in candidates(draft, f)] for f in widths}
    least = {f: min((c.stash_bytes for c in rows[f]), default=0) for f in widths}
    cheapest = {f: min(rows[f], key=lambda c: c.objective).stash_bytes if rows[f] else 0 for f in widths}
    low = sum(least[f] for f in model.block_ffn)
    high = sum(cheapest[f] for f in model.block_ffn)
    stash = low + rng.choice((0.2, 0.5, 0.8, 1.2)) * (high - low)
    gb = math.ceil((draft.resident_bytes + stash) * dies / 1e6) / 1e3
    return replace(draft, package=replace(package, dram_bytes=gb * 1e9))
