"""Data model, cost model, checker and generator of the ``scope`` problem (see
:mod:`coopt.problems.scope` for the formulation, its symbols and sources)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from coopt.errors import UsageError
from coopt.problem import Solution, Violation, close
from coopt.problems.scope.workloads import ChainLayer, resnet, synthetic_chain
from coopt.schema import Field, Schema

Layer = ChainLayer
Cluster = tuple[int, int, int, str]  # first, last, chiplets, partition
PARTITIONS = ("IS", "WS")
#: Labels of the L - 1 gaps between consecutive layers: a mapping's *structure*.
NO_CUT, CLUSTER_CUT, SEGMENT_CUT = 0, 1, 2
_LAYER_INTS = ("macs", "weight_bytes", "input_bytes", "output_bytes", "shortcut_bytes",
               "out_channels", "out_rows", "halo_bytes")

# -- data model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instance:
    """A layer chain and an MCM, every quantity SI (MAC/s, bytes, bytes/s); the file's customary
    units (GMAC/s, KiB, GB/s, GiB) are converted at load."""

    layers: tuple[Layer, ...]
    chiplets: int
    mac_rate: float  # R: MAC/s of one chiplet
    sram_bytes: float  # S: SRAM of one chiplet
    nop_bandwidth: float  # B_l: bytes/s of one NoP link
    dram_bandwidth: float  # B_D: bytes/s of the package's DRAM interface
    dram_bytes: float  # D: DRAM capacity
    batch: int
    max_cluster_layers: int
    partitions: tuple[str, ...] = PARTITIONS

    @property
    def n_layers(self) -> int:
        return len(self.layers)


# -- the file: declared fields (coopt schema scope) ----------------------------------------------

_COUNT = 10**15  # no physical layer has more MACs or bytes per sample than this
_LAYER_FIELDS = (
    Field("name", "str", "layer name (free text)", example="conv1"),
    Field("macs", "int", "multiply-accumulates per sample", min=0, max=_COUNT, example=118013952),
    Field("weight_bytes", "int", "weight bytes", unit="bytes", min=0, max=_COUNT, example=9408),
    Field("input_bytes", "int", "input activation bytes per sample", unit="bytes", min=0, max=_COUNT,
          example=150528),
    Field("output_bytes", "int", "output activation bytes per sample", unit="bytes", min=0, max=_COUNT,
          example=200704),
    Field("shortcut_bytes", "int", "residual bytes alive across a cut right after the layer", unit="bytes",
          min=0, max=_COUNT, default=0),
    Field("out_channels", "int", "output channels C (split by IS)", min=1, max=2**24, example=64),
    Field("out_rows", "int", "output rows H (split by WS)", min=1, max=2**24, example=56),
    Field("halo_bytes", "int", "input bytes a row slab fetches from its neighbours", unit="bytes", min=0,
          max=_COUNT, default=0),
)
SCHEMA = Schema(
    [
        Field("module", "table", "the multi-chip module", fields=(
            Field("chiplets", "int", "chiplets M (snake order of the mesh)", min=1, max=1024, example=8),
            Field("mac_rate_gmac_per_s", "float", "MAC rate R of one chiplet", unit="GMAC/s", si=1e9,
                  positive=True, max=1e6, example=1024.0),
            Field("sram_kib", "float", "SRAM S of one chiplet", unit="KiB", si=1024.0, positive=True,
                  max=1e9, example=2048.0),
            Field("nop_bandwidth_gbyte_per_s", "float", "bandwidth B_l of one NoP link", unit="GB/s",
                  si=1e9, positive=True, max=1e7, example=32.0),
            Field("dram_bandwidth_gbyte_per_s", "float", "DRAM bandwidth B_D of the package", unit="GB/s",
                  si=1e9, positive=True, max=1e7, example=16.0),
            Field("dram_capacity_gib", "float", "DRAM capacity D of the package", unit="GiB",
                  si=1024.0**3, positive=True, max=1e6, example=8.0),
        )),
        Field("mapping", "table", "what the mapping may do", fields=(
            Field("batch", "int", "samples b per batch (the pipeline's depth of work)", min=1, max=10**6,
                  example=64),
            Field("max_cluster_layers", "int", "longest cluster Lambda, in layers", min=1, max=10**4,
                  example=8),
            Field("partitions", "strs", "partitions a cluster may use: IS (channels split), WS (rows split)",
                  min_length=1, default=PARTITIONS),
        )),
        Field("layers", "tables", "the layer chain, in execution order", min_length=1, fields=_LAYER_FIELDS),
    ],
    version=2,
    changes={1: "module.nop_bandwidth_gb_per_s and dram_bandwidth_gb_per_s (GB/s) are now "
                "nop_bandwidth_gbyte_per_s and dram_bandwidth_gbyte_per_s"},
)


def load(fields: Any) -> Instance:
    v = SCHEMA.read(fields)
    partitions = tuple(v.mapping.partitions)
    for i, p in enumerate(partitions):
        if p not in PARTITIONS or p in partitions[:i]:
            fields.fail(f"mapping.partitions[{i}]", f"expected distinct values among {PARTITIONS}, got {p!r}")
    layers = tuple(Layer(**{key: layer[key] for key in ("name", *_LAYER_INTS)}) for layer in v.layers)
    m = v.module
    return Instance(layers, m.chiplets, m.mac_rate_gmac_per_s, m.sram_kib, m.nop_bandwidth_gbyte_per_s,
                    m.dram_bandwidth_gbyte_per_s, m.dram_capacity_gib, v.mapping.batch,
                    v.mapping.max_cluster_layers, partitions)


def dump(inst: Instance) -> dict[str, Any]:
    return {
        "module": {
            "chiplets": inst.chiplets,
            "mac_rate_gmac_per_s": inst.mac_rate / 1e9,
            "sram_kib": inst.sram_bytes / 1024.0,
            "nop_bandwidth_gbyte_per_s": inst.nop_bandwidth / 1e9,
            "dram_bandwidth_gbyte_per_s": inst.dram_bandwidth / 1e9,
            "dram_capacity_gib": inst.dram_bytes / 1024.0**3,
        },
        "mapping": {
            "batch": inst.batch,
            "max_cluster_layers": inst.max_cluster_layers,
            "partitions": list(inst.partitions),
        },
        "layers": [{"name": layer.name, **{key: getattr(layer, key) for key in _LAYER_INTS}}
                   for layer in inst.layers],
    }


# -- cost model ----------------------------------------------------------------------------------


def _split(layer: Layer, chiplets: int, partition: str) -> float:
    """Share of the split dimension the busiest chiplet gets: ceil(X/a)/X."""
    extent = layer.out_channels if partition == "IS" else layer.out_rows
    return math.ceil(extent / chiplets) / extent


def busy_time(inst: Instance, first: int, last: int, chiplets: int, partition: str) -> float:
    """max(t_comp, t_nop) of cluster [first..last] on ``chiplets`` chiplets, seconds per sample."""
    layers = inst.layers[first:last + 1]
    comp = sum(layer.macs * _split(layer, chiplets, partition) for layer in layers) / inst.mac_rate
    if chiplets == 1:
        nop = 0.0
    elif partition == "IS":
        nop = (chiplets - 1) / chiplets * sum(layer.input_bytes for layer in layers[1:])
    else:
        nop = sum(layer.halo_bytes for layer in layers)
    return max(comp, nop / inst.nop_bandwidth)


def cut_time(inst: Instance, last: int) -> float:
    """NoP time to pass the output (and live shortcuts) of layer ``last`` to the next cluster."""
    layer = inst.layers[last]
    return (layer.output_bytes + layer.shortcut_bytes) / inst.nop_bandwidth


def stage_time(inst: Instance, first: int, last: int, chiplets: int, partition: str, cut: bool) -> float:
    """tau(c, a, p): the pipeline stage time of a cluster, with its outgoing cut if ``cut``."""
    return busy_time(inst, first, last, chiplets, partition) + (cut_time(inst, last) if cut else 0.0)


def sram_need(inst: Instance, first: int, last: int, chiplets: int, partition: str) -> float:
    """Bytes of SRAM the busiest chiplet of the cluster needs."""
    layers = inst.layers[first:last + 1]
    shares = [_split(layer, chiplets, partition) for layer in layers]
    if partition == "IS":
        weights = sum(layer.weight_bytes * f for layer, f in zip(layers, shares, strict=True))
        buffer = max(layer.input_bytes + (layer.output_bytes + layer.shortcut_bytes) * f
                     for layer, f in zip(layers, shares, strict=True))
    else:
        weights = sum(layer.weight_bytes for layer in layers)
        halo = 1 if chiplets > 1 else 0
        buffer = max((layer.input_bytes + layer.output_bytes + layer.shortcut_bytes) * f
                     + halo * layer.halo_bytes for layer, f in zip(layers, shares, strict=True))
    return weights + buffer


def boundary_bytes(inst: Instance, first: int, last: int) -> int:
    """Activation bytes per sample a segment reads from and writes to DRAM."""
    before = inst.layers[first - 1].shortcut_bytes if first > 0 else 0
    end = inst.layers[last]
    return inst.layers[first].input_bytes + before + end.output_bytes + end.shortcut_bytes


def segment_weight_bytes(inst: Instance, first: int, last: int) -> int:
    return sum(layer.weight_bytes for layer in inst.layers[first:last + 1])


def segment_overhead(inst: Instance, first: int, last: int) -> float:
    """Weight load plus boundary spill of a segment, seconds per batch."""
    moved = segment_weight_bytes(inst, first, last) + inst.batch * boundary_bytes(inst, first, last)
    return moved / inst.dram_bandwidth


def segment_dram_need(inst: Instance, first: int, last: int) -> float:
    total_weights = sum(layer.weight_bytes for layer in inst.layers)
    return total_weights + inst.batch * boundary_bytes(inst, first, last)


def segment_candidate(inst: Instance, first: int, last: int) -> bool:
    """Necessary conditions for a feasible segment: weights fit in M S, DRAM need fits."""
    weights_fit = segment_weight_bytes(inst, first, last) <= inst.chiplets * inst.sram_bytes
    return weights_fit and segment_dram_need(inst, first, last) <= inst.dram_bytes


def segment_time(inst: Instance, first: int, last: int, clusters: int, bottleneck: float) -> float:
    """T_s = (b + k - 1) tau_s + load + spill."""
    return (inst.batch + clusters - 1) * bottleneck + segment_overhead(inst, first, last)


def cluster_options(inst: Instance, first: int, last: int) -> list[tuple[int, str, float]]:
    """Pareto front ``(chiplets, partition, busy time)`` of one cluster: SRAM-feasible options
    whose busy time strictly improves on every option with fewer chiplets (ties: the first
    partition in ``inst.partitions``)."""
    front: list[tuple[int, str, float]] = []
    best = math.inf
    for a in range(1, inst.chiplets + 1):
        option = None
        for p in inst.partitions:
            if sram_need(inst, first, last, a, p) > inst.sram_bytes:
                continue
            t = busy_time(inst, first, last, a, p)
            if option is None or t < option[2]:
                option = (a, p, t)
        if option is not None and option[2] < best:
            front.append(option)
            best = option[2]
    return front


# -- solutions -----------------------------------------------------------------------------------


def evaluate(inst: Instance, segments: list[list[tuple[int, int, int, str]]]) -> float:
    """Batch time of a well-formed mapping given as segments of (first, last, chiplets, partition)."""
    total = 0.0
    for clusters in segments:
        first, last = clusters[0][0], clusters[-1][1]
        bottleneck = max(stage_time(inst, i, j, a, p, cut=j != last) for i, j, a, p in clusters)
        total += segment_time(inst, first, last, len(clusters), bottleneck)
    return total


def make_solution(inst: Instance, segments: list[list[tuple[int, int, int, str]]]) -> Solution:
    """The JSON solution of a mapping, with its objective (batch time) and throughput."""
    objective = evaluate(inst, segments)
    return {
        "objective": objective,
        "throughput": inst.batch / objective,
        "segments": [[{"first": i, "last": j, "chiplets": a, "partition": p} for i, j, a, p in seg]
                     for seg in segments],
    }


# -- energy (reported, not optimised) ------------------------------------------------------------

#: Energy per operation [S]: 0.2 pJ per int8 MAC (Simba reports 0.11 pJ/op, 2 ops per MAC),
#: 1 pJ/bit on the NoP (Simba's ground-referenced links: 0.82-1.75 pJ/bit), 10 pJ/bit for DRAM.
PJ_PER_MAC, PJ_PER_NOP_BYTE, PJ_PER_DRAM_BYTE = 0.2, 8.0, 80.0


def traffic(inst: Instance, segments: list[list[tuple[int, int, int, str]]]) -> dict[str, float]:
    """MACs, NoP bytes and DRAM bytes of a mapping for one batch.

    NoP: IS all-gathers move (a-1) I_l per inner layer, WS halos a h_l per layer, every cut
    O + K, and the weights of a WS cluster reach its other a-1 chiplets once per batch. DRAM:
    every weight once, plus the segments' boundary spills."""
    b = inst.batch
    macs = b * sum(layer.macs for layer in inst.layers)
    nop, dram = 0.0, 0.0
    for clusters in segments:
        first, last = clusters[0][0], clusters[-1][1]
        dram += segment_weight_bytes(inst, first, last) + b * boundary_bytes(inst, first, last)
        for i, j, a, p in clusters:
            layers = inst.layers[i:j + 1]
            if p == "IS":
                nop += b * (a - 1) * sum(layer.input_bytes for layer in layers[1:])
            elif a > 1:
                nop += b * a * sum(layer.halo_bytes for layer in layers)
                nop += (a - 1) * sum(layer.weight_bytes for layer in layers)
            if j != last:
                nop += b * (inst.layers[j].output_bytes + inst.layers[j].shortcut_bytes)
    return {"macs": float(macs), "nop_bytes": nop, "dram_bytes": dram}


def energy(inst: Instance, segments: list[list[tuple[int, int, int, str]]]) -> float:
    """Joules per batch under the [S] constants above (compute + NoP + DRAM)."""
    moved = traffic(inst, segments)
    picojoules = (moved["macs"] * PJ_PER_MAC + moved["nop_bytes"] * PJ_PER_NOP_BYTE
                  + moved["dram_bytes"] * PJ_PER_DRAM_BYTE)
    return picojoules * 1e-12


def module_instance(
    layers: list[Layer],
    chiplets: int,
    *,
    mac_rate_gmac_per_s: float = 1024.0,
    sram_kib: float = 2048.0,
    nop_bandwidth_gbyte_per_s: float = 32.0,
    dram_bandwidth_gbyte_per_s: float | None = None,
    dram_capacity_gib: float = 8.0,
    batch: int = 64,
    max_cluster_layers: int = 8,
) -> Instance:
    """An MCM in the Gemini/Simba grid style, given in the file's units: DRAM bandwidth defaults to
    'TOPS' GB/s (2 ops per MAC), as in the Gemini DSE scripts (repo
    SET-Scheduling-Project/GEMINI-HPCA2024)."""
    if dram_bandwidth_gbyte_per_s is None:
        dram_bandwidth_gbyte_per_s = 2 * mac_rate_gmac_per_s * chiplets / 1000.0
    return Instance(tuple(layers), chiplets, mac_rate_gmac_per_s * 1e9, sram_kib * 1024.0,
                    nop_bandwidth_gbyte_per_s * 1e9, dram_bandwidth_gbyte_per_s * 1e9,
                    dram_capacity_gib * 1024.0**3, batch, max_cluster_layers)


# -- structures and sub-spaces of mappings -------------------------------------------------------


def decode(labels: list[int] | tuple[int, ...]) -> list[list[tuple[int, int]]]:
    """Segments of (first, last) clusters from the L-1 gap labels."""
    segments, clusters, start = [], [], 0
    for gap, label in enumerate(labels):
        if label != NO_CUT:
            clusters.append((start, gap))
            start = gap + 1
            if label == SEGMENT_CUT:
                segments.append(clusters)
                clusters = []
    clusters.append((start, len(labels)))
    segments.append(clusters)
    return segments


@dataclass(frozen=True)
class Restriction:
    """A sub-space of mappings: ``span`` caps cluster length, ``kmax`` clusters per segment."""

    span: int | None = None
    kmax: int | None = None


MERGED = Restriction()
SEGMENTED = Restriction(span=1)  # Tangram/SET/Gemini: one layer per pipeline stage
INTRA_LAYER = Restriction(kmax=1)  # every segment one cluster: layers one after another on the module



def parse(solution: Solution) -> tuple[list[list[tuple[int, int, int, str]]] | None, list[Violation]]:
    """The mapping in a solution, or the reason it is malformed."""
    segments = solution.get("segments") if isinstance(solution, dict) else None
    if not isinstance(segments, list) or not segments:
        return None, [Violation("solution", "expected 'segments': a non-empty list of cluster lists")]
    out = []
    for s, seg in enumerate(segments):
        if not isinstance(seg, list) or not seg:
            return None, [Violation("solution", f"segments[{s}] is not a non-empty list of clusters")]
        clusters = []
        for c, cl in enumerate(seg):
            where = f"segments[{s}][{c}]"
            if not isinstance(cl, dict):
                return None, [Violation("solution", f"{where} is not a table")]
            values = [cl.get(key) for key in ("first", "last", "chiplets")]
            if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                return None, [Violation("solution", f"{where} needs integer first, last, chiplets")]
            if not isinstance(cl.get("partition"), str):
                return None, [Violation("solution", f"{where} needs a partition string")]
            clusters.append((*values, cl["partition"]))
        out.append(clusters)
    return out, []


def check(inst: Instance, solution: Solution) -> list[Violation]:
    """The violated rows of the exact models (table in :mod:`coopt.problems.scope.milp`), recomputed
    from the instance with the same functions and the same comparisons (no tolerance on SRAM or DRAM,
    so that nothing the models exclude is accepted). Never raises on a malformed solution."""
    segments, violations = parse(solution)
    if segments is None:
        return violations
    expected = 0
    for s, clusters in enumerate(segments):
        for c, (first, last, a, p) in enumerate(clusters):
            where = f"segment {s} cluster {c} [{first}..{last}]"
            if first != expected or last < first or last >= inst.n_layers:
                violations.append(Violation(
                    "layer_cover", f"{where}: expected a cluster starting at layer {expected} "
                    f"and ending by layer {inst.n_layers - 1}"))
                return violations
            expected = last + 1
            if last - first + 1 > inst.max_cluster_layers:
                violations.append(Violation(
                    "cluster_length", f"{where}: {last - first + 1} layers > {inst.max_cluster_layers}"))
            if p not in inst.partitions:
                violations.append(Violation("partition", f"{where}: {p!r} not in {inst.partitions}"))
                continue
            if not 1 <= a <= inst.chiplets:
                violations.append(Violation(
                    "chiplets", f"{where}: {a} chiplets, expected 1..{inst.chiplets}"))
                continue
            need = sram_need(inst, first, last, a, p)
            if need > inst.sram_bytes:
                violations.append(Violation("sram", f"{where}: needs {need:.0f} B > {inst.sram_bytes:.0f} B"))
        used = sum(a for _, _, a, _ in clusters)
        if used > inst.chiplets:
            violations.append(Violation("chiplet_budget", f"segment {s}: {used} chiplets > {inst.chiplets}"))
        first, last = clusters[0][0], clusters[-1][1]
        need = segment_dram_need(inst, first, last)
        if need > inst.dram_bytes:
            violations.append(Violation("dram", f"segment {s}: needs {need:.0f} B > {inst.dram_bytes:.0f} B"))
    if expected != inst.n_layers:
        violations.append(Violation("layer_cover", f"layers {expected}..{inst.n_layers - 1} are not mapped"))
    if violations:
        return violations
    claimed, value = solution.get("objective"), evaluate(inst, segments)
    if isinstance(claimed, bool) or not isinstance(claimed, int | float) or not math.isfinite(claimed) \
            or not close(claimed, value):
        violations.append(Violation("objective", f"claimed {claimed!r}, recomputed {value!r} (batch s)"))
    return violations


def objective(inst: Instance, solution: Solution) -> float:
    """Batch time in seconds of a readable mapping (NaN when the solution cannot be read)."""
    segments, _ = parse(solution)
    return math.nan if segments is None else evaluate(inst, segments)


#: The largest ``size`` :func:`generate` accepts (2 + 2 size layers).
MAX_SIZE = 1000


def generate(seed: int, size: int) -> Instance:
    """A seeded synthetic CNN chain of 2 + 2*size layers on min(64, 2 + 2*size) chiplets.

    SRAM is drawn so that the chain's weights need one to three segments but the largest layer
    fits on the module. Sizes 1-2 enumerate in under a second; size 3 (8 layers, 8 chiplets) can
    reach 10^8-10^9 mappings."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (2 + 2 size layers), got {size}")
    rng = random.Random(seed)
    length = 2 + 2 * size
    chiplets = min(64, 2 + 2 * size)
    layers = synthetic_chain(rng, length)
    total = sum(layer.weight_bytes for layer in layers)
    probe = module_instance(layers, chiplets, sram_kib=1e9)
    # The largest single layer must fit on the whole module under some partition.
    floor = max(min(sram_need(probe, i, i, chiplets, p) for p in PARTITIONS) for i in range(length))
    sram = max(total / (chiplets * rng.uniform(0.5, 1.5)), 1.05 * floor)
    return module_instance(
        layers, chiplets,
        mac_rate_gmac_per_s=float(rng.choice((256, 512, 1024))),
        sram_kib=round(sram / 1024.0, 3) + 1.0,
        nop_bandwidth_gbyte_per_s=float(rng.choice((4, 8, 16, 32))),
        dram_bandwidth_gbyte_per_s=float(rng.choice((8, 16, 32, 64))),
        batch=rng.choice((1, 8, 32, 64)),
        max_cluster_layers=rng.choice((3, 4, length)),
    )


def resnet_instance(depth: int, chiplets: int, **module: Any) -> Instance:
    """ResNet-``depth`` on an MCM of ``chiplets`` chiplets (see :func:`module_instance`)."""
    return module_instance(resnet(depth), chiplets, **module)
