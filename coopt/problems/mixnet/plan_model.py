"""The cross-layer reconfiguration plan: data model, checker, generator.

One region's all-to-alls of one iteration, in order: the MoE layers of a micro-batch's forward pass,
then backward in reverse. Layer ``l`` has its traffic ``D_l``, the number ``n_l`` of all-to-alls
that run it with the same circuits (dispatch and combine: 2; the combine sends ``D_l^T``, which
takes the same time on symmetric circuits, since its send and receive sides are ``D_l``'s receive
and send sides) and the compute ``w_l`` before its first all-to-all that can hide a
reconfiguration made for it (the attention of the layer: the circuits are busy from a layer's
dispatch to its combine). A reconfiguration takes ``delta``; made for layer ``l`` it exposes
``e_l = max(0, delta - w_l)``.

Decision: the layers where the controller re-plans (always layer 0: the circuits must be set
before the first all-to-all) and the circuits ``x_s`` each stretch (segment) keeps. The plan's
time is::

    T = sum over segments s [ e_first(s) + sum_{l in s} n_l / theta_l(x_s) ]

with ``theta_l(x)`` the exact throughput of :func:`model.throughput` (M1's closed form for fixed
circuits). Minimise ``T`` (seconds).

Why not M1 on the segment's summed or maximum demand (both are natural proposals): with circuits fixed
the layers run one after another, each at its own throughput, so the segment's time is the sum of
its layers' times. Planning on the summed matrix ``sum_l D_l`` charges ``1 / theta(sum_l D_l)``,
which is smaller than that sum whenever layers have different bottlenecks (it lets one layer's
traffic use the time of another); on the element-wise maximum it charges ``|s| / theta(max_l D_l)``,
which is larger. So the segment's circuits here minimise the exact sum, the multi-layer
generalisation of M1 (one layer: M1 itself); benchmarks/figures/mixnet.py measures how far plans built
from the two aggregates fall from it.

Checker (model constraint -> checker counterpart; :func:`check`):

| model (plan_milp) | checker violation |
|---|---|
| ``r_0 = 1`` (layer 0 starts a segment) | ``segments``: the first starts at layer 0 |
| ``y_l = y_{l-1}`` unless ``r_l = 1`` | ``segments``: one circuit set each, starts increasing |
| circuits integer, one per pair, <= ``alpha`` ports | ``circuits``, ``symmetric``, ``diagonal``, ``ports`` |
| volumes, circuits ``B x T_l``, EPS hose ``B_E T_l`` | the exact time ``n_l / theta_l(x)`` |
| ``e_l r_l`` in the objective | ``e_first(s)`` per segment in :func:`objective` |
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from coopt.errors import UsageError
from coopt.problem import Solution, Violation
from coopt.problems.mixnet import traffic
from coopt.problems.mixnet.model import (
    NIC_FIELDS,
    Fabric,
    Matrix,
    dump_fabric,
    dump_matrix,
    file_value,
    read_circuits,
    read_fabric,
    read_matrix,
    throughput,
)
from coopt.schema import Field, Schema

#: Largest number of layers the loader accepts (the plan MILP has layers x pairs x alpha binaries).
MAX_LAYERS = 4096

LAYER_FIELDS = (
    Field("name", "str", "which layer and pass (\"layer 3 forward\")", default=""),
    Field("demand_mb", "matrix",
          "bytes server i (row) sends to server j (column) in this layer's dispatch; the diagonal "
          "stays on NVLink and is ignored", unit="MB", si=1e6, min=0.0, max=1e9,
          example=[[0.0, 40.0, 10.0], [30.0, 0.0, 20.0], [5.0, 25.0, 0.0]]),
    Field("all_to_alls", "int", "all-to-alls of this layer on the same circuits (dispatch and combine: 2)",
          min=1, max=1000, default=2),
    Field("overlap_ms", "float",
          "compute before the layer's first all-to-all that hides a reconfiguration made for it",
          unit="ms", si=1e-3, min=0.0, max=1e6, default=0.0),
)

SCHEMA = Schema(
    [
        *NIC_FIELDS,
        Field("reconfiguration_delay_ms", "float",
              "time the circuit switch takes to set new circuits (delta)", unit="ms", si=1e-3, min=0.0,
              max=1e6, example=25.0),
        Field("layer", "tables", "the region's all-to-all layers of one iteration, in the order they run",
              fields=LAYER_FIELDS, min_length=1,
              example=[{"name": "layer 0 forward", "overlap_ms": 6.0,
                        "demand_mb": [[0.0, 40.0, 10.0], [30.0, 0.0, 20.0], [5.0, 25.0, 0.0]]},
                       {"name": "layer 0 backward", "overlap_ms": 12.0,
                        "demand_mb": [[0.0, 10.0, 30.0], [30.0, 0.0, 5.0], [25.0, 20.0, 0.0]]}]),
    ]
)


@dataclass(frozen=True)
class Layer(Matrix):
    """One layer's dispatch bytes, its all-to-all count and the compute that hides a reconfiguration."""

    name: str
    demand: tuple[tuple[float, ...], ...]  # bytes
    all_to_alls: int
    overlap: float  # s


@dataclass(frozen=True)
class Instance:
    fabric: Fabric
    delay: float  # s
    layers: tuple[Layer, ...]

    @property
    def servers(self) -> int:
        return len(self.layers[0].demand)

    def exposed(self, layer: int) -> float:
        """``e_l = max(0, delta - w_l)``: what a reconfiguration for ``layer`` adds to the time (s)."""
        return max(0.0, self.delay - self.layers[layer].overlap)

    def layer_time(self, layer: int, circuits: np.ndarray) -> float:
        """``n_l / theta_l(x)``: the layer's all-to-alls on these circuits (s)."""
        item = self.layers[layer]
        return item.all_to_alls / throughput(item.bits(), circuits, self.fabric)


def load(fields: Any) -> Instance:
    values = SCHEMA.read(fields)
    fabric = read_fabric(fields, values)
    if len(values.layer) > MAX_LAYERS:
        fields.fail("layer", f"expected at most {MAX_LAYERS} layers, got {len(values.layer)}")
    layers = []
    for k, entry in enumerate(values.layer):
        read_matrix(fields, f"layer[{k}].demand_mb", entry.demand_mb)
        if len(entry.demand_mb) != len(values.layer[0].demand_mb):
            fields.fail(f"layer[{k}].demand_mb", f"expected {len(values.layer[0].demand_mb)} servers like "
                        f"layer 0, got {len(entry.demand_mb)}")
        layers.append(Layer(entry.name, entry.demand_mb, entry.all_to_alls, entry.overlap_ms))
    return Instance(fabric, values.reconfiguration_delay_ms, tuple(layers))


def dump(instance: Instance) -> dict[str, Any]:
    return {
        **dump_fabric(instance.fabric),
        "reconfiguration_delay_ms": file_value(instance.delay, 1e-3),
        "layer": [
            {"name": item.name, "all_to_alls": item.all_to_alls, "overlap_ms": file_value(item.overlap, 1e-3),
             "demand_mb": dump_matrix(item.demand)}
            for item in instance.layers
        ],
    }


# -- plans ----------------------------------------------------------------------------------


def plan_time(instance: Instance, starts: list[int], circuits: list[np.ndarray]) -> float:
    """``T`` of the plan whose segments start at ``starts`` with these circuits (s)."""
    ends = [*starts[1:], len(instance.layers)]
    return sum(
        instance.exposed(first) + sum(instance.layer_time(layer, x) for layer in range(first, end))
        for first, end, x in zip(starts, ends, circuits, strict=True)
    )


def solution_of(instance: Instance, starts: list[int], circuits: list[np.ndarray]) -> Solution:
    """A plan as a solution: its segments, its time, and (for reading) each layer's time."""
    ends = [*starts[1:], len(instance.layers)]
    layer_ms = [0.0] * len(instance.layers)
    for first, end, x in zip(starts, ends, circuits, strict=True):
        for layer in range(first, end):
            layer_ms[layer] = 1e3 * instance.layer_time(layer, x)
    return {
        "objective": plan_time(instance, starts, circuits),
        "segments": [{"first_layer": int(first), "circuits": np.asarray(x, dtype=int).tolist()}
                     for first, x in zip(starts, circuits, strict=True)],
        "reconfigurations": len(starts),
        "layer_ms": layer_ms,
    }


def segments_of(instance: Instance, solution: Solution,
                out: list[Violation]) -> tuple[list[int], list[np.ndarray]] | None:
    listed = solution.get("segments")
    if not isinstance(listed, list) or not listed:
        out.append(Violation("segments", "expected a non-empty list of segments {first_layer, circuits}"))
        return None
    starts, circuits = [], []
    layers = len(instance.layers)
    for s, entry in enumerate(listed):
        first = entry.get("first_layer") if isinstance(entry, dict) else None
        if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first < layers:
            out.append(Violation("segments", f"segment {s}: first_layer must be a layer index "
                                 f"0..{layers - 1}, got {first!r}"))
            return None
        if (s == 0 and first != 0) or (s > 0 and first <= starts[-1]):
            need = "0 (the circuits are set before the first all-to-all)" if s == 0 else f"after {starts[-1]}"
            out.append(Violation("segments", f"segment {s} starts at layer {first}, expected {need}"))
            return None
        x = read_circuits(entry.get("circuits"), instance.servers, instance.fabric.alpha, f"segment {s}", out)
        if x is None:
            return None
        starts.append(first)
        circuits.append(x)
    return (starts, circuits) if not out else None


def check(instance: Instance, solution: Solution) -> list[Violation]:
    out: list[Violation] = []
    segments_of(instance, solution, out)
    return out


def objective(instance: Instance, solution: Solution) -> float:
    """The plan's time ``T`` recomputed from its segments (s); NaN when they cannot be read."""
    read = segments_of(instance, solution, [])
    return math.nan if read is None else plan_time(instance, *read)


# -- generators -----------------------------------------------------------------------------

#: Mixtral-8x22B on A100s (mixnet-project/mixnet-sim README: hidden 6144, expert FFN 16384, top-2
#: of 8, sequence 4096, micro-batch 8, TP 8): a micro-batch is 32768 tokens per server, a token
#: dispatches 6144 x 2 bytes, and the attention before a layer's dispatch (QKV + output
#: projections with 8 of 48 heads for K and V, plus causal scores: about 226 MFLOP per token) takes
#: 32768 x 226e6 / 8 GPUs / 156 TFLOP/s (half of the A100's 312 bf16 peak) = 5.9 ms forward and
#: twice that backward.
MIXTRAL = {"tokens": 32768, "bytes_per_token": 6144 * 2,
           "overlap_forward": 5.9 * 1e-3, "overlap_backward": 11.8 * 1e-3}

#: Bytes a server dispatches per layer: a micro-batch of tokens, one activation each.
ROW_BYTES = MIXTRAL["tokens"] * MIXTRAL["bytes_per_token"]

#: The shipped plan instances: file, routing, MoE layers per stage, servers, alpha, delta (ms),
#: seed, what.
SHIPPED = (
    ("0-moe-2layers-4servers-25ms.toml", "ranked", 2, 4, 2, 25.0, 1,
     "Two MoE layers forward then backward on 4 servers, alpha 2, delta 25 ms: keeping one circuit "
     "set beats re-planning per layer"),
    ("0-moe-2layers-4servers-25us.toml", "ranked", 2, 4, 2, 0.025, 13,
     "Two MoE layers forward then backward on 4 servers, alpha 2, a 25 us switch (the README's "
     "figure): re-planning is nearly free"),
    ("1-moe-4layers-8servers-1ms.toml", "ranked", 4, 8, 6, 1.0, 3,
     "Four MoE layers forward then backward on an EP8 region, alpha 6, delta 1 ms"),
    ("1-moe-7layers-8servers-25ms.toml", "ranked", 7, 8, 6, 25.0, 4,
     "Mixtral-8x22B's PP8 stage (7 MoE layers) forward then backward on an EP8 region, delta 25 ms"),
    ("2-moe-7layers-8servers-100ms.toml", "ranked", 7, 8, 6, 100.0, 4,
     "The same stage with a 100 ms switch (the simulator's DEFAULT_RECONF_DELAY)"),
    ("1-mixtral-top2-4layers-8servers-50ms.toml", "top-2", 4, 8, 6, 50.0, 7,
     "Four MoE layers of top-2 gating over 8 experts (one per server), drifting popularity, on an "
     "EP8 region, alpha 6, delta 50 ms"),
    ("2-moe-56layers-8servers-25ms.toml", "ranked", 56, 8, 6, 25.0, 6,
     "All 56 MoE layers of Mixtral-8x22B forward then backward (112 plan layers) on an EP8 region, "
     "delta 25 ms"),
)


def moe_iteration(seed: int, *, layers: int, servers: int, alpha: int, delay: float,
                  rate: float = 100e9, skew: float = 1.6, drift: float = 0.5) -> Instance:
    """A region's iteration for ``layers`` MoE layers: forward 0..L-1 then backward L-1..0, one
    expert group per server. As in the authors' measured matrices (``wm_ep*.txt``: each rank
    sends about half its tokens to one expert, the rest falling off as a power law), every sender
    ranks the servers in its own order and sends to rank ``r`` in proportion to ``r^-skew`` (1.6
    fits ``wm_ep8.txt``); from one layer to the next a share ``drift`` of the senders re-rank. A
    server sends ``MIXTRAL["tokens"]`` tokens of ``MIXTRAL["bytes_per_token"]`` (:data:`ROW_BYTES`);
    the backward pass of a layer moves the same matrix as its forward pass (:func:`_iteration`)."""
    rng = np.random.default_rng([seed, layers, servers, 1515])
    weights = np.arange(1, servers + 1, dtype=float) ** -skew
    weights /= weights.sum()
    ranking = np.array([rng.permutation(servers) for _ in range(servers)])
    forward = []
    for _ in range(layers):
        for i in np.flatnonzero(rng.random(servers) < drift):
            ranking[i] = rng.permutation(servers)
        forward.append(np.array([weights[np.argsort(ranking[i])] for i in range(servers)]) * ROW_BYTES)
    return _iteration(forward, alpha, delay, rate)


def mixtral_iteration(seed: int, *, layers: int, servers: int, alpha: int, delay: float,
                      rate: float = 100e9, top_k: int = 2, drift: float = 0.5) -> Instance:
    """As :func:`moe_iteration` with top-``k`` gating over one expert per server
    (:func:`traffic.mixtral`: each token picks ``k`` distinct experts by a gate popularity, Zipf(1)
    over a random expert order, and a per-sender preference); from one layer to the next the
    popularity moves a share ``drift`` towards a fresh draw."""
    rng = np.random.default_rng([seed, layers, servers, 1518])
    popularity = traffic.gate_popularity(rng, servers, 1.0)
    sample = 4096  # tokens drawn per server; the volume is scaled to a full micro-batch
    forward = []
    for _ in range(layers):
        popularity = (1 - drift) * popularity + drift * traffic.gate_popularity(rng, servers, 1.0)
        forward.append(traffic.mixtral(rng, servers, experts=servers, top_k=top_k, tokens=sample,
                                       bytes_per_token=ROW_BYTES / (top_k * sample), popularity=popularity))
    return _iteration(forward, alpha, delay, rate)


def _iteration(forward: list[np.ndarray], alpha: int, delay: float, rate: float) -> Instance:
    """Forward layers 0..L-1 then backward L-1..0 (the same matrices), volumes to whole kB, zero
    diagonal, overlaps as in :data:`MIXTRAL`."""
    demands = []
    for matrix in forward:
        out = np.round(np.asarray(matrix, dtype=float) / 1e3) * 1e3
        np.fill_diagonal(out, 0.0)
        demands.append(tuple(tuple(float(v) for v in row) for row in out))
    layers = len(demands)
    sequence = [Layer(f"layer {k} forward", demands[k], 2, MIXTRAL["overlap_forward"]) for k in range(layers)]
    sequence += [Layer(f"layer {k} backward", demands[k], 2, MIXTRAL["overlap_backward"])
                 for k in reversed(range(layers))]
    return Instance(Fabric(alpha, 8, rate), delay, tuple(sequence))


#: The largest ``size`` :func:`generate` accepts (MoE layers).
MAX_SIZE = 1000


def generate(seed: int, size: int) -> Instance:
    """``size`` MoE layers (so ``2 size`` plan layers) on 4 to 8 servers, alpha in {2, 4, 6} (below
    the server count), 100 to 800 Gbit/s, delta in {0.025, 1, 5, 25, 100} ms (from a
    microsecond-class switch, the README's "25 us", to the simulator's default)."""
    if not 1 <= size <= MAX_SIZE:
        raise UsageError(f"--size is 1..{MAX_SIZE} (MoE layers), got {size}")
    rng = np.random.default_rng([seed, size, 1516])
    servers = int(rng.choice((4, 6, 8)))
    alpha = int(rng.choice([a for a in (2, 4, 6) if a < servers]))
    rate = float(rng.choice((100.0, 200.0, 400.0, 800.0))) * 1e9
    delay = float(rng.choice((0.025, 1.0, 5.0, 25.0, 100.0))) * 1e-3
    return moe_iteration(int(rng.integers(1 << 30)), layers=max(1, size), servers=servers, alpha=alpha,
                             delay=delay, rate=rate)


def generate_tiny(seed: int) -> Instance:
    """A brute-forceable plan: 3 servers, alpha 1 or 2 of 3 NICs, 2 or 3 layers of small integer
    volumes, delta and overlaps that sometimes hide the reconfiguration and sometimes do not."""
    rng = np.random.default_rng([seed, 1517])
    layers = []
    for k in range(int(rng.integers(2, 4))):
        volumes = rng.integers(0, 9, (3, 3)) * (rng.random((3, 3)) < 0.85)
        volumes[k % 3, (k + 1) % 3] = max(int(volumes[k % 3, (k + 1) % 3]), 1)
        demand = tuple(tuple(float(v) * 1e6 if i != j else 0.0 for j, v in enumerate(row))
                       for i, row in enumerate(volumes))
        layers.append(Layer(f"tiny {k}", demand, int(rng.integers(1, 3)), float(rng.integers(0, 3)) * 1e-4))
    delay = float(rng.integers(0, 4)) * 1e-4
    return Instance(Fabric(int(rng.integers(1, 3)), 3, 100e9), delay, tuple(layers))
