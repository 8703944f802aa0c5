"""The drawing of a Hecaton plan (``coopt plot``): the option chosen for every block and what it
costs.

Top: one column per block of the model, in order; its compute, NoP and DRAM times per die (the
three terms of the cost model, in ms, each kind in one colour) side by side, the block's time
(their max or sum, by the overlap model) as a black tick. Under every column its option: scheme,
logical mesh ``r x c``, micro-batches, ``R`` for recompute and ``G`` for re-gather, and the
block's FFN width; the column's background is the scheme's colour. Bottom: the activation stash
each block keeps in DRAM (MB per die). Every time bar carries ``gid = "time:I:KIND"`` (block I,
KIND compute / nop / dram), so a test can read the costs back. matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

from coopt.problem import Solution
from coopt.problems.hecaton import model

KIND_COLOURS = {"compute": "#4c72b0", "nop": "#dd8452", "dram": "#55a868"}
SCHEME_COLOURS = {"1d": "#f2f2f2", "summa": "#e3ecf7", "agrs": "#fbeee0"}


def draw(instance: model.Instance, solution: Solution, fig: Any) -> None:
    """Draw the checked plan ``solution`` of ``instance`` on the empty figure ``fig``."""
    from matplotlib.patches import Patch

    chosen, bad = model.parse(instance, solution)
    if chosen is None:
        raise ValueError(f"the solution cannot be read: {'; '.join(bad)}")
    ffn = instance.model.block_ffn
    costs = [model.cost(instance, f, o) for f, o in zip(ffn, chosen, strict=True)]
    times, stash = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    width = 0.26
    for i, (o, c) in enumerate(zip(chosen, costs, strict=True)):
        times.axvspan(i - 0.45, i + 0.45, color=SCHEME_COLOURS.get(o.scheme, "white"), zorder=0)
        for shift, (kind, value) in zip((-width, 0.0, width), (("compute", c.compute_s), ("nop", c.nop_s),
                                                             ("dram", c.dram_s)), strict=True):
            bar = times.bar(i + shift, value * 1e3, width=width, color=KIND_COLOURS[kind], edgecolor="black",
                            linewidth=0.4, zorder=2)
            bar.patches[0].set_gid(f"time:{i}:{kind}")
        times.hlines(c.time_s * 1e3, i - 0.42, i + 0.42, color="black", linewidth=1.6, zorder=3)
        stash.bar(i, c.stash_bytes / 1e6, width=0.5, color="0.5", edgecolor="black", linewidth=0.4)
    labels = [f"block {i}\n{o.scheme} {o.rows}x{o.cols}\nmu={o.microbatches}"
              f"{' R' if o.recompute else ''}{' G' if o.regather else ''}\nFFN {f}"
              for i, (o, f) in enumerate(zip(chosen, ffn, strict=True))]
    stash.set_xticks(range(len(chosen)), labels, fontsize=7)
    times.set_ylabel("time per die [ms]")
    stash.set_ylabel("stash [MB/die]")
    times.grid(True, axis="y", alpha=0.3)
    stash.grid(True, axis="y", alpha=0.3)
    names = {"compute": "compute", "nop": "NoP", "dram": "DRAM"}
    handles = [Patch(facecolor=c, edgecolor="black", label=names[k]) for k, c in KIND_COLOURS.items()]
    handles.append(Patch(facecolor="black", label=f"block time ({instance.overlap} overlap)"))
    handles += [Patch(facecolor=c, label=f"scheme {s}") for s, c in SCHEME_COLOURS.items()]
    times.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    relayout = model.total(instance, chosen) - sum(c.objective for c in costs)
    unit = "s" if instance.objective == "time" else "J"
    times.set_title(f"{len(chosen)} blocks on {instance.package.dies} dies; objective ({instance.objective}) "
                    f"{model.total(instance, chosen):.6g} {unit}, of which re-layout {relayout:.6g} {unit}",
                    fontsize=9)
