"""The exact family of the pipeline problem: Model P's and Model S's status, optimum, bound, nodes, times.

Rows: every shipped ``0-*`` and ``1-*`` instance, the generator at sizes 2, 3, 4 (seeds 0-2, the
default ``coopt bench`` family), and research instance I1 (p = 4, m = 8, unit times, a = 2 GB,
a_W = 1, a_c = 0.5, T_R = 1) with recompute at caps 4 / 5 / 6 GB, whose proven optima an independent
model gives as 33 / 30 / 29 under FIFO (issue 13); then Model T on issue 13's overtaking instance.
Each row runs Model P (method ``milp``) and, where it applies, Model S (method ``exact``, CP-SAT;
its nodes are CP-SAT's branches, its first bound none). Build, hand-off and solve times are reported
apart (the runner measures them); HiGHS runs on one thread. "first bound" is the first dual bound
HiGHS reports (its root, or the presolved bound when the root does not finish), "dual bound" the
bound of :mod:`coopt.problems.pipeline.bound` alone (``--method bound``). Issue 20's rows:
``--sizes 8 12 16`` (the generator, seeds 0-2). ``--windows 0 1 2 3`` prints, instead of the
solves, the dual bound of the window relaxation R(s, s + k) of
:mod:`coopt.problems.pipeline.window` for each k, s the stage with the largest memory fill
(``--window-stage`` overrides it), each given ``--time-limit`` seconds. ``--crossing`` prints
instead the dual bound of the crossing relaxation X(S) of
:mod:`coopt.problems.pipeline.crossing` on the same stage (or ``--token-stages``); with
``--patterns``, first a schedule from Model P with stage s's entries fixed to a repeating pattern
the crossing table admits (:func:`pattern_schedule`), whose makespan, where shorter, is then
X(S)'s horizon. ``--triple`` prints instead the optimum of the triple relaxation T(s) of
:mod:`coopt.problems.pipeline.triple` (its dynamic program) on every token stage (a cap of at
least three micro-batches), the incumbent as its horizon, and with ``--realize`` Model P with
F(s, j) fixed to the DP's entries (``--time-limit`` seconds), a schedule if those entries admit one;
with ``--agree``, of T_sigma(s) (consecutive triples agree on their shared pair's crossing).

    python benchmarks/pipeline_exact.py [--time-limit 60] [--only SUBSTRING]
    python benchmarks/pipeline_exact.py --sizes 8 12 16 --windows 0 1 2 3 --time-limit 10
    python benchmarks/pipeline_exact.py --sizes 8 12 16 --crossing --time-limit 60
    python benchmarks/pipeline_exact.py --sizes 16 --only "seed 0" --crossing --patterns --time-limit 60
    python benchmarks/pipeline_exact.py --sizes 16 --only "seed 0" --crossing --patterns \
        --token-stages 2 10 --time-limit 200
    python benchmarks/pipeline_exact.py --sizes 16 --only "seed 0" --fix-entries 3 21 --then-window 3 \
        --time-limit 300
    python benchmarks/pipeline_exact.py --sizes 16 --only "seed 0" --fix-entries 6 21 --shift \
        --sweep-patterns --upper 677 --time-limit 40
    python benchmarks/pipeline_exact.py --sizes 16 --only "seed 0" --triple --window-stage 2 --realize
    python benchmarks/pipeline_exact.py --sizes 16 --only "seed 0" --triple --window-stage 2 --agree

``--fix-entries LO HI`` (issue 20, sixth round, :func:`fixed_middle`): Model P with stage s's
entries F(s, j), LO <= j < HI, fixed to those of the route's warm start and the others free,
below ``--upper`` (default: the warm start minus one unit); ``--then-window W``: then below the
schedule found, every entry within W of its entries. Seventh round: ``--shift`` fixes only the
offsets between those entries (the stretch moves freely), and ``--sweep-patterns`` puts each
admitted pattern of the shortest admitted period (:func:`periodic_patterns`) on them in turn,
one build for all, one row per pattern.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import Any

import pyomo.environ as pyo

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM, counts, crossing, pattern, triple, window
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import _fill, _room, lower_bound, releases
from coopt.problems.pipeline.milp import build, extract, incumbent
from coopt.problems.pipeline.model import GB
from coopt.problems.pipeline.pattern import periodic_patterns
from coopt.problems.pipeline.timeindexed import build_time_indexed
from coopt.run import run
from coopt.shipped import shipped
from coopt.solvers.highs import solve_model


def i1(cap: float | None, *, recompute: bool = True, offload: bool = False, p: int = 4, m: int = 8
       ) -> pm.Instance:
    """Research instance I1 (research-pipeline-memory.md b.5) with a uniform cap (GB)."""
    return pm.Instance(
        stages=p, microbatches=m, forward_s=(1.0,) * p, backward_s=(1.0,) * p, weight_s=(1.0,) * p,
        activation_bytes=(2 * GB,) * p, weight_grad_bytes=(GB,) * p,
        memory_cap_bytes=None if cap is None else (cap * GB,) * p,
        allow_recompute=recompute, recompute_s=(1.0,) * p if recompute else (),
        checkpoint_bytes=(0.5 * GB,) * p if recompute else (),
        allow_offload=offload, offload_bytes=(2 * GB,) * p if offload else (),
        d2h_s=(1.0,) * p if offload else (), h2d_s=(1.0,) * p if offload else (),
    )


def family(sizes: tuple[int, ...] | None = None) -> Iterator[tuple[str, Any]]:
    """The shipped files and I1 by default; with ``sizes``, the generator at those sizes only."""
    if sizes:
        for size in sizes:
            for seed in range(3):
                yield f"generated size {size} seed {seed}", PROBLEM.generate(seed, size)
        return
    for path in shipped("pipeline"):
        if path.name.startswith("2-"):
            continue
        yield path.stem, load(path).instance
    for size in PROBLEM.sizes:
        for seed in range(3):
            yield f"generated size {size} seed {seed}", PROBLEM.generate(seed, size)
    for cap in (4.0, 5.0, 6.0):
        yield f"I1 keep+recompute cap {cap:g}", i1(cap)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", default="", help="rows whose name contains this")
    parser.add_argument("--sizes", type=int, nargs="*", help="generator sizes instead of the default rows")
    parser.add_argument("--counts", action="store_true", help="also Model N where it applies")
    parser.add_argument("--windows", type=int, nargs="*", help="window sizes k of R(s, s + k) instead")
    parser.add_argument("--window-stage", type=int, help="the window's (or token) stage s")
    parser.add_argument("--crossing", action="store_true", help="the crossing relaxation X(S) instead")
    parser.add_argument("--patterns", action="store_true", help="with --crossing, the pattern schedule first")
    parser.add_argument("--pattern-limit", type=float, default=15.0, help="seconds per pattern")
    parser.add_argument("--token-stages", type=int, nargs="*", help="with --crossing, X(S)'s stages S")
    fixed_middle_flags(parser)
    parser.add_argument("--triple", action="store_true", help="the triple relaxation T(s) instead")
    parser.add_argument("--realize", action="store_true", help="with --triple, Model P at the DP's entries")
    parser.add_argument("--agree", action="store_true",
                        help="with --triple, T_sigma(s): consecutive triples agree on their shared crossing")
    args = parser.parse_args(argv)
    if args.fix_entries:
        return fixed_middle(args)
    if args.windows:
        return windows(args)
    if args.crossing:
        return crossings(args)
    if args.triple:
        return triples(args)
    options = SolveOptions(time_limit=args.time_limit, gap=1e-6, threads=1)
    print("| instance | model | status | optimum | bound | first bound | dual bound (bound.py) | nodes "
          "| build s | hand-off s | solve s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, instance in family(tuple(args.sizes or ())):
        if args.only not in name:
            continue
        def show(x: float | None) -> str:
            return "-" if x is None else f"{x:.6g}"

        bound = lower_bound(instance)
        # Model P is method milp everywhere; where Model S applies it is method exact (CP-SAT)
        for label, method in (("P", "milp"), ("S", "exact")):
            if method == "exact" and not PROBLEM.runs_exact(instance):
                continue  # exact would run Model P again
            report = run(PROBLEM, instance, method, options)
            t = report.times
            first = next((b for _, _, b in report.trace if b is not None), None)  # HiGHS' first bound
            print(f"| {name} | {label} | {report.status} | {show(report.objective)} | {show(report.bound)} | "
                  f"{show(first)} | {show(bound)} | "
                  f"{report.nodes if report.nodes is not None else '-'} | {t['build']:.2f} | "
                  f"{t['handoff']:.2f} | {t['solve']:.2f} |", flush=True)
        if args.counts and counts.applies(instance):
            started = time.perf_counter()
            best, start = incumbent(instance)
            model = counts.build_counts(instance, counts.horizon_slots(instance, best), bound, start)
            built = time.perf_counter() - started
            result = solve_model(model, options)
            solution = counts.extract_counts(model, instance) if result.objective is not None else None
            assert solution is None or not pm.check(instance, solution), "Model N's schedule is rejected"
            print(f"| {name} | N | {result.status} | {show(result.objective)} | {show(result.bound)} | - | "
                  f"{show(bound)} | {result.nodes if result.nodes is not None else '-'} | "
                  f"{built:.2f} | "
                  f"{result.handoff:.2f} | {result.solve:.2f} |", flush=True)
    if not args.sizes and ("overtake" in args.only or not args.only):
        overtake = next(i for n, i in family() if "overtake" in n)
        result = solve_model(build_time_indexed(overtake, 23), options)
        print(f"\nModel T (no FIFO, 23 slots) on 0-p3m3-offload-overtake: {result.status} "
              f"{result.objective}; any schedule shorter than 22 fits 23 slots, so this is its optimum")
    return 0


def _stage(instance: Any, args: argparse.Namespace) -> int:
    """The window's first stage or the token stage: ``--window-stage``, else the largest fill."""
    fill = {s: _fill(instance, s) or 0.0 for s in range(instance.virtual_stages)}
    return args.window_stage if args.window_stage is not None else max(fill, key=fill.__getitem__)


def pattern_schedule(instance: Any, s: int, upper: float, time_limit: float, periods: int = 3
                     ) -> tuple[float, tuple[int, ...] | None, int]:
    """The primal side of the crossing relaxation: Model P (horizon ``upper``) with the starts of
    F(s, j) fixed to the release of F(s, 0) plus a repeating pattern of
    :func:`~coopt.problems.pipeline.pattern.periodic_patterns`,
    periods from the shortest admitted one on (``periods`` of them), each pattern solved for at
    most ``time_limit`` s; the first schedule the checker accepts ends the search. Returns (its
    makespan or ``upper``, the pattern, patterns tried)."""
    q = counts.time_unit(instance)
    model = build(instance, upper=upper)
    model.warm_start = False  # the incumbent's starts are not the pattern's
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
        found, value, status = crossing.crossing_bound(instance, stages, best, args.time_limit)
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


def windows(args: argparse.Namespace) -> int:
    """The --windows table: R(s, s + k)'s dual bound, best value found, status and CPU time."""
    print("| instance | incumbent | bound.py | s | k | window bound | window value | status | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, instance in family(tuple(args.sizes or ())):
        if args.only not in name or not window.applies(instance):
            continue
        best, _ = incumbent(instance)
        bound = lower_bound(instance)
        s = _stage(instance, args)
        for k in args.windows:
            e = min(s + k, instance.virtual_stages - 1)
            started = time.process_time()
            found, value, status = window.window_bound(instance, s, e, best, args.time_limit)
            print(f"| {name} | {best:g} | {bound:g} | {s} | {e - s} | {found:.2f} | "
                  f"{'-' if value is None else f'{value:.6g}'} | {status} | "
                  f"{time.process_time() - started:.1f} |", flush=True)
    return 0


# --------------------------------------------------------------------------------------------
# Issue 20, sixth round (primal): Model P with the token entries of the warm start fixed on a
# middle stretch and free at the ends
# --------------------------------------------------------------------------------------------


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
    model = build(instance, upper=upper)
    model.warm_start = False  # its entries are not the restriction's (and build skips it below its value)
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
    q = counts.time_unit(instance)
    low = round((crossing.round_trip(instance, s) + instance.t_w(s)) / q)
    found = next(found for found in ([*periodic_patterns(instance, s, period)]
                                     for period in range(low, low + pattern.PERIOD_REACH)) if found)
    model = build(instance, upper=upper)
    model.warm_start = False  # its entries are not the patterns' (and build skips it below its value)
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
    those of the route's warm start (:func:`~coopt.problems.pipeline.milp.incumbent`, the
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
        q = counts.time_unit(instance)
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
