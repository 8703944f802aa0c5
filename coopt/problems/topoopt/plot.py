"""The drawing of a TopoOpt fabric (``coopt plot``): the topology as a graph with its link loads.

Left: the servers on a circle, server 0 at the top, numbered clockwise. Every server pair joined
by at least one link is one edge (a ``symmetric`` fabric: a straight line per duplex pair; a
``directed`` fabric: a curved arrow per arc ``i -> j``), drawn thicker for parallel links (their
count written on the edge when more than one) and coloured by its utilisation at the solution's
rate, ``theta * load_ij / ((B / 8) x_ij)``: 1 on the arcs that bound ``theta``; for a duplex pair
the busier direction. Every edge carries ``gid = "link:i:j"``, so a test can count the edges and
compare them with the link matrix. Right: the demand matrix of one iteration (MB from server to
server, the AllReduce rings split as the solution chooses). matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from coopt.problem import Solution
from coopt.problems.topoopt import model

COLOUR_MAP = "viridis"


def loads(instance: model.Instance, solution: Solution) -> np.ndarray:
    """Bytes each arc ``i -> j`` carries in one iteration (the sum of the solution's flows)."""
    n = instance.servers
    load = np.zeros((n, n))
    for _, i, j, amount in solution.get("flows", []):
        load[int(i), int(j)] += float(amount)
    return load


def draw(instance: model.Instance, solution: Solution, fig: Any) -> None:
    """Draw the checked topology ``solution`` of ``instance`` on the empty figure ``fig``."""
    import matplotlib
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import FancyArrowPatch

    n = instance.servers
    x = np.array(solution["links"], dtype=float)
    load = loads(instance, solution)
    theta = model.objective(instance, solution)
    with np.errstate(divide="ignore", invalid="ignore"):
        use = np.where(x > 0, theta * load / (instance.port_rate * np.maximum(x, 1)), 0.0)
    if not math.isfinite(theta):
        use = np.zeros_like(x)
    cmap = matplotlib.colormaps[COLOUR_MAP]
    norm = Normalize(0.0, 1.0)
    ax, heat = fig.subplots(1, 2, width_ratios=(1.25, 1))
    angle = [math.pi / 2 - 2 * math.pi * s / n for s in range(n)]
    pos = [(math.cos(a), math.sin(a)) for a in angle]
    pairs = [(i, j) for i in range(n) for j in range(n) if x[i, j] > 0 and (not instance.symmetric or i < j)]
    for i, j in pairs:
        count = int(x[i, j])
        level = max(use[i, j], use[j, i]) if instance.symmetric else use[i, j]
        style = "-" if instance.symmetric else "-|>"
        bend = "arc3,rad=0.0" if instance.symmetric else "arc3,rad=0.12"
        edge = FancyArrowPatch(pos[i], pos[j], arrowstyle=style, mutation_scale=10,
                               connectionstyle=bend, color=cmap(norm(level)),
                               linewidth=1.2 + 1.6 * (count - 1),
                               shrinkA=11, shrinkB=11, zorder=1, gid=f"link:{i}:{j}")
        ax.add_patch(edge)
        if count > 1:
            mx, my = (pos[i][0] + pos[j][0]) / 2, (pos[i][1] + pos[j][1]) / 2
            ax.text(mx, my, f"x{count}", fontsize=7, ha="center", va="center",
                    bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none"})
    for s, (px, py) in enumerate(pos):
        ax.scatter([px], [py], s=330, color="white", edgecolors="black", zorder=2)
        ax.text(px, py, str(s), ha="center", va="center", fontsize=8, zorder=3)
    ax.set_aspect("equal")
    ax.set_xlim(-1.25, 1.25)
    ax.set_ylim(-1.25, 1.25)
    ax.axis("off")
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.7, location="bottom",
                       pad=0.02)
    bar.set_label("link utilisation at theta (1: bottleneck)")
    shares = [[(int(q), float(w)) for q, w in group] for group in solution.get("ring_share", [])]
    demand = model.demand_matrix(instance, shares) / 1e6
    image = heat.imshow(demand, cmap="Greys", origin="upper")
    heat.set_xticks(range(n))
    heat.set_yticks(range(n))
    heat.set_xlabel("destination server")
    heat.set_ylabel("source server")
    heat.set_title(f"demand per iteration, total {demand.sum():.6g} MB", fontsize=9)
    fig.colorbar(image, ax=heat, shrink=0.7, location="bottom", pad=0.12).set_label("demand [MB]")
    fabric = "duplex links" if instance.symmetric else "directed arcs"
    links = int(x.sum()) // (2 if instance.symmetric else 1)
    ax.set_title(f"{n} servers, degree {instance.degree}, {instance.bandwidth / 1e9:g} Gbit/s per port: "
                 f"{links} {fabric} on {len(pairs)} server pairs\n"
                 f"theta = {theta:.6g} iterations/s (iteration's communication {1 / theta:.6g} s)",
                 fontsize=9)
