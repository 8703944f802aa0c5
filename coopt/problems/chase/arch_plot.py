"""The drawing of a chase_arch rack design (``coopt plot``): what every rack holds, against its
power and space.

One column per rack, then the network rack of the spines. Left: the power each rack draws,
stacked by device type (each type in one colour, the same in the mapping's drawing) with its ToR
switches on top, the rack's power budget dashed; right: the rack units it fills, stacked the same
way, the rack's units dashed. Under every column its counts, ToRs and uplinks. Every stacked block
carries ``gid = "power:R:KIND"`` / ``"space:R:KIND"`` (rack R, a device type or ``switch``), so a
test can read the counts back (block height divided by the type's power). matplotlib is imported when a
drawing is made, never on import.
"""

from __future__ import annotations

from typing import Any

from coopt.problem import Solution
from coopt.problems.chase import arch_model

SWITCH_COLOUR = "0.55"


def draw(inst: arch_model.ArchInstance, solution: Solution, fig: Any) -> None:
    """Draw the checked design ``solution`` of ``inst`` on the empty figure ``fig``."""
    from matplotlib.patches import Patch

    design, bad = arch_model.parse(inst, solution)
    if design is None:
        raise ValueError(f"the design cannot be read: {'; '.join(map(str, bad))}")
    names = [t.name for t in inst.types]
    colour = {name: f"C{i % 10}" for i, name in enumerate(names)}
    power_ax, space_ax = fig.subplots(1, 2)
    racks = len(design.counts)
    columns = [*range(racks), racks]  # the last column: the network rack of the spines
    labels = []
    for r in columns:
        if r < racks:
            parts = [(t.name, n * t.device.power, n * t.device.rack_units, colour[t.name])
                     for t, n in zip(inst.types, design.counts[r], strict=True) if n]
            parts.append(("switch", design.tors[r] * inst.switch_power, design.tors[r] * inst.switch_units,
                          SWITCH_COLOUR))
            held = ", ".join(f"{n} {t.name}" for t, n in zip(inst.types, design.counts[r], strict=True) if n)
            labels.append(f"rack {r}\n{held or 'empty'}\n{design.tors[r]} ToR, {design.uplinks[r]} up")
        else:
            parts = [("switch", design.spines * inst.switch_power, design.spines * inst.switch_units,
                      SWITCH_COLOUR)]
            labels.append(f"network rack\n{design.spines} spine(s)")
        power_base = space_base = 0.0
        for kind, watts, units, shade in parts:
            if not (watts or units):
                continue
            bar = power_ax.bar(r, watts / 1e3, bottom=power_base / 1e3, color=shade, edgecolor="black",
                               linewidth=0.5, width=0.6)
            bar.patches[0].set_gid(f"power:{r}:{kind}")
            bar = space_ax.bar(r, units, bottom=space_base, color=shade, edgecolor="black", linewidth=0.5,
                               width=0.6)
            bar.patches[0].set_gid(f"space:{r}:{kind}")
            power_base += watts
            space_base += units
    power_ax.axhline(inst.rack_power / 1e3, color="black", linestyle="--", linewidth=1.0)
    space_ax.axhline(inst.rack_units, color="black", linestyle="--", linewidth=1.0)
    for ax in (power_ax, space_ax):
        ax.set_xticks(columns, labels, fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    power_ax.set_ylabel("power drawn [kW]")
    space_ax.set_ylabel("rack units filled [U]")
    power_ax.set_title(f"power per rack (budget {inst.rack_power / 1e3:g} kW dashed)", fontsize=9)
    space_ax.set_title(f"space per rack ({inst.rack_units} U dashed)", fontsize=9)
    handles = [Patch(facecolor=colour[n], edgecolor="black", label=n) for n in names]
    handles.append(Patch(facecolor=SWITCH_COLOUR, edgecolor="black", label="switches (ToR, spine)"))
    space_ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    cost = solution.get("cost_usd")
    spent = f"; cost {cost:.10g} US$ of {inst.budget:.10g}" if isinstance(cost, int | float) else ""
    fig.supxlabel(f"capability {arch_model.objective(inst, solution):.10g} TFLOP/s{spent}", fontsize=8)
