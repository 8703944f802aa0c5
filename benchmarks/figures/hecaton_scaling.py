"""Hecaton vs 1D tensor parallelism (Megatron) vs 2D SUMMA (Optimus) on Llama-3.1-405B across
package sizes: iteration time and energy of each scheme's best uniform configuration, with the
paper's 5.29x (time) and 3.46x (energy) beside ours, then the exact methods' timings.

    .venv/bin/python benchmarks/figures/hecaton_scaling.py [--dies 16,64,...] [--no-milp]

Each scheme's optimum is the exact DP with the instance restricted to that scheme (micro-batch
count and recompute still chosen per block). Rows are given twice: with the shipped DRAM capacity
(16 TB per package; 1D-TP keeps its activations replicated and usually cannot fit) and with the
DRAM row relaxed, so that 1D-TP has a number at all. Time and energy are each that objective's
own optimum.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from coopt.instance import load
from coopt.problem import ExactOutcome, NoSolution, SolveOptions
from coopt.problems import hecaton
from coopt.problems.hecaton import dp
from coopt.problems.hecaton import heuristics as methods
from coopt.problems.hecaton import model as hecaton_model
from coopt.problems.hecaton.model import Instance, Option, cost, parse, stash_total
from coopt.run import run

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "instances" / "hecaton" / "2-llama31-405b-n256.toml"
PAPER = {"time": 5.29, "energy": 3.46}


def solve_exact(instance: Instance) -> ExactOutcome:
    """The exact DP from the runner's warm start (it prunes the capacity DP), as ``coopt solve``."""
    try:
        start = methods.warm_start(instance)
    except NoSolution:
        start = None
    return dp.exact(instance, SolveOptions(), incumbent=start)


def best(instance: Instance, scheme: str | None, objective: str) -> tuple[float, Option] | None:
    """The optimum (s or J) and its most used option, optionally with one scheme only."""
    restricted = replace(instance, objective=objective)
    if scheme is not None:
        restricted = replace(restricted, schemes=(scheme,))
    outcome = solve_exact(restricted)
    if outcome.solution is None:
        return None
    chosen, _ = parse(restricted, outcome.solution)
    return outcome.solution["objective"], Counter(chosen).most_common(1)[0][0]


def label(option: Option) -> str:
    extra = "R" if option.recompute else ("G" if option.regather else "")
    return f"{option.rows}x{option.cols}/{option.microbatches}{extra}"


def cell(found: tuple[float, Option] | None, unit: float, width: int = 22) -> str:
    if found is None:
        return f"{'n/a':>{width}}"
    return f"{found[0] / unit:8.3f} {label(found[1]):>{width - 9}}"


def ratio(a: tuple[float, Option] | None, b: tuple[float, Option] | None) -> str:
    return f"{a[0] / b[0]:6.2f}x" if a and b else f"{'-':>7}"


def scheme_table(template: Instance, dies: list[int]) -> None:
    print("Llama-3.1-405B, 126 blocks, 4 x 4096 tokens per iteration; hardware [S] of the research notes")
    print(f"paper (Hecaton vs Megatron TP): {PAPER['time']}x time, {PAPER['energy']}x energy")
    print("cells: optimum, then the option most blocks use (mesh / micro-batches, R = recompute,"
          " G = re-gather)")
    for relaxed in (False, True):
        print()
        print("DRAM row relaxed" if relaxed else "shipped DRAM capacity (16 TB per package)")
        for objective, unit, name in (("time", 1.0, "iteration time, s"), ("energy", 1e3, "energy, kJ")):
            print(f"  {name}")
            print(f"  {'N':>5} | {'1d (Megatron)':>22} | {'summa (Optimus)':>22} | {'agrs (Hecaton)':>22} |"
                  f" {'mixed optimum':>22} | 1d/agrs | summa/agrs")
            for n in dies:
                package = replace(template.package, dies=n)
                if relaxed:
                    package = replace(package, dram_bytes=1e18)
                instance = replace(template, package=package)
                rows = {s: best(instance, s, objective) for s in ("1d", "summa", "agrs")}
                mixed = best(instance, None, objective)
                cells = " | ".join(cell(rows[s], unit) for s in ("1d", "summa", "agrs"))
                print(f"  {n:>5} | {cells} | {cell(mixed, unit)} | {ratio(rows['1d'], rows['agrs'])} |"
                      f" {ratio(rows['summa'], rows['agrs'])}")


def weak_scaling_table() -> None:
    """Compute-to-NoP ratio t_C / t_N of the cost model itself (attention and latency included),
    h = 16384 sqrt(N / 256) rounded to 128, T = 4096, one micro-batch, no recompute, square mesh."""
    print()
    print("weak scaling in the cost model: t_C / t_N per block (B_eff = 512 GB/s, F = 100 TFLOP/s)")
    print(f"  {'N':>5} {'h':>6} | {'agrs':>8} {'agrs+R':>8} {'1d':>8} {'summa':>8}")
    template = load(TEMPLATE, registry_get=lambda name: hecaton.PROBLEM).instance
    for q in (4, 8, 16, 32):
        n = q * q
        hidden = round(16384 * (n / 256) ** 0.5 / 128) * 128
        model = replace(template.model, hidden=hidden, heads=hidden // 128, sequences=q,
                        sequence_length=4096 // q, segment_blocks=(1,), segment_ffn=(hidden * 13 // 4,))
        package = replace(template.package, dies=n, sram_bytes=1e6 * 2**20)
        instance = replace(template, model=model, package=package, microbatches=(1,))
        ffn = hidden * 13 // 4
        values = []
        for option in (Option("agrs", q, q, 1, False), Option("agrs", q, q, 1, True),
                       Option("1d", 1, n, 1, False), Option("summa", q, q, 1, False)):
            c = cost(instance, ffn, option)
            values.append(c.compute_s / c.nop_s)
        print(f"  {n:>5} {hidden:>6} | " + " ".join(f"{v:8.2f}" for v in values))


def forget() -> None:
    """Empty the per-instance caches (option costs, candidates, re-layouts, the solvers' menu), so
    that every method pays for its own cost tables."""
    for cached in (hecaton_model.cost, hecaton_model.candidates, hecaton_model.transition, dp.menu):
        cached.cache_clear()


def method_timings() -> None:
    """Every method and the dual bound on every shipped instance: value, times, and each heuristic's
    certified gap (heuristic - bound) / bound, which needs no optimum (the large tier)."""
    print()
    print("methods on the shipped instances (value, then build / hand-off / solve / total s); the bound")
    print("is the Lagrangian dual of the DRAM row; certified gap = (heuristic - bound) / bound")
    for path in sorted((ROOT / "instances" / "hecaton").glob("*.toml")):
        instance = load(path, registry_get=lambda name: hecaton.PROBLEM).instance
        reports = {}
        for method in [*hecaton.PROBLEM.methods, "bound"]:
            forget()
            start = time.perf_counter()
            report = run(hecaton.PROBLEM, instance, method, SolveOptions(gap=1e-9, time_limit=600))
            reports[method] = report
            wall = time.perf_counter() - start
            t = report.times
            value = report.objective if method != "bound" else report.bound
            shown = "-" if value is None else f"{value:.9g}"
            print(f"{path.stem:34} {method:12} {report.status:9} {shown:>16}"
                  f"  {t['build']:7.3f} {t['handoff']:7.3f} {t['solve']:7.3f} {wall:7.3f}")
        bound = reports["bound"].bound
        for method in hecaton.PROBLEM.heuristics:
            value = reports[method].objective
            if bound and value is not None:
                print(f"{'':34} certified gap of {method}: {100 * (value - bound) / bound:.4f} %")


def heuristic_gaps(seeds: int) -> None:
    """Relative gap of each heuristic to the exact optimum over generated instances."""
    print()
    print(f"heuristic gap to the optimum over generated instances (seeds 0..{seeds - 1})")
    for size in hecaton.PROBLEM.sizes:
        gaps: dict[str, list[float]] = {name: [] for name in hecaton.PROBLEM.heuristics}
        solved = binding = 0
        for seed in range(seeds):
            instance = hecaton_model.generate(seed, size)
            exact = solve_exact(instance)
            if exact.solution is None:
                continue
            solved += 1
            free = dp.layered_dp(instance)
            binding += stash_total(instance, free) > instance.stash_capacity
            optimum = exact.solution["objective"]
            for name, fn in hecaton.PROBLEM.heuristics.items():
                try:
                    value = fn(instance)["objective"]
                except NoSolution:
                    value = math.inf
                gaps[name].append(value / optimum - 1)
        print(f"  {size:>3} blocks: {solved} feasible instances, DRAM row binds in {binding}")
        for name, found in gaps.items():
            finite = [g for g in found if math.isfinite(g)]
            hits = sum(g <= 1e-9 for g in found)
            print(f"    {name:13} mean {100 * sum(finite) / max(len(finite), 1):6.3f} %"
                  f"  max {100 * max(finite, default=0):6.3f} %  optimal {hits}/{len(found)}"
                  f"  none found {len(found) - len(finite)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dies", default="16,64,128,256,512,1024")
    parser.add_argument("--no-milp", action="store_true", help="skip the per-instance method timings")
    parser.add_argument("--seeds", type=int, default=40, help="generated instances per size for the gaps")
    args = parser.parse_args()
    template = load(TEMPLATE, registry_get=lambda name: hecaton.PROBLEM).instance
    scheme_table(template, [int(n) for n in args.dies.split(",")])
    weak_scaling_table()
    heuristic_gaps(args.seeds)
    if not args.no_milp:
        method_timings()


if __name__ == "__main__":
    main()
