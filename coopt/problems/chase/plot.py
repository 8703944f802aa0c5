"""The drawing of a chase mapping (``coopt plot``): a Gantt chart per device with the transfers.

One row per device (labelled with its type); every task is a bar from its start to its finish
(``start + t_v(p_v)``), coloured by its device's type and named inside; every edge whose ends sit
on two devices is an arrow from the producer's finish on its row to the consumer's row at the
time its data arrives (finish plus the contention-free transfer time the checker uses), with the
transfer itself a thin grey bar on the consumer's row. The makespan is a dashed line. Every task
bar carries ``gid = "task:NAME"`` and every transfer ``"transfer:U:V"``, so a test can read the
drawing back. matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

from coopt.figures import time_axis
from coopt.problem import Solution
from coopt.problems.chase import model

TRANSFER_COLOUR = "0.45"


def draw(instance: model.Instance, solution: Solution, fig: Any) -> None:
    """Draw the checked mapping ``solution`` of ``instance`` on the empty figure ``fig``."""
    from matplotlib.patches import Patch

    parsed, bad = model.parse(instance, solution)
    if parsed is None:
        raise ValueError(f"the solution cannot be read: {'; '.join(map(str, bad))}")
    assignment, start = parsed
    tab = instance.tables
    types = [d.type for d in instance.hardware.devices]
    kinds = list(dict.fromkeys(types))
    colour = {t: f"C{i % 10}" for i, t in enumerate(kinds)}
    ax = fig.subplots()
    rows = tab.devices
    bar = 0.6

    def y_of(p: int) -> float:
        return rows - 1 - p

    finish = [start[v] + tab.time[v][assignment[v]] for v in range(tab.n)]
    for v in range(tab.n):
        p = assignment[v]
        ax.broken_barh([(start[v], finish[v] - start[v])], (y_of(p) - bar / 2, bar),
                       facecolors=colour[types[p]], edgecolors="black", linewidth=0.6,
                       gid=f"task:{tab.task_names[v]}")
        ax.text((start[v] + finish[v]) / 2, y_of(p), tab.task_names[v], ha="center", va="center",
                fontsize=7, color="white", clip_on=True)
    moved = 0
    for e, (u, v) in enumerate(zip(tab.source, tab.target, strict=True)):
        p, q = assignment[u], assignment[v]
        if p == q:
            continue
        arrive = finish[u] + tab.comm(e, p, q)
        moved += 1
        ax.broken_barh([(finish[u], arrive - finish[u])], (y_of(q) - bar / 2 - 0.12, 0.08),
                       facecolors=TRANSFER_COLOUR, edgecolors="none",
                       gid=f"transfer:{tab.task_names[u]}:{tab.task_names[v]}")
        ax.annotate("", xy=(arrive, y_of(q) - bar / 2 - 0.08), xytext=(finish[u], y_of(p) - bar / 2),
                    arrowprops={"arrowstyle": "->", "color": TRANSFER_COLOUR, "linewidth": 0.7,
                                "shrinkA": 0, "shrinkB": 0})
    end = max(finish)
    ax.axvline(end, color="black", linestyle="--", linewidth=1.0)
    ax.set_yticks([y_of(p) for p in range(rows)],
                  [f"{tab.device_names[p]} ({types[p]})" for p in range(rows)])
    ax.set_ylim(-0.8, rows - 0.4)
    ax.set_xlim(left=0)
    time_axis(ax, end)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [Patch(facecolor=colour[t], edgecolor="black", label=f"task on a {t}") for t in kinds]
    handles.append(Patch(facecolor=TRANSFER_COLOUR, label="transfer (arrow: data flow)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    simulated = solution.get("simulated_makespan_s")
    replay = f"; with link contention {simulated:.6g} s" if isinstance(simulated, int | float) else ""
    ax.set_title(f"{tab.n} tasks on {rows} devices, {moved} of {len(tab.source)} edges cross devices; "
                 f"makespan {end:.6g} s (dashed){replay}", fontsize=9)

