"""The exact family of the pipeline problem: Model P's and Model S's status, optimum, bound, nodes, times.

Rows: every shipped ``0-*`` and ``1-*`` instance, the generator at sizes 2, 3, 4 (seeds 0-2, the
default ``coopt bench`` family), and instance I1 (p = 4, m = 8, unit times, a = 2 GB, a_W = 1,
a_c = 0.5, T_R = 1) with recompute at caps 4 / 5 / 6 GB, whose proven optima an independent model
gives as 33 / 30 / 29 under FIFO; then Model T on the shipped overtaking instance
(``0-p3m3-offload-overtake``). Each row runs Model P (method ``milp``) and, where it applies,
Model S (method ``exact``, CP-SAT; its nodes are CP-SAT's branches, its first bound none), both
from the runner's warm start. Warm-start, build, hand-off and solve times are reported apart (the
runner measures them); HiGHS runs on one thread. "first bound" is the first dual bound HiGHS
reports (its root, or the presolved bound when the root does not finish), "dual bound" the bound
of :mod:`coopt.problems.pipeline.bound` alone (``--method bound``). ``--sizes 8 12 16``: the
generator at those sizes (seeds 0-2). ``--windows 0 1 2 3`` prints, instead of the solves, the
dual bound of the window relaxation R(s, s + k) of :mod:`coopt.problems.pipeline.window` for each
k, s the stage with the largest memory fill (``--window-stage`` overrides it), each given
``--time-limit`` seconds.

    python benchmarks/figures/pipeline_exact.py [--time-limit 60] [--only SUBSTRING]
    python benchmarks/figures/pipeline_exact.py --sizes 8 12 16 --windows 0 1 2 3 --time-limit 10

The research relaxations and restrictions (Model N, the crossing relaxation X(S), the triple
relaxation T(s), Model P with fixed or swept token entries) run from ``research/pipeline/bench.py``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import Any

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM, window
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import _fill, lower_bound
from coopt.problems.pipeline.model import GB
from coopt.problems.pipeline.timeindexed import build_time_indexed
from coopt.problems.pipeline.warm import incumbent
from coopt.run import run
from coopt.shipped import shipped
from coopt.solvers.highs import solve_model


def i1(cap: float | None, *, recompute: bool = True, offload: bool = False, p: int = 4, m: int = 8
       ) -> pm.Instance:
    """Instance I1 (research-pipeline-memory.md b.5) with a uniform cap (GB)."""
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
    parser.add_argument("--windows", type=int, nargs="*", help="window sizes k of R(s, s + k) instead")
    parser.add_argument("--window-stage", type=int, help="the window's stage s")
    args = parser.parse_args(argv)
    if args.windows:
        return windows(args)
    options = SolveOptions(time_limit=args.time_limit, gap=1e-6, threads=1)
    print("| instance | model | status | optimum | bound | first bound | dual bound (bound.py) | nodes "
          "| warm start s | build s | hand-off s | solve s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, instance in family(tuple(args.sizes or ())):
        if args.only not in name:
            continue
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
                  f"{report.nodes if report.nodes is not None else '-'} | {t['warm_start']:.2f} | "
                  f"{t['build']:.2f} | {t['handoff']:.2f} | {t['solve']:.2f} |", flush=True)
    if not args.sizes and ("overtake" in args.only or not args.only):
        overtake = next(i for n, i in family() if "overtake" in n)
        result = solve_model(build_time_indexed(overtake, 23), options)
        print(f"\nModel T (no FIFO, 23 slots) on 0-p3m3-offload-overtake: {result.status} "
              f"{result.objective}; any schedule shorter than 22 fits 23 slots, so this is its optimum")
    return 0


def show(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _stage(instance: Any, args: argparse.Namespace) -> int:
    """The window's first stage (or a token stage): ``--window-stage``, else the largest fill."""
    fill = {s: _fill(instance, s) or 0.0 for s in range(instance.virtual_stages)}
    return args.window_stage if args.window_stage is not None else max(fill, key=fill.__getitem__)


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


if __name__ == "__main__":
    raise SystemExit(main())
