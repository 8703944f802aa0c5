"""The drawings of MixNet plans (``coopt plot``): circuit matrices as heatmaps beside the traffic
they serve.

``mixnet``: one row per region. Left, the region's OCS circuits (server x server, the count in
every cell); right, the demand its traffic matrices put on each server pair (Gbit per
all-to-all, summed over the region's matrices). ``mixnet_plan``: one column per segment of layers
(top: its circuits, labelled with the layers it serves), and below the time of every MoE layer's
all-to-all under the plan, coloured by segment. Every circuit heatmap carries
``gid = "circuits:R"`` (region or segment R) and holds the circuit counts as its image data, so a
test can read the matrices back. matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coopt.problem import Solution

CIRCUIT_MAP = "Blues"
DEMAND_MAP = "Greys"


def _heatmap(ax: Any, matrix: np.ndarray, cmap: str, gid: str | None = None, annotate: bool = True) -> Any:
    image = ax.imshow(matrix, cmap=cmap, origin="upper", vmin=0)
    if gid:
        image.set_gid(gid)
    n = len(matrix)
    if annotate and n <= 16:
        top = matrix.max() or 1
        for i in range(n):
            for j in range(n):
                if matrix[i, j]:
                    ax.text(j, i, f"{matrix[i, j]:g}", ha="center", va="center", fontsize=7 if n <= 8 else 5,
                            color="white" if matrix[i, j] > 0.6 * top else "black")
    ticks = range(n) if n <= 16 else range(0, n, max(1, n // 8))
    ax.set_xticks(list(ticks))
    ax.set_yticks(list(ticks))
    return image


def draw(instance: Any, solution: Solution, fig: Any) -> None:
    """The circuits of a checked ``mixnet`` solution per region, above the region's demand."""
    regions = instance.regions
    fig.set_size_inches(8.5, 1.2 + 3.6 * regions)  # square heatmaps: the height follows the regions
    axes = fig.subplots(regions, 2, squeeze=False)
    for r in range(regions):
        x = np.array(solution["regions"][r]["circuits"], dtype=int)
        top, bottom = axes[r][0], axes[r][1]
        _heatmap(top, x, CIRCUIT_MAP, gid=f"circuits:{r}")
        used = int(x.sum(axis=1).max()) if x.size else 0
        top.set_title(f"region {r}: {int(x.sum()) // 2} circuits\n(at most {used} of "
                      f"{instance.fabric.alpha} ports per server)", fontsize=9)
        top.set_ylabel("server")
        demand = sum((instance.traffic[k].bits() / 1e9 for k in instance.traffic_of(r)),
                     start=np.zeros_like(x, dtype=float))
        image = _heatmap(bottom, demand, DEMAND_MAP, annotate=False)
        fig.colorbar(image, ax=bottom, shrink=0.8).set_label("demand [Gbit]")
        bottom.set_title(f"demand of {len(instance.traffic_of(r))} matrix(es)", fontsize=9)
        bottom.set_xlabel("server")
        bottom.set_ylabel("server")
    fig.supxlabel(f"worst-case all-to-all time {solution.get('all_to_all_ms', float('nan')):.6g} ms; "
                  f"NICs per server {instance.fabric.nics} x {instance.fabric.nic_rate / 1e9:g} Gbit/s, "
                  f"{instance.fabric.alpha} to the OCS", fontsize=8)


def draw_plan(instance: Any, solution: Solution, fig: Any) -> None:
    """The circuits of every segment of a checked ``mixnet_plan`` solution, and the layer times."""
    segments = solution["segments"]
    grid = fig.add_gridspec(2, len(segments), height_ratios=(3, 2))
    layers = len(solution.get("layer_ms", []))
    for s, seg in enumerate(segments):
        ax = fig.add_subplot(grid[0, s])
        x = np.array(seg["circuits"], dtype=int)
        _heatmap(ax, x, CIRCUIT_MAP, gid=f"circuits:{s}")
        last = segments[s + 1]["first_layer"] - 1 if s + 1 < len(segments) else layers - 1
        ax.set_title(f"segment {s}: layers {seg['first_layer']}-{last}\n{int(x.sum()) // 2} circuits",
                     fontsize=9)
        ax.set_xlabel("server")
        if s == 0:
            ax.set_ylabel("server")
    times = fig.add_subplot(grid[1, :])
    starts = [seg["first_layer"] for seg in segments]
    owner = [max(s for s, first in enumerate(starts) if first <= layer) for layer in range(layers)]
    times.bar(range(layers), solution.get("layer_ms", []), color=[f"C{s % 10}" for s in owner],
              edgecolor="black", linewidth=0.4)
    for first in starts[1:]:
        times.axvline(first - 0.5, color="black", linestyle="--", linewidth=1.0)
    times.set_xticks(range(layers))
    times.set_xlabel("MoE layer (dashed: a reconfiguration)")
    times.set_ylabel("all-to-all time [ms]")
    times.set_title(f"{len(segments)} circuit configuration(s), {solution.get('reconfigurations')} "
                    f"reconfiguration(s) counted; total "
                    f"{solution.get('objective', float('nan')):.6g} s with reconfiguration", fontsize=9)
    times.grid(True, axis="y", alpha=0.3)
