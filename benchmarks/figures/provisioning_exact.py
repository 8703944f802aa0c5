"""Exact optimum vs every heuristic on the exact families of both problems: the shipped
small and medium files and the generator's sizes 1-3 at several seeds. Per instance: the exact
route's status, value and time (warm start / build / hand-off / solve kept apart), every
heuristic's gap to the optimum and time; then per heuristic the mean, geometric-mean and worst
gap, and the median and least speed-up over the exact route on the instances where it takes
0.5 s or more.

    .venv/bin/python benchmarks/figures/provisioning_exact.py [--seeds 0,1,2] [--sizes 1,2,3]
                                                              [--time-limit 120]
"""

from __future__ import annotations

import argparse
import math
import statistics

from coopt import registry
from coopt.instance import load
from coopt.problem import SolveOptions, relative_gap
from coopt.run import run
from coopt.shipped import shipped

#: Where the exact route takes at least this long, a heuristic's speed-up counts.
SLOW = 0.5


def cases(problem, seeds: list[int], sizes: list[int]) -> list[tuple[str, object]]:
    files = [(p.stem, load(p).instance) for p in shipped(problem.name) if p.name[0] in "01"]
    return files + [(f"gen seed {seed} size {size}", problem.generate(seed, size)) for size in sizes
                    for seed in seeds]


def table(name: str, seeds: list[int], sizes: list[int], options: SolveOptions) -> None:
    problem = registry.get(name)
    methods = sorted(problem.heuristics)
    print(f"\n{name}: exact vs heuristics (gap to the proven optimum, time)\n")
    print("| instance | R | exact | value | warm start / build / hand-off / solve s | "
          + " | ".join(methods) + " |")
    print("|---|---|---|---|---|" + "---|" * len(methods))
    gaps: dict[str, list[float]] = {m: [] for m in methods}
    speedups: dict[str, list[float]] = {m: [] for m in methods}
    for label, instance in cases(problem, seeds, sizes):
        exact = run(problem, instance, "exact", options)
        times = exact.times
        cells = [label, str(len(instance.requests)), exact.status, f"{exact.objective:.4f}",
                 " / ".join(f"{times[k]:.2f}" for k in ("warm_start", "build", "handoff", "solve"))]
        for method in methods:
            report = run(problem, instance, method, options)
            gap = relative_gap(report.objective, exact.objective)
            if exact.status == "optimal":
                gaps[method].append(gap)
                if times["total"] >= SLOW:
                    speedups[method].append(times["total"] / max(report.times["total"], 1e-6))
            cells.append(f"{gap:.2%} ({report.times['total'] * 1e3:.0f} ms)")
        print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\n| heuristic | mean gap | geomean gap | worst gap | speed-up where exact >= {SLOW:g} s: median "
          "(least) |")
    print("|---|---|---|---|---|")
    for method in methods:
        values = gaps[method]
        geomean = math.exp(statistics.fmean(math.log1p(g) for g in values)) - 1 if values else math.nan
        ups = speedups[method]
        speed = f"{statistics.median(ups):.0f}x ({min(ups):.0f}x)" if ups else "-"
        print(f"| {method} | {statistics.fmean(values):.2%} | {geomean:.2%} | {max(values):.2%} | {speed} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--sizes", default="1,2,3")
    parser.add_argument("--time-limit", type=float, default=120.0)
    args = parser.parse_args()
    seeds, sizes = [int(s) for s in args.seeds.split(",")], [int(s) for s in args.sizes.split(",")]
    for name in ("provisioning", "provisioning_grooming"):
        table(name, seeds, sizes, SolveOptions(time_limit=args.time_limit))


if __name__ == "__main__":
    main()
