"""Research runs on the pipeline problem: the relaxations and restrictions no registered method
uses, beside the product's own exact family (benchmarks/figures/pipeline_exact.py, whose rows and ``--only``
/ ``--sizes`` filters these share).

``--counts``: Model N (:mod:`research.pipeline.counts`) beside Model P where it applies.
``--crossing``: the dual bound of the crossing relaxation X(S) of
:mod:`research.pipeline.crossing_relaxation` on the stage with the largest memory fill (or
``--window-stage`` / ``--token-stages``); with ``--patterns``, first a schedule from Model P with
stage s's entries fixed to a repeating pattern the crossing table admits
(:func:`pattern_schedule`), whose makespan, where shorter, is then X(S)'s horizon. ``--triple``:
the optimum of the triple relaxation T(s) of :mod:`research.pipeline.triple` (its dynamic program)
on every token stage (a cap of at least three micro-batches), the warm start as its horizon, and
with ``--realize`` Model P with F(s, j) fixed to the DP's entries (``--time-limit`` seconds), a
schedule if those entries admit one; with ``--agree``, of T_sigma(s) (consecutive triples agree
on their shared pair's crossing).

``--fix-entries LO HI`` (:func:`fixed_middle`): Model P with stage s's entries F(s, j),
LO <= j < HI, fixed to those of the route's warm start and the others free, below ``--upper``
(default: the warm start minus one unit); ``--then-window W``: then below the schedule found,
every entry within W of its entries. ``--shift`` fixes only the offsets between those entries
(the stretch moves freely), and ``--sweep-patterns`` puts each admitted pattern of the shortest
admitted period (:func:`~coopt.problems.pipeline.pattern.periodic_patterns`) on them in turn, one
build for all, one row per pattern (``--sweep-only D0,D1,D2 ...``: only those).

Run from the top of the checkout:

    PYTHONPATH=. python -m research.pipeline.bench --sizes 8 12 16 --counts --time-limit 60
    PYTHONPATH=. python -m research.pipeline.bench --sizes 8 12 16 --crossing --time-limit 60
    PYTHONPATH=. python -m research.pipeline.bench --sizes 16 --only "seed 0" --crossing --patterns \
        --token-stages 2 10 --time-limit 200
    PYTHONPATH=. python -m research.pipeline.bench --sizes 16 --only "seed 0" --fix-entries 3 21 \
        --then-window 3 --time-limit 300
    PYTHONPATH=. python -m research.pipeline.bench --sizes 16 --only "seed 0" --fix-entries 6 21 --shift \
        --sweep-patterns --upper 677 --time-limit 40
    PYTHONPATH=. python -m research.pipeline.bench --sizes 16 --only "seed 0" --triple --window-stage 2 \
        --realize
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import Any

import pyomo.environ as pyo

from benchmarks.figures.pipeline_exact import _stage, family, show
from coopt.problem import SolveOptions
from coopt.problems.pipeline import crossing, pattern
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import _room, lower_bound, releases
from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.milp import build, extract
from coopt.problems.pipeline.pattern import periodic_patterns
from coopt.problems.pipeline.warm import incumbent
from coopt.solvers.highs import solve_model
from research.pipeline import counts, triple
from research.pipeline.crossing_relaxation import crossing_bound


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", default="", help="rows whose name contains this")
    parser.add_argument("--sizes", type=int, nargs="*", help="generator sizes instead of the default rows")
    parser.add_argument("--counts", action="store_true", help="Model N where it applies")
    parser.add_argument("--window-stage", type=int, help="the token stage s")
    parser.add_argument("--crossing", action="store_true", help="the crossing relaxation X(S)")
    parser.add_argument("--patterns", action="store_true", help="with --crossing, the pattern schedule first")
    parser.add_argument("--pattern-limit", type=float, default=15.0, help="seconds per pattern")
    parser.add_argument("--token-stages", type=int, nargs="*", help="with --crossing, X(S)'s stages S")
    fixed_middle_flags(parser)
    parser.add_argument("--triple", action="store_true", help="the triple relaxation T(s)")
    parser.add_argument("--realize", action="store_true", help="with --triple, Model P at the DP's entries")
    parser.add_argument("--agree", action="store_true",
                        help="with --triple, T_sigma(s): consecutive triples agree on their shared crossing")
    args = parser.parse_args(argv)
    if args.fix_entries:
        return fixed_middle(args)
    if args.crossing:
        return crossings(args)
    if args.triple:
        return triples(args)
    if args.counts:
        return model_n(args)
    parser.print_help()
    return 2


def model_n(args: argparse.Namespace) -> int:
    """The --counts table: Model N where it applies (horizon and start: the warm start)."""
    options = SolveOptions(time_limit=args.time_limit, gap=1e-6, threads=1)
    print("| instance | model | status | optimum | bound | dual bound (bound.py) | nodes | build s "
          "| hand-off s | solve s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, instance in family(tuple(args.sizes or ())):
        if args.only not in name or not counts.applies(instance):
            continue
        bound = lower_bound(instance)
        started = time.perf_counter()
        best, start = incumbent(instance)
        model = counts.build_counts(instance, counts.horizon_slots(instance, best), bound, start)
        built = time.perf_counter() - started
        result = solve_model(model, options)
        solution = counts.extract_counts(model, instance) if result.objective is not None else None
        assert solution is None or not pm.check(instance, solution), "Model N's schedule is rejected"
        print(f"| {name} | N | {result.status} | {show(result.objective)} | {show(result.bound)} | "
              f"{show(bound)} | {result.nodes if result.nodes is not None else '-'} | {built:.2f} | "
              f"{result.handoff:.2f} | {result.solve:.2f} |", flush=True)
    return 0


def _warm_built(instance: Any, upper: float) -> Any:
    """Model P below ``upper`` built as the route builds it (the warm start's cut and horizon),
    with the warm start's values not handed to HiGHS: its entries are not the restriction's."""
    model = build(instance, upper=upper, incumbent=incumbent(instance)[1])
    model.warm_start = False
    return model


def pattern_schedule(instance: Any, s: int, upper: float, time_limit: float, periods: int = 3
                     ) -> tuple[float, tuple[int, ...] | None, int]:
    """The primal side of the crossing relaxation: Model P (horizon ``upper``) with the starts of
    F(s, j) fixed to the release of F(s, 0) plus a repeating pattern of
    :func:`~coopt.problems.pipeline.pattern.periodic_patterns`,
    periods from the shortest admitted one on (``periods`` of them), each pattern solved for at
    most ``time_limit`` s; the first schedule the checker accepts ends the search. Returns (its
    makespan or ``upper``, the pattern, patterns tried)."""
    q = time_unit(instance)
    model = _warm_built(instance, upper)
    u = model.objective_unit
    first = releases(instance)[("F", s, 0)]
    low = round((crossing.round_trip(instance, s) + instance.t_w(s)) / q)
    tried = 0
    for period in range(low, low + periods):
        for d in periodic_patterns(instance, s, period):
            tried += 1
            f = first
            for j in range(instance.microbatches):
                model.S[("F", s, j)].setlb(f / u)
                model.S[("F", s, j)].setub(f / u)
                f += d[j % len(d)] * q
            result = solve_model(model, SolveOptions(time_limit=time_limit, gap=1e-9, threads=1))
            if result.objective is not None:
                solution = extract(model, instance)
                assert not pm.check(instance, solution), "a pattern schedule is rejected"
                return pm.objective(instance, solution), d, tried
    return upper, None, tried


def crossings(args: argparse.Namespace) -> int:
    """The --crossing table: X(S)'s dual bound, best value found, status and CPU time (S: the
    --token-stages, else the patterns' stage s); with --patterns first the pattern schedule,
    whose makespan (if shorter) is X(S)'s horizon."""
    print("| instance | incumbent | pattern schedule | bound.py | S | crossing bound | crossing value "
          "| status | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, instance in family(tuple(args.sizes or ())):
        if args.only not in name or not crossing.applies(instance):
            continue
        best, _ = incumbent(instance)
        s = _stage(instance, args)
        found_by = "-"
        if args.patterns and _room(instance, s) <= 3:
            started = time.process_time()
            value, d, tried = pattern_schedule(instance, s, best, args.pattern_limit)
            found_by = (f"{value:g} ({','.join(map(str, d))}; {tried} patterns, "
                        f"{time.process_time() - started:.0f} CPU s)" if d else f"- ({tried} patterns)")
            best = min(best, value)
        started = time.process_time()
        stages = args.token_stages or [s]
        found, value, status = crossing_bound(instance, stages, best, args.time_limit)
        print(f"| {name} | {incumbent(instance)[0]:g} | {found_by} | {lower_bound(instance):g} | "
              f"{', '.join(map(str, stages))} | "
              f"{found:.2f} | {'-' if value is None else f'{value:.6g}'} | {status} | "
              f"{time.process_time() - started:.1f} |", flush=True)
    return 0


def triples(args: argparse.Namespace) -> int:
    """The --triple table: T(s)'s optimum (the DP), its CPU time, and with --realize Model P's
    schedule with F(s, j) fixed to the DP's entries."""
    print("| instance | incumbent | bound.py | s | T(s) | CPU s | Model P at the DP's entries |")
    print("|---|---|---|---|---|---|---|")
    for name, instance in family(tuple(args.sizes or ())):
        if args.only not in name or not triple.applies(instance):
            continue
        best, _ = incumbent(instance)
        stages = [args.window_stage] if args.window_stage is not None else triple.token_stages(instance)
        for s in stages:
            started = time.process_time()
            found, entries = triple.dp_solve(instance, s, best, agree=args.agree)
            spent = time.process_time() - started
            realized = "-"
            if args.realize and entries:  # every entry fixed, at the incumbent's horizon
                result, solution = _restricted(instance, s, dict(enumerate(entries)), best,
                                               range(len(entries)), None, args.time_limit)
                realized = result.status
                if solution is not None:
                    realized = f"{result.status} {pm.objective(instance, solution):g}"
            print(f"| {name} | {best:g} | {lower_bound(instance):g} | {s} | {found:g} | {spent:.1f} | "
                  f"{realized} |", flush=True)
    return 0


def fixed_middle_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fix-entries", type=int, nargs=2, metavar=("LO", "HI"),
                        help="Model P with F(s, j) of the warm start fixed for LO <= j < HI instead")
    parser.add_argument("--upper", type=float,
                        help="with --fix-entries, the horizon (default: warm start - 1)")
    parser.add_argument("--then-window", type=float, metavar="W",
                        help="with --fix-entries, then every entry within W of the schedule found")
    parser.add_argument("--shift", action="store_true",
                        help="with --fix-entries, the fixed entries keep their offsets but shift together")
    parser.add_argument("--sweep-patterns", action="store_true",
                        help="with --fix-entries and --shift, the offsets of every admitted pattern instead")
    parser.add_argument("--sweep-only", nargs="+", metavar="D0,D1,D2", default=None,
                        help="with --sweep-patterns, only these admitted patterns (e.g. 6,31,23)")


def _entries(solution: dict, s: int) -> dict[int, float]:
    return {x["microbatch"]: x["start"] for x in solution["passes"] if x["kind"] == "F" and x["stage"] == s}


def _restricted(instance: Any, s: int, around: dict[int, float], upper: float, fixed: range,
                window: float | None, time_limit: float, shift: bool = False) -> tuple[Any, dict | None]:
    """Model P below ``upper`` with F(s, j) at ``around[j]`` for j in ``fixed`` (with ``shift``,
    F(s, j) - F(s, fixed[0]) = around[j] - around[fixed[0]] instead: the offsets fixed, the
    stretch free to move) and, with ``window``, within ``window`` of it for the others; (HiGHS'
    result, the checked schedule)."""
    model = _warm_built(instance, upper)
    u = model.objective_unit
    for j, t in around.items():
        width = (None if shift else 0.0) if j in fixed else window
        if width is not None:
            model.S[("F", s, j)].setlb(max(0.0, t - width) / u)
            model.S[("F", s, j)].setub((t + width) / u)
    if shift and len(fixed) > 1:
        first = ("F", s, fixed[0])
        model.offsets = pyo.Constraint(fixed[1:], rule=lambda mdl, j: mdl.S[("F", s, j)] - mdl.S[first]
                                       == (around[j] - around[fixed[0]]) / u)
    result = solve_model(model, SolveOptions(time_limit=time_limit, gap=1e-9, threads=1))
    if result.objective is None:
        return result, None
    solution = extract(model, instance)
    assert not pm.check(instance, solution), "a restricted Model P schedule is rejected"
    return result, solution


def _pattern_sweep(instance: Any, s: int, fixed: range, upper: float, time_limit: float,
                   only: set[tuple[int, ...]] | None = None
                   ) -> Iterator[tuple[tuple[int, ...], Any, dict | None]]:
    """Model P below ``upper`` with F(s, j), j in ``fixed``, at the offsets of each pattern of
    :func:`~coopt.problems.pipeline.pattern.periodic_patterns` (the shortest admitted period),
    d_0 between F(s, fixed[0]) and the next, shifted freely, the other entries free: one build,
    the offsets as mutable parameters; (pattern, HiGHS' result, the checked schedule) per pattern
    (with ``only``, per pattern of ``only`` among them)."""
    q = time_unit(instance)
    low = round((crossing.round_trip(instance, s) + instance.t_w(s)) / q)
    found = next(found for found in ([*periodic_patterns(instance, s, period)]
                                     for period in range(low, low + pattern.PERIOD_REACH)) if found)
    model = _warm_built(instance, upper)
    u = model.objective_unit
    first = ("F", s, fixed[0])
    model.offset = pyo.Param(fixed[1:], mutable=True, initialize=0.0)
    model.offsets = pyo.Constraint(fixed[1:], rule=lambda mdl, j: mdl.S[("F", s, j)] - mdl.S[first]
                                   == mdl.offset[j])
    for d in found:
        if only is not None and d not in only:
            continue
        for h, j in enumerate(fixed[1:]):
            model.offset[j] = sum(d[g % len(d)] for g in range(h + 1)) * q / u
        result = solve_model(model, SolveOptions(time_limit=time_limit, gap=1e-9, threads=1))
        solution = None
        if result.objective is not None:
            solution = extract(model, instance)
            assert not pm.check(instance, solution), "a restricted Model P schedule is rejected"
        yield d, result, solution


def _row(name: str, instance: Any, s: int, label: str, upper: float, result: Any, solution: dict | None,
         started: float) -> None:
    """One row of the --fix-entries table."""
    value, found = "-", "-"
    if solution is not None:
        value = f"{pm.objective(instance, solution):g}"
        found = ", ".join(f"{t:g}" for _, t in sorted(_entries(solution, s).items()))
    print(f"| {name} | {s} | {label} | {upper:g} | {result.status} | {value} | "
          f"{result.nodes if result.nodes is not None else '-'} | "
          f"{time.process_time() - started:.0f} | {found} |", flush=True)


def fixed_middle(args: argparse.Namespace) -> int:
    """The --fix-entries table: Model P (horizon ``--upper``, else the warm start's makespan
    minus one unit) with the starts of F(s, j), s the pattern stage, fixed for LO <= j < HI to
    those of the route's warm start (:func:`~coopt.problems.pipeline.warm.incumbent`, the
    pattern schedule where one applies), the other entries free; with ``--shift`` only their
    offsets are fixed (the stretch may move), with ``--sweep-patterns`` too the offsets of each
    admitted pattern instead of the warm start's (one row per pattern); with ``--then-window W``,
    where that finds a schedule, Model P below it with every entry within W of that schedule's.
    A restriction of Model P: a schedule it finds is a schedule (checked here); "infeasible" says
    only that no schedule with such entries beats the horizon. Prints status, value, nodes, CPU
    s and the entries of stage s of the schedule found."""
    print("| instance | s | entries | horizon | status | value | nodes | CPU s | entries of stage s |")
    print("|---|---|---|---|---|---|---|---|---|")
    lo, hi = args.fix_entries
    for name, instance in family(tuple(args.sizes or ())):
        s = pattern.token_stage(instance)
        if args.only not in name or s is None:
            continue
        q = time_unit(instance)
        started = time.process_time()
        best, start = incumbent(instance)
        upper = args.upper if args.upper is not None else best - q

        if args.sweep_patterns:
            only = ({tuple(int(x) for x in d.split(",")) for d in args.sweep_only}
                    if args.sweep_only else None)
            for d, result, solution in _pattern_sweep(instance, s, range(lo, hi), upper, args.time_limit,
                                                         only):
                _row(name, instance, s, f"{lo}..{hi - 1} on ({', '.join(map(str, d))}), shifted", upper,
                     result, solution, started)
                started = time.process_time()
            continue
        steps = [(f"{lo}..{hi - 1} {'offsets' if args.shift else 'fixed'}", range(lo, hi), None)]
        while steps:
            label, fixed, window = steps.pop(0)
            result, solution = _restricted(instance, s, _entries(start, s), upper, fixed, window,
                                           args.time_limit, args.shift and window is None)
            _row(name, instance, s, label, upper, result, solution, started)
            if solution is not None and args.then_window is not None and window is None:
                start, upper = solution, pm.objective(instance, solution) - q
                steps.append((f"all within {args.then_window:g}", range(0), args.then_window))
                started = time.process_time()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
