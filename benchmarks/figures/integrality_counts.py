"""How many exact runs the objective's grid closes: per problem, the shipped ``0-``/``1-`` files and
the exact family (the generator's sizes x seeds), each exact method (``exact``, ``milp``) at a time
limit, one thread. A run counts as *closed by integrality* when the solver alone ended ``feasible``
(its bound within one grid step of the incumbent, not within the gap) and the runner's rounding to
the grid (``Problem.objective_grid``, :func:`coopt.problem.round_to_grid`) made it ``optimal``:
the report's ``solver`` object then holds the key ``integrality`` ending in "optimal".

    python benchmarks/figures/integrality_counts.py [--problems pipeline,chase,provisioning]
        [--limit 10] [--seeds 3] [--methods exact,milp]

Times are wall seconds on a shared machine; the counts depend on the limit (say which one when
quoting them).
"""

from __future__ import annotations

import argparse
import glob

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.registry import get
from coopt.run import run


def instances(name: str, seeds: int) -> list[tuple[str, object]]:
    """(label, instance) of the shipped small files and of the generator's exact family."""
    problem = get(name)
    out = []
    shipped = glob.glob(f"coopt/instances/{name}/0-*.toml") + glob.glob(f"coopt/instances/{name}/1-*.toml")
    for path in sorted(shipped):
        out.append((path.rsplit("/", 1)[-1][:-5], load(path).instance))
    for size in problem.sizes:
        for seed in range(seeds):
            out.append((f"gen size {size} seed {seed}", problem.generate(seed, size)))
    return out


def count(name: str, methods: list[str], limit: float, seeds: int) -> None:
    problem = get(name)
    runs = on_grid = closed = proven = 0
    for label, instance in instances(name, seeds):
        grid = problem.objective_grid(instance) if problem.objective_grid is not None else None
        for method in methods:
            if method not in problem.methods:
                continue
            report = run(problem, instance, method, SolveOptions(time_limit=limit, threads=1))
            runs += 1
            on_grid += grid is not None
            note = report.solver.get("integrality", "")
            by_grid = report.status == "optimal" and note.endswith("optimal")
            closed += by_grid
            proven += report.status == "optimal"
            if by_grid or (grid is not None and report.status != "optimal"):
                print(f"  {name} {label} {method}: {report.status} {report.objective} bound {report.bound} "
                      f"{note}", flush=True)
    print(f"{name}: {runs} runs, {on_grid} on a grid, {proven} optimal, {closed} of them closed by the "
          f"grid (feasible without it)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="pipeline,chase,provisioning")
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--methods", default="exact,milp")
    args = parser.parse_args()
    for name in args.problems.split(","):
        count(name, args.methods.split(","), args.limit, args.seeds)


if __name__ == "__main__":
    main()
