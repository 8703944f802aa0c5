"""LightCode's instance: the model description, the devices (GPU, CPU, photonic tensor unit),
the memory hierarchy and the side limits, as frozen dataclasses in SI units; their declared fields
(:data:`SCHEMA`), read once at load (every error names the field) and written back by
:func:`dump`; and the named constant sets a file may start from (:func:`preset_device`).

Source: R. Tomich et al., "LightCode: compiling LLM inference for photonic-electronic systems",
arXiv 2509.16443, and the authors' code (``github.com/RyanTomich/LightCode``); the constant sets
and their sources are in :mod:`.presets`. Notes: ``research-lightcode-netcast.md`` section 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from coopt.errors import InstanceError
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
