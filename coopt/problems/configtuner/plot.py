"""The drawing of a ConfigTuner choice (``coopt plot``): the chosen configuration against the whole
space, and where its iteration time goes.

Left: every configuration of the instance's space (the one the exact method enumerates), iteration
time against memory per GPU; the ones over the GPU's memory (dashed line) grey, the others blue,
the chosen one a red star. Right: the chosen configuration's iteration-time breakdown (compute,
TP, EP, recompute, PP, bubble, DP, optimizer; in seconds, as the checker prices it). The scatter
carries ``gid = "space"`` and the star ``gid = "chosen"``, so a test can read the space's size and
the chosen point back. matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from coopt.problem import Solution
from coopt.problems.configtuner import model
from coopt.problems.configtuner.analytic import BREAKDOWN

FITS_COLOUR = "#4c72b0"
OVER_COLOUR = "0.75"
CHOSEN_COLOUR = "#c44e52"


def draw(instance: model.Instance, solution: Solution, fig: Any) -> None:
    """Draw the checked configuration ``solution`` of ``instance`` on the empty figure ``fig``."""
    scatter, parts = fig.subplots(1, 2, width_ratios=(3, 2))
    configs = model.space(instance)
    out = model.evaluate(instance, configs, ("time", "memory"))
    memory = np.asarray(out["memory"]) / model.GIB
    time = np.asarray(out["time"])
    fits = memory <= instance.gpu_memory / model.GIB
    colours = np.where(fits, FITS_COLOUR, OVER_COLOUR)
    scatter.scatter(memory, time, s=8, c=list(colours), linewidths=0, gid="space")
    chosen = model.solution_of(instance, solution["config"], 0)
    scatter.scatter([chosen["memory_gib"]], [chosen["objective"]], s=160, marker="*", color=CHOSEN_COLOUR,
                    edgecolors="black", linewidths=0.6, zorder=3, gid="chosen")
    scatter.axvline(instance.gpu_memory / model.GIB, color="black", linestyle="--", linewidth=1.0)
    scatter.set_yscale("log")
    scatter.set_xscale("log")
    scatter.set_xlabel("memory per GPU [GiB]")
    scatter.set_ylabel("iteration time [s]")
    scatter.set_title(f"{len(configs)} configurations, {int(fits.sum())} fit in "
                      f"{instance.gpu_memory / model.GIB:g} GiB (dashed); chosen: star", fontsize=9)
    scatter.grid(True, alpha=0.3)
    c = solution["config"]
    values = [solution["breakdown"].get(k, 0.0) for k in BREAKDOWN]
    parts.barh(range(len(BREAKDOWN)), values, color=FITS_COLOUR, edgecolor="black", linewidth=0.4)
    parts.set_yticks(range(len(BREAKDOWN)), list(BREAKDOWN))
    parts.invert_yaxis()
    parts.set_xlabel("time [s]")
    parts.set_title(f"tp {c['tp']}, pp {c['pp']}, dp {c['dp']}, ep {c['ep']}, micro-batch {c['microbatch']}\n"
                    f"interleave {c['interleave']}, recompute {c['recompute']}, "
                    f"SP {'on' if c['sequence_parallel'] else 'off'}, ZeRO {c['zero']}\n"
                    f"{solution['objective']:.6g} s, {solution['memory_gib']:.6g} GiB, "
                    f"MFU {solution['mfu']:.3f}",
                    fontsize=8)
    parts.grid(True, axis="x", alpha=0.3)
