"""``coopt plot``: draw one method's checked solution of an instance, as a figure for a paper.

    coopt plot FILE [--method M] -o OUT.png [--time-limit S ...]
    coopt solve FILE [--method M] --plot OUT.png [...]   (the same drawing beside the solve's table)

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

from coopt.commands._drawing import (  # noqa: F401  (figure_for, save: the drawing's public face here)
    PLOT_SUFFIXES,
    check_drawable,
    draw,
    figure_for,
    image_target,
    save,
)


def cmd_plot(args: argparse.Namespace) -> int:
    from coopt.cli import _options
    from coopt.instance import load
    from coopt.run import run

    options = _options(args)
    target = image_target(args.output, "-o")
    item = load(args.file)
    check_drawable(item, args.method)
    report = run(item.problem, item.instance, args.method, options, path=item.path, sha256=item.sha256)
    return 0 if draw(item, report, target, args.output) else 1


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
