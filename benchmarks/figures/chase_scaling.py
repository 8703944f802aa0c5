"""CHASE's constraint program on the generator's family, before beside after a change: the same
instances, the same warm start, a deterministic work budget instead of a wall-clock limit.

    python benchmarks/figures/chase_scaling.py [--sizes 10,12,14] [--seeds 3] [--work 40]
        [--before PATH/TO/old_cpsat.py [--before-energetic PATH/TO/old_energetic.py]]

Each row: tasks, seed, and per model the status (P proven, else the gap left), CPU seconds of the
process, CP-SAT's deterministic time and branches. CP-SAT's deterministic time does not depend on
the machine's load, so the budget ``--work`` (deterministic seconds; about 60 CPU seconds at 40 on
the machine of docs/chase.md) makes runs on a shared machine comparable. ``--before`` loads another
version of ``coopt/problems/chase/cpsat.py`` (for example ``git show REV:coopt/problems/chase/cpsat.py
> /tmp/old_cpsat.py``) and runs it beside the current one; ``--before-energetic`` gives it an old
``energetic.py`` too (its bound, heads and tails), else it uses the current one.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from types import ModuleType

from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM, cpsat
from coopt.problems.chase.mapping import local_search
from coopt.problems.chase.model import check, tasks_of_size


def load_module(path: str, name: str = "chase_cpsat_before") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def one(module: ModuleType, instance, work: float) -> tuple[str, bool]:
    """One run as a table cell, and whether it proved optimality."""
    saved = module.PARAMETERS
    module.PARAMETERS = {**saved, "max_deterministic_time": work}
    try:
        incumbent = local_search(instance)
        cpu = time.process_time()
        options = SolveOptions(time_limit=3600, threads=1, gap=1e-6)
        outcome = module.solve(instance, options, incumbent=incumbent)
        cpu = time.process_time() - cpu
    finally:
        module.PARAMETERS = saved
    assert check(instance, outcome.solution) == []
    proven = outcome.status == "optimal"
    value = float(outcome.solution["objective"])
    gap = "" if proven or outcome.bound is None else f" gap {100 * (value - outcome.bound) / value:.2f}%"
    return f"{'P' if proven else '-'} {cpu:5.1f}s b={outcome.nodes}{gap} ({value * 1e3:.5f} ms)", proven


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,12,14")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--work", type=float, default=40.0)
    parser.add_argument("--before", default=None)
    parser.add_argument("--before-energetic", default=None)
    args = parser.parse_args()
    models = {"after": cpsat}
    if args.before:
        before = load_module(args.before)
        if args.before_energetic:
            old = load_module(args.before_energetic, "chase_energetic_before")
            for name in ("energetic_bound", "energetic_heads_tails", "speed_weights"):
                setattr(before, name, getattr(old, name))
        models = {"before": before, **models}
    print("| tasks | seed | " + " | ".join(models) + " |")
    print("|---|---|" + "---|" * len(models))
    every = {name: [] for name in models}
    for size in (int(s) for s in args.sizes.split(",")):
        proven = {name: True for name in models}
        for seed in range(args.seeds):
            instance = PROBLEM.generate(seed, size)
            cells = []
            for name, module in models.items():
                cell, ok = one(module, instance, args.work)
                proven[name] &= ok
                cells.append(cell)
            print(f"| {tasks_of_size(size)} | {seed} | " + " | ".join(cells) + " |", flush=True)
        for name in models:
            if proven[name]:
                every[name].append(tasks_of_size(size))
    for name in models:
        print(f"{name}: every seed proven at {every[name] or 'no size'} tasks")


if __name__ == "__main__":
    main()
