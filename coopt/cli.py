"""The ``coopt`` command: parse, dispatch, print. The work lives in the library.

Exit status: 0 success; 1 a solution failed its checker or a method errored; 2 bad input
(a one-line message naming the file, the field and what was expected; nothing written).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.table import Table

from coopt import registry
from coopt.console import out
from coopt.errors import CooptError, UsageError
from coopt.instance import Loaded, load, to_toml, write_atomic
from coopt.output import dumps
from coopt.problem import SolveOptions, relative_gap
from coopt.progress import ticker
from coopt.shipped import instances_dir, shipped, small_shipped


def _fmt(value: Any, digits: int = 6) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _options(args: argparse.Namespace) -> SolveOptions:
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError(f"--time-limit must be > 0 seconds, got {args.time_limit}")
    if not 0 <= args.gap < 1:
        raise UsageError(f"--gap must be in [0, 1), got {args.gap}")
    if args.threads < 0:
        raise UsageError(f"--threads must be >= 0, got {args.threads}")
    return SolveOptions(time_limit=args.time_limit, gap=args.gap, threads=args.threads, seed=args.seed)


def _methods(loaded: Loaded, method: str) -> list[str]:
    problem = loaded.problem
    if method == "all":
        return problem.methods
    wanted = method.split(",")
    for m in wanted:
        if m not in problem.methods:
            raise UsageError(
                f"{loaded.path}: problem {problem.name!r} has no method {m!r}; "
                f"it has {', '.join(problem.methods)} (or 'all')"
            )
    return wanted


# -- commands --------------------------------------------------------------------------------


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
    if args.problem:
        problem = registry_get(args.problem)
        out.print(f"[bold]{problem.name}[/] ({problem.sense}): {problem.summary}")
        out.print(f"source: {problem.source}")
        out.print(f"exact methods: {', '.join(problem.exact_methods) or '-'}")
        out.print(f"heuristics: {', '.join(sorted(problem.heuristics)) or '-'}")
        out.print(f"generator: coopt generate {problem.name} --seed N --size K  (K = {problem.size_doc})")
        out.print("shipped instances:")
        for path in shipped(problem.name):
            out.print(f"  {_relative(path)}")
        return 0
    table = Table(title="coopt problems (coopt list PROBLEM for details)")
    for col in ("problem", "sense", "exact", "heuristics", "shipped instances"):
        table.add_column(col)
    for name, problem in registry.problems().items():
        table.add_row(
            name,
            problem.sense,
            ", ".join(problem.exact_methods) or "-",
            ", ".join(sorted(problem.heuristics)) or "-",
            _tiers(shipped(name)),
        )
    out.print(table)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    loaded = [load(path) for path in args.files]
    for item in loaded:
        out.print(f"ok  {item.path}  ({item.problem.name}, sha256 {item.sha256[:12]})")
    return 0


def cmd_solve(args: argparse.Namespace) -> int:
    options = _options(args)
    loaded = [load(path) for path in args.files]  # validate everything before solving anything
    plan = [(item, m) for item in loaded for m in _methods(item, args.method)]
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    reports = []
    for item, method in plan:
        with ticker(f"{item.problem.name}: {method} on {Path(item.path).name}"):
            report = _run(item, method, options)
        reports.append(report)
    _print_reports(reports)
    if args.json:
        write_atomic(args.json, dumps([r.to_json() for r in reports], indent=2) + "\n")
        out.print(f"wrote {args.json}")
    return _exit_status(reports)


def _run(item: Loaded, method: str, options: SolveOptions):
    from coopt.run import run

    return run(item.problem, item.instance, method, options, path=item.path, sha256=item.sha256)


def _exit_status(reports) -> int:
    bad = [r for r in reports if r.status == "error" or (r.solution is not None and not r.check["feasible"])]
    for r in bad:
        print(
            f"coopt: CHECK FAILED for {r.problem} {r.method} on {r.instance}: "
            + "; ".join(r.check["violations"][:3]),
            file=sys.stderr,
        )
    return 1 if bad else 0


def _print_reports(reports) -> None:
    table = Table()
    for col in ("instance", "method", "status", "objective", "bound", "gap", "feasible", "seconds"):
        table.add_column(col, justify="right" if col in ("objective", "bound", "gap", "seconds") else "left")
    for r in reports:
        table.add_row(
            Path(r.instance).name,
            r.method,
            r.status,
            _fmt(r.objective),
            _fmt(r.bound),
            _fmt(r.gap, 3),
            _verdict(r),
            f"{r.times['total']:.3f}",
        )
    out.print(table)
    _print_declined(reports)


def _print_declined(reports) -> None:
    """Say why each row without a solution has none (declined, time limit, error)."""
    declined = [r for r in reports if r.solution is None and r.check["violations"]]
    if declined:
        out.print("Rows without a solution, and why:")
    for r in declined:
        out.print(f"  {r.problem} {r.method} on {Path(r.instance).name}: {r.check['violations'][0]}")


def _verdict(report) -> str:
    """The checker's word on a solution; '-' where the method returned none."""
    if report.solution is None:
        return "-"
    return "yes" if report.check["feasible"] else "[bold red]NO[/]"


def cmd_check(args: argparse.Namespace) -> int:
    from coopt.run import judge

    item = load(args.file)
    try:
        data = json.loads(Path(args.solution).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{args.solution}: no such file") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{args.solution}: is not valid JSON ({exc})") from None
    entries = data if isinstance(data, list) else [data]
    solutions = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise UsageError(f"{args.solution}: entry {i}: expected a JSON object")
        if "solution" in entry and "method" in entry:  # a solve report
            if entry.get("problem") not in (None, item.problem.name):
                continue
            if entry.get("solution") is None:
                continue
            solutions.append((entry.get("method", f"#{i}"), entry["solution"]))
        else:
            solutions.append((f"#{i}", entry))
    if not solutions:
        raise UsageError(f"{args.solution}: holds no solution for problem {item.problem.name!r}")
    failed = 0
    for label, solution in solutions:
        verdict = judge(item.problem, item.instance, solution)
        claimed = solution.get("objective")
        agrees = (
            claimed is not None
            and verdict["objective_recomputed"] is not None
            and relative_gap(float(claimed), verdict["objective_recomputed"]) <= 1e-6
        )
        ok = verdict["feasible"] and agrees
        failed += not ok
        out.print(
            f"{'feasible' if verdict['feasible'] else 'INFEASIBLE'}  {label}  "
            f"objective claimed {_fmt(claimed)} recomputed {_fmt(verdict['objective_recomputed'])}"
            + ("" if agrees else "  [bold red](objective mismatch)[/]")
        )
        for v in verdict["violations"]:
            out.print(f"    {v}")
    return 1 if failed else 0


def cmd_export(args: argparse.Namespace) -> int:
    from coopt.solvers.highs import export

    item = load(args.file)
    if item.problem.build is None:
        raise UsageError(f"{args.file}: problem {item.problem.name!r} has no MILP to export")
    fmt = args.format or Path(args.output).suffix.lstrip(".").lower()
    if fmt not in ("lp", "mps"):
        raise UsageError(f"--format must be lp or mps, got {fmt!r}")
    target = Path(args.output)
    target.parent.mkdir(parents=True, exist_ok=True)
    model = item.problem.build(item.instance)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="coopt-export-") as scratch:
        tmp = Path(scratch) / f"model.{fmt}"
        export(model, tmp)
        tmp.replace(target)
    size = f"{model.nvariables()} variables, {model.nconstraints()} constraints"
    out.print(f"wrote {target} ({fmt.upper()}, {size})")
    return 0


def registry_get(name: str):
    """The registered problem ``name``, or a UsageError listing the known ones."""
    try:
        return registry.get(name)
    except KeyError:
        raise UsageError(f"unknown problem {name!r}; known: {', '.join(registry.names())}") from None


def cmd_generate(args: argparse.Namespace) -> int:
    problem = registry_get(args.problem)
    if args.size < 1:
        raise UsageError(f"--size must be >= 1, got {args.size}")
    instance = problem.generate(args.seed, args.size)
    note = f"generated: seed {args.seed}, {problem.size_doc} {args.size}"
    text = to_toml(problem, instance, description=note)
    if args.output:
        write_atomic(args.output, text)
        out.print(f"wrote {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_showcase(args: argparse.Namespace) -> int:
    """Solve one small shipped instance of every problem with every method."""
    options = SolveOptions(time_limit=args.time_limit, seed=0, threads=1)
    table = Table(title="coopt showcase: every problem, every method, one small shipped instance")
    for col in ("problem", "instance", "method", "objective", "gap to exact", "seconds", "feasible"):
        table.add_column(col, justify="right" if col in ("objective", "gap to exact", "seconds") else "left")
    reports = []
    for name in args.problems:
        registry_get(name)
    for name, problem in registry.problems().items():
        if args.problems and name not in args.problems:
            continue
        files = small_shipped(name) or shipped(name)
        if problem.showcase:
            files = [instances_dir() / name / problem.showcase]
        if not files:
            continue
        item = load(files[0])
        rows = []
        for method in problem.methods:
            with ticker(f"{name}: {method}"):
                rows.append(_run(item, method, options))
        optimum = next((r.objective for r in rows if r.method == "exact" and r.status == "optimal"), None)
        for r in rows:
            gap = None if optimum is None or r.objective is None else relative_gap(r.objective, optimum)
            table.add_row(
                name,
                files[0].name,
                r.method,
                _fmt(r.objective),
                "-" if gap is None else f"{100 * gap:.2f} %",
                f"{r.times['total']:.3f}",
                _verdict(r),
            )
        table.add_section()
        reports.extend(rows)
    out.print(table)
    _print_declined(reports)
    return _exit_status(reports)


# -- parser ----------------------------------------------------------------------------------


def _solve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--time-limit", type=float, default=None, metavar="S", help="seconds per exact solve")
    p.add_argument("--gap", type=float, default=1e-6, metavar="G", help="relative MIP gap (default 1e-6)")
    p.add_argument("--threads", type=int, default=1, metavar="N", help="HiGHS threads (default 1)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed for HiGHS and heuristics")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coopt",
        description="Exact models, heuristics and closed-form bounds for ML-system, optical-network "
        "and photonic/chiplet co-design.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("list", help="problems, their methods and shipped instances")
    p.add_argument("problem", nargs="?", metavar="PROBLEM", help="show one problem in detail")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("solve", help="solve instance files with the exact route and/or heuristics")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--method", default="exact", help="exact, milp, a heuristic, a comma list, or all")
    _solve_options(p)
    p.add_argument("--json", metavar="OUT", help="write the reports as a JSON list")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("check", help="run the problem's checker on a saved solution or solve report")
    p.add_argument("file", metavar="FILE")
    p.add_argument("solution", metavar="SOLUTION.json")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("export", help="write the exact model as LP or MPS")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", choices=("lp", "mps"))
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("validate", help="validate instance files without solving")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("generate", help="write a seeded instance as TOML")
    p.add_argument("problem", metavar="PROBLEM")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=1, help="the problem's scale parameter (see `coopt list`)")
    p.add_argument("-o", "--output", metavar="OUT")
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except CooptError as exc:
        print(f"coopt: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("coopt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
