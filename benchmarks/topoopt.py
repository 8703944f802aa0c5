"""The figures issue 3 asks TopoOpt to show, with build / hand-off / solve times kept apart.

    python benchmarks/topoopt.py [--steps-per-op N] [--write-instances]

1. Exact family (instances/topoopt/[01]-exact-*.toml): P1 optimum (HiGHS), LP relaxation, the P2
   optimum (TopoOpt's rings + matchings space, as a rate 1/tau), and each heuristic's gap to the P1
   optimum and time; mean and worst gap per heuristic.
2. Stride family: the geometric SelectPermutations strides against P4 enumeration (uniform
   all-to-all), n up to 64, d up to 4.
3. Model family at n = 128: iteration time of TopoOpt (MCMC x TopologyFinder) against the
   similar-cost fat-tree (sized with the ``[prices]`` table of each model's n = 128 instance file)
   and an ideal switch of the same total NIC bandwidth, each with its own MCMC strategy search;
   beside the paper's "up to 3.4x".

``--write-instances`` (re)writes the heuristic-only ``2-*`` instance files from the strategies the
search finds (model family) and the uniform all-to-all stride family.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

import numpy as np

from coopt.formulations import topoopt
from coopt.formulations.topoopt import model as T
from coopt.formulations.topoopt import strides as topoopt_strides
from coopt.instance import load, to_toml, write_atomic
from coopt.problem import SolveOptions, relative_gap
from coopt.run import run
from coopt.solvers import topoopt as H
from coopt.solvers.highs import lp_relaxation
from coopt.solvers.topoopt import solve_p2

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"
PAPER_SPEEDUP = 3.4  # TopoOpt vs similar-cost fat-tree, "up to" (NSDI 2023 abstract)
PRICES_NOTE = (
    "[prices] sizes the similar-cost fat-tree baseline (defaults: the MixNet calculator's prices, "
    "research notes 2(e)); edit it to re-price."
)


def exact_family() -> None:
    print("== Exact family: P1 (topology + routing + ring split), max theta [iterations/s]")
    header = (
        f"{'instance':22} {'theta*':>9} {'LP':>9} {'build':>7} {'handoff':>7} {'solve':>7} "
        f"{'P2 1/tau':>9} {'P2 s':>6}"
    )
    print(header + "".join(f" {m:>16}" for m in H.HEURISTICS))
    gaps: dict[str, list[float]] = {m: [] for m in H.HEURISTICS}
    times: dict[str, list[float]] = {m: [] for m in H.HEURISTICS}
    for path in sorted(INSTANCES.glob("[01]-exact-*.toml")):
        instance = load(path).instance
        report = run(topoopt.PROBLEM, instance, "exact", SolveOptions(gap=1e-9))
        assert report.status == "optimal" and report.check["feasible"]
        lp = lp_relaxation(topoopt.PROBLEM, instance)
        t0 = time.perf_counter()
        tau, _ = solve_p2(instance, SolveOptions(gap=1e-9))
        p2_seconds = time.perf_counter() - t0
        row = (
            f"{path.stem:22} {report.objective:9.3f} {lp:9.3f} {report.times['build']:7.3f} "
            f"{report.times['handoff']:7.3f} {report.times['solve']:7.3f} {1 / tau:9.3f} {p2_seconds:6.1f}"
        )
        for method in H.HEURISTICS:
            h = run(topoopt.PROBLEM, instance, method)
            assert h.check["feasible"]
            gap = relative_gap(h.objective, report.objective)
            gaps[method].append(gap)
            times[method].append(h.times["solve"])
            row += f" {100 * gap:7.1f}% {h.times['solve']:6.3f}s"
        print(row)
    for method in H.HEURISTICS:
        print(
            f"  {method:16} gap mean {100 * statistics.mean(gaps[method]):5.1f} %, worst "
            f"{100 * max(gaps[method]):5.1f} %, time mean {statistics.mean(times[method]) * 1e3:6.1f} ms"
        )


def stride_family() -> None:
    print("\n== Stride family: geometric SelectPermutations vs P4 enumeration (uniform all-to-all)")
    columns = ("geometric", "mean hops", "P4 optimum", "mean hops", "enum s")
    widths = (22, 9, 22, 9, 7)
    print(f"{'n':>4} {'d':>2} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for n in (12, 16, 24, 30, 32, 48, 64):
        for d in (2, 3, 4):
            weight = topoopt_strides.offset_weights(n, np.zeros((n, n)))
            geometric = H.select_permutations(T.candidate_strides(n, n), d)
            t0 = time.perf_counter()
            best, cost = topoopt_strides.select_strides_exact(n, d, weight)
            elapsed = time.perf_counter() - t0
            print(
                f"{n:4} {d:2} {str(tuple(geometric)):>22} "
                f"{topoopt_strides.stride_cost(n, geometric, weight):9.3f} "
                f"{str(best):>22} {cost:9.3f} {elapsed:7.3f}"
            )


def model_family(steps_per_op: int) -> None:
    n, gbps = 128, 100
    print(
        f"\n== Model family at n = {n}, {gbps} Gbps ports, MCMC budget {steps_per_op} steps per op per fabric"
    )
    print("   (fat-tree sized with the [prices] table of each model's instance file)")
    for d in (4, 8):
        print(
            f"{'model':10} {'d':>2} {'TopoOpt $M':>10} {'FT Gbps':>7} {'compute':>8} {'TopoOpt':>9} "
            f"{'fat-tree':>9} {'ideal':>9} {'FT/TopoOpt':>10} {'search s':>8}  TopoOpt MP degrees"
        )
        for name, workload in H.WORKLOADS.items():
            prices = load(model_instance_path(name, n, d, gbps)).instance.prices
            ft = H.similar_cost_fattree_gbps(n, d, gbps, prices)
            cost = H.topoopt_cost(n, d, gbps, prices)
            clamped = "*" if abs(H.fattree_cost(n, ft, prices) - cost) > 1e-9 * cost else " "
            budget = max(100, steps_per_op * len(workload.ops))
            t0 = time.perf_counter()
            topo = H.alternating_search(workload, n, d, gbps, server_flops=H.SERVER_FLOPS, budget=budget)
            elapsed = time.perf_counter() - t0
            fat = H.alternating_search(
                workload, n, d, gbps, server_flops=H.SERVER_FLOPS, budget=budget, switch_gbps=ft
            )
            ideal = H.alternating_search(
                workload, n, d, gbps, server_flops=H.SERVER_FLOPS, budget=budget, switch_gbps=d * gbps
            )
            used = sorted(set(topo.strategy))
            print(
                f"{name:10} {d:2} {cost / 1e6:10.3f} {ft:6.1f}{clamped} "
                f"{H.compute_time(workload, H.SERVER_FLOPS) * 1e3:8.2f} "
                f"{topo.iteration_time * 1e3:9.2f} {fat.iteration_time * 1e3:9.2f} "
                f"{ideal.iteration_time * 1e3:9.2f} {fat.iteration_time / topo.iteration_time:9.2f}x "
                f"{elapsed:8.1f}  {used}"
            )
    print("(* the budget lies outside the priced fat-tree rates: clamped to the table's end; add a tier)")
    print(f"(times in ms per iteration; ideal switch: d x {gbps} Gbps per server; the paper reports")
    print(f" TopoOpt up to {PAPER_SPEEDUP}x faster than a similar-cost fat-tree; see docs/topoopt.md)")


#: Model-family instance grid (n, d, Gbps): the issue's n in {16..128}, d in {4, 6, 8}, 40/100 Gbps.
MODEL_GRID = ((16, 6, 40), (32, 4, 100), (64, 8, 40), (128, 4, 100), (128, 6, 40), (128, 8, 100))


def write_model_instances(steps_per_op: int) -> None:
    """The traffic of the strategy the TopoOpt search finds, per model and grid point."""
    for name, workload in H.WORKLOADS.items():
        budget = max(100, steps_per_op * len(workload.ops))
        for n, d, gbps in MODEL_GRID:
            found = H.alternating_search(workload, n, d, gbps, server_flops=H.SERVER_FLOPS, budget=budget)
            write_model_instance(name, workload, found.strategy, n, d, gbps, budget)


def model_instance_path(name: str, n: int, d: int, gbps: int) -> Path:
    return INSTANCES / f"2-model-{name.lower().replace('-', '')}-n{n}-d{d}-{gbps}g.toml"


def write_model_instance(name: str, workload, strategy, n: int, d: int, gbps: int, budget: int) -> None:
    """Keeps the [prices] of an existing file (a user's re-pricing survives a rewrite)."""
    path = model_instance_path(name, n, d, gbps)
    prices = load(path).instance.prices if path.exists() else T.DEFAULT_PRICES
    instance = dataclasses.replace(H.workload_instance(workload, strategy, n, d, gbps), prices=prices)
    text = to_toml(
        topoopt.PROBLEM,
        instance,
        description=(
            f"Model family: {name} traffic at n={n}, d={d}, {gbps} Gbps, of the strategy "
            f"coopt.solvers.topoopt.alternating_search finds (seed 0, budget {budget}); heuristics only. "
            f"{PRICES_NOTE}"
        ),
        source=workload.source,
    )
    write_atomic(path, text)


def write_stride_instances() -> None:
    for n, d in ((32, 3), (64, 4)):
        instance = T.Instance(n, d, 100e9, (), (), (T.ModelParallelGroup(n, 1e6),))
        text = to_toml(
            topoopt.PROBLEM,
            instance,
            description=f"Stride family: uniform all-to-all of 1 MB per pair, n={n}, d={d}; heuristics only",
            source="TopoOpt (NSDI 2023), research notes 1(b) P4",
        )
        write_atomic(INSTANCES / f"2-stride-n{n}-d{d}.toml", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps-per-op", type=int, default=12, help="MCMC steps per op (default 12, >= 100)")
    parser.add_argument("--write-instances", action="store_true", help="rewrite the 2-* instance files")
    args = parser.parse_args()
    exact_family()
    stride_family()
    if args.write_instances:
        write_stride_instances()
        write_model_instances(args.steps_per_op)
    model_family(args.steps_per_op)


if __name__ == "__main__":
    main()
