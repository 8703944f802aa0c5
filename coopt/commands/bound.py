"""``coopt bound``: list, print, solve and evaluate the closed-form bounds.

    coopt bound list
    coopt bound NAME [--solve-for SYMBOL] [--set sym=value ...] [--sweep sym=start:stop:count[:log]]
                     [--latex] [--json OUT] [--plot OUT.png] [--fit DATA.csv]

Values accept plain numbers and simple arithmetic (``2^-8``, ``3e12``, ``0.2/2**15``). Unknown
names and symbols, and values outside a symbol's physical range, are usage errors (exit 2).
"""

from __future__ import annotations

import argparse
import ast
import csv
import operator
import textwrap
from pathlib import Path
from typing import Any

from coopt.errors import UsageError

#: The most points a --sweep may ask for (each is one evaluation; more is a typo, not a plot).
MAX_SWEEP = 100_000
PLOT_SUFFIXES = (".png", ".pdf", ".svg")

_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


#: The longest arithmetic a number may be written as on the command line.
MAX_NUMBER_TEXT = 200


def parse_number(text: str, where: str) -> float:
    """A number, or arithmetic on numbers (``2^-8``, ``1.5e9*2``); nothing else is evaluated."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError

    if len(text) > MAX_NUMBER_TEXT:
        raise UsageError(f"{where}: expected a number (at most {MAX_NUMBER_TEXT} characters), got "
                         f"{len(text)} characters")
    try:
        result = value(ast.parse(text.replace("^", "**"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError, MemoryError):
        raise UsageError(f"{where}: expected a number, got {text!r}") from None
    return float(result)


def parse_assignment(text: str, option: str) -> tuple[str, str]:
    name, sep, rhs = text.partition("=")
    if not sep or not name.strip() or not rhs.strip():
        raise UsageError(f"{option} expects SYMBOL=VALUE, got {text!r}")
    return name.strip(), rhs.strip()


def parse_sweep(text: str) -> tuple[str, Any, bool]:
    """``sym=start:stop:count[:log]`` -> (symbol, values, log spacing)."""
    name, spec = parse_assignment(text, "--sweep")
    parts = spec.split(":")
    log = len(parts) == 4 and parts[3] == "log"
    if len(parts) != 3 and not log:
        raise UsageError(f"--sweep expects SYMBOL=START:STOP:COUNT[:log], got {text!r}")
    start = parse_number(parts[0], f"--sweep {name} start")
    stop = parse_number(parts[1], f"--sweep {name} stop")
    count = parse_number(parts[2], f"--sweep {name} count")
    if not count.is_integer() or count < 1:
        raise UsageError(f"--sweep {name}: COUNT must be an integer >= 1, got {parts[2]!r}")
    if count > MAX_SWEEP:
        raise UsageError(f"--sweep {name}: COUNT must be at most {MAX_SWEEP:,}, got {count:,.0f}")
    import numpy as np

    if log:
        if start <= 0 or stop <= 0:
            raise UsageError(f"--sweep {name}: a log sweep needs START and STOP > 0")
        return name, np.geomspace(start, stop, int(count)), True
    return name, np.linspace(start, stop, int(count)), False


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _equation(entry, solve_for: str | None) -> str:
    import sympy as sp

    from coopt import closed_forms as bounds

    if isinstance(entry, bounds.Curve):
        return f"{entry.output.name} = {entry.method}"
    if solve_for is None or solve_for == entry.output.name:
        return f"{entry.output.name} = {sp.sstr(entry.expr)}"
    try:
        return f"{solve_for} = {sp.sstr(entry.solve_for(solve_for))}"
    except bounds.NoClosedForm:
        return f"{solve_for} solves {entry.output.name} = {sp.sstr(entry.expr)} (numeric root)"


def _latex(entry, solve_for: str | None) -> str:
    import sympy as sp

    if solve_for is None or solve_for == entry.output.name:
        return entry.latex()
    target = entry.quantity(solve_for)
    names = {q.symbol: q.latex for q in entry.symbols.values() if q.latex}
    return sp.latex(sp.Eq(target.symbol, entry.solve_for(solve_for)), symbol_names=names)


def _latex_or_none(entry, solve_for: str | None) -> str | None:
    from coopt import closed_forms as bounds

    if isinstance(entry, bounds.Curve):
        return None
    try:
        return _latex(entry, solve_for)
    except bounds.NoClosedForm:
        return None


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from coopt import closed_forms as bounds
    from coopt import registry
    from coopt.console import out

    table = Table(title="coopt bounds (closed forms and computed curves)")
    for col in ("bound", "kind", "gives", "summary"):
        table.add_column(col, overflow="fold")
    for name, entry in registry.closed_forms().items():
        kind = "curve" if isinstance(entry, bounds.Curve) else "closed form"
        table.add_row(*map(Text, (name, kind, f"{entry.output.name} [{entry.output.unit}]", entry.summary)))
    out.print(table)
    return 0


def _values(entry, args: argparse.Namespace) -> tuple[dict[str, Any], tuple | None]:
    """The ``--set`` values and the ``--sweep`` (symbol, grid, log), the grid joining the values."""
    import numpy as np

    values: dict[str, Any] = {}
    for item in args.set:
        name, rhs = parse_assignment(item, "--set")
        entry.quantity(name)
        values[name] = parse_number(rhs, f"--set {name}")
    sweep = parse_sweep(args.sweep) if args.sweep else None
    if sweep:
        name, grid, log = sweep
        if entry.quantity(name).domain.endswith("integer"):
            # An integer symbol is swept over the distinct integers nearest the grid.
            sweep = name, np.unique(np.round(grid)), log
        values[name] = sweep[1]
    if args.solve_for and args.solve_for != entry.output.name and args.solve_for in values:
        raise UsageError(f"cannot both set and solve for {args.solve_for}")
    return values, sweep


def _print_result(entry, target, sweep: tuple | None, result, out) -> None:
    """The result as one line, or as a table over the sweep."""
    import numpy as np
    from rich.markup import escape
    from rich.table import Table

    if not sweep:
        unit = "" if target.unit == "1" else f" {target.unit}"
        out.print(f"{target.name} = {_fmt(float(result))}{unit}   ({target.description})", markup=False)
        return
    name, grid, _ = sweep
    table = Table(title=f"{entry.name}: {target.name} over {name}")
    table.add_column(escape(f"{name} [{entry.quantity(name).unit}]"), justify="right")
    table.add_column(escape(f"{target.name} [{target.unit}]"), justify="right")
    for x, y in zip(grid, np.broadcast_to(result, grid.shape), strict=True):
        table.add_row(_fmt(x), _fmt(y))
    out.print(table)


def _report(entry, target, args: argparse.Namespace, used: dict[str, Any], sweep: tuple | None, result,
            fitted: tuple | None) -> dict[str, Any]:
    """What ``--json`` writes."""
    import numpy as np

    return {
        "bound": entry.name,
        "summary": entry.summary,
        "source": entry.source,
        "result_symbol": target.name,
        "unit": target.unit,
        "equation": _equation(entry, args.solve_for),
        "latex": _latex_or_none(entry, args.solve_for),
        "values": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in used.items()},
        "sweep": None if not sweep else {"symbol": sweep[0], "values": sweep[1].tolist()},
        "result": result.tolist(),
        "fit": None if not fitted else {
            "data": args.fit, "rows": fitted[2], "coefficients": fitted[0], "l1_error": fitted[1],
        },
    }


def cmd_bound(args: argparse.Namespace) -> int:
    import numpy as np

    from coopt import registry
    from coopt.console import err, out
    from coopt.output import dumps, output_path, write_atomic

    if args.json == "-":
        out = err  # standard output carries the JSON alone
    if args.name == "list":
        return cmd_list(args)
    json_target = output_path(args.json, "--json") if args.json else None
    plot_target = output_path(args.plot, "--plot", PLOT_SUFFIXES) if args.plot else None
    if args.plot and plot_target is None:
        raise UsageError("--plot writes an image file, not standard output")
    entry = registry.closed_form(args.name)
    solve_for = args.solve_for
    target = entry.quantity(solve_for) if solve_for else entry.output
    values, sweep = _values(entry, args)
    fitted = _fit(entry, args.fit, values) if args.fit else None
    if args.plot and not sweep:
        raise UsageError("--plot needs a --sweep to plot over")

    if args.latex:
        print(_latex(entry, solve_for))
        if not (args.json or args.plot or sweep or args.set):
            return 0
    result = np.asarray(entry.evaluate(values, solve_for=solve_for), dtype=float)
    used = {q.name: values.get(q.name, q.default) for q in entry.symbols.values()
            if q.name != target.name and (q.name in values or q.default is not None)}

    if not args.latex:
        _describe(entry, solve_for, out)
    if fitted:
        coefficients, error, rows = fitted
        fits = ", ".join(f"{k} = {_fmt(v)} {entry.quantity(k).unit}" for k, v in coefficients.items())
        out.print(f"fit to {rows} rows of {args.fit}: {fits}; L1 error {_fmt(error)} {entry.output.unit}",
                  markup=False)
    if sweep:
        result = np.broadcast_to(result, sweep[1].shape)
    _print_result(entry, target, sweep, result, out)
    if args.json:
        report = _report(entry, target, args, used, sweep, result, fitted)
        write_atomic(json_target, dumps(report, indent=2) + "\n")
        if json_target is not None:
            out.print(f"wrote {args.json}")
    if args.plot:
        _plot(entry, target, sweep, result, plot_target, used)
        out.print(f"wrote {args.plot}")
    return 0


def _fit(entry, path: str, values: dict[str, Any]) -> tuple[dict[str, float], float, int]:
    """Read measured rows (CSV, one column per symbol) and fit the entry's coefficients to them.

    The fitted coefficients join ``values`` so the rest of the command evaluates the fitted bound.
    """
    import numpy as np

    fit = getattr(entry, "fit", None)
    if fit is None:
        raise UsageError(f"bound {entry.name!r} has no fit; --fit works for bounds whose notes offer it")
    from coopt.errors import InstanceError
    from coopt.instance import read_bytes

    try:
        table = list(csv.reader(read_bytes(path, "a CSV file").decode("utf-8").splitlines()))
    except InstanceError as exc:
        raise UsageError(f"{path}: cannot read ({exc.expected})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: is not UTF-8 text, expected a CSV file") from None
    if len(table) < 2:
        raise UsageError(f"{path}: expected a header row and at least one data row")
    header, rows = [h.strip() for h in table[0]], table[1:]
    columns: dict[str, Any] = {}
    for j, name in enumerate(header):
        quantity = entry.quantity(name)
        try:
            column = np.array([float(row[j]) for row in rows])
        except (ValueError, IndexError):
            raise UsageError(f"{path}: column {name!r}: expected a number in every row") from None
        quantity.validate(column, f"{path}: column {name!r}")
        columns[name] = column
    try:
        coefficients, error = fit(columns)
    except KeyError as exc:
        raise UsageError(f"{path}: missing column {exc.args[0]!r}") from None
    clash = sorted(set(coefficients) & set(values))
    if clash:
        raise UsageError(f"--fit determines {', '.join(clash)}; do not also --set or --sweep it")
    values.update(coefficients)
    return coefficients, error, len(rows)


def _describe(entry, solve_for: str | None, out) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from coopt import closed_forms as bounds

    out.print(f"[bold]{entry.name}[/]: {escape(entry.summary)}")
    out.print(f"  {escape(_equation(entry, solve_for))}")
    out.print(f"  source: {escape(entry.source)}")
    for item in entry.assumptions:
        out.print(f"  assumes: {escape(item)}")
    if entry.notes:
        out.print(f"  note: {escape(entry.notes)}")
    table = Table(show_edge=False)
    for col in ("symbol", "meaning", "unit", "range", "default"):
        table.add_column(col)
    for q in entry.symbols.values():
        cells = (q.name, q.description, q.unit, bounds.DOMAINS[q.domain][1],
                 "-" if q.default is None else _fmt(q.default))
        table.add_row(*map(Text, cells))
    out.print(table)


def with_unit(value: float, unit: str) -> str:
    """``value`` to ten significant digits followed by its unit; the unit ``"1"`` (dimensionless)
    is left out, and nothing of the number ever is."""
    text = f"{value:.10g}"
    return text if unit in ("", "1") else f"{text} {unit}"


def figure(entry, target, sweep, result, fixed: dict[str, Any]) -> Any:
    """The sweep as a line on a new matplotlib ``Figure``: axes named by each symbol's meaning and
    unit, the values held fixed (each with its own unit, see :func:`with_unit`) in a caption below."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    name, grid, log = sweep
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.plot(grid, result, marker="." if len(grid) <= 50 else None)
    if log:
        ax.set_xscale("log")
    positive = result[np.isfinite(result)]
    if log and positive.size and positive.min() > 0 and positive.max() / positive.min() > 100:
        ax.set_yscale("log")
    swept = entry.quantity(name)
    # long descriptions wrap rather than run off the figure
    ax.set_xlabel(textwrap.fill(f"{swept.description}, {name} [{swept.unit}]", 70))
    ax.set_ylabel(textwrap.fill(f"{target.description}, {target.name} [{target.unit}]", 40))
    ax.set_title(entry.name)
    held = [f"{k} = {with_unit(v, entry.quantity(k).unit)}" for k, v in sorted(fixed.items())
            if k != name and np.ndim(v) == 0]
    if held:
        fig.text(0.01, 0.01, "fixed: " + ", ".join(held), fontsize=7, va="bottom")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout(rect=(0, 0.05 if held else 0, 1, 1))
    return fig


def _plot(entry, target, sweep, result, path: Path, fixed: dict[str, Any]) -> None:
    figure(entry, target, sweep, result, fixed).savefig(path, dpi=120, bbox_inches="tight")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bound",
        help="closed-form bounds: list, print (LaTeX), solve for a symbol, evaluate, sweep, plot",
        description="`coopt bound list` lists the bounds; `coopt bound NAME` prints and evaluates one.",
    )
    p.add_argument("name", metavar="NAME", help="a bound name, or 'list'")
    p.add_argument("--solve-for", metavar="SYMBOL", help="rearrange the bound for this symbol")
    p.add_argument("--set", action="append", default=[], metavar="SYM=VALUE", help="set a symbol (repeats)")
    p.add_argument("--sweep", metavar="SYM=START:STOP:COUNT[:log]", help="evaluate over a range")
    p.add_argument("--latex", action="store_true", help="print the equation as LaTeX")
    p.add_argument("--json", metavar="OUT", help="write the evaluation as JSON")
    p.add_argument("--plot", metavar="OUT.png", help="plot the sweep")
    p.add_argument("--fit", metavar="DATA.csv", help="fit the bound's coefficients to measured rows first")
    p.set_defaults(func=cmd_bound)
