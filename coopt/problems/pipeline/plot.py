"""The drawing of a pipeline schedule (``coopt plot``): a Gantt chart per device above its
activation memory over time.

Top: one row per device (device 0 on top); every compute pass is a bar from its start to its end
(F, B and W each in one colour, the micro-batch number inside where it fits; a second chunk's passes hatched),
the recomputed part of a B pass cross-hatched, and an offloaded item's D2H and H2D copies as thin
bars under the row (D2H above H2D, each in its colour). Bottom: each device's activation memory
(the checker's event rule: releases before allocations at one instant) as a step line; the cap
dashed (one grey line where every device has the same cap, else one per device in its colour).
Every pass bar carries ``gid = "pass:KIND:k:j"``, every copy ``"copy:d2h:k:j"`` /
``"copy:h2d:k:j"`` and every memory line ``"memory:d"``, so a test can read the drawing back.
matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

from coopt.figures import time_axis
from coopt.problem import Solution
from coopt.problems.pipeline import model

#: One colour per pass kind, the same in every pipeline and chase drawing.
KIND_COLOURS = {"F": "#4c72b0", "B": "#dd8452", "W": "#55a868"}
COPY_COLOURS = {"d2h": "#8172b3", "h2d": "#da8bc3"}
RECOMPUTE_HATCH = "xxxx"
CHUNK_HATCH = "///"
GB = model.GB
#: Width of one digit of a bar's label, in em.
LABEL_EM = 0.6


def draw(instance: model.Instance, solution: Solution, fig: Any) -> None:
    """Draw ``solution`` (checked) of ``instance`` on the empty figure ``fig``."""
    from matplotlib.patches import Patch

    timed, bad = model.parse(instance, solution)
    if timed is None:
        raise ValueError(f"the solution cannot be read: {'; '.join(map(str, bad))}")
    gantt, memory = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    p = instance.stages
    row = 1.0  # height of one device's row
    bar = 0.62
    span = timed.makespan(instance)
    # a bar's micro-batch number is written only where it fits: the bar's width in points (the
    # axes take about 70 % of the figure's width once the legend sits on the right) against the
    # label's (about 0.6 em per digit at 7 pt, plus a margin); crowded charts stay readable
    points_per_s = 0.7 * fig.get_figwidth() * 72.0 / span if span > 0 else 0.0
    for (kind, k, j), t in sorted(timed.start.items(), key=lambda x: (x[1], x[0])):
        d = instance.device(k)
        mode = timed.modes.get((k, j), model.KEEP)
        length = instance.duration((kind, k, j), mode)
        y = (p - 1 - d) * row + (row - bar) / 2 + 0.12
        hatch = CHUNK_HATCH if instance.chunks > 1 and k >= p else None
        gantt.broken_barh([(t, length)], (y, bar), facecolors=KIND_COLOURS[kind], edgecolors="black",
                          linewidth=0.6, hatch=hatch, gid=f"pass:{kind}:{k}:{j}")
        if kind == "B" and mode not in (model.KEEP, model.OFFLOAD):
            extra = length - instance.t_b(k)
            gantt.broken_barh([(t, extra)], (y, bar), facecolors="none", edgecolors="black",
                              linewidth=0.0, hatch=RECOMPUTE_HATCH, gid=f"recompute:{k}:{j}")
        if length * points_per_s >= LABEL_EM * 7.0 * len(str(j)) + 2.0:
            gantt.text(t + length / 2, y + bar / 2, str(j), ha="center", va="center", fontsize=7,
                       color="white" if kind != "W" else "black")
    for name, copies, duration in (("d2h", timed.d2h, instance.tau_d), ("h2d", timed.h2d, instance.tau_u)):
        for (k, j), t in sorted(copies.items()):
            d = instance.device(k)
            y = (p - 1 - d) * row + 0.03 + (0.075 if name == "d2h" else 0.0)
            gantt.broken_barh([(t, duration(k))], (y, 0.06), facecolors=COPY_COLOURS[name],
                              edgecolors="none", gid=f"copy:{name}:{k}:{j}")
    gantt.set_yticks([(p - 1 - d) * row + row / 2 for d in range(p)], [f"device {d}" for d in range(p)])
    gantt.set_ylim(0, p * row)
    gantt.grid(True, axis="x", alpha=0.3)
    handles = [Patch(facecolor=KIND_COLOURS[x], edgecolor="black", label={"F": "F (forward)",
               "B": "B (backward, input grad.)", "W": "W (weight grad.)"}[x]) for x in instance.kinds]
    if instance.split_backward is False:
        handles[-1].set_label("B (full backward)")
    if any(mode not in (model.KEEP, model.OFFLOAD) for mode in timed.modes.values()):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=RECOMPUTE_HATCH,
                             label="recompute (part of B)"))
    if timed.d2h:
        handles.append(Patch(facecolor=COPY_COLOURS["d2h"], label="offload copy D2H (under the row)"))
        handles.append(Patch(facecolor=COPY_COLOURS["h2d"], label="reload copy H2D (below it)"))
    if instance.chunks > 1:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch=CHUNK_HATCH, label="second chunk"))
    gantt.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    gantt.set_title(f"{p} devices, {instance.microbatches} micro-batches, {instance.chunks} chunk(s); "
                    f"makespan {timed.makespan(instance):.6g} s", fontsize=9)

    tol = 1e-9 * max(1.0, instance.time_scale)
    end = span
    colours = [f"C{d % 10}" for d in range(p)]
    for d, events in sorted(model.memory_events(instance, timed).items()):
        profile = model.memory_profile(events, tol)
        xs = [0.0] + [t for t, _ in profile] + [end]
        ys = [0.0] + [level / GB for _, level in profile] + [profile[-1][1] / GB if profile else 0.0]
        memory.step(xs, ys, where="post", color=colours[d], label=f"device {d}", gid=f"memory:{d}")
    if instance.memory_cap_bytes is not None:
        caps_gb = sorted({instance.cap(d) / GB for d in range(p)})
        for d in range(p) if len(caps_gb) > 1 else (None,):
            cap = caps_gb[0] if d is None else instance.cap(d) / GB
            memory.axhline(cap, color="0.3" if d is None else colours[d], linestyle="--", linewidth=1.0,
                           label="cap" if d is None else None, gid="cap" if d is None else f"cap:{d}")
    time_axis(memory, end)
    memory.set_ylabel("activation memory [GB]")
    memory.set_ylim(bottom=0)
    memory.grid(True, alpha=0.3)
    caps = "" if instance.memory_cap_bytes is None else " (cap dashed)"
    memory.set_title(f"activation memory per device{caps}; peaks "
                     + ", ".join(f"{x / GB:.6g}" for x in model.peaks(instance, timed)) + " GB", fontsize=9)
    memory.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)

