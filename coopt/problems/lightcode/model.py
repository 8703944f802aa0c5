"""LightCode's data model: the instance (declared fields, SI inside), the Stacked Graph built from a
model description, the parametric cost model, the cost of an assignment or a schedule, and the
checker.

Source: R. Tomich et al., "LightCode: compiling LLM inference for photonic-electronic systems",
arXiv 2509.16443, and the authors' code (``github.com/RyanTomich/LightCode``); the constant sets
and their sources are in :mod:`.presets`. Notes: ``research-lightcode-netcast.md`` section 1.

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

Checker (``check``) against the MILP (:mod:`.milp`) and the decomposition (``exact``), both ways:

=============================================  ===============================================
model row (MILP; decomposition)                checker violation
=============================================  ===============================================
one realization per operator, from ``R_v``     ``assignment``: each operator once, a device of
                                               its stack, no unknown operator
``y`` = outer product of the one-hot ``x``     transfers read from the two chosen devices' table
precedence ``S_v >= S_u + p_u + tau_uv``       ``precedence``
disjunctions (no overlap on one device)        ``device_exclusive``: sorted by start, then length
``T >= S_v + p_v``; device loads (implied)     makespan ``max_v S_v + p_v``; ``schedule``: finite
                                               starts ``>= 0``
PTU weight capacity                            ``capacity``
conversion volume                              ``conversion``
energy budget                                  ``energy_budget``
power cap ``E <= P T`` (``T`` may idle)        ``power_cap`` (a stretched schedule delays its sink)
uniform blocks ``x_vd = x_phi(v)d``            ``uniform_blocks``
=============================================  ===============================================

Every side constraint has the same relative slack :data:`SIDE_TOL` on both sides (the MILP's row
is the checker's bound), so no assignment the checker accepts is outside the model. The
decomposition is exact for the same problem (proof in ``coopt.problems.lightcode.heuristics.exact``): it
never restricts an order or a device. Non-finite numbers in a solution are violations (``finite``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from itertools import pairwise
from typing import Any

from coopt.errors import InstanceError, UsageError
from coopt.problem import Solution, Violation
from coopt.problems.lightcode import presets
from coopt.schema import Field, Schema

OBJECTIVES = ("energy", "latency_sum", "makespan")
TRANSFER_MODELS = ("sram_hop", "realistic")
GRAPHS = ("block", "full")
FAMILIES = ("gpt2", "llama")
MATMUL_KINDS = ("dense", "bmm")
KINDS = ("gpu", "cpu", "ptu")

MICRO = 1e6  # problem units of the objective: microjoules, microseconds
#: Relative slack of every side constraint, the same in the checker and in the MILP's rows.
SIDE_TOL = 1e-9
#: The largest model the loader accepts (and the generator writes): blocks, tokens, widths.
MAX_LAYERS = 100_000
MAX_TOKENS = 10_000_000
MAX_WIDTH = 1_000_000


# ------------------------------------------------------------------------------------------------
# The instance (SI units inside)
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
    """A GPU or CPU as a roofline (SI: FLOP/s, op/s, B/s, s, J)."""

    name: str
    kind: str  # gpu | cpu
    peak_flops: float  # matrix throughput Phi
    elementwise_rate: float  # elementwise throughput Phi_elem, operations per second
    memory_bandwidth: float  # B/s; 0: no memory-bound term
    launch_latency: float
    mac_energy: float
    op_energy: float  # per elementwise operation
    local_energy: float  # realistic model: same-device hand-off per element
    large_dense_min_dim: int = 0  # CPU: a dense product with an input dimension above it uses the fit
    large_dense_s_per_mac: float = 0.0
    large_dense_intercept: float = 0.0  # s
    photonic: bool = field(default=False, init=False)


@dataclass(frozen=True)
class Photonic:
    """A photonic tensor unit: cores x wavelengths x spatial replicas of time-integrating lanes."""

    name: str
    clock: float  # Hz
    cores: int  # c
    wavelengths: int  # m_lambda (WDM channels)
    spatial: int  # m_s, spatial replicas per core
    fan_in: int  # k_s, products summed optically per cycle
    mac_energy: float
    dac_energy: float
    adc_energy: float
    conversion_latency: float
    laser_power: float  # W
    local_energy: float
    weight_capacity: float  # bytes; 0: unlimited
    kind: str = field(default="ptu", init=False)
    photonic: bool = field(default=True, init=False)

    @property
    def multiplexing(self) -> int:
        """Dot products evaluated per cycle, ``m_lambda m_s c``."""
        return self.wavelengths * self.spatial * self.cores


Device = Electronic | Photonic


@dataclass(frozen=True)
class Memory:
    """The memory hierarchy and the inter-device link (SI)."""

    clock: float  # f_mem, one SRAM hop per cycle in the sram_hop model
    sram_energy: float  # J per element
    hbm_energy: float
    dram_energy: float
    port_energy: float  # device <-> SRAM port (repo: 1 + 1 pJ)
    bytes_per_element: int
    link_energy_per_bit: float  # J/bit
    link_bandwidth: float  # B/s
    link_latency: float  # s


@dataclass(frozen=True)
class Limits:
    """Side constraints; 0 means absent."""

    energy_budget: float = 0.0  # J
    power_cap: float = 0.0  # W
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
    preset: str = "coopt"
    photonic_legs: str = "every_operand"

    @property
    def device_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.devices)

    def device(self, name: str) -> Device:
        return self._by_name[name]

    @cached_property
    def _by_name(self) -> dict[str, Device]:
        return {d.name: d for d in self.devices}

    @property
    def baseline(self) -> str:
        """The first electronic device: the all-electronic baseline and the home of the weights."""
        return next(d.name for d in self.devices if not d.photonic)


# ------------------------------------------------------------------------------------------------
# Declared fields: file name, unit and meaning -> the attribute (SI) it fills
# ------------------------------------------------------------------------------------------------
PRESET_NOTE = "; left out: the [constants] preset's value"


def _f(name: str, kind: str, doc: str, unit: str = "", si: float = 1.0, **kw: Any) -> Field:
    return Field(name, kind, doc, unit=unit, si=si, **kw)


#: (file field, Instance attribute) of the GPU and CPU constants.
ELECTRONIC_FIELDS = (
    (_f("peak_tflops", "float", "matrix throughput Phi (a MAC is 2 FLOP)" + PRESET_NOTE, "TFLOP/s", 1e12,
        default=None, positive=True, max=1e6), "peak_flops"),
    (_f("elementwise_tops", "float", "elementwise throughput Phi_elem" + PRESET_NOTE, "Top/s", 1e12,
        default=None, positive=True, max=1e6), "elementwise_rate"),
    (_f("memory_bandwidth_tbyte_per_s", "float",
        "memory bandwidth of the roofline (0: no memory-bound term)" + PRESET_NOTE, "TB/s", 1e12,
        default=None, min=0.0, max=1e6), "memory_bandwidth"),
    (_f("launch_latency_us", "float", "fixed latency per operator" + PRESET_NOTE, "us", 1e-6,
        default=None, min=0.0, max=1e6), "launch_latency"),
    (_f("mac_energy_pj", "float", "energy per multiply-accumulate" + PRESET_NOTE, "pJ", 1e-12,
        default=None, min=0.0, max=1e6), "mac_energy"),
    (_f("op_energy_pj", "float", "energy per elementwise operation" + PRESET_NOTE, "pJ", 1e-12,
        default=None, min=0.0, max=1e6), "op_energy"),
    (_f("local_energy_pj", "float", "realistic transfers: same-device hand-off per element" + PRESET_NOTE,
        "pJ", 1e-12, default=None, min=0.0, max=1e6), "local_energy"),
)
#: The CPU's second dense fit (the authors' lm_head fit), CPU only.
CPU_FIELDS = (
    (_f("large_dense_min_dim", "int",
        "dense products with an input dimension above this use the large-dense fit (0: off)"
        + PRESET_NOTE, default=None, min=0, max=MAX_WIDTH * 100), "large_dense_min_dim"),
    (_f("large_dense_s_per_mac", "float", "large-dense fit: seconds per MAC" + PRESET_NOTE, "s/MAC",
        default=None, min=0.0, max=1.0), "large_dense_s_per_mac"),
    (_f("large_dense_intercept_ms", "float",
        "large-dense fit: intercept (may be negative; the time is clamped at 0)" + PRESET_NOTE, "ms",
        1e-3, default=None, min=-1e6, max=1e6), "large_dense_intercept"),
)
PHOTONIC_FIELDS = (
    (_f("clock_ghz", "float", "PTU clock f_PTU" + PRESET_NOTE, "GHz", 1e9, default=None, positive=True,
        max=1e6), "clock"),
    (_f("cores", "int", "PTU cores c" + PRESET_NOTE, default=None, min=1, max=10**9), "cores"),
    (_f("wavelengths", "int", "WDM channels m_lambda per core" + PRESET_NOTE, default=None, min=1,
        max=10**9), "wavelengths"),
    (_f("spatial", "int", "spatial replicas m_s per core" + PRESET_NOTE, default=None, min=1, max=10**9),
     "spatial"),
    (_f("fan_in", "int", "products summed optically per cycle k_s" + PRESET_NOTE, default=None, min=1,
        max=10**9), "fan_in"),
    (_f("mac_energy_pj", "float", "energy per MAC, optics lumped" + PRESET_NOTE, "pJ", 1e-12, default=None,
        min=0.0, max=1e6), "mac_energy"),
    (_f("dac_energy_pj", "float", "DAC energy per converted element" + PRESET_NOTE, "pJ", 1e-12,
        default=None, min=0.0, max=1e6), "dac_energy"),
    (_f("adc_energy_pj", "float", "ADC energy per output element" + PRESET_NOTE, "pJ", 1e-12,
        default=None, min=0.0, max=1e6), "adc_energy"),
    (_f("conversion_latency_ns", "float", "DAC/ADC delay per leg" + PRESET_NOTE, "ns", 1e-9, default=None,
        min=0.0, max=1e9), "conversion_latency"),
    (_f("laser_power_w", "float", "laser power while computing" + PRESET_NOTE, "W", default=None, min=0.0,
        max=1e6), "laser_power"),
    (_f("local_energy_pj", "float", "realistic transfers: PTU-side hand-off per element" + PRESET_NOTE,
        "pJ", 1e-12, default=None, min=0.0, max=1e6), "local_energy"),
    (_f("weight_capacity_mb", "float", "PTU weight capacity (0: unlimited)" + PRESET_NOTE, "MB", 1e6,
        default=None, min=0.0, max=1e12), "weight_capacity"),
)
MEMORY_FIELDS = (
    (_f("clock_ghz", "float", "memory clock f_mem: one SRAM hop per cycle" + PRESET_NOTE, "GHz", 1e9,
        default=None, positive=True, max=1e6), "clock"),
    (_f("sram_energy_pj", "float", "SRAM read or write per element" + PRESET_NOTE, "pJ", 1e-12,
        default=None, min=0.0, max=1e6), "sram_energy"),
    (_f("hbm_energy_pj", "float", "HBM read or write per element" + PRESET_NOTE, "pJ", 1e-12, default=None,
        min=0.0, max=1e6), "hbm_energy"),
    (_f("dram_energy_pj", "float", "DRAM read per element" + PRESET_NOTE, "pJ", 1e-12, default=None,
        min=0.0, max=1e6), "dram_energy"),
    (_f("port_energy_pj", "float", "device <-> SRAM port per element (local read + write)" + PRESET_NOTE,
        "pJ", 1e-12, default=None, min=0.0, max=1e6), "port_energy"),
    (_f("bytes_per_element", "int", "bytes per number" + PRESET_NOTE, default=None, min=1, max=16),
     "bytes_per_element"),
    (_f("link_energy_pj_per_bit", "float", "realistic transfers: link energy" + PRESET_NOTE, "pJ/bit",
        1e-12, default=None, min=0.0, max=1e6), "link_energy_per_bit"),
    (_f("link_bandwidth_gbyte_per_s", "float", "realistic transfers: link bandwidth" + PRESET_NOTE, "GB/s",
        1e9, default=None, positive=True, max=1e9), "link_bandwidth"),
    (_f("link_latency_ns", "float", "realistic transfers: link latency per transfer" + PRESET_NOTE, "ns",
        1e-9, default=None, min=0.0, max=1e12), "link_latency"),
)
LIMIT_FIELDS = (
    (_f("energy_budget_mj", "float", "energy budget (0: none)", "mJ", 1e-3, default=0.0, min=0.0, max=1e12),
     "energy_budget"),
    (_f("power_cap_w", "float", "average power cap E <= P T (0: none)", "W", default=0.0, min=0.0, max=1e12),
     "power_cap"),
    (_f("max_conversion_elements", "float", "elements crossing the photonic/electronic boundary (0: none)",
        default=0.0, min=0.0, max=1e30), "max_conversion_elements"),
)
_DEVICE_ONLY = {  # fields read only for some kinds
    "gpu": {f.name for f, _ in ELECTRONIC_FIELDS},
    "cpu": {f.name for f, _ in ELECTRONIC_FIELDS + CPU_FIELDS},
    "ptu": {f.name for f, _ in PHOTONIC_FIELDS},
}


def _device_fields() -> dict[str, Field]:
    """One declaration per device field name, its meaning prefixed by the kinds that read it."""
    out: dict[str, Field] = {}
    for spec, _ in ELECTRONIC_FIELDS + CPU_FIELDS + PHOTONIC_FIELDS:
        if spec.name in out:
            continue
        kinds = ", ".join(k for k in KINDS if spec.name in _DEVICE_ONLY[k])
        out[spec.name] = replace(spec, doc=f"({kinds}) {spec.doc}")
    return out


_DEVICE_FIELDS = _device_fields()

SCHEMA = Schema(
    [
        Field("objective", "str", "what to minimise", choices=OBJECTIVES, example="energy"),
        Field("transfer_model", "str", "sram_hop: every hop through SRAM (the authors'); realistic: "
              "same-device hand-offs, a link between devices", choices=TRANSFER_MODELS, example="sram_hop"),
        Field("photonic_legs", "str", "sram_hop: what a PTU's SRAM legs carry (every_operand; "
              "first_operand: weights and second operands stop in SRAM; free: no energy on PTU legs); "
              "left out: the preset's",
              choices=presets.LEGS, default=None),
        Field("graph", "str", "block: per-block composites; full: the primitive operator list",
              choices=GRAPHS, default="block"),
        Field("uniform_blocks", "bool", "the same device for a role in every block", default=False),
        Field("constants", "table", "the constant set that fills every constant left out", default={},
              fields=(Field("preset", "str", "named, sourced constant set (coopt.problems.lightcode."
                            "presets)", choices=presets.NAMES, default="coopt"),)),
        Field("model", "table", "the transformer whose prefill is compiled", fields=(
            Field("family", "str", "gpt2 (LayerNorm, GELU, biases) or llama (RMSNorm, RoPE, SwiGLU)",
                  choices=FAMILIES, example="gpt2"),
            Field("layers", "int", "transformer blocks", min=1, max=MAX_LAYERS, example=1),
            Field("d_model", "int", "hidden width d", min=1, max=MAX_WIDTH, example=64),
            Field("heads", "int", "attention heads (divides d_model)", min=1, max=MAX_WIDTH, example=2),
            Field("d_ff", "int", "feed-forward width", min=1, max=MAX_WIDTH, example=256),
            Field("vocab", "int", "vocabulary (lm_head outputs)", min=1, max=MAX_WIDTH * 10, example=512),
            Field("sequence_length", "int", "prompt tokens L", min=1, max=MAX_TOKENS, example=32),
        )),
        Field("device", "tables", "one device each: name, kind, and constants (left out: the preset's)",
              min_length=1, example=[{"name": "gpu", "kind": "gpu"}, {"name": "ptu", "kind": "ptu"}],
              fields=(Field("name", "str", "a name used once", example="gpu"),
                      Field("kind", "str", "gpu, cpu (rooflines) or ptu (photonic)", choices=KINDS),
                      *_DEVICE_FIELDS.values())),
        Field("memory", "table", "memory hierarchy and link (left out: the preset's)", default={},
              example={}, fields=tuple(f for f, _ in MEMORY_FIELDS)),
        Field("limits", "table", "side constraints", default={}, fields=tuple(f for f, _ in LIMIT_FIELDS)),
    ],
    version=2,
    changes={1: "link_bandwidth_gbps (GB/s) is now link_bandwidth_gbyte_per_s and memory_bandwidth_tbps "
                "(TB/s) memory_bandwidth_tbyte_per_s; a device's kind is gpu, cpu or ptu (was electronic "
                "or photonic); constants left out come from [constants] preset"},
)


def _fill(values: Any, specs: tuple, preset: str, table: str) -> dict[str, Any]:
    """Attribute -> SI value: the file's where given, else the preset's."""
    out = _preset_values(specs, preset, table)
    out.update({attr: values[spec.name] for spec, attr in specs if values[spec.name] is not None})
    return out


def load(fields: Any) -> Instance:
    v = SCHEMA.read(fields)
    preset = v.constants.preset
    errors: list[InstanceError] = []

    def fail(key: str, expected: str) -> None:
        errors.append(InstanceError(fields.path, key, expected))

    m = v.model
    model = TransformerModel(m.family, m.layers, m.d_model, m.heads, m.d_ff, m.vocab, m.sequence_length)
    if model.d_model % model.heads:
        fail("model.heads", f"expected a divisor of d_model = {model.d_model}, got {model.heads}")
    devices: list[Device] = []
    for i, d in enumerate(v.device):
        where = f"device[{i}]"
        if not d.name or d.name in {x.name for x in devices}:
            fail(f"{where}.name", f"expected a non-empty name used once, got {d.name!r}")
        stray = [n for n in _DEVICE_FIELDS if d[n] is not None and n not in _DEVICE_ONLY[d.kind]]
        for name in stray:
            fail(f"{where}.{name}", f"is not a constant of a {d.kind} (kind = {d.kind!r})")
        if d.kind == "ptu":
            devices.append(Photonic(d.name, **_fill(d, PHOTONIC_FIELDS, preset, "ptu")))
        else:
            specs = ELECTRONIC_FIELDS + (CPU_FIELDS if d.kind == "cpu" else ())
            devices.append(Electronic(d.name, d.kind, **_fill(d, specs, preset, d.kind)))
    if devices and all(d.photonic for d in devices):
        fail("device", 'expected at least one electronic device (kind = "gpu" or "cpu")')
    legs = v.photonic_legs if v.photonic_legs is not None else presets.PRESETS[preset]["photonic_legs"].value
    if v.transfer_model == "realistic" and v.photonic_legs not in (None, "every_operand"):
        fail("photonic_legs", 'expected "every_operand" (or nothing) with transfer_model = "realistic": '
             "the realistic model charges the PTU's own conversions")
    if errors:
        raise InstanceError.combine(errors)
    memory = Memory(**_fill(v.memory, MEMORY_FIELDS, preset, "memory"))
    limits = Limits(**{attr: v.limits[spec.name] for spec, attr in LIMIT_FIELDS})
    return Instance(v.objective, v.transfer_model, v.graph, v.uniform_blocks, model, tuple(devices), memory,
                    limits, preset, legs if v.transfer_model == "sram_hop" else "every_operand")


def _file_value(x: Any, spec: Field) -> Any:
    """An SI value in the field's file unit: the shortest decimal that the loader turns back into
    exactly ``x`` (the neighbouring floats of ``x / si`` where no decimal does)."""
    if spec.kind != "float" or spec.si == 1.0:
        return x
    y = x / spec.si
    candidates = [float(f"{y:.{digits}g}") for digits in (12, 15, 17)]
    candidates += [y, math.nextafter(y, math.inf), math.nextafter(y, -math.inf)]
    return next((c for c in candidates if c * spec.si == x), y)


def _table(obj: Any, specs: tuple) -> dict[str, Any]:
    return {spec.name: _file_value(getattr(obj, attr), spec) for spec, attr in specs}


def dump(instance: Instance) -> dict[str, Any]:
    """The instance as a TOML table with every constant written out (file units)."""
    out: dict[str, Any] = {
        "objective": instance.objective,
        "transfer_model": instance.transfer_model,
        "photonic_legs": instance.photonic_legs,
        "graph": instance.graph,
        "uniform_blocks": instance.uniform_blocks,
        "constants": {"preset": instance.preset},
        "model": dict(vars(instance.model)),
        "device": [],
        "memory": _table(instance.memory, MEMORY_FIELDS),
    }
    for device in instance.devices:
        if device.photonic:
            specs = PHOTONIC_FIELDS
        else:
            specs = ELECTRONIC_FIELDS + (CPU_FIELDS if device.kind == "cpu" else ())
        out["device"].append({"name": device.name, "kind": device.kind, **_table(device, specs)})
    limits = {k: v for k, v in _table(instance.limits, LIMIT_FIELDS).items() if v}
    if limits:
        out["limits"] = limits
    return out


def preset_device(preset: str, kind: str, name: str | None = None) -> Device:
    """A device of ``kind`` with every constant from ``preset``."""
    name = name or kind
    if kind == "ptu":
        return Photonic(name, **_preset_values(PHOTONIC_FIELDS, preset, "ptu"))
    specs = ELECTRONIC_FIELDS + (CPU_FIELDS if kind == "cpu" else ())
    return Electronic(name, kind, **_preset_values(specs, preset, kind))


def preset_memory(preset: str) -> Memory:
    return Memory(**_preset_values(MEMORY_FIELDS, preset, "memory"))


def _preset_values(specs: tuple, preset: str, table: str) -> dict[str, Any]:
    out = {}
    for spec, attr in specs:
        raw = presets.value(preset, table, spec.name)
        out[attr] = raw * spec.si if spec.kind == "float" else raw
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


class _Builder:
    def __init__(self) -> None:
        self.ops: list[Operator] = []
        self.edges: list[Edge] = []

    def add(self, op: Operator, inputs: list[tuple[int, ...]]) -> int:
        """Append ``op`` fed by ``inputs``: (source, elements) or (source, elements, leading)."""
        self.ops.append(op)
        k = len(self.ops) - 1
        self.edges.extend(Edge(src, k, *rest) for src, *rest in inputs)
        return k


def _operators(model: TransformerModel, full: bool) -> tuple[list[Operator], list[Edge]]:
    """The prefill operator DAG of ``model``: per-block composites, or the full primitive list. A
    matrix product's first input edge carries its first operand (``Edge.leading``)."""
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
            name, "dense", tag, block, L * n_out, macs=L * k_in * n_out, inner=k_in, weights=k_in * n_out,
            widest=max(L, k_in, n_out),
        )
        size = size_in if size_in is not None else g.ops[x].outputs
        mm = g.add(op, [(x, size, size)])
        if full and gpt2:
            return elem(f"{name}.bias", f"{tag}.bias", block, L * n_out, 1.0, [mm])
        return mm

    def bmm(block: int, tag: str, inputs: list[tuple[int, ...]], rows: int, inner: int, cols: int) -> int:
        op = Operator(
            f"b{block}.{tag}", "bmm", tag, block, h * rows * cols, macs=h * rows * inner * cols, inner=inner,
            widest=max(h, rows, inner, cols),
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
                qk_in, v_in = [(q, L * d, L * d), (k, L * d, 0)], (v, L * d, 0)
            else:
                split = elem(f"b{b}.split", "split", b, 3 * L * d, 1.0, [qkv])
                qk_in, v_in = [(split, 2 * L * d, L * d)], (split, L * d, 0)
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
            qk_in, v_in = [(rq, L * d, L * d), (rk, L * d, 0)], (v, L * d, 0)
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
        context = bmm(b, "av", [(probs, h * L * L, h * L * L), v_in], L, L, dh)
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
    photonic = {d.name for d in instance.devices if d.photonic}
    return sum(e.elements for e in graph.edges if (assign[e.src] in photonic) != (assign[e.dst] in photonic))


def ptu_weight_bytes(instance: Instance, graph: StackedGraph, assign: Assignment, device: str) -> int:
    return (
        sum(op.weights for op, d in zip(graph.ops, assign, strict=True) if d == device)
        * instance.memory.bytes_per_element
    )


def side_violations(instance: Instance, graph: StackedGraph, assign: Assignment, span: float) -> list[str]:
    """The side constraints an assignment breaks (``span`` = its latency: makespan or sum), each
    with the relative slack :data:`SIDE_TOL` the MILP's rows allow too."""
    out = []
    slack = 1 + SIDE_TOL
    for dev in instance.devices:
        if dev.photonic and dev.weight_capacity > 0:
            used = ptu_weight_bytes(instance, graph, assign, dev.name)
            if used > dev.weight_capacity * slack:
                limit = dev.weight_capacity
                out.append(f"capacity: {dev.name} holds {used:.9g} B of weights > {limit:.9g} B")
    lim = instance.limits
    if lim.max_conversion_elements > 0:
        crossing = conversion_elements(instance, graph, assign)
        if crossing > lim.max_conversion_elements * slack:
            out.append(f"conversion: {crossing} elements cross > {lim.max_conversion_elements:.9g}")
    used = energy(graph, assign) if lim.energy_budget > 0 or lim.power_cap > 0 else 0.0
    if lim.energy_budget > 0 and used > lim.energy_budget * slack:
        out.append(f"energy_budget: {used:.12g} J > {lim.energy_budget:.12g} J")
    if lim.power_cap > 0 and used > lim.power_cap * span * slack:
        out.append(f"power_cap: {used:.12g} J over {span:.12g} s > {lim.power_cap:.12g} W")
    if instance.uniform_blocks:
        first: dict[str, str] = {}
        for op, d in zip(graph.ops, assign, strict=True):
            if op.block >= 0 and first.setdefault(op.role, d) != d:
                out.append(f"uniform_blocks: {op.name} on {d}, block 0's {op.role} on {first[op.role]}")
                break
    return out


def as_solution(graph: StackedGraph, assign: Assignment, start: list[float] | None = None) -> dict[str, Any]:
    """The JSON form: device per operator name (and start time per operator, in s, for schedules)."""
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
        if not isinstance(d, str) or d not in stack:
            return None, f"{op.name}: device {d!r} is not one of its realizations {sorted(stack)}"
        assign.append(d)
    extra = [name for name in raw if name not in graph.index]
    if extra:
        return None, f"unknown operators {sorted(map(str, extra))[:3]}"
    return assign, ""


def earliest_starts(graph: StackedGraph, assign: Assignment, rank: list[float]) -> list[float]:
    """Earliest start times when every device runs its operators one at a time, in the order of a
    topological sort that takes the ready operator of least ``rank`` first (ties: operator order),
    and each operator waits for its inputs' transfers. Where ``rank`` is consistent with the data
    dependencies (a schedule's start or mid-point times are), the device orders are ``rank``'s;
    elsewhere the data dependencies win, so the result is always a feasible schedule."""
    import heapq

    n = len(graph.ops)
    indegree = [len(p) for p in graph.preds]
    ready = [(rank[v], v) for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    start = [0.0] * n
    free_at: dict[str, float] = {}
    while ready:
        _, u = heapq.heappop(ready)
        arrival = max(
            (start[graph.edges[k].src] + graph.stacks[graph.edges[k].src][assign[graph.edges[k].src]].latency
             + graph.transfer_latency[k][assign[graph.edges[k].src], assign[u]] for k in graph.in_edges[u]),
            default=0.0,
        )
        start[u] = max(arrival, free_at.get(assign[u], 0.0))
        free_at[assign[u]] = start[u] + graph.stacks[u][assign[u]].latency
        for w in graph.succs[u]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, (rank[w], w))
    return start


# ------------------------------------------------------------------------------------------------
# Checker and objective
# ------------------------------------------------------------------------------------------------
def _read_start(graph: StackedGraph, solution: Solution) -> tuple[list[float] | None, str]:
    raw = solution.get("start")
    if not isinstance(raw, Mapping):
        return None, "expected 'start': a table operator -> start time in seconds"
    start = []
    for op in graph.ops:
        s = raw.get(op.name)
        if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s < 0:
            return None, f"{op.name}: expected a finite start time >= 0 (s), got {s!r}"
        start.append(float(s))
    return start, ""


def schedule_violations(graph: StackedGraph, assign: list[str], start: list[float]) -> list[Violation]:
    """Precedence with transfer delays, and one operator at a time on every device."""
    out = []
    tol = 1e-12 * max(1e-12, makespan(graph, assign, start))
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
                    f"{graph.ops[e.dst].name} starts at {start[e.dst]:.12g} s before "
                    f"its input from {graph.ops[e.src].name} arrives at {ready:.12g} s",
                )
            )
    by_device: dict[str, list[int]] = {}
    # by start, then length: a zero-length operator at the start of a longer one goes first
    for v in sorted(range(len(assign)), key=lambda v: (start[v], graph.stacks[v][assign[v]].latency, v)):
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
    if not isinstance(solution, Mapping):
        return [Violation("assignment", f"expected a solution table, got {type(solution).__name__}")]
    assign, why = read_assignment(graph, solution)
    if assign is None:
        return [Violation("assignment", why)]
    out: list[Violation] = []
    claimed = solution.get("objective")
    if isinstance(claimed, float) and not math.isfinite(claimed):
        out.append(Violation("finite", f"the claimed objective is {claimed!r}"))
    if instance.objective == "makespan":
        start, why = _read_start(graph, solution)
        if start is None:
            return [*out, Violation("schedule", why)]
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


def objective_name(instance: Instance) -> str:
    return {"energy": "energy", "latency_sum": "serial latency", "makespan": "makespan"}[instance.objective]


def objective_unit(instance: Instance) -> str:
    if instance.objective == "energy":
        return "µJ"
    return "µs (start times in the solution: s)" if instance.objective == "makespan" else "µs"


# ------------------------------------------------------------------------------------------------
# The seeded generator
# ------------------------------------------------------------------------------------------------
def generate(seed: int, size: int) -> Instance:
    """A small random transformer (``size`` blocks) on a GPU and a PTU whose constants are the
    ``coopt`` preset's, scaled by random factors (a slower, cheaper GPU so that the devices trade)."""
    if not 1 <= size <= MAX_LAYERS:
        raise UsageError(f"lightcode: --size (transformer blocks) must be 1..{MAX_LAYERS}, got {size}")
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

    def jitter(x: float, si: float, scale: float = 1.0) -> float:
        """``x`` scaled and perturbed, rounded to 6 digits in its file unit (so files round-trip)."""
        return float(f"{x / si * scale * math.exp(rng.uniform(-1.0, 1.0)):.6g}") * si

    gpu = preset_device("coopt", "gpu")
    gpu = replace(
        gpu,
        peak_flops=jitter(gpu.peak_flops, 1e12, 1e-3),
        elementwise_rate=jitter(gpu.elementwise_rate, 1e12, 1e-3),
        memory_bandwidth=jitter(gpu.memory_bandwidth, 1e12, 1e-2),
        launch_latency=jitter(gpu.launch_latency, 1e-6, 1e-2),
        mac_energy=jitter(gpu.mac_energy, 1e-12),
        op_energy=jitter(gpu.op_energy, 1e-12),
        local_energy=jitter(gpu.local_energy, 1e-12),
    )
    ptu = preset_device("coopt", "ptu")
    ptu = replace(
        ptu,
        clock=jitter(ptu.clock, 1e9),
        cores=rng.choice((1, 2)),
        wavelengths=rng.choice((4, 16, 64)),
        spatial=rng.choice((1, 4)),
        mac_energy=jitter(ptu.mac_energy, 1e-12),
        dac_energy=jitter(ptu.dac_energy, 1e-12),
        adc_energy=jitter(ptu.adc_energy, 1e-12),
        conversion_latency=jitter(ptu.conversion_latency, 1e-9, 1e-2),
        local_energy=jitter(ptu.local_energy, 1e-12),
    )
    return Instance(
        objective=rng.choice(OBJECTIVES),
        transfer_model=rng.choice(TRANSFER_MODELS),
        graph="block",
        uniform_blocks=rng.random() < 0.25,
        model=model,
        devices=(gpu, ptu),
        memory=preset_memory("coopt"),
        limits=Limits(),
    )
