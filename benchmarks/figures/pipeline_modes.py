"""Pipeline ``exact`` with recompute and offload: Model M (CP-SAT) beside Model P (HiGHS).

Rows: the shipped ``0-*`` / ``1-*`` files with recompute, offload or chunks (instance I1 at caps 4,
5, 6 among them), then with ``--sizes`` the generator's mode families
(:func:`coopt.problems.pipeline.model.generate_modes`: ``recompute``, ``offload``, ``both``) at
those sizes, seeds ``--seeds``. Each row runs method ``exact`` (Model M) and, unless
``--no-milp``, method ``milp`` (Model P), both from the runner's warm start on one thread, and
prints status, objective, bound, seconds and nodes (CP-SAT's branches, HiGHS' nodes).

    python benchmarks/figures/pipeline_modes.py [--time-limit 60] [--only SUBSTRING]
    python benchmarks/figures/pipeline_modes.py --sizes 2 3 4 --families recompute --no-milp
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import model as pm
from coopt.run import run
from coopt.shipped import shipped


def rows(sizes: list[int], families: list[str], seeds: list[int]) -> Iterator[tuple[str, Any]]:
    """The shipped recompute / offload files without ``sizes``; else the mode families."""
    if not sizes:
        for path in shipped("pipeline"):
            if path.name[:2] in ("0-", "1-"):
                instance = load(path).instance
                if instance.allow_recompute or instance.allow_offload or instance.chunks > 1:
                    yield path.stem, instance
        return
    for family in families:
        for size in sizes:
            for seed in seeds:
                yield f"{family} p={size} seed {seed}", pm.generate_modes(seed, size, family)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--sizes", type=int, nargs="*", default=[])
    parser.add_argument("--families", nargs="*", default=list(pm.MODE_FAMILIES))
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--no-milp", action="store_true")
    args = parser.parse_args()
    methods = ["exact"] if args.no_milp else ["exact", "milp"]
    options = SolveOptions(time_limit=args.time_limit, threads=1)
    print(f"{'instance':32} {'method':6} {'status':10} {'objective':>9} {'bound':>7} {'s':>7} {'nodes':>8}")
    for name, instance in rows(args.sizes, args.families, args.seeds):
        if args.only not in name:
            continue
        for method in methods:
            report = run(PROBLEM, instance, method, options)
            objective = "-" if report.objective is None else f"{report.objective:g}"
            bound = "-" if report.bound is None else f"{report.bound:g}"
            nodes = "-" if report.nodes is None else str(report.nodes)
            print(f"{name:32} {method:6} {report.status:10} {objective:>9} {bound:>7} "
                  f"{report.times['total']:7.2f} {nodes:>8}", flush=True)


if __name__ == "__main__":
    main()
