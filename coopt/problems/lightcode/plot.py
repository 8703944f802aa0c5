"""The drawing of a LightCode assignment (``coopt plot``): the device of every operator, along the
operator graph.

One row per device of the instance. A ``makespan`` solution carries start times: every operator is
a bar on its device's row from its start to its end (start plus its latency there), so the figure
is the schedule's Gantt chart in microseconds. An ``energy`` or ``latency_sum`` solution has no
times: every operator is a cell at its position in the graph's topological order, on its device's
row, its width one operator. Below, the cost of every operator on its chosen device (energy in
microjoules or latency in microseconds, as the objective counts it), coloured by device. Every
operator carries ``gid = "op:NAME"``, so a test can read the assignment back from the rows.
matplotlib is imported when a drawing
is made, never on import.
"""

from __future__ import annotations

from typing import Any

from coopt.problem import Solution
from coopt.problems.lightcode.data import MICRO
from coopt.problems.lightcode.graph import stacked_graph
from coopt.problems.lightcode.model import read_assignment


def draw(instance: Any, solution: Solution, fig: Any) -> None:
    """Draw the checked assignment ``solution`` of ``instance`` on the empty figure ``fig``."""
    from matplotlib.patches import Patch

    graph = stacked_graph(instance)
    assign, why = read_assignment(graph, solution)
    if assign is None:
        raise ValueError(f"the solution cannot be read: {why}")
    devices = sorted({d for stack in graph.stacks for d in stack})
    row = {d: i for i, d in enumerate(devices)}
    colour = {d: f"C{i % 10}" for i, d in enumerate(devices)}
    timed = instance.objective == "makespan" and isinstance(solution.get("start"), dict)
    top, bottom = fig.subplots(2, 1, height_ratios=(2, 3))
    n = len(graph.ops)
    for v, (op, d) in enumerate(zip(graph.ops, assign, strict=True)):
        real = graph.stacks[v][d]
        x0, width = ((solution["start"][op.name] * MICRO, real.latency * MICRO) if timed else (v - 0.5, 1.0))
        top.broken_barh([(x0, width)], (row[d] - 0.35, 0.7), facecolors=colour[d], edgecolors="black",
                        linewidth=0.3, gid=f"op:{op.name}")
    if not timed:
        top.set_xlim(-0.6, n - 0.4)  # the cells line up with the cost bars below
    top.set_yticks(range(len(devices)), devices)
    top.set_ylim(len(devices) - 0.5, -0.5)
    top.set_xlabel("time [µs]" if timed else "operator (topological order of the graph)")
    counts = ", ".join(f"{sum(1 for d in assign if d == dev)} on {dev}" for dev in devices)
    top.set_title(f"{n} operators ({instance.model.family}, {instance.model.layers} layer(s)): {counts}",
                  fontsize=9)
    top.grid(True, axis="x", alpha=0.3)
    energy = instance.objective == "energy"
    cost = [(graph.stacks[v][d].energy if energy else graph.stacks[v][d].latency) * MICRO
            for v, d in enumerate(assign)]
    bottom.bar(range(n), cost, color=[colour[d] for d in assign], width=0.8)
    bottom.set_xticks(range(n), [op.name for op in graph.ops], rotation=90, fontsize=5 if n > 40 else 7)
    bottom.set_xlim(-0.6, n - 0.4)
    bottom.set_ylabel("energy [µJ]" if energy else "latency [µs]")
    bottom.set_title(f"per-operator {'energy' if energy else 'latency'} on the chosen device "
                     "(transfers not included)", fontsize=9)
    bottom.grid(True, axis="y", alpha=0.3)
    handles = [Patch(facecolor=colour[d], edgecolor="black", label=d) for d in devices]
    top.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
