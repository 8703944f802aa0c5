"""``coopt plot``: draw one method's checked solution of an instance, as a figure for a paper.

    coopt plot FILE [--method M] -o OUT.png [--time-limit S ...]

The method (default ``exact``) runs as ``coopt solve`` runs it; its solution is judged by the
problem's checker and drawn only when the checker accepts it. The drawing is the problem's own
(``Problem.plot``, in ``coopt/problems/<name>/plot.py``); the figure's title names the instance,
the method, its status and its objective with unit and full precision.

Guarantees. The output path, the method and whether the problem has a drawing are checked before
any solving: a problem without a drawing, an unknown method, ``bound`` (a number, not a solution)
or a bad path is one line and exit status 2. A method that ends without a solution, or whose
solution fails the checker, is one line and exit status 1, and nothing is written. The image is
written atomically (complete or untouched).
"""

from __future__ import annotations

import argparse
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


def cmd_plot(args: argparse.Namespace) -> int:
    from coopt.cli import _options
    from coopt.console import err
    from coopt.instance import load
    from coopt.output import output_path
    from coopt.run import run

    options = _options(args)
    target = output_path(args.output, "-o", PLOT_SUFFIXES)
    if target is None:
        raise UsageError("-o writes an image file (.png, .pdf or .svg), not standard output")
    item = load(args.file)
    problem = item.problem
    if problem.plot is None:
        raise UsageError(f"{item.path}: problem {problem.name!r} has no drawing yet; "
                         f"coopt plot draws {', '.join(drawn_problems())}")
    if args.method == "bound":
        raise UsageError(f"{item.path}: method 'bound' gives a number, not a solution to draw; "
                         f"choose one of {', '.join(problem.methods)}")
    if args.method not in problem.methods:
        raise UsageError(f"{item.path}: problem {problem.name!r} has no method {args.method!r}; "
                         f"it has {', '.join(problem.methods)}")
    report = run(problem, item.instance, args.method, options, path=item.path, sha256=item.sha256)
    name = Path(item.path).name
    if report.solution is None:
        err.print(f"coopt: {name}: method {args.method} found no solution (status {report.status}); "
                  "nothing drawn", highlight=False, markup=False)
        return 1
    if not report.check.get("feasible"):
        found = "; ".join(str(v) for v in report.check.get("violations", [])[:3])
        err.print(f"coopt: {name}: the checker rejects the {args.method} solution ({found}); nothing drawn",
                  highlight=False, markup=False)
        return 1
    fig = figure_for(problem, item.instance, report.solution, headline(report, name))
    save(fig, target)
    err.print(f"wrote {args.output}", highlight=False, markup=False)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from coopt.cli import DEFAULT_TIME_LIMIT, _solve_options

    p = subparsers.add_parser(
        "plot",
        help="draw a method's checked solution of an instance (Gantt chart, fabric, spectrum map)",
        description="Solve one instance file with one method and draw its checked solution as a "
                    "figure (png, pdf or svg).",
    )
    p.add_argument("file", metavar="FILE",
                   help="an instance file, or a shipped name such as pipeline/0-p3m4-cap6")
    p.add_argument("--method", default="exact", help="exact, milp or a heuristic (default exact)")
    p.add_argument("-o", "--output", required=True, metavar="OUT.png",
                   help="the image to write (.png, .pdf or .svg)")
    _solve_options(p, DEFAULT_TIME_LIMIT)
    p.set_defaults(func=cmd_plot)
