"""The drawing of a Scope mapping (``coopt plot``): segments and clusters along the layer chain, and
the chiplets each cluster holds.

Top: the layer chain ``0 .. L-1`` along x; every cluster is a box over its layers, coloured by its
partition (IS or WS, the same colours in every drawing), with its chiplet count; segments (run one
after another) are separated by dashed lines. Bottom: one row per segment, the package's chiplets
``0 .. M-1`` in their snake order along x, every cluster on its contiguous run of chiplets (idle
chiplets left white). Every cluster box carries ``gid = "cluster:S:C"`` (segment S, cluster C) on
the top and ``"chiplets:S:C"`` below, so a test can read both back. matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

from coopt.problem import Solution

PARTITION_COLOURS = {"IS": "#4c72b0", "WS": "#dd8452"}


def draw(instance: Any, solution: Solution, fig: Any) -> None:
    """Draw the checked mapping ``solution`` of ``instance`` on the empty figure ``fig``."""
    from matplotlib.patches import Patch

    segments = solution["segments"]
    chain, chips = fig.subplots(2, 1, height_ratios=(1, 1))
    for s, clusters in enumerate(segments):
        used = 0
        for c, cl in enumerate(clusters):
            first, last, a, part = cl["first"], cl["last"], cl["chiplets"], cl["partition"]
            chain.broken_barh([(first, last + 1 - first)], (0.15, 0.7), facecolors=PARTITION_COLOURS[part],
                              edgecolors="black", linewidth=0.8, gid=f"cluster:{s}:{c}")
            chain.text((first + last + 1) / 2, 0.5, f"{a} chiplets\n{part}", ha="center", va="center",
                       fontsize=7, color="white")
            chips.broken_barh([(used, a)], (s - 0.35, 0.7), facecolors=PARTITION_COLOURS[part],
                              edgecolors="black", linewidth=0.8, gid=f"chiplets:{s}:{c}")
            chips.text(used + a / 2, s, f"layers {first}-{last}" if last > first else f"layer {first}",
                       ha="center", va="center", fontsize=7, color="white")
            used += a
        if s:
            chain.axvline(clusters[0]["first"], color="black", linestyle="--", linewidth=1.0)
        mid = (clusters[0]["first"] + clusters[-1]["last"] + 1) / 2
        chain.text(mid, 0.95, f"segment {s}", ha="center", va="bottom", fontsize=8)
    n = instance.n_layers
    chain.set_xlim(0, n)
    chain.set_ylim(0, 1.15)
    chain.set_yticks([])
    chain.set_xticks([x + 0.5 for x in range(n)], [str(x) for x in range(n)])
    chain.set_xlabel("layer")
    batch_s = solution.get("objective")
    chain.set_title(f"{n} layers in {len(segments)} segments, "
                    f"{sum(len(c) for c in segments)} clusters; batch of {instance.batch}: "
                    f"{batch_s:.6g} s", fontsize=9)
    chips.set_xlim(0, instance.chiplets)
    chips.set_ylim(len(segments) - 0.5, -0.5)
    chips.set_yticks(range(len(segments)), [f"segment {s}" for s in range(len(segments))])
    chips.set_xlabel(f"chiplet (snake order of the mesh, {instance.chiplets} in the package)")
    chips.grid(True, axis="x", alpha=0.3)
    meaning = {"IS": "input-shared", "WS": "weight-shared"}
    handles = [Patch(facecolor=colour, edgecolor="black", label=f"{name} ({meaning[name]})")
               for name, colour in PARTITION_COLOURS.items()]
    chain.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
