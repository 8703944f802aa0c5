"""CHASE's two exact models side by side: the constraint program (:mod:`coopt.problems.chase.cpsat`,
method ``exact`` where it applies) and the MILP (:mod:`coopt.problems.chase.milp`, method
``milp``), each from the runner's warm start, one thread, a time limit per run.

    python benchmarks/figures/chase_exact_models.py [--part family|files] [--limit 60]
        [--sizes 6,8,10,12,14] [--seeds 3] [--models cp,milp]

* ``family``: the generator's family (4 devices, 4 + 2 size tasks), per size and seed: status,
  time and branch/node count of each model; the largest size whose every seed each model proves.
* ``files``: the shipped ``0-``/``1-`` files, each model.

Times are wall seconds on whatever machine runs it; node counts do not depend on load. The rule of
``cpsat.applies`` (at most 4 devices) comes from these tables (docs/chase.md, "Two exact models").
"""

from __future__ import annotations

import argparse
import glob
import os
from dataclasses import replace

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM
from coopt.problems.chase.model import tasks_of_size
from coopt.run import run

METHODS = {"cp": "exact", "milp": "milp"}


def one(instance, model: str, limit: float) -> str:
    """One run as a table cell: P (proven) or -, seconds, nodes, the gap where not proven; the
    constraint program runs even where the registration hands ``exact`` to the MILP."""
    problem = replace(PROBLEM, exact_applies=None) if model == "cp" else PROBLEM
    report = run(problem, instance, METHODS[model], SolveOptions(time_limit=limit, threads=1))
    mark = "P" if report.status == "optimal" else "-"
    gap = "" if report.gap is None else f" gap {100 * report.gap:.2f}%"
    return f"{mark} {report.times['total']:6.1f}s n={report.nodes}{gap if mark == '-' else ''}"


def family(sizes: list[int], seeds: int, models: list[str], limit: float) -> None:
    print("| size | tasks | seed | " + " | ".join(models) + " |")
    print("|---|---|---|" + "---|" * len(models))
    proved = {m: {} for m in models}
    for size in sizes:
        for seed in range(seeds):
            instance = PROBLEM.generate(seed, size)
            cells = []
            for m in models:
                cell = one(instance, m, limit)
                proved[m].setdefault(size, []).append(cell.startswith("P"))
                cells.append(cell)
            print(f"| {size} | {tasks_of_size(size)} | {seed} | " + " | ".join(cells) + " |", flush=True)
    for m in models:
        every = [s for s in sizes if all(proved[m][s])]
        print(f"{m}: every seed proven up to size {max(every) if every else None} "
              f"({tasks_of_size(max(every)) if every else 0} tasks)")


def files(models: list[str], limit: float) -> None:
    paths = sorted(glob.glob("coopt/instances/chase/0-*.toml") + glob.glob("coopt/instances/chase/1-*.toml"))
    print("| file | tasks / devices | " + " | ".join(models) + " |")
    print("|---|---|" + "---|" * len(models))
    for path in paths:
        instance = load(path).instance
        cells = [one(instance, m, limit) for m in models]
        name = os.path.basename(path)[:-5]
        size = f"{instance.n_tasks} / {instance.n_devices}"
        print(f"| {name} | {size} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("family", "files"), default="family")
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--sizes", default="6,8,10,12,14")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--models", default="cp,milp")
    args = parser.parse_args()
    models = args.models.split(",")
    if args.part == "family":
        family([int(s) for s in args.sizes.split(",")], args.seeds, models, args.limit)
    else:
        files(models, args.limit)


if __name__ == "__main__":
    main()
