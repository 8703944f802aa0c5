"""Differential test at scale: every exact method against the problem's brute force, on thousands of
seeded tiny instances (``Problem.oracle``). CI runs a dozen seeds per problem
(tests/test_contract.py); this runs as many as you ask and counts the disagreements (must be 0).

    python benchmarks/regression/differential.py             1000 seeds of every problem with an oracle
    python benchmarks/regression/differential.py pipeline --seeds 3000 --first 5000

A disagreement is any of: an exact method not proving optimality where brute force finds a
feasible optimum (or not reporting infeasible where it finds none), a checker rejecting the exact
solution, or the two optima differing by more than 1e-7 relative. Each is printed with its seed, so
``Problem.oracle.generate(seed)`` rebuilds the instance.
"""

from __future__ import annotations

import argparse
import time

from coopt import registry
from coopt.problem import SolveOptions, close
from coopt.run import run

OPTIONS = SolveOptions(time_limit=60, gap=1e-9, threads=1, seed=0)


def disagreements(name: str, seeds: range) -> tuple[int, list[str]]:
    """(instances tried, one line per disagreement)."""
    problem = registry.get(name)
    found = []
    for seed in seeds:
        instance = problem.oracle.generate(seed)
        truth = problem.oracle.solve(instance)
        for method in problem.exact_methods:
            report = run(problem, instance, method, OPTIONS)
            if truth is None:
                if report.status != "infeasible":
                    found.append(f"{name} seed {seed} {method}: brute force finds nothing feasible, "
                                 f"{method} says {report.status} {report.objective}")
                continue
            if report.status != "optimal" or not report.check["feasible"]:
                found.append(f"{name} seed {seed} {method}: {report.status}, "
                             f"check {report.check['violations'][:2]} (brute force {truth})")
            elif not close(report.objective, truth, rel=1e-7):
                found.append(f"{name} seed {seed} {method}: {report.objective} vs brute force {truth}")
    return len(seeds), found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    with_oracle = [n for n in registry.names() if registry.get(n).oracle is not None]
    parser.add_argument("problems", nargs="*", default=with_oracle, help=f"from {with_oracle}")
    parser.add_argument("--seeds", type=int, default=1000, help="instances per problem")
    parser.add_argument("--first", type=int, default=0, help="first seed")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.problems) - set(with_oracle))
    if unknown:
        parser.error(f"{unknown[0]} has no oracle; problems with one: {', '.join(with_oracle)}")
    total_bad = 0
    print("| problem | exact methods | instances | disagreements | seconds |")
    print("|---|---|---|---|---|")
    for name in args.problems:
        t0 = time.perf_counter()
        tried, bad = disagreements(name, range(args.first, args.first + args.seeds))
        total_bad += len(bad)
        methods = ", ".join(registry.get(name).exact_methods)
        print(f"| {name} | {methods} | {tried} | {len(bad)} | {time.perf_counter() - t0:.0f} |", flush=True)
        for line in bad[:20]:
            print(f"    {line}", flush=True)
    return 1 if total_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
