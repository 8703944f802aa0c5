"""The ``coopt`` command: parse, dispatch, print. The work lives in the library.

Exit status: 0 success; 1 a solution failed its checker or a method crashed; 2 bad input (one line
per error naming the file, the field and what was expected; nothing written); 130 interrupted
(Ctrl-C: what finished is printed and written, the interrupted solve keeps its incumbent); 141
when the reader of standard output left (``| head``), quietly. Standard output that cannot be
written (a full disk, ``>&-``) is one line and status 2.

Heavy libraries (Pyomo, SymPy, matplotlib) are imported by the commands that need them, so
``coopt --help`` starts about as fast as Python itself.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import json
import math
import os
import pkgutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import coopt
from coopt.errors import CooptError, UsageError

#: ``coopt solve`` stops each exact solve after this many seconds unless --time-limit says otherwise.
DEFAULT_TIME_LIMIT = 300.0
#: ... and stops building a model or running a heuristic above this share of the machine's memory.
DEFAULT_MEMORY_SHARE = 0.75


def _fmt(value: Any, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _escape(text: Any) -> str:
    """User and violation text printed through rich: brackets stay brackets."""
    from rich.markup import escape

    return escape(str(text))


def _positive_seconds(value: float | None, option: str) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{option} must be a finite number of seconds > 0, got {value}")
    return value


def _options(args: argparse.Namespace):
    from coopt.limits import total_memory
    from coopt.problem import SolveOptions
    from coopt.solvers.pyomo_route import check as check_solver

    time_limit = _positive_seconds(args.time_limit, "--time-limit")
    if not (math.isfinite(args.gap) and 0 <= args.gap < 1):
        raise UsageError(f"--gap must be in [0, 1), got {args.gap}")
    if args.threads < 0:
        raise UsageError(f"--threads must be >= 0, got {args.threads}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    memory = args.max_memory
    if memory is not None and not (math.isfinite(memory) and memory > 0):
        raise UsageError(f"--max-memory must be a number of GiB > 0, got {memory}")
    limit = memory * 2**30 if memory is not None else DEFAULT_MEMORY_SHARE * total_memory() or None
    solver = getattr(args, "solver", "highs")
    check_solver(solver)  # before any work: an unknown or missing solver is one line, exit 2
    return SolveOptions(time_limit=time_limit, gap=args.gap, threads=args.threads, seed=args.seed,
                        memory_limit=limit, solver=solver)


def _methods(loaded, method: str) -> list[str]:
    problem = loaded.problem
    if method == "all":
        return problem.all_methods
    wanted = list(dict.fromkeys(method.split(",")))  # a method named twice runs once
    for m in wanted:
        if m not in problem.all_methods:
            raise UsageError(
                f"{loaded.path}: problem {problem.name!r} has no method {m!r}; "
                f"it has {', '.join(problem.all_methods)} (or 'all')"
            )
    return wanted


def registry_get(name: str):
    """The registered problem ``name``, or a UsageError listing the known ones."""
    from coopt import registry

    try:
        return registry.get(name)
    except KeyError:
        raise UsageError(f"unknown problem {name!r}; known: {', '.join(registry.names())}") from None


def load_all(paths: list[str]) -> list:
    """Every file loaded, or one error listing the problems of every bad file (nothing half-done)."""
    from coopt.errors import InstanceError
    from coopt.instance import load

    loaded, errors = [], []
    for path in paths:
        try:
            loaded.append(load(path))
        except InstanceError as exc:
            errors.extend(exc.errors)
    if errors:
        raise InstanceError.combine(errors)
    return loaded


# -- list, validate, schema-free commands --------------------------------------------------------


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _tiers(files: list[Path]) -> str:
    counts = {label: sum(p.name.startswith(prefix) for p in files)
              for prefix, label in (("0-", "small"), ("1-", "medium"), ("2-", "large"))}
    return ", ".join(f"{n} {label}" for label, n in counts.items() if n) or "-"


def cmd_list(args: argparse.Namespace) -> int:
    from rich.table import Table

    from coopt import registry
    from coopt.console import out
    from coopt.shipped import shipped

    if args.problem:
        problem = registry_get(args.problem)
        out.print(f"[bold]{problem.name}[/] ({problem.sense}): {_escape(problem.summary)}")
        out.print(f"source: {_escape(problem.source)}")
        out.print(f"exact methods: {', '.join(problem.exact_methods) or '-'}")
        out.print(f"heuristics: {', '.join(sorted(problem.heuristics)) or '-'}")
        if problem.bound is not None:
            out.print("dual bound: --method bound")
        out.print(f"generator: coopt generate {problem.name} --seed N --size K  "
                  f"(K = {_escape(problem.size_doc)})")
        out.print(f"fields: coopt schema {problem.name}")
        out.print("shipped instances (name them as PROBLEM/FILE):")
        for path in shipped(problem.name):
            out.print(f"  {problem.name}/{path.stem:<40} {_escape(_relative(path))}")
        return 0
    table = Table(title="coopt problems (coopt list PROBLEM for details)", show_lines=True)
    for col in ("problem", "exact", "heuristics", "shipped"):
        # names users type are never cut: one per line, the column as wide as the longest
        table.add_column(col, no_wrap=col != "shipped", overflow="fold")
    for name, problem in registry.problems().items():
        table.add_row(
            f"{name}\n({problem.sense})",
            "\n".join(problem.exact_methods + (["bound"] if problem.bound else [])) or "-",
            "\n".join(sorted(problem.heuristics)) or "-",
            _tiers(shipped(name)).replace(", ", "\n"),
        )
    out.print(table)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Check every file and report each: an ``ok`` line per good file, every error of every bad one."""
    from coopt.console import out
    from coopt.errors import InstanceError
    from coopt.instance import load

    bad = 0
    for path in args.files:
        try:
            item = load(path)
        except InstanceError as exc:
            bad += 1
            for e in exc.errors:
                print(f"coopt: error: {e}", file=sys.stderr)
            continue
        out.print(f"ok  {_escape(item.path)}  ({item.problem.name}, sha256 {item.sha256[:12]})")
    return 2 if bad else 0


# -- solve -----------------------------------------------------------------------------------------


class Live:
    """The incumbent and bound HiGHS reports while it runs, for the progress line."""

    def __init__(self) -> None:
        self.primal: float | None = None
        self.dual: float | None = None

    def __call__(self, primal: float | None, dual: float | None) -> None:
        self.primal = primal if primal is not None else self.primal
        self.dual = dual if dual is not None else self.dual

    def text(self) -> str:
        if self.primal is None and self.dual is None:
            return ""
        gap = ""
        if self.primal is not None and self.dual is not None:
            from coopt.problem import relative_gap

            gap = f", gap {100 * relative_gap(self.primal, self.dual):.2f} %"
        return f"incumbent {_fmt(self.primal)}, bound {_fmt(self.dual)}{gap}"


def _run(item, method: str, options, live: Live | None = None):
    from coopt.run import run

    return run(item.problem, item.instance, method, options, path=item.path, sha256=item.sha256,
               watch=live)


def _objective_header(reports) -> str:
    """'objective' with the name and unit where every row shares them."""
    named = {(r.objective_name, r.objective_unit) for r in reports}
    if len(named) == 1:
        name, unit = named.pop()
        return f"{name} [{unit}]" if unit else name
    return "objective"


@contextmanager
def _stopped_like_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP (a batch scheduler's stop, a closed terminal) act as Ctrl-C does while a
    command runs: the solve keeps its incumbent and what finished is written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def cmd_solve(args: argparse.Namespace) -> int:
    from coopt.commands import _drawing as plot_command
    from coopt.commands import leave_solver_threads
    from coopt.console import err
    from coopt.limits import STOP, finish_abandoned, stoppable
    from coopt.output import output_path
    from coopt.progress import ticker

    options = _options(args)
    json_target = output_path(args.json, "--json") if args.json else None
    picture = plot_command.image_target(args.plot, "--plot") if args.plot else None
    loaded = load_all(args.files)  # validate everything before solving anything
    plan = [(item, m) for item in loaded for m in _methods(item, args.method)]
    if picture is not None:
        if len(plan) != 1:
            raise UsageError(f"--plot draws one run: give one file and one method, not {len(plan)} runs")
        plot_command.check_drawable(*plan[0])
    limit = f"{options.time_limit:g} s" if options.time_limit else "none"
    err.print(f"coopt solve: {len(loaded)} file(s), {len(plan)} run(s); time limit per exact solve {limit} "
              "(--time-limit); Ctrl-C stops and keeps what finished", highlight=False)
    reports, interrupted = [], False
    with stoppable(), _stopped_like_ctrl_c():
        for item, method in plan:
            live = Live()
            try:
                with ticker(f"{item.problem.name}: {method} on {Path(item.path).name}", status=live.text):
                    report = _run(item, method, options, live)
            except KeyboardInterrupt:  # a second Ctrl-C: stop now, the solver's thread is left behind
                interrupted = True
                break
            reports.append(report)
            if STOP.is_set():
                interrupted = True
                break
    if reports:
        _print_reports(reports, err if args.json == "-" else None)
    if args.json:
        _write_reports(json_target, args.json, reports, interrupted)
    if interrupted:
        print(f"coopt: interrupted after {len(reports)} of {len(plan)} run(s)", file=sys.stderr)
        finish_abandoned(130)
        leave_solver_threads(130)
        return 130
    status = _exit_status(reports)
    if picture is not None and not plot_command.draw(plan[0][0], reports[0], picture, args.plot):
        return 1
    return status


def _write_reports(target: Path | None, shown: str, reports, interrupted: bool = False) -> None:
    """Write the reports; an interrupted run never replaces an existing file (it may hold more than
    the run finished): its reports go beside it, to ``NAME.interrupted.json``."""
    from coopt.console import err
    from coopt.output import beside_if_interrupted, dumps, write_atomic

    aside = beside_if_interrupted(target, interrupted)
    if aside != target:
        err.print(f"kept {_escape(shown)} as it was (the run was interrupted)", highlight=False)
        target, shown = aside, str(Path(shown).with_name(aside.name))
    write_atomic(target, dumps([r.to_json() for r in reports], indent=2) + "\n")
    if target is not None:
        err.print(f"wrote {_escape(shown)} ({len(reports)} report(s))", highlight=False)


def _exit_status(reports) -> int:
    crashed = [r for r in reports if r.status == "error"]
    failed = [r for r in reports
              if r.status != "error" and r.solution is not None and not r.check["feasible"]]
    for r in crashed:
        why = "; ".join(r.check["violations"][:1])
        print(f"coopt: ERROR in {r.problem} {r.method} on {r.instance}: {why}", file=sys.stderr)
    for r in failed:
        print(f"coopt: CHECK FAILED for {r.problem} {r.method} on {r.instance}: "
              + "; ".join(r.check["violations"][:3]), file=sys.stderr)
    return 1 if crashed or failed else 0


def _print_reports(reports, console=None) -> None:
    """The table of reports (on ``console``, default standard output)."""
    from rich.table import Table

    from coopt.console import out

    out = console or out
    table = Table()
    objective = _objective_header(reports)
    for col in ("instance", "method", "status", objective, "bound", "gap", "feasible", "seconds"):
        right = col in (objective, "bound", "gap", "seconds")
        # rich reads "[s]" or "[iterations/s]" as markup: the unit must be escaped to be shown
        table.add_column(_escape(col), justify="right" if right else "left", no_wrap=col == "method",
                         overflow="fold")
    for r in reports:
        table.add_row(
            _escape(Path(r.instance).name),
            r.method,
            r.status,
            _fmt(r.objective),
            _fmt(r.bound),
            _fmt(r.gap, 3),
            _verdict(r),
            f"{r.times['total']:.3f}",
        )
    out.print(table)
    _print_declined(reports, out)


def _print_declined(reports, console=None) -> None:
    """Say why each row without a solution has none (declined, time limit, error)."""
    from coopt.console import out

    out = console or out
    declined = [r for r in reports if r.solution is None and r.check["violations"]]
    if declined:
        out.print("Rows without a solution, and why:")
    for r in declined:
        where = _escape(Path(r.instance).name)
        out.print(f"  {r.problem} {r.method} on {where}: {_escape(r.check['violations'][0])}")


def _verdict(report) -> str:
    """The checker's word on a solution; '-' where the method returned none."""
    if report.solution is None:
        return "-"
    return "yes" if report.check["feasible"] else "[bold red]NO[/]"


# -- check -----------------------------------------------------------------------------------------


def _read_json(path: str) -> Any:
    from coopt.instance import MAX_DEPTH, check_depth, read_bytes

    raw = read_bytes(path, "a JSON solution or solve report")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: is not UTF-8 text, expected a JSON solution or solve report") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: is not valid JSON ({exc})") from None
    except RecursionError:
        raise UsageError(f"{path}: nests objects or arrays more than {MAX_DEPTH} deep") from None
    check_depth(path, data)
    return data


def _solutions_in(path: str, item) -> tuple[list[tuple[str, dict]], dict[str, int]]:
    """(label, solution) for every entry of a solution file or solve report that belongs to
    ``item``; and how many rows were skipped, by reason."""
    data = _read_json(path)
    entries = data if isinstance(data, list) else [data]
    solutions, skipped = [], {"other instance": 0, "other problem": 0, "no solution": 0}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise UsageError(f"{path}: entry {i}: expected a JSON object (a solution or a solve report)")
        if "solution" in entry and "method" in entry:  # a solve report
            if entry.get("problem") not in (None, item.problem.name):
                skipped["other problem"] += 1
            elif entry.get("instance_sha256") not in (None, "", item.sha256):
                skipped["other instance"] += 1
            elif not isinstance(entry.get("solution"), dict):
                skipped["no solution"] += 1
            else:
                solutions.append((f"{entry.get('method', f'#{i}')} (row {i})", entry["solution"]))
        else:
            solutions.append((f"#{i}", entry))
    return solutions, {k: v for k, v in skipped.items() if v}


def cmd_check(args: argparse.Namespace) -> int:
    from coopt.console import out
    from coopt.instance import load
    from coopt.problem import relative_gap
    from coopt.run import judge

    item = load(args.file)
    if (args.solution is None) == (args.sol is None):
        raise UsageError("give a solution file (JSON) or --sol MODEL.sol, one of the two")
    if args.sol is not None:
        solutions, skipped = [("--sol", _solution_from_solver(item, args.sol))], {}
    else:
        solutions, skipped = _solutions_in(args.solution, item)
    if skipped:
        said = ", ".join(f"{n} of {why}" for why, n in skipped.items())
        out.print(f"skipped {sum(skipped.values())} row(s) of {_escape(args.solution)}: {said}")
    if not solutions:
        raise UsageError(f"{args.solution}: holds no solution for this instance of {item.problem.name!r}")
    failed = 0
    for label, solution in solutions:
        verdict = judge(item.problem, item.instance, solution)
        claimed = solution.get("objective")
        agrees = (
            isinstance(claimed, int | float) and not isinstance(claimed, bool) and math.isfinite(claimed)
            and verdict["objective_recomputed"] is not None
            and relative_gap(float(claimed), verdict["objective_recomputed"]) <= 1e-6
        )
        ok = verdict["feasible"] and agrees
        failed += not ok
        out.print(
            f"{'feasible' if verdict['feasible'] else 'INFEASIBLE'}  {_escape(label)}  "
            f"objective claimed {_escape(_fmt(claimed))} recomputed {_fmt(verdict['objective_recomputed'])}"
            + ("" if agrees else "  [bold red](objective mismatch)[/]")
        )
        for v in verdict["violations"]:
            out.print(f"    {_escape(v)}")
    return 1 if failed else 0


def _solution_from_solver(item, sol: str) -> dict:
    """A solution found by another solver on coopt's exported model: read the solver's column
    values (a HiGHS ``.sol`` file, or ``name value`` lines), put them on the model's variables by
    name, and extract the problem's solution from the model, claiming the problem's objective."""
    import pyomo.environ as pyo

    from coopt.solvers.highs import column_values, objective_unit, symbol_map

    problem = item.problem
    if problem.build is None:
        raise UsageError(f"{item.path}: problem {problem.name!r} has no exported model to read "
                         "a .sol against")
    model = problem.build(item.instance)
    by_name = symbol_map(model)
    try:
        values, objective = column_values(Path(sol).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{sol}: cannot be read as a solver solution file ({exc})") from None
    except ValueError as exc:
        raise UsageError(f"{sol}: {exc}") from None
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise UsageError(f"{sol}: column {unknown[0]!r} is not a variable of the model coopt exports "
                         f"for {item.path} ({len(unknown)} unknown)")
    for name, value in values.items():
        by_name[name].set_value(value, skip_validation=True)
    solution = problem.extract(model, item.instance)
    if objective is None:  # the file does not say: the model's objective at these values
        objective = float(pyo.value(next(model.component_data_objects(pyo.Objective, active=True))))
    solution["objective"] = objective * objective_unit(model)
    return solution


# -- export, generate ------------------------------------------------------------------------------


def _exported_model(item, warm: bool):
    """The problem's exact model, built cold unless ``warm`` asks for the problem's warm start (run
    and checked here, as the runner does; it can tighten horizons and big-Ms)."""
    problem = item.problem
    if problem.warm_start is None:
        return problem.build(item.instance)
    incumbent = None
    if warm:
        from coopt.problem import SolveOptions
        from coopt.run import warm_start

        incumbent = warm_start(problem, item.instance, SolveOptions())
    return problem.build(item.instance, incumbent=incumbent)


def cmd_export(args: argparse.Namespace) -> int:
    from coopt.console import out
    from coopt.instance import load
    from coopt.output import output_path
    from coopt.problem import NoSolution
    from coopt.solvers.highs import export, objective_unit

    target = output_path(args.output, "-o")
    if target is None:
        raise UsageError("-o -: export writes a file, not standard output; give a file name ending in "
                         ".lp or .mps")
    suffix = Path(args.output).suffix.lstrip(".").lower()
    if args.format and suffix in ("lp", "mps") and suffix != args.format:
        raise UsageError(f"-o {args.output}: the name says {suffix.upper()} but --format is {args.format}; "
                         "make them agree")
    fmt = args.format or suffix
    if fmt not in ("lp", "mps"):
        raise UsageError(f"-o {args.output}: expected a file name ending in .lp or .mps (or give --format)")
    item = load(args.file)
    if item.problem.build is None:
        raise UsageError(f"{args.file}: problem {item.problem.name!r} has no MILP to export")
    try:
        model = _exported_model(item, args.warm_start)
    except NoSolution as exc:
        raise UsageError(f"{args.file}: the exact model cannot be built here: {exc}") from None
    unit = objective_unit(model)
    name, measure = item.problem.describe_objective(item.instance)
    header = [
        f"coopt export of {item.problem.name} instance {Path(item.path).name} (sha256 {item.sha256[:12]})",
        f"objective: {name}{f' [{measure}]' if measure else ''} = {unit:.17g} x this model's objective",
        f"judge a solution with: coopt check {Path(item.path).name} --sol SOLUTION.sol",
    ]
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".coopt-export-") as scratch:
        tmp = Path(scratch) / f"model.{fmt}"
        export(model, tmp, header=header)
        tmp.replace(target)
    size = f"{model.nvariables()} variables, {model.nconstraints()} constraints"
    out.print(f"wrote {_escape(args.output)} ({fmt.upper()}, {size}); objective scale {unit:.6g}: "
              f"{_escape(name)}{f' [{measure}]' if measure else ''} = {unit:.6g} x the model's objective")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from coopt.console import err
    from coopt.errors import InstanceError
    from coopt.instance import load, to_toml
    from coopt.output import output_path, write_atomic

    problem = registry_get(args.problem)
    if args.size < 1:
        raise UsageError(f"--size must be >= 1, got {args.size}")
    if problem.max_size is not None and args.size > problem.max_size:
        raise UsageError(f"--size: {problem.name}'s generator takes 1..{problem.max_size} "
                         f"({problem.size_doc}), got {args.size}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    target = output_path(args.output, "-o") if args.output else None
    try:
        instance = problem.generate(args.seed, args.size)
    except (ValueError, OverflowError, MemoryError) as exc:
        reason = str(exc) or type(exc).__name__
        raise UsageError(f"coopt generate {problem.name}: size {args.size} cannot be generated "
                         f"({reason})") from None
    note = f"generated: seed {args.seed}, {problem.size_doc} {args.size}"
    text = to_toml(problem, instance, description=note)
    # a generator must respect its own loader: read the text back before writing it anywhere
    with tempfile.TemporaryDirectory(prefix="coopt-generate-") as scratch:
        probe = Path(scratch) / "generated.toml"
        probe.write_text(text, encoding="utf-8")
        try:
            load(probe)
        except InstanceError as exc:
            first = str(exc.errors[0]).replace(str(probe), "the generated instance")
            raise UsageError(f"coopt generate {problem.name} --size {args.size}: {first} "
                             "(choose a smaller --size)") from None
    write_atomic(target, text)
    if target is not None:
        err.print(f"wrote {_escape(args.output)}", highlight=False)
    return 0


# -- showcase --------------------------------------------------------------------------------------


def cmd_showcase(args: argparse.Namespace) -> int:
    """Solve one small shipped instance of every problem with every method."""
    from rich.table import Table

    from coopt import registry
    from coopt.console import out
    from coopt.instance import load
    from coopt.limits import STOP, finish_abandoned, stoppable
    from coopt.problem import SolveOptions, relative_gap
    from coopt.progress import ticker
    from coopt.shipped import instances_dir, shipped, small_shipped

    _positive_seconds(args.time_limit, "--time-limit")
    options = SolveOptions(time_limit=args.time_limit, seed=0, threads=1)
    for name in args.problems:
        registry_get(name)
    table = Table(title="coopt showcase: every problem, every method, one small shipped instance")
    for col in ("problem", "instance", "method", "objective", "unit", "gap to exact", "seconds", "feasible"):
        right = col in ("objective", "gap to exact", "seconds")
        table.add_column(col, justify="right" if right else "left", no_wrap=col in ("problem", "method"),
                         overflow="fold")
    reports, interrupted = [], False
    with stoppable(), _stopped_like_ctrl_c():
        for name, problem in registry.problems().items():
            if (args.problems and name not in args.problems) or interrupted:
                continue
            files = small_shipped(name) or shipped(name)
            if problem.showcase:
                files = [instances_dir() / name / problem.showcase]
            if not files:
                continue
            item = load(files[0])
            rows = []
            for method in problem.all_methods:
                live = Live()
                try:
                    with ticker(f"{name}: {method}", status=live.text):
                        rows.append(_run(item, method, options, live))
                except KeyboardInterrupt:
                    interrupted = True
                    break
                if STOP.is_set():
                    interrupted = True
                    break
            optimum = next((r.objective for r in rows if r.method == "exact" and r.status == "optimal"), None)
            for r in rows:
                value = r.bound if r.method == "bound" else r.objective
                gap = None if optimum is None or value is None else relative_gap(value, optimum)
                table.add_row(name, files[0].name, r.method, _fmt(value), r.objective_unit or "-",
                              "-" if gap is None else f"{100 * gap:.2f} %", f"{r.times['total']:.3f}",
                              _verdict(r))
            table.add_section()
            reports.extend(rows)
    out.print(table)
    _print_declined(reports)
    if interrupted:
        print("coopt: interrupted", file=sys.stderr)
        finish_abandoned(130)
        return 130
    return _exit_status(reports)


# -- parser ----------------------------------------------------------------------------------------


def _solve_options(p: argparse.ArgumentParser, time_limit: float | None) -> None:
    p.add_argument("--time-limit", type=float, default=time_limit, metavar="S",
                   help=f"seconds per exact solve, model building included (default {_fmt(time_limit)})")
    p.add_argument("--gap", type=float, default=1e-6, metavar="G", help="relative MIP gap (default 1e-6)")
    p.add_argument("--threads", type=int, default=1, metavar="N", help="MILP solver threads (default 1)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed for the MILP solver and heuristics")
    p.add_argument("--solver", default="highs", metavar="NAME",
                   help="MILP solver of the exact routes, through Pyomo: highs (default), gurobi "
                        "(pip install gurobipy), scip (pip install pyscipopt), cplex (pip install cplex), "
                        "xpress (pip install xpress), cbc (the cbc executable)")
    p.add_argument("--max-memory", type=float, default=None, metavar="GIB",
                   help=f"stop a model build or heuristic above this resident memory "
                        f"(default {int(100 * DEFAULT_MEMORY_SHARE)} %% of the machine's)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coopt",
        description="Exact models, heuristics and closed-form bounds for ML-system, optical-network "
        "and photonic/chiplet co-design.",
    )
    parser.add_argument("--version", action="version", version=f"coopt {coopt.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="problems, their methods and shipped instances")
    p.add_argument("problem", nargs="?", metavar="PROBLEM", help="show one problem in detail")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("solve", help="solve instance files with the exact route and/or heuristics",
                       description="Solve instance files (paths, or shipped names such as "
                                   "topoopt/0-exact-n6-d2).")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--method", default="exact",
                   help="exact, milp, a heuristic, bound, a comma list, or all (default exact)")
    _solve_options(p, DEFAULT_TIME_LIMIT)
    p.add_argument("--json", metavar="OUT", help="write the reports as a JSON list (- for standard output)")
    p.add_argument("--plot", metavar="OUT.png",
                   help="draw the checked solution as coopt plot does (.png, .pdf or .svg; one file and "
                        "one method)")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("check", help="run the problem's checker on a saved solution or solve report")
    p.add_argument("file", metavar="FILE")
    p.add_argument("solution", nargs="?", metavar="SOLUTION.json",
                   help="a solution object, a list of them, or a coopt solve --json report")
    p.add_argument("--sol", metavar="MODEL.sol",
                   help="a solution another solver found on the model `coopt export` wrote")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("export", help="write the exact model as LP or MPS")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", choices=("lp", "mps"))
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.add_argument("--warm-start", action="store_true",
                   help="build from the problem's warm start (runs its heuristic; may tighten big-Ms)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("validate", help="validate instance files without solving")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("generate", help="write a seeded instance as TOML")
    p.add_argument("problem", metavar="PROBLEM")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=1, help="the problem's scale parameter (see `coopt list`)")
    p.add_argument("-o", "--output", metavar="OUT", help="the file to write (default: standard output)")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("showcase", help="every problem, every method, one small shipped instance")
    p.add_argument("problems", nargs="*", metavar="PROBLEM", help="only these problems (default: all)")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S")
    p.set_defaults(func=cmd_showcase)

    import coopt.commands as plugins

    for info in sorted(pkgutil.iter_modules(plugins.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{plugins.__name__}.{info.name}").register(sub)
    return parser


class StdoutError(OSError):
    """Standard output cannot be written (full, closed, or a pipe whose reader left)."""


class _Stdout:
    """Standard output as the commands see it: a failed write or flush raises :class:`StdoutError`,
    so that ``main`` can tell it from other errors; a closed one (``>&-``) fails on first write."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _fail(self, exc: OSError) -> NoReturn:
        kind = BrokenPipeError if isinstance(exc, BrokenPipeError) else StdoutError
        raise kind(exc.errno, exc.strerror) from None

    def write(self, text: str) -> int:
        if self._stream is None:
            raise StdoutError(errno.EBADF, "it is closed")
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._fail(exc)

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            self._fail(exc)

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass
    sys.stdout = _Stdout(open(os.devnull, "w"))  # noqa: SIM115 (lives until exit)


def main(argv: list[str] | None = None) -> int:
    if sys.stderr is None:  # 2>&-: errors have nowhere to go, but nothing else changes
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (lives until exit)
    stdout = sys.stdout
    if not isinstance(stdout, _Stdout):
        sys.stdout = _Stdout(stdout)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        try:
            code = int(args.func(args) or 0)
            sys.stdout.flush()
            return code
        except CooptError as exc:
            for line in str(exc).splitlines() or [""]:
                print(f"coopt: error: {line}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("coopt: interrupted", file=sys.stderr)
            return 130
    except BrokenPipeError:  # the reader left (| head): stop quietly, as other tools do
        _silence_stdout()
        return 141
    except StdoutError as exc:
        _silence_stdout()
        print(f"coopt: error: cannot write standard output ({exc.strerror})", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"coopt: error: {where}cannot be written or read ({exc.strerror or exc})", file=sys.stderr)
        return 2
    finally:
        if isinstance(sys.stdout, _Stdout) and sys.stdout._stream is stdout:
            sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
