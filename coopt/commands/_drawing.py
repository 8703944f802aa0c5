"""Drawing a checked solution to an image file: what ``coopt plot`` and ``coopt solve --plot``
share. The image is written only when the problem's checker accepts the solution, and atomically
(complete or untouched); every refusal before the solve is one :class:`UsageError` line."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from coopt.errors import UsageError

PLOT_SUFFIXES = (".png", ".pdf", ".svg")
#: Figure resolution of a raster image (dots per inch).
DPI = 150


def drawn_problems() -> list[str]:
    """The registered problems that have a drawing."""
    from coopt import registry

    return [name for name in registry.names() if registry.get(name).plot is not None]


def figure_for(problem: Any, instance: Any, solution: dict[str, Any], title: str) -> Any:
    """A new matplotlib ``Figure`` (Agg canvas) with the problem's drawing of ``solution``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5.5), layout="constrained")
    problem.plot(instance, solution, fig)
    fig.suptitle(title, fontsize=10)
    return fig


def save(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` so that the file is either complete or untouched."""
    target = Path(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=target.suffix)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=DPI, bbox_inches="tight", pad_inches=0.08)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def headline(report: Any, name: str) -> str:
    """The figure's title: instance, method, status and the objective with its unit, exactly."""
    unit = f" {report.objective_unit}" if report.objective_unit else ""
    return (f"{report.problem} / {name}: method {report.method} ({report.status})\n"
            f"{report.objective_name} = {report.objective:.10g}{unit}")


def image_target(text: str, option: str) -> Path:
    """The image file ``option`` names (.png, .pdf or .svg), checked before any work."""
    from coopt.output import output_path

    target = output_path(text, option, PLOT_SUFFIXES)
    if target is None:
        raise UsageError(f"{option} writes an image file (.png, .pdf or .svg), not standard output")
    return target


def check_drawable(item: Any, method: str) -> None:
    """One UsageError line, before any solving, unless ``method``'s solution of the loaded file
    ``item`` can be drawn: the problem has a drawing and the method gives a solution."""
    problem = item.problem
    if problem.plot is None:
        raise UsageError(f"{item.path}: problem {problem.name!r} has no drawing yet; "
                         f"coopt plot draws {', '.join(drawn_problems())}")
    if method == "bound":
        raise UsageError(f"{item.path}: method 'bound' gives a number, not a solution to draw; "
                         f"choose one of {', '.join(problem.methods)}")
    if method not in problem.methods:
        raise UsageError(f"{item.path}: problem {problem.name!r} has no method {method!r}; "
                         f"it has {', '.join(problem.methods)}")


def draw(item: Any, report: Any, target: Path, shown: str) -> bool:
    """Draw ``report``'s solution of ``item`` to ``target`` when the checker accepts it (True);
    else say why in one line and write nothing (False)."""
    from coopt.console import err

    name = Path(item.path).name
    if report.solution is None:
        err.print(f"coopt: {name}: method {report.method} found no solution (status {report.status}); "
                  "nothing drawn", highlight=False, markup=False)
        return False
    if not report.check.get("feasible"):
        found = "; ".join(str(v) for v in report.check.get("violations", [])[:3])
        err.print(f"coopt: {name}: the checker rejects the {report.method} solution ({found}); nothing drawn",
                  highlight=False, markup=False)
        return False
    fig = figure_for(item.problem, item.instance, report.solution, headline(report, name))
    save(fig, target)
    err.print(f"wrote {shown}", highlight=False, markup=False)
    return True
