"""Exact optimum (Models A and B) vs the fixed-for-life heuristics on the 6-node exact family and
the shipped small/medium files. Prints, per instance: model, requests, candidates (binaries),
rows, optimum, each heuristic's objective and gap, served requests per class, and build /
hand-off / solve times of the MILP kept apart.

    .venv/bin/python benchmarks/provisioning_exact.py [--seeds 4] [--sizes 1,2,3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coopt.formulations import provisioning as P
from coopt.instance import load
from coopt.problem import SolveOptions, relative_gap
from coopt.solvers.exact import run

ROOT = Path(__file__).resolve().parent.parent / "instances" / "provisioning"


def served(solution: dict) -> str:
    return "/".join(str(c["served"]) for c in solution["per_class"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--sizes", default="1,2,3")
    parser.add_argument("--time-limit", type=float, default=120.0)
    args = parser.parse_args()
    cases = [(f"gen seed {s} size {z}", P.generate(s, z)) for z in map(int, args.sizes.split(","))
             for s in range(args.seeds)]
    cases += [(p.name, load(p, registry_get=lambda name: P.PROBLEM).instance)
              for p in sorted(ROOT.glob("[01]-*.toml"))]
    table = Table(title="provisioning: exact vs heuristics (objective = priority-weighted served)")
    for col in ("instance", "model", "R", "x", "rows", "optimum (served g/s/b)", "status",
                "build s", "hand-off s", "solve s"):
        table.add_column(col)
    for name in P.PROBLEM.heuristics:
        table.add_column(f"{name} gap (served)")
    options = SolveOptions(time_limit=args.time_limit, gap=1e-6)
    for name, instance in cases:
        model = P.build(instance)
        size = (model.nvariables(), model.nconstraints())
        exact = run(P.PROBLEM, instance, "exact", options)
        assert exact.check["feasible"], exact.check
        times = exact.times
        cells = [name, instance.model, str(len(instance.requests)), str(size[0]), str(size[1]),
                 f"{exact.objective:.3f} ({served(exact.solution)})", exact.status,
                 f"{times['build']:.2f}", f"{times['handoff']:.2f}", f"{times['solve']:.2f}"]
        for method in P.PROBLEM.heuristics:
            report = run(P.PROBLEM, instance, method)
            assert report.check["feasible"], report.check
            cells.append(f"{relative_gap(report.objective, exact.objective):.1%} ({served(report.solution)})")
        table.add_row(*cells)
    Console(width=220).print(table)


if __name__ == "__main__":
    main()
