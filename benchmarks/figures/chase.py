"""CHASE benchmark: the figures of docs/chase.md.

    python benchmarks/figures/chase.py [--quick] [--part gaps|times|simulated|exact|large|explore]

* ``gaps``: HEFT, PEFT, CPOP, the CHASE mapper and our local search against the MILP's proven
  optima on the exact family (the generator's sizes and seeds, the small shipped files): mean,
  geometric-mean and worst gap, share optimal, median mapping time. Paper: its mapper within
  6.06 % of exhaustive optima.
* ``times``: mapping time of the CHASE mapper against PEFT on layered random DAGs of 50 to 400
  tasks (paper: 60.5 % less mapping time than PEFT at its sizes).
* ``simulated``: the makespan the simulator with link contention gives each method's mapping,
  against its contention-free makespan (never below it).
* ``exact``: the MILP's proved sizes within 60 s (generator sizes x seeds), nodes and times.
* ``large``: the large tier (``2-*`` files): each heuristic's makespan, the dual bound (coopt solve
  --method bound) and the certified gap of the best heuristic.
* ``explore``: the telemetry-guided outer loop against the exhaustive optimum of a small design
  space, by iteration count, beside random search at the same budget, and the geometric-mean
  speed-up of its design over the best homogeneous design and over random search.

Times are wall seconds on whatever machine runs it (the suite's 2-core box is shared: say so when
quoting); node counts and gaps do not depend on load.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM, explore
from coopt.problems.chase.arch_model import ARCH_TYPES, ArchInstance, make_types
from coopt.problems.chase.model import Instance
from coopt.problems.chase.workloads import random_layered, sparse_kernel, transformer_step
from coopt.run import run
from coopt.shipped import shipped, small_shipped

OPTIONS = SolveOptions(time_limit=60, gap=1e-9, threads=1)
HEURISTICS = ("heft", "peft", "cpop", "chase_mapper", "local_search")


def geomean_gap(gaps: list[float]) -> float:
    return math.exp(sum(math.log1p(g) for g in gaps) / len(gaps)) - 1 if gaps else math.nan


def ccr_of(seed: int) -> float:
    """The communication-to-computation ratio of a generated instance (model.generate)."""
    return (0.1, 1.0, 10.0)[seed % 3]


def exact_family(sizes: tuple[int, ...], seeds: int) -> list[tuple[str, Instance, float | None]]:
    """(name, instance, CCR or None for a shipped file)."""
    cases = [(f"generated size {size} seed {seed}", PROBLEM.generate(seed, size), ccr_of(seed))
             for size in sizes for seed in range(seeds)]
    return cases + [(path.stem, load(path).instance, None) for path in small_shipped("chase")]


def gaps(quick: bool) -> dict[str, dict[str, float]]:
    """Per heuristic: mean, geomean and worst gap to the proven optimum, share optimal, median time."""
    cases = exact_family((1, 2, 3, 4) if quick else (1, 2, 3, 4, 5), 3 if quick else 12)
    table: dict[str, dict[str, list[float]]] = {m: {"gap": [], "time": []} for m in HEURISTICS}
    by_ccr: dict[str, dict[float, list[float]]] = {m: {0.1: [], 1.0: [], 10.0: []} for m in HEURISTICS}
    exact_times, proved = [], 0
    for _, inst, ccr in cases:
        exact = run(PROBLEM, inst, "exact", OPTIONS)
        if exact.status != "optimal":
            continue
        proved += 1
        exact_times.append(exact.times["total"])
        for method in HEURISTICS:
            report = run(PROBLEM, inst, method, OPTIONS)
            gap = max(0.0, report.objective / exact.objective - 1)
            table[method]["gap"].append(gap)
            table[method]["time"].append(report.times["total"])
            if ccr is not None:
                by_ccr[method][ccr].append(gap)
    print(f"\n## Gaps to the proven optimum ({proved} of {len(cases)} instances proved within 60 s; "
          f"median exact time {statistics.median(exact_times):.2f} s)\n")
    print("| method | mean gap | geomean gap | worst gap | optimal | median time [ms] |")
    print("|---|---:|---:|---:|---:|---:|")
    out = {}
    for method in HEURISTICS:
        g, t = table[method]["gap"], table[method]["time"]
        out[method] = {"mean": statistics.mean(g), "geomean": geomean_gap(g), "worst": max(g),
                       "optimal": sum(x < 1e-9 for x in g) / len(g), "time": statistics.median(t)}
        row = out[method]
        print(f"| {method} | {row['mean']:.2%} | {row['geomean']:.2%} | {row['worst']:.2%} | "
              f"{row['optimal']:.0%} | {row['time'] * 1e3:.2f} |")
    print("\nMean gap by communication-to-computation ratio (generated instances only):\n")
    print("| method | CCR 0.1 | CCR 1 | CCR 10 |")
    print("|---|---:|---:|---:|")
    for method in HEURISTICS:
        cells = [statistics.mean(g) if g else math.nan for g in by_ccr[method].values()]
        out[method]["by_ccr"] = dict(zip(by_ccr[method], cells, strict=True))
        print(f"| {method} | " + " | ".join(f"{c:.2%}" for c in cells) + " |")
    return out


def _timed(fn: Callable, *args) -> float:
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def mapping_times(quick: bool) -> dict[int, tuple[float, float]]:
    """{tasks: (CHASE mapper seconds, PEFT seconds)}, best of 5, the mappings alone (no simulation)."""
    from coopt.problems.chase.mapping import chase_mapping, peft_mapping

    sizes = (50, 200) if quick else (50, 100, 200, 400)
    out = {}
    print("\n## Mapping time, CHASE mapper vs PEFT (layered random DAGs, CCR 1, 8 devices: two servers "
          "of 2 GPUs and 2 NPUs)\n")
    print("| tasks | CHASE mapper [ms] | PEFT [ms] | less time than PEFT |")
    print("|---:|---:|---:|---:|")
    from coopt.problems.chase.model import GPU, NPU, server_cluster

    hw = server_cluster(2, [GPU, GPU, NPU, NPU])
    for n in sizes:
        inst = Instance(hw, random_layered(random.Random(n), n, ccr=1.0))
        _ = inst.tables  # routing and run-time tables are built once, outside the timings
        mapper = _timed(chase_mapping, inst)
        peft = _timed(peft_mapping, inst.tables)
        out[n] = (mapper, peft)
        print(f"| {n} | {mapper * 1e3:.1f} | {peft * 1e3:.1f} | {1 - mapper / peft:.1%} |")
    return out


def simulated(quick: bool) -> dict[str, float]:
    """Mean ratio simulated / contention-free makespan per method, over the small and medium files."""
    files = [p for p in shipped("chase") if p.name.startswith(("0-", "1-"))]
    ratios: dict[str, list[float]] = {m: [] for m in HEURISTICS}
    for path in files:
        inst = load(path).instance
        for method in HEURISTICS:
            solution = PROBLEM.heuristics[method](inst)
            ratios[method].append(solution["simulated_makespan_s"] / solution["objective"])
    print("\n## Simulated (link contention) over contention-free makespan "
          f"({len(files)} shipped 0-/1- files)\n")
    print("| method | mean ratio | max ratio | files where contention adds > 1 % |")
    print("|---|---:|---:|---:|")
    out = {}
    for method, values in ratios.items():
        out[method] = statistics.mean(values)
        print(f"| {method} | {out[method]:.3f} | {max(values):.3f} | {sum(v > 1.01 for v in values)} |")
    return out


def exact_sizes(quick: bool) -> None:
    seeds = 3 if quick else 6
    print("\n## MILP: proved within 60 s by generator size\n")
    print("| size | tasks | proved | median s | max s | median nodes |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in (3, 4, 5, 6) if not quick else (3, 4):
        reports = [run(PROBLEM, PROBLEM.generate(seed, size), "exact", OPTIONS) for seed in range(seeds)]
        done = [r for r in reports if r.status == "optimal"]
        times = [r.times["total"] for r in reports]
        nodes = [r.nodes or 0 for r in reports]
        print(f"| {size} | {4 + 2 * size} | {len(done)}/{seeds} | {statistics.median(times):.2f} | "
              f"{max(times):.2f} | {statistics.median(nodes):.0f} |")


def large(quick: bool) -> dict[str, tuple[float, float]]:
    """{file: (best heuristic makespan, dual bound)} on the large tier."""
    files = [p for p in shipped("chase") if p.name.startswith("2-")][: 2 if quick else None]
    print("\n## Large tier: heuristics against the dual bound (certified gap = best / bound - 1)\n")
    print("| file | tasks | " + " | ".join(HEURISTICS) + " | bound | certified gap | bound s |")
    print("|---|---:|" + "---:|" * (len(HEURISTICS) + 3))
    out = {}
    for path in files:
        inst = load(path).instance
        values = [run(PROBLEM, inst, m, OPTIONS).objective for m in HEURISTICS]
        bound = run(PROBLEM, inst, "bound", OPTIONS)
        best = min(values)
        out[path.stem] = (best, bound.bound)
        print(f"| {path.stem} | {inst.n_tasks} | " + " | ".join(f"{v * 1e3:.3f} ms" for v in values)
              + f" | {bound.bound * 1e3:.3f} ms | {best / bound.bound - 1:.1%} "
              f"| {bound.times['total']:.0f} |")
    return out


def explore_space() -> tuple[ArchInstance, list]:
    """The small design space and portfolio of the outer-loop benchmark: at most 3 GPUs, 3 older
    GPUs, 6 NPUs and 1 CPU in two 5 kW racks for 150 kUS$ (research notes 3.e prices), and three
    workloads: a 2-layer transformer training step with TP 4 (32 tasks), two SpMV iterations on
    8 row blocks (31 tasks, memory-bound) and a 24-task layered random DAG (CCR 0.5)."""
    gpu, old, npu, cpu = make_types(ARCH_TYPES, 1)
    types = (replace(gpu, max_count=3), replace(old, max_count=3), replace(npu, max_count=6),
             replace(cpu, max_count=1))
    space = ArchInstance(
        types=types, racks=2, rack_power=5000.0, rack_units=42, switch_radix=16, switch_power=300.0,
        switch_units=1.0, switch_cost=5000.0, uplink_bandwidth=50e9, copper_cost=100.0, optical_cost=1000.0,
        copper_latency=1e-6, optical_latency=2e-6, island_latency=0.5e-6, budget=150_000.0,
        oversubscription=2.0, memory_required=0.0)
    portfolio = [transformer_step(layers=2, tp=4, hidden=4096, sequence=2048),
                 sparse_kernel(random.Random(1), blocks=8, iterations=2),
                 random_layered(random.Random(2), 24, ccr=0.5)]
    return space, portfolio


def explore_bench(quick: bool) -> dict[str, float]:
    space, portfolio = explore_space()
    t0 = time.perf_counter()
    best, count = explore.exhaustive(space, portfolio)
    seconds = time.perf_counter() - t0
    seeds = 3 if quick else 10
    checkpoints = (1, 8, 16, 32, 64)
    guided: dict[int, list[float]] = {k: [] for k in checkpoints}
    randomised: dict[int, list[float]] = {k: [] for k in checkpoints}
    speedup_random = []
    for seed in range(seeds):
        rng = random.Random(seed)
        start = explore.random_design(space, rng).counts
        trace = explore.explore(space, portfolio, start, iterations=64, seed=seed)
        other = explore.random_search(space, portfolio, iterations=64, seed=seed)
        for k in checkpoints:
            guided[k].append(trace[min(k, len(trace)) - 1].score / best.score - 1)
            randomised[k].append(other[min(k, len(other)) - 1].score / best.score - 1)
        speedup_random.append(other[-1].score / trace[-1].score)
    def one_type(design) -> bool:
        return sum(1 for i in range(len(space.types)) if any(row[i] for row in design.counts)) == 1

    homogeneous = min((explore.evaluate(space, d, portfolio) for d in explore.designs(space) if one_type(d)),
                      key=lambda e: e.score)
    print(f"\n## Outer loop vs the exhaustive optimum ({count} feasible designs, {seconds:.0f} s to "
          f"enumerate; {seeds} random start designs)\n")
    print("| evaluations | guided: mean gap | guided: worst | at the optimum | random search: mean gap |")
    print("|---:|---:|---:|---:|---:|")
    for k in checkpoints:
        print(f"| {k} | {statistics.mean(guided[k]):.2%} | {max(guided[k]):.2%} | "
              f"{sum(g < 1e-9 for g in guided[k])}/{seeds} | {statistics.mean(randomised[k]):.2%} |")
    vs_homogeneous = homogeneous.score / best.score
    vs_random = math.exp(statistics.mean(math.log(s) for s in speedup_random))
    print(f"\nBest design {best.design.counts} (types {[t.name for t in space.types]}), score "
          f"{best.score * 1e3:.3f} ms; best homogeneous design {homogeneous.design.counts}: "
          f"{vs_homogeneous:.2f}x slower; random search at 64 evaluations: {vs_random:.2f}x slower "
          "(geomean).")
    return {"gap64_mean": statistics.mean(guided[64]), "gap64_worst": max(guided[64]),
            "hits64": sum(g < 1e-9 for g in guided[64]) / seeds, "vs_homogeneous": vs_homogeneous,
            "vs_random": vs_random, "gap16_mean": statistics.mean(guided[16])}


PARTS = {"gaps": gaps, "times": mapping_times, "simulated": simulated, "exact": exact_sizes,
         "large": large, "explore": explore_bench}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer seeds and sizes")
    parser.add_argument("--part", choices=sorted(PARTS), action="append", help="only these parts")
    args = parser.parse_args(argv)
    for name in args.part or list(PARTS):
        PARTS[name](args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
