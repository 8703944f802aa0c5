"""Scope's exact MILP, change by change: time, nodes and root gap on the generator's instances.

    .venv/bin/python benchmarks/figures/scope_milp.py [--sizes 2,3,4,5,6] [--seeds 5] [--limit 60]
    .venv/bin/python benchmarks/figures/scope_milp.py --before 83eb8e7
                                                       also the interval MILP of that revision

Variants, each on the same instances (``coopt generate scope --seed S --size N``), one HiGHS thread,
relative gap 1e-9, the given time limit:

* ``interval``: the interval MILP (one bottleneck per segment, one big-M bubble row per cluster),
  read from ``coopt/problems/scope/milp.py`` at the revision ``--before`` names;
* ``by-count``: today's segment-by-count MILP without an incumbent (:func:`milp.build`);
* ``by-count + search``: the model the exact route solves, bounded by the value of ``search``
  (the problem's warm start; here its build time includes the search).

Columns: status, build and HiGHS seconds, B&B nodes, the LP relaxation's gap to the DP optimum
(root gap before HiGHS' cuts), HiGHS' final gap, and the model's columns. Times are wall seconds on
a shared machine: compare them within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyomo.environ as pyo

from coopt.problem import SolveOptions
from coopt.problems.scope import dp as scope_dp
from coopt.problems.scope import heuristics as solvers
from coopt.problems.scope import milp
from coopt.problems.scope import model as scope_model
from coopt.solvers.highs import solve_model

ROOT = Path(__file__).resolve().parents[2]


def searched_model(inst):
    """The MILP bounded by ``search``'s value, as the runner builds it from its warm start."""
    return milp.build(inst, incumbent=solvers.search(inst))

def formulation_at(revision: str):
    """The scope MILP module as it was at ``revision`` (its build and extract)."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:coopt/problems/scope/milp.py"],
                          check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / f"scope_milp_{revision}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(build, inst, optimum: float, limit: float) -> dict:
    t0 = time.perf_counter()
    model = build(inst)
    built = time.perf_counter() - t0
    relaxed = build(inst)
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(relaxed)
    lp = solve_model(relaxed, SolveOptions(threads=1)).objective
    result = solve_model(model, SolveOptions(time_limit=limit, gap=1e-9, threads=1))
    final = None if result.bound is None or result.objective is None else (
        (result.objective - result.bound) / result.objective)
    return {
        "status": result.status, "build": built, "solve": result.solve, "nodes": result.nodes,
        "root_gap": None if lp is None else (optimum - lp) / optimum, "gap": final,
        "columns": result.size.get("columns"),
        "agrees": result.status == "optimal" and abs(result.objective / optimum - 1) <= 1e-7,
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,3,4,5,6")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--before", metavar="REV", help="also the interval MILP at this git revision")
    args = parser.parse_args(argv)
    variants = {}
    if args.before:
        variants[f"interval ({args.before})"] = formulation_at(args.before).build
    variants["by-count"] = milp.build
    variants["by-count + search"] = searched_model
    print("| size | seed | variant | status | build s | HiGHS s | nodes | root gap | final gap | columns |")
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    wrong = 0
    for size in (int(s) for s in args.sizes.split(",")):
        for seed in range(args.seeds):
            inst = scope_model.generate(seed, size)
            optimum = scope_dp.dynamic_program(inst)["objective"]
            for name, build in variants.items():
                row = measure(build, inst, optimum, args.limit)
                wrong += row["status"] == "optimal" and not row["agrees"]
                print(f"| {size} | {seed} | {name} | {row['status']} | {row['build']:.2f} | "
                      f"{row['solve']:.2f} | {row['nodes']} | {_pct(row['root_gap'])} | {_pct(row['gap'])} | "
                      f"{row['columns']} |", flush=True)
    if wrong:
        print(f"{wrong} runs reported optimal with a value off the DP optimum", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
