"""The drawings of provisioning plans (``coopt plot``): the spectrum map, slots by link.

Left, both problems: one row per fibre link (``a-b``, as the file lists them), the frequency slots
``0 .. num_slots - 1`` along x; every channel (``provisioning``) or lightpath
(``provisioning_grooming``) fills ``[first_slot, first_slot + slots)`` on every link of its path,
guard band included, in its own colour with its number; lightpaths already in service
(``background``) are hatched grey. Right, ``provisioning``: each accepted connection's holding time as a
bar (request against time, in the colour of its channel), so that two channels that share slots on
a link are seen not to overlap in time; ``provisioning_grooming``: each lightpath's carried rate
against its capacity. Every channel block carries ``gid = "slot:I:L"`` (channel or lightpath I on
link L), so a test can count the blocks and compare their extents with the plan. matplotlib is imported when a
drawing is made, never on import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coopt.problem import Solution

BACKGROUND_COLOUR = "0.45"


def link_rows(instance: Any) -> dict[tuple[str, str], int]:
    """(a, b) -> row of every link (both directions where the links are undirected)."""
    rows = {}
    for row, link in enumerate(instance.links):
        rows[(link.a, link.b)] = row
        if not instance.directed:
            rows[(link.b, link.a)] = row
    return rows


def _colour(i: int) -> Any:
    import matplotlib

    return matplotlib.colormaps["tab20"].colors[i % 20]


def _spectrum(ax: Any, instance: Any, blocks: Sequence[tuple[int, Sequence[str], int, int]],
              background: Sequence[Any] = ()) -> int:
    """Draw the spectrum map: ``blocks`` are (number, path, first_slot, slots). Returns how many
    link-blocks were drawn."""
    rows = link_rows(instance)
    drawn = 0
    for bg in background:
        for u, v in zip(bg.path, bg.path[1:], strict=False):
            ax.broken_barh([(bg.first_slot, bg.slots)], (rows[(u, v)] - 0.4, 0.8),
                           facecolors="white", edgecolors=BACKGROUND_COLOUR, linewidth=0.8, hatch="///")
    for number, path, first, slots in blocks:
        for u, v in zip(path, path[1:], strict=False):
            row = rows[(u, v)]
            ax.broken_barh([(first, slots)], (row - 0.4, 0.8), facecolors=_colour(number), edgecolors="black",
                           linewidth=0.5, gid=f"slot:{number}:{row}")
            ax.text(first + slots / 2, row, str(number), ha="center", va="center", fontsize=7)
            drawn += 1
    n = len(instance.links)
    ax.set_yticks(range(n), [f"{link.a}-{link.b}" for link in instance.links])
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(0, instance.num_slots)
    ax.set_xlabel(f"frequency slot ({instance.slot_width_hz / 1e9:g} GHz each)")
    ax.set_ylabel("fibre link")
    ax.grid(True, axis="x", alpha=0.3)
    return drawn


def draw(instance: Any, solution: Solution, fig: Any) -> None:
    """The channels of a checked ``provisioning`` plan by link, and their holding times."""
    spectrum, times = fig.subplots(1, 2, width_ratios=(3, 2))
    conns = solution.get("connections", [])
    blocks = [(c["request"], c["path"], c["first_slot"], c["slots"]) for c in conns]
    _spectrum(spectrum, instance, blocks, instance.background)
    spectrum.set_title(f"spectrum by link: {len(conns)} of {len(instance.requests)} requests carried",
                       fontsize=9)
    for c in conns:
        times.barh(c["request"], c["end_s"] - c["start_s"], left=c["start_s"], color=_colour(c["request"]),
                   edgecolor="black", linewidth=0.5)
        times.text(c["end_s"], c["request"], f" {c['modulation']}, {c['rate_gbit_per_s']:g} Gbit/s",
                   va="center", fontsize=7)
    times.set_yticks([c["request"] for c in conns])
    times.invert_yaxis()
    times.set_xlabel("time [s]")
    times.set_ylabel("request")
    times.set_title(f"holding times ({instance.model} model)", fontsize=9)
    times.grid(True, axis="x", alpha=0.3)
    times.margins(x=0.45)


def draw_grooming(instance: Any, solution: Solution, fig: Any) -> None:
    """The lightpaths of a checked ``provisioning_grooming`` plan by link, and their loads."""
    spectrum, loads = fig.subplots(1, 2, width_ratios=(3, 2))
    paths = solution.get("lightpaths", [])
    blocks = [(i, lp["path"], lp["first_slot"], lp["slots"]) for i, lp in enumerate(paths)]
    _spectrum(spectrum, instance, blocks)
    conns = solution.get("connections", [])
    spectrum.set_title(f"spectrum by link: {len(paths)} lightpaths carry {len(conns)} of "
                       f"{len(instance.requests)} requests", fontsize=9)
    carried = [0.0] * len(paths)
    for c in conns:
        for hop in c["hops"]:
            carried[hop] += c["rate_gbit_per_s"]
    for i, lp in enumerate(paths):
        loads.barh(i, lp["capacity_gbit_per_s"], color="white", edgecolor=_colour(i), linewidth=1.2)
        loads.barh(i, carried[i], color=_colour(i), edgecolor="black", linewidth=0.5, height=0.5)
        loads.text(lp["capacity_gbit_per_s"], i, f" {carried[i]:g} / {lp['capacity_gbit_per_s']:g}",
                   va="center", fontsize=7)
    loads.set_yticks(range(len(paths)), [f"{i}: {'-'.join(lp['ends'])} {lp['modulation']}"
                                         for i, lp in enumerate(paths)])
    loads.invert_yaxis()
    loads.set_xlabel("rate [Gbit/s]")
    loads.set_title("carried rate (filled) of each lightpath's capacity (outline)", fontsize=9)
    loads.margins(x=0.3)
