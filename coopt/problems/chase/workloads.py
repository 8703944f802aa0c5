"""The workload side of CHASE: task DAGs, their run times on device types, and generators.

A task runs on one device. Its run time there is either given (a Topcuoglu-style cost matrix,
``times``: one entry per device) or comes from a roofline over its FLOPs and its memory
traffic (research notes 3.d)::

    t_v(p) = max( FLOP_v / (eta_c F_p), bytes_v / (eta_m BW_p) ) + t_launch(p)

A device is compatible with a task when its type is among the task's ``types`` (all types when
none are named), its memory holds the task's footprint (when the type models memory), and the
roofline is finite (no FLOPs on a device without compute, no traffic without memory bandwidth).
A data edge ``u -> v`` carries ``data`` bytes; ``v`` cannot start before they arrive.

Generators (each returns a :class:`Workload` with roofline tasks, so it runs on any hardware):

* :func:`random_layered`: the layered random DAGs of the HEFT/PEFT evaluations (Topcuoglu et al.
  2002, section 5.1; Arabnejad and Barbosa 2014, section 5): ``n`` tasks in about ``sqrt(n)``
  levels, edges only between consecutive levels (and a few skips), communication-to-computation
  ratio ``ccr`` on a reference device and link;
* :func:`transformer_step`: one training or inference step of a decoder stack with tensor
  parallelism ``tp`` (each layer's attention and MLP split into ``tp`` shards whose partial
  outputs are all-reduced, as edges between shards sized as a ring all-reduce, ``2 (tp-1)/tp``
  of the activation per shard) and pipeline parallelism ``pp`` (stage boundaries pass the
  activation); training adds the backward pass (twice the forward FLOPs) in reverse order;
* :func:`sparse_kernel`: a row-block SpMV ``y = A x`` followed by a dot-product tree, memory-bound
  tasks with halo exchanges between neighbouring blocks (the sparse kernels the research notes name).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from coopt.problems.chase.hardware import DeviceType


@dataclass(frozen=True)
class Task:
    """A task: FLOPs and memory traffic (bytes) for the roofline, or explicit ``times`` (seconds,
    one per device); ``footprint`` bytes of device memory; ``types`` the device types it may run on
    (None: every type)."""

    name: str
    flops: float = 0.0
    traffic: float = 0.0
    footprint: float = 0.0
    times: tuple[float, ...] | None = None
    types: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    data: float = 0.0  # bytes


@dataclass(frozen=True)
class Workload:
    tasks: tuple[Task, ...]
    edges: tuple[Edge, ...] = ()


def roofline_time(task: Task, kind: DeviceType) -> float:
    """``max(FLOP / (eta_c F), bytes / (eta_m BW)) + t_launch`` in seconds; inf where the device
    type cannot run the task (FLOPs without compute, traffic without memory bandwidth)."""
    parts = [0.0]
    for amount, rate in ((task.flops, kind.peak_flops * kind.compute_efficiency),
                         (task.traffic, kind.memory_bandwidth * kind.memory_efficiency)):
        if amount > 0:
            if rate <= 0:
                return math.inf
            parts.append(amount / rate)
    return max(parts) + kind.launch


def run_time(task: Task, device: int, kind: DeviceType) -> float:
    """Run time of ``task`` on device number ``device`` of type ``kind`` (inf: incompatible)."""
    if task.types is not None and kind.name not in task.types:
        return math.inf
    if kind.memory > 0 and task.footprint > kind.memory:
        return math.inf
    if task.times is not None:
        return task.times[device]
    return roofline_time(task, kind)


# -- generators ----------------------------------------------------------------------------------

#: The reference device and link the generators size FLOPs and bytes against (an H100-class GPU,
#: 989 TFLOP/s BF16 and 3.35 TB/s; a 50 GB/s NIC), research notes 3.e [S].
REFERENCE_FLOPS = 989e12
REFERENCE_BANDWIDTH = 3.35e12
REFERENCE_LINK = 50e9


def random_layered(
    rng: random.Random,
    tasks: int,
    *,
    ccr: float = 1.0,
    mean_time: float = 1e-3,
    density: float = 0.5,
    prefix: str = "t",
) -> Workload:
    """A seeded layered random DAG of ``tasks`` tasks (see the module docstring).

    Each task's reference run time is drawn uniformly in ``[0.5, 1.5] * mean_time``, its arithmetic
    intensity log-uniformly in [1, 1000] FLOP/byte (so some tasks are compute-bound and some
    memory-bound on every device type); each level-to-next pair is joined with probability
    ``density`` (every task gets at least one predecessor in the level above and one successor),
    and an edge carries data whose reference transfer time is ``ccr * mean_time`` on average."""
    levels: list[list[int]] = []
    width = max(1, round(math.sqrt(tasks)))
    i = 0
    while i < tasks:
        take = min(tasks - i, max(1, round(rng.uniform(0.5, 1.5) * width)))
        levels.append(list(range(i, i + take)))
        i += take
    names = [f"{prefix}{k}" for k in range(tasks)]
    made = []
    for k in range(tasks):
        seconds = rng.uniform(0.5, 1.5) * mean_time
        intensity = math.exp(rng.uniform(0.0, math.log(1000.0)))
        flops = seconds * REFERENCE_FLOPS
        traffic = flops / intensity
        # the roofline time on the reference device is the larger of the two; rescale to `seconds`
        scale = seconds / max(flops / REFERENCE_FLOPS, traffic / REFERENCE_BANDWIDTH)
        # round in file units (GFLOP, MB) so that the instance survives a write and a read unchanged
        made.append(Task(names[k], flops=round(flops * scale / 1e9, 6) * 1e9,
                         traffic=round(traffic * scale / 1e6, 6) * 1e6))
    pairs: set[tuple[int, int]] = set()
    for upper, lower in zip(levels, levels[1:], strict=False):
        for v in lower:
            chosen = [u for u in upper if rng.random() < density] or [rng.choice(upper)]
            pairs.update((u, v) for u in chosen)
        for u in upper:
            if not any((u, v) in pairs for v in lower):
                pairs.add((u, rng.choice(lower)))
    for a in range(len(levels) - 2):
        if rng.random() < 0.3:
            pairs.add((rng.choice(levels[a]), rng.choice(levels[a + 2])))
    edges = []
    for u, v in sorted(pairs):
        seconds = rng.uniform(0.0, 2.0) * ccr * mean_time
        edges.append(Edge(names[u], names[v], data=round(seconds * REFERENCE_LINK / 1e6, 6) * 1e6))
    return Workload(tuple(made), tuple(edges))


def transformer_step(
    *,
    layers: int,
    tp: int = 1,
    pp: int = 1,
    hidden: int = 4096,
    ffn: int | None = None,
    sequence: int = 2048,
    batch: int = 1,
    train: bool = True,
    bytes_per_element: int = 2,
) -> Workload:
    """One step of a decoder-only transformer (see the module docstring).

    Per layer and shard: ``attn`` (QKV, attention, output projection: ``(8 h^2 + 4 s h) T / tp``
    FLOPs for ``T = b s`` tokens) and ``mlp`` (``4 h f T / tp`` FLOPs); traffic is the shard's
    weights plus its activations read and written once. Between the attention and the MLP of a
    layer (and between layers) the shards all-reduce: an edge from every shard to every other
    shard of the next block carrying ``2 A / tp`` bytes (``A = T h`` elements), the volume of a
    ring all-reduce. Pipeline stages split the layers evenly; training appends the backward pass
    (``2x`` the forward FLOPs) of every block in reverse order, each backward block depending on
    its forward block (the stored activations) and on the backward block above it."""
    if layers < 1 or tp < 1 or pp < 1 or pp > layers:
        raise ValueError("need layers >= 1, tp >= 1 and 1 <= pp <= layers")
    f = ffn if ffn is not None else 4 * hidden
    tokens = batch * sequence
    activation = tokens * hidden * bytes_per_element
    blocks = []  # (name, flops per shard, weight bytes per shard)
    for layer in range(layers):
        attn_flops = (8 * hidden * hidden + 4 * sequence * hidden) * tokens / tp
        blocks.append((f"L{layer}.attn", attn_flops, 4 * hidden * hidden * bytes_per_element / tp))
        mlp_flops = 4 * hidden * f * tokens / tp
        blocks.append((f"L{layer}.mlp", mlp_flops, 2 * hidden * f * bytes_per_element / tp))
    stage_of = [min(pp - 1, (b // 2) * pp // layers) for b in range(len(blocks))]
    tasks: list[Task] = []
    edges: list[Edge] = []

    def shard(name: str, k: int) -> str:
        return f"{name}.{k}" if tp > 1 else name

    def add_block(name: str, flops: float, weights: float) -> None:
        for k in range(tp):
            traffic = weights + 2 * activation / tp
            tasks.append(Task(shard(name, k), flops=float(flops), traffic=float(traffic)))

    def connect(above: str, below: str, stage_boundary: bool) -> None:
        for i in range(tp):
            for j in range(tp):
                if stage_boundary:  # the activation crosses to the next stage, shard to shard
                    if i == j:
                        edges.append(Edge(shard(above, i), shard(below, j), float(activation / tp)))
                elif tp == 1 or i != j:
                    data = float(2 * activation / tp) if tp > 1 else 0.0
                    edges.append(Edge(shard(above, i), shard(below, j), data))
                else:
                    edges.append(Edge(shard(above, i), shard(below, j), 0.0))

    for b, (name, flops, weights) in enumerate(blocks):
        add_block(name, flops, weights)
        if b:
            connect(blocks[b - 1][0], name, stage_of[b] != stage_of[b - 1])
    if train:
        for b in reversed(range(len(blocks))):
            name, flops, weights = blocks[b]
            add_block(f"{name}.bwd", 2 * flops, weights)
            for k in range(tp):
                edges.append(Edge(shard(name, k), shard(f"{name}.bwd", k), float(activation / tp)))
            if b < len(blocks) - 1:
                connect(f"{blocks[b + 1][0]}.bwd", f"{name}.bwd", stage_of[b] != stage_of[b + 1])
    return Workload(tuple(tasks), tuple(edges))


def sparse_kernel(
    rng: random.Random,
    *,
    blocks: int,
    iterations: int = 2,
    rows: int = 1 << 20,
    nonzeros_per_row: int = 16,
    halo_share: float = 0.05,
) -> Workload:
    """``iterations`` sparse matrix-vector products ``x <- A x`` on ``A`` split into ``blocks`` row
    blocks, then the norm ``x . x`` by a binary reduction tree of partial sums (see the module
    docstring). A block product reads its nonzeros (12 bytes each: value and column index) and
    its slices of ``x`` (8-byte elements), at 2 FLOPs per nonzero (about 1/6 FLOP/byte:
    memory-bound on every device); it needs its own slice from the previous iteration and the
    halo (``halo_share`` of a slice) from the two neighbouring blocks. Nonzeros per block vary by
    +-30 %; the reduction edges carry one 8-byte partial sum (latency-bound)."""
    if blocks < 1 or iterations < 1:
        raise ValueError("need blocks >= 1 and iterations >= 1")
    tasks: list[Task] = []
    edges: list[Edge] = []
    per_block = rows / blocks
    nonzeros = [per_block * nonzeros_per_row * rng.uniform(0.7, 1.3) for _ in range(blocks)]
    for i in range(blocks):
        tasks.append(Task(f"load{i}", traffic=float(8 * per_block)))
    previous = [f"load{i}" for i in range(blocks)]
    for it in range(iterations):
        current = []
        for i in range(blocks):
            name = f"spmv{it}.{i}"
            tasks.append(Task(name, flops=float(2 * nonzeros[i]),
                              traffic=float(12 * nonzeros[i] + 16 * per_block)))
            edges.append(Edge(previous[i], name, float(8 * per_block)))
            for j in (i - 1, i + 1):
                if 0 <= j < blocks:
                    edges.append(Edge(previous[j], name, float(8 * per_block * halo_share)))
            current.append(name)
        previous = current
    level, depth = previous, 0
    while len(level) > 1:
        merged = []
        for k in range(0, len(level) - 1, 2):
            name = f"sum{depth}.{k // 2}"
            tasks.append(Task(name, flops=2.0, traffic=16.0))
            edges.append(Edge(level[k], name, 8.0))
            edges.append(Edge(level[k + 1], name, 8.0))
            merged.append(name)
        if len(level) % 2:
            merged.append(level[-1])
        level, depth = merged, depth + 1
    return Workload(tuple(tasks), tuple(edges))
