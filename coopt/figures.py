"""Drawing helpers shared by the problems' figures (``Problem.plot``, docs/plots.md). Matplotlib is
imported inside each helper, so importing this module costs nothing."""

from __future__ import annotations

from typing import Any


def time_axis(ax: Any, span: float) -> None:
    """Label ``ax``'s x axis in s, ms, us or ns, whichever reads best for ``span`` seconds (the
    drawn data stay in seconds)."""
    from matplotlib.ticker import FuncFormatter

    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if span >= scale or unit == "ns":
            break
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x / scale:g}"))
    ax.set_xlabel(f"time [{unit}]")
