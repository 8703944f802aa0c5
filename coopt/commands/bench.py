"""``coopt bench``: benchmark every method of the chosen problems on instance families and write
``OUT/results.jsonl`` (one line per task, resumable) and ``OUT/report.md`` (tables and plots).

Exit status 1 when any solution failed its checker, a method crashed, or two answers contradict
each other (a heuristic beating a proven optimum, exact methods disagreeing); those are listed
in red here and at the top of the report.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import sys
from pathlib import Path
from typing import Any

from coopt.bench.families import DEFAULT_FAMILIES, FAMILIES
from coopt.commands import leave_solver_threads
from coopt.errors import UsageError
from coopt.limits import StandardStreams


def _families(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    for name in names:
        if name not in FAMILIES:
            raise argparse.ArgumentTypeError(f"unknown family {name!r}; known: {', '.join(FAMILIES)}")
    return names


def cmd_bench(args: argparse.Namespace) -> int:
    from coopt import registry
    from coopt.bench import runner as bench
    from coopt.bench.progress import BarProgress, LineProgress
    from coopt.bench.report import check_readme, update_readme, write_report
    from coopt.console import err
    from coopt.output import output_dir
    from coopt.solvers.pyomo_route import check as check_solver

    for name in args.problems:
        if name not in registry.names():
            raise UsageError(f"unknown problem {name!r}; known: {', '.join(registry.names()) or 'none'}")
    if args.seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
    if args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise UsageError(f"--time-limit must be a finite number of seconds > 0, got {args.time_limit}")
    if args.sizes and min(args.sizes) < 1:
        raise UsageError(f"--sizes must all be >= 1, got {args.sizes}")
    limits = [registry.get(name).max_size for name in args.problems or registry.names()]
    if args.sizes and None not in limits and max(args.sizes) > max(limits):
        raise UsageError(f"--sizes: no chosen problem's generator takes more than {max(limits)}, "
                         f"got {max(args.sizes)}")
    check_solver(args.solver)  # an unknown or missing solver: one line, exit 2, before any work
    out = output_dir(args.out, "--out")
    if args.scheduler and importlib.util.find_spec("distributed") is None:
        raise UsageError("--scheduler needs dask.distributed: pip install 'coopt[dist]'")
    if args.update_readme:
        try:
            check_readme(Path(args.update_readme))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--update-readme: {exc}") from None
    config = bench.BenchConfig(
        problems=list(args.problems),
        families=args.family,
        sizes=tuple(args.sizes) if args.sizes else None,
        seeds=args.seeds,
        time_limit=args.time_limit,
        jobs=args.jobs,
        scheduler=args.scheduler,
        out=out,
        solver=args.solver,
    )
    try:
        rows = bench.read_results(out / bench.RESULTS)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.report_only and not rows:
        raise UsageError(f"--report-only: {out / bench.RESULTS} holds no results to report on")
    if not args.report_only:
        where = f"Dask scheduler {args.scheduler}" if args.scheduler else f"{args.jobs} local worker(s)"
        err.print(
            f"coopt bench: {', '.join(args.problems) or 'all problems'}; families {', '.join(args.family)}; "
            f"{args.seeds} seed(s); time limit {args.time_limit:g} s; MILP solver {args.solver}; {where}; "
            f"results in {out}"
        )
        shown = BarProgress() if err.is_terminal else LineProgress()
        standard = StandardStreams() if args.jobs == 1 and not args.scheduler else None
        try:
            with shown as progress:
                done = bench.run_bench(config, progress=progress)
        except KeyboardInterrupt:  # the finished tasks are in the results file: report on them
            import signal

            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the report short
            if standard is not None:  # a task in this process may have left its output captured
                standard.restore()
            rows = bench.read_results(out / bench.RESULTS)
            if rows:
                write_report(rows, out)
                err.print(f"wrote {out / 'report.md'} ({len(rows)} rows, interrupted)")
            print(f"coopt: interrupted; {len(rows)} finished task(s) kept in {out / bench.RESULTS}",
                  file=sys.stderr)
            leave_solver_threads(130)
            if standard is not None:  # what the interrupted task left half-done (solver threads,
                sys.stdout.flush()  # capture threads) cannot be shut down under: end here
                sys.stderr.flush()
                os._exit(130)
            return 130
        finally:
            if standard is not None:
                standard.close()
        err.print(f"ran {done.ran} task(s), {done.skipped} already done")
        rows = done.rows
    analysis = write_report(rows, out)
    err.print(f"wrote {out / 'report.md'} ({len(rows)} rows)")
    if args.update_readme:
        try:
            update_readme(Path(args.update_readme), analysis)
        except (OSError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        err.print(f"updated the summary table in {args.update_readme}")
    for row in analysis.failures:
        err.print(
            f"[bold red]CHECK FAILED[/] {row['key']} ({row['verdict']}): "
            + "; ".join((row.get("check") or {}).get("violations", [])[:3])
        )
    for conflict in analysis.conflicts:
        err.print(f"[bold red]CONFLICT[/] {conflict}")
    return 1 if analysis.failures or analysis.conflicts else 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bench",
        help="benchmark heuristics against exact optima over instance families",
        description="Run every (instance, method, seed) task of the chosen families; one JSON line per task "
        "in OUT/results.jsonl (a rerun skips finished tasks), then OUT/report.md with tables and plots.",
    )
    p.add_argument("problems", nargs="*", metavar="PROBLEM", help="problems to run (default: all registered)")
    p.add_argument(
        "--family",
        type=_families,
        default=DEFAULT_FAMILIES,
        metavar="NAME[,NAME]",
        help=f"instance families, comma-separated, from {', '.join(FAMILIES)} "
        f"(default: {','.join(DEFAULT_FAMILIES)})",
    )
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        metavar="N",
        help="generator sizes for generated, first sizes for scaling (default: each problem's own)",
    )
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="seeds 0..N-1 per task (default 1)")
    p.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds per exact solve; also the wall-clock cap of a heuristic (default 60)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="local worker processes (default: the number of CPUs)",
    )
    p.add_argument("--solver", default="highs", metavar="NAME",
                   help="MILP solver of every exact route, through Pyomo: highs (default), gurobi, scip, "
                        "cplex, xpress, cbc (a results folder holds one solver)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask distributed scheduler instead")
    p.add_argument(
        "--out", default="bench-out", metavar="DIR", help="results and report directory (default bench-out)"
    )
    p.add_argument("--report-only", action="store_true", help="rebuild the report from OUT/results.jsonl")
    p.add_argument(
        "--update-readme",
        nargs="?",
        const="README.md",
        metavar="README",
        help="regenerate the summary table between the bench markers (default README.md)",
    )
    p.set_defaults(func=cmd_bench)
