"""Exact optimum vs the fixed-for-life heuristics: Models A and B on the 6-node exact family and
the shipped small/medium files, then Model C (multi-layer grooming) on its generated family.
Prints, per instance: model, requests, variables, rows, optimum, each heuristic's gap to it,
served requests per class, and build / hand-off / solve times of the MILP kept apart.

    .venv/bin/python benchmarks/provisioning_exact.py [--seeds 4] [--sizes 1,2,3] [--grooming-sizes 1,2]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coopt.formulations import provisioning
from coopt.formulations.provisioning import grooming as G
from coopt.formulations.provisioning import grooming_milp
from coopt.formulations.provisioning import milp as provisioning_milp
from coopt.formulations.provisioning import model as P
from coopt.instance import load
from coopt.problem import SolveOptions, relative_gap
from coopt.run import run

ROOT = Path(__file__).resolve().parent.parent / "instances" / "provisioning"


def served(solution: dict) -> str:
    return "/".join(str(c["served"]) for c in solution["per_class"])


def grooming_table(seeds: int, sizes: list[int], options: SolveOptions) -> Table:
    table = Table(title="provisioning_grooming (Model C): exact vs heuristics")
    for col in ("instance", "R", "vars", "rows", "optimum", "served", "lightpaths", "status",
                "build s", "hand-off s", "solve s",
                *(f"{m} gap (served)" for m in provisioning.GROOMING.heuristics)):
        table.add_column(col)
    for size in sizes:
        for seed in range(seeds):
            instance = G.generate(seed, size)
            model = grooming_milp.build(instance)
            exact = run(provisioning.GROOMING, instance, "exact", options)
            assert exact.check["feasible"], exact.check
            sol, times = exact.solution, exact.times
            cells = [f"gen seed {seed} size {size}", str(len(instance.requests)), str(model.nvariables()),
                     str(model.nconstraints()), f"{exact.objective:.3f}", str(len(sol["connections"])),
                     str(len(sol["lightpaths"])), exact.status, f"{times['build']:.2f}",
                     f"{times['handoff']:.2f}", f"{times['solve']:.2f}"]
            for method in provisioning.GROOMING.heuristics:
                report = run(provisioning.GROOMING, instance, method)
                assert report.check["feasible"], report.check
                cells.append(f"{relative_gap(report.objective, exact.objective):.1%} "
                             f"({len(report.solution['connections'])})")
            table.add_row(*cells)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--sizes", default="1,2,3")
    parser.add_argument("--grooming-sizes", default="1,2")
    parser.add_argument("--time-limit", type=float, default=120.0)
    args = parser.parse_args()
    cases = [(f"gen seed {s} size {z}", P.generate(s, z)) for z in map(int, args.sizes.split(","))
             for s in range(args.seeds)]
    cases += [(p.name, load(p, registry_get=lambda name: provisioning.PROBLEM).instance)
              for p in sorted(ROOT.glob("[01]-*.toml"))]
    table = Table(title="provisioning: exact vs heuristics (objective = priority-weighted served)")
    for col in ("instance", "model", "R", "x", "rows", "optimum (served g/s/b)", "status",
                "build s", "hand-off s", "solve s"):
        table.add_column(col)
    for name in provisioning.PROBLEM.heuristics:
        table.add_column(f"{name} gap (served)")
    options = SolveOptions(time_limit=args.time_limit, gap=1e-6)
    for name, instance in cases:
        model = provisioning_milp.build(instance)
        size = (model.nvariables(), model.nconstraints())
        exact = run(provisioning.PROBLEM, instance, "exact", options)
        assert exact.check["feasible"], exact.check
        times = exact.times
        cells = [name, instance.model, str(len(instance.requests)), str(size[0]), str(size[1]),
                 f"{exact.objective:.3f} ({served(exact.solution)})", exact.status,
                 f"{times['build']:.2f}", f"{times['handoff']:.2f}", f"{times['solve']:.2f}"]
        for method in provisioning.PROBLEM.heuristics:
            report = run(provisioning.PROBLEM, instance, method)
            assert report.check["feasible"], report.check
            cells.append(f"{relative_gap(report.objective, exact.objective):.1%} ({served(report.solution)})")
        table.add_row(*cells)
    console = Console(width=220)
    console.print(table)
    console.print(grooming_table(args.seeds, [int(z) for z in args.grooming_sizes.split(",")], options))


if __name__ == "__main__":
    main()
