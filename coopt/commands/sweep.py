"""``coopt sweep``: vary instance fields over a grid, solve every point with the chosen methods.

    coopt sweep FILE --set FIELD=SPEC [--set ...] --method M[,M] --csv OUT [--plot OUT.png]
                [--jobs N | --scheduler tcp://HOST:PORT]

``FIELD`` is a numeric field of the file, named as in the file (``degree``,
``bandwidth_gbit_per_s``); a field of a sub-table is ``table.field`` (``cluster.nic_gbit_per_s``),
of one entry of an array of tables ``links[0].bandwidth_gbyte_per_s``, of every entry
``links.bandwidth_gbyte_per_s``; one entry of a number array is ``field[i]``, every entry ``field``.
``SPEC`` is in the field's unit as the file writes it: ``START:STOP:COUNT`` (evenly spaced, both
ends included), ``START:STOP:COUNT:log`` (geometric), a comma list ``v1,v2,...`` or one value. On an
integer field a spaced grid is rounded to the nearest integers, repeats dropped. Several ``--set``
span their Cartesian product.

Guarantees. Every point is built and validated as a file is (the problem's declared fields and
cross-field checks) before anything is solved: an unknown field, a field that is not a number, a
value outside the field's declared range, or a point the loader refuses is one line per error and
exit status 2, and nothing is written. Each run is judged by the problem's checker. The CSV is tidy:
one header, one row per (point, method), in point order then method order, with the swept values
(file units), ``method``, ``solver`` (the engine that ran: ``highs`` or the ``--solver``'s name
on the MILP routes, a DP or CP-SAT's own name elsewhere), ``status``, ``objective``, ``bound``,
``gap``, ``feasible`` (the checker's verdict, empty without a solution), the objective's name and
unit, the times in seconds (``time_total`` and its parts) and ``note``: why a row has no
solution, or what the checker found.
``--plot`` draws the objective (a ``bound`` row: the bound, dashed) against the first swept field,
one line per method (and per value of the other swept fields). Exit status as ``coopt solve``: 1
when a run crashed or a solution failed its checker, 130 on Ctrl-C (the rows finished are written).
"""

from __future__ import annotations

import argparse
import copy
import csv
import difflib
import io
import itertools
import math
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coopt.errors import CooptError, InstanceError, UsageError

#: The most (point, method) runs one sweep may ask for: more is a typo, not a study.
MAX_RUNS = 10_000
PLOT_SUFFIXES = (".png", ".pdf", ".svg")
TIMES = ("warm_start", "build", "handoff", "solve", "total")
_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?")


@dataclass(frozen=True)
class Axis:
    """One swept field: its path in the file, how to reach it, its declared field and its values."""

    name: str
    steps: tuple[tuple[str, int | None, str], ...]  # (key, index or None: every entry, kind) per level
    field: Any  # coopt.schema.Field
    values: tuple[float, ...]
    log: bool = False


def _closest(name: str, names: Sequence[str]) -> str:
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"; did you mean {near[0]!r}?" if near else f"; it has {', '.join(names)}"


def resolve_field(schema: Any, path: str, source: str) -> tuple[tuple[tuple[str, int | None, str], ...], Any]:
    """The steps to a numeric field named ``path`` and its declared :class:`coopt.schema.Field`;
    a UsageError for a field the problem does not declare or one that is not a number."""
    steps: list[tuple[str, int | None, str]] = []
    fields = list(schema)
    rest = path
    while True:
        match = _STEP.match(rest)
        if match is None:
            raise UsageError(f"--set {path}: expected a field name such as degree, table.field or "
                             "field[0]")
        key, index = match.group(1), match.group(2)
        names = [f.name for f in fields]
        if key not in names:
            raise UsageError(f"{source}: --set {path}: no field {key!r}{_closest(key, names)} "
                             "(coopt schema PROBLEM lists the fields)")
        field = fields[names.index(key)]
        steps.append((key, None if index is None else int(index), field.kind))
        rest = rest[match.end():]
        if index is not None and field.kind not in ("tables", "ints", "floats"):
            raise UsageError(f"{source}: --set {path}: field {key!r} is not an array, it takes no [index]")
        if not rest:
            break
        if field.kind not in ("table", "tables") or not rest.startswith("."):
            raise UsageError(f"{source}: --set {path}: field {key!r} has no sub-field {rest.lstrip('.')!r}")
        fields, rest = list(field.fields), rest[1:]
    if field.kind not in ("int", "float", "ints", "floats"):
        what = "a table" if field.kind in ("table", "tables") else f"a {field.type_label()}"
        raise UsageError(f"{source}: --set {path}: field {key!r} is {what}, not a number; a sweep varies "
                         "numeric fields")
    return tuple(steps), field


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise UsageError(f"{where}: expected a finite number, got {text!r}")
    return value


def parse_values(spec: str, where: str, integer: bool) -> tuple[tuple[float, ...], bool]:
    """The values of ``START:STOP:COUNT[:log]``, ``v1,v2,...`` or ``v``, and whether log-spaced."""
    import numpy as np

    parts = spec.split(":")
    if len(parts) == 1:
        values = [_number(p.strip(), where) for p in spec.split(",")]
        if integer and any(not v.is_integer() for v in values):
            raise UsageError(f"{where}: expected integers (an integer field), got {spec!r}")
        return tuple(int(v) if integer else v for v in values), False
    log = len(parts) == 4 and parts[3].strip() == "log"
    if len(parts) != 3 and not log:
        raise UsageError(f"{where}: expected START:STOP:COUNT[:log], a comma list or one value, got {spec!r}")
    start, stop, count = (_number(p.strip(), where) for p in parts[:3])
    if not count.is_integer() or count < 1:
        raise UsageError(f"{where}: COUNT must be an integer >= 1, got {parts[2]!r}")
    if count > MAX_RUNS:
        raise UsageError(f"{where}: COUNT must be at most {MAX_RUNS}, got {parts[2]!r}")
    if log and (start <= 0 or stop <= 0):
        raise UsageError(f"{where}: a log grid needs START and STOP > 0")
    grid = np.geomspace(start, stop, int(count)) if log else np.linspace(start, stop, int(count))
    if integer:
        return tuple(dict.fromkeys(int(v) for v in np.round(grid))), log
    return tuple(float(v) for v in grid), log


def _check_range(field: Any, values: Sequence[float], where: str) -> None:
    for v in values:
        low = field.min is not None and v < field.min
        high = field.max is not None and v > field.max
        if low or high or (field.positive and v <= 0):
            raise UsageError(f"{where}: expected values in the field's declared range "
                             f"({field.range_label()}), got {v:g}")


def axis(schema: Any, text: str, source: str) -> Axis:
    """One ``--set FIELD=SPEC``, resolved against the problem's declared fields and checked."""
    name, sep, spec = text.partition("=")
    name, spec = name.strip(), spec.strip()
    if not sep or not name or not spec:
        raise UsageError(f"--set expects FIELD=START:STOP:COUNT (or FIELD=v1,v2,...), got {text!r}")
    steps, field = resolve_field(schema, name, source)
    where = f"{source}: --set {name}"
    values, log = parse_values(spec, where, field.kind in ("int", "ints"))
    _check_range(field, values, where)
    return Axis(name, steps, field, values, log)


def _assign(table: Any, steps: Sequence[tuple[str, int | None, str]], value: float, axis_name: str,
            source: str) -> None:
    """Set ``value`` at ``steps`` inside a parsed file (every entry where a step has no index)."""
    key, index, kind = steps[0]
    last = len(steps) == 1
    if not isinstance(table, dict):
        raise UsageError(f"{source}: --set {axis_name}: expected a table above {key!r}")
    if kind in ("int", "float"):
        table[key] = value
        return
    if key not in table:
        if kind != "table":
            raise UsageError(f"{source}: --set {axis_name}: the file has no {key!r} to set (the field takes "
                             "its default); write it in the file first")
        table[key] = {}  # a sub-table the file leaves to its defaults
    node = table[key]
    if isinstance(node, list):
        if index is not None and index >= len(node):
            raise UsageError(f"{source}: --set {axis_name}: {key!r} has {len(node)} entries, "
                             f"no [{index}]")
        chosen = range(len(node)) if index is None else [index]
        for i in chosen:
            if last:
                node[i] = value
            else:
                _assign(node[i], steps[1:], value, axis_name, source)
        return
    if last:
        raise UsageError(f"{source}: --set {axis_name}: {key!r} is not an array in the file")
    _assign(node, steps[1:], value, axis_name, source)


def points(source: str, data: dict[str, Any], axes: Sequence[Axis]) -> list[tuple[dict[str, float], Any]]:
    """Every grid point as (swept values, validated :class:`coopt.instance.Loaded`); every error of
    every point is gathered and raised at once, before anything runs."""
    from coopt.api import from_dict

    found, errors = [], []
    for combo in itertools.product(*(a.values for a in axes)):
        table = copy.deepcopy(data)
        values = {}
        for a, value in zip(axes, combo, strict=True):
            _assign(table, a.steps, value, a.name, source)
            values[a.name] = value
        label = ", ".join(f"{k}={v:g}" for k, v in values.items())
        try:
            found.append((values, from_dict(table, where=f"{source} ({label})")))
        except InstanceError as exc:
            errors.extend(exc.errors)
    if errors:
        raise InstanceError.combine(errors)
    return found


def row(values: dict[str, float], report: Any) -> dict[str, Any]:
    """One CSV row: the swept values, then what the run found and the checker's verdict."""
    return {
        **values,
        "method": report.method,
        "solver": (report.solver or {}).get("name"),
        "status": report.status,
        "objective": report.objective,
        "bound": report.bound,
        "gap": report.gap,
        "feasible": None if report.solution is None else bool(report.check.get("feasible")),
        "objective_name": report.objective_name,
        "objective_unit": report.objective_unit,
        **{f"time_{k}": report.times.get(k) for k in TIMES},
        "note": (report.check.get("violations") or [""])[0],
    }


def _solve_one(job: tuple[dict[str, Any], str, str, Any]) -> Any:
    """One (point, method) run in a worker process: the point re-validated there, then solved."""
    from coopt.api import from_dict, solve

    table, where, method, options = job
    try:
        return solve(from_dict(table, where=where), method, options=options)
    except CooptError as exc:  # a memory limit, say: back to the parent as one plain, picklable error
        raise UsageError(str(exc)) from None


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Plain CSV: one header, a row per run; None is an empty cell, floats at full precision."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow(["" if r.get(c) is None else r[c] for c in columns])
    return buffer.getvalue()


def _write_plot(path: Path, problem: Any, axes: Sequence[Axis], rows: Sequence[dict[str, Any]],
                title: str) -> int:
    """Objective against the first swept field, a line per method (and other swept values); the
    legend beside the axes. Written atomically. Returns the number of lines drawn."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from coopt.bench.report import method_styles

    styles = method_styles(problem.all_methods)
    first, others = axes[0], axes[1:]
    fig = Figure(figsize=(7.5, 4.2))
    ax = fig.subplots()
    lines = 0
    keys = dict.fromkeys((r["method"], tuple(r[a.name] for a in others)) for r in rows)
    for method, rest in keys:
        mine = [r for r in rows if r["method"] == method and tuple(r[a.name] for a in others) == rest]
        column = "bound" if method == "bound" else "objective"
        xy = sorted((r[first.name], r[column]) for r in mine if r[column] is not None)
        if not xy:
            continue
        style = dict(styles[method])
        if method == "bound":
            style["linestyle"] = "--"
        if method in problem.exact_methods:  # open and larger: a heuristic on the optimum stays visible
            style.update(markerfacecolor="none", markersize=10, markeredgewidth=1.5)
        label = method + "".join(f", {a.name} = {v:g}" for a, v in zip(others, rest, strict=True))
        ax.plot([x for x, _ in xy], [y for _, y in xy], label=label, **style)
        lines += 1
    if first.log:
        ax.set_xscale("log")
    unit = f" [{first.field.unit}]" if first.field.unit else ""
    ax.set_xlabel(f"{first.name}{unit}")
    name, measure = rows[0]["objective_name"], rows[0]["objective_unit"]
    ax.set_ylabel(f"{name}{f' [{measure}]' if measure else ''}")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    if lines:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=130, bbox_inches="tight")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return lines


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _run_on_dask(work: list[tuple[dict[str, Any], str, str, Any]], address: str) -> tuple[list, bool]:
    """Every run on the Dask cluster whose scheduler is at ``address``, reports in the jobs' order."""
    from coopt.bench.runner import DASK_CONNECT_TIMEOUT
    from coopt.limits import stoppable
    from coopt.progress import ticker

    try:
        from dask.distributed import Client
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'coopt[dist]'") from None
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT)
    except OSError as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    reports: list[Any] = []
    try:
        # pure=False: equal points are still separate runs (their times are measured)
        futures = client.map(_solve_one, work, pure=False)
        with stoppable(), ticker(f"sweep: {len(work)} runs on the Dask cluster at {address}"):
            for future in futures:
                reports.append(future.result())
    except KeyboardInterrupt:
        client.cancel(futures)
        return reports, True
    finally:
        client.close()
    return reports, False


def _run_all(jobs: list[tuple[dict[str, float], Any, str]], options: Any, workers: int,
             scheduler: str | None = None) -> tuple[list, bool]:
    """Run every (values, loaded, method) in order (here, in ``workers`` processes, or on a Dask
    cluster); the reports finished, and whether Ctrl-C stopped the sweep."""
    from coopt.api import solve, to_dict
    from coopt.limits import STOP, stoppable
    from coopt.progress import ticker

    reports: list[Any] = []
    if scheduler:
        return _run_on_dask([(to_dict(item), item.path, method, options) for _, item, method in jobs],
                            scheduler)
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        work = [(to_dict(item), item.path, method, options) for _, item, method in jobs]
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_ignore_interrupts)
        interrupted = False
        try:
            with stoppable(), ticker(f"sweep: {len(work)} runs on {workers} processes"):
                for future in [pool.submit(_solve_one, job) for job in work]:
                    reports.append(future.result())
        except KeyboardInterrupt:  # the rows finished are kept; the running solves stop now
            interrupted = True
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return reports, interrupted
    with stoppable():
        for i, (values, item, method) in enumerate(jobs, 1):
            label = ", ".join(f"{k}={v:g}" for k, v in values.items())
            try:
                with ticker(f"sweep {i}/{len(jobs)}: {method} at {label}"):
                    reports.append(solve(item, method, options=options))
            except KeyboardInterrupt:
                return reports, True
            if STOP.is_set():
                return reports, True
    return reports, False


def cmd_sweep(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from coopt.api import read
    from coopt.cli import _options
    from coopt.console import err, out
    from coopt.instance import load
    from coopt.limits import finish_abandoned
    from coopt.output import output_path, write_atomic

    options = _options(args)
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.jobs > 1 and args.scheduler:
        raise UsageError("--jobs runs here, --scheduler on a Dask cluster: give one of the two")
    csv_target = output_path(args.csv, "--csv")
    plot_target = output_path(args.plot, "--plot", PLOT_SUFFIXES) if args.plot else None
    if args.plot and plot_target is None:
        raise UsageError("--plot writes an image file, not standard output")
    if not args.set:
        raise UsageError("give at least one --set FIELD=START:STOP:COUNT to sweep")
    item = load(args.file)  # the file itself must be valid
    problem, source = item.problem, item.path
    wanted = list(dict.fromkeys(problem.all_methods if args.method == "all" else args.method.split(",")))
    for m in wanted:
        if m not in problem.all_methods:
            raise UsageError(f"{source}: problem {problem.name!r} has no method {m!r}; "
                             f"it has {', '.join(problem.all_methods)} (or 'all')")
    axes = [axis(problem.schema, text, source) for text in args.set]
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"--set names a field twice: {', '.join(twice)}")
    runs = math.prod(len(a.values) for a in axes) * len(wanted)
    if runs > MAX_RUNS:
        raise UsageError(f"the sweep asks for {runs} runs (points x methods); at most {MAX_RUNS}")
    grid = points(source, read(source), axes)
    jobs = [(values, loaded, method) for values, loaded in grid for method in wanted]
    err.print(f"coopt sweep: {len(grid)} point(s) x {len(wanted)} method(s) = {len(jobs)} run(s) of "
              f"{escape(Path(source).name)}", highlight=False)
    reports, interrupted = _run_all(jobs, options, args.jobs, args.scheduler)
    rows = [row(values, report) for (values, _, _), report in zip(jobs, reports, strict=False)]
    columns = [*names, *row_columns()]
    write_atomic(csv_target, csv_text(rows, columns))
    if csv_target is not None:
        err.print(f"wrote {escape(args.csv)} ({len(rows)} row(s))", highlight=False)
    if plot_target is not None and rows:
        title = f"{problem.name}: {Path(source).name}"
        _write_plot(plot_target, problem, axes, rows, title)
        err.print(f"wrote {escape(args.plot)}", highlight=False)
    if csv_target is not None:
        table = Table()
        unit = rows[0]["objective_unit"] if rows else ""
        objective = f"objective [{unit}]" if unit else "objective"
        for col in (*names, "method", "status", objective, "bound", "gap", "feasible"):
            table.add_column(escape(col), justify="left" if col in ("method", "status") else "right")
        for r in rows:
            feasible = "-" if r["feasible"] is None else "yes" if r["feasible"] else "[bold red]NO[/]"
            table.add_row(*(f"{r[n]:g}" for n in names), r["method"], r["status"], _fmt(r["objective"]),
                          _fmt(r["bound"]), _fmt(r["gap"], 3), feasible)
        out.print(table)
    if interrupted:
        print(f"coopt: interrupted after {len(rows)} of {len(jobs)} run(s)", file=sys.stderr)
        finish_abandoned(130)
        return 130
    bad = [r for r in rows if r["status"] == "error" or r["feasible"] is False]
    for r in bad:
        where = ", ".join(f"{n}={r[n]:g}" for n in names)
        print(f"coopt: {'ERROR' if r['status'] == 'error' else 'CHECK FAILED'} in {problem.name} "
              f"{r['method']} at {where}: {r['note']}", file=sys.stderr)
    return 1 if bad else 0


def row_columns() -> list[str]:
    """The columns after the swept fields, in order."""
    return ["method", "solver", "status", "objective", "bound", "gap", "feasible", "objective_name",
            "objective_unit", *(f"time_{k}" for k in TIMES), "note"]


def _fmt(value: Any, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def register(subparsers: argparse._SubParsersAction) -> None:
    from coopt.cli import DEFAULT_TIME_LIMIT, _solve_options

    p = subparsers.add_parser(
        "sweep",
        help="vary instance fields over a grid, solve each point, write tidy CSV (and a plot)",
        description="Vary numeric fields of one instance file over a grid (values in the file's units), "
                    "solve every point with the chosen methods and write one CSV row per (point, method).",
    )
    p.add_argument("file", metavar="FILE",
                   help="an instance file, or a shipped name such as topoopt/0-exact-n6-d2")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=SPEC",
                   help="FIELD=START:STOP:COUNT[:log], FIELD=v1,v2,... or FIELD=v (repeat for a product "
                        "grid; table.field, array[i], tables[i].field reach nested fields)")
    p.add_argument("--method", default="exact",
                   help="exact, milp, a heuristic, bound, a comma list, or all (default exact)")
    p.add_argument("--csv", required=True, metavar="OUT", help="the CSV to write (- for standard output)")
    p.add_argument("--plot", metavar="OUT.png", help="objective against the first swept field, per method")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="runs in parallel processes (default 1)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on a Dask cluster (tcp://host:8786; needs pip install 'coopt[dist]')")
    _solve_options(p, DEFAULT_TIME_LIMIT)
    p.set_defaults(func=cmd_sweep)
