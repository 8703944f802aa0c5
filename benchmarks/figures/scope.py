"""Scope benchmark: merged pipeline vs the segmented layer pipeline (and pure intra-layer
parallelism) on ResNet-152 across module sizes, the heuristics' gaps to the DP optimum, and
their percentile ranks under full enumeration on small instances.

Run: ``.venv/bin/python benchmarks/figures/scope.py [--quick]``. Paper: up to 1.73x throughput on
ResNet-152 vs the state of the art (Scope, arXiv 2602.14393, abstract); its search ranks in the
top 0.05%. Times are wall seconds: the DP has no model build; the MILP rows give build,
hand-off (HiGHS set_instance) and HiGHS solve separately.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems import scope
from coopt.problems.scope import bound as scope_bound
from coopt.problems.scope import brute, milp
from coopt.problems.scope import dp as scope_dp
from coopt.problems.scope import heuristics as solvers
from coopt.problems.scope import model as scope_model
from coopt.solvers.highs import solve_model

INSTANCES = Path(__file__).resolve().parents[2] / "instances" / "scope"



def searched_model(inst):
    """The MILP bounded by ``search``'s value, as the runner builds it from its warm start."""
    return milp.build(inst, incumbent=solvers.search(inst))


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def throughput_table(depth: int, sizes: list[int]) -> None:
    print(f"\n## ResNet-{depth}, batch 64: throughput (images/s) and speed-up of the merged pipeline")
    print("| chiplets | merged | segmented | intra-layer | merged/segmented | merged/intra | "
          "energy merged/segmented | segments | clusters | DP s (merged / segmented / intra) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for chiplets in sizes:
        inst = scope_model.resnet_instance(depth, chiplets)
        merged, t_m = timed(scope_dp.dynamic_program, inst)
        segmented, t_s = timed(scope_dp.dynamic_program, inst, scope_model.SEGMENTED)
        intra, t_i = timed(scope_dp.dynamic_program, inst, scope_model.INTRA_LAYER)
        for solution in (merged, segmented, intra):
            assert scope_model.check(inst, solution) == []
        clusters = sum(len(seg) for seg in merged["segments"])
        joules = [scope_model.energy(inst, scope_model.parse(solution)[0])
                  for solution in (merged, segmented)]
        print(f"| {chiplets} | {merged['throughput']:.0f} | {segmented['throughput']:.0f} | "
              f"{intra['throughput']:.0f} | {merged['throughput'] / segmented['throughput']:.3f} | "
              f"{merged['throughput'] / intra['throughput']:.3f} | {joules[0] / joules[1]:.3f} | "
              f"{len(merged['segments'])} | {clusters} | "
              f"{t_m:.1f} / {t_s:.1f} / {t_i:.1f} |", flush=True)
        heuristic_row(inst, merged["objective"], chiplets)


HEURISTIC_ROWS: list[str] = []


def heuristic_row(inst: scope_model.Instance, optimum: float, chiplets: int) -> None:
    """Each heuristic's gap to the DP optimum and its certified gap (heuristic - bound) / bound,
    with the dual bound that needs no optimum (the large tier)."""
    bound, bound_s = timed(scope_bound.bound, inst, SolveOptions())
    cells = []
    for name in ("search", "search_resegment", "annealing"):
        solution, seconds = timed(scope.PROBLEM.heuristics[name], inst)
        assert scope_model.check(inst, solution) == []
        value = solution["objective"]
        gap, certified = 100 * (value / optimum - 1), 100 * (value / bound - 1)
        cells.append(f"{gap:.2f} % / {certified:.1f} % in {seconds:.1f} s")
    floor = f"{100 * (optimum / bound - 1):.1f} % ({bound_s:.2f} s)"
    HEURISTIC_ROWS.append(f"| {inst.n_layers} | {chiplets} | {floor} | " + " | ".join(cells) + " |")


def rank_table(seeds: int) -> None:
    print("\n## Percentile rank under full enumeration: share of feasible mappings strictly better "
          "(count in brackets)")
    names = ["exact", "search", "search_resegment", "annealing", "segmented_pipeline", "intra_layer"]
    print("| instance | L | M | mappings | " + " | ".join(names) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(names))
    cases = [(f"generate seed {seed} size {size}", scope_model.generate(seed, size))
             for size in (1, 2) for seed in range(seeds)]
    cases.append(("0-resnet152-conv4-tail6-m8", load(INSTANCES / "0-resnet152-conv4-tail6-m8.toml").instance))
    worst = dict.fromkeys(names, 0.0)
    for label, inst in cases:
        values = {"exact": scope_dp.dynamic_program(inst)["objective"]}
        values.update({n: scope.PROBLEM.heuristics[n](inst)["objective"] for n in names[1:]})
        space = brute.enumerate_space(inst, tuple(values.values()))
        ranks = {n: space.percentile(values[n]) for n in names}
        for n in names:
            worst[n] = max(worst[n], ranks[n])
        print(f"| {label} | {inst.n_layers} | {inst.chiplets} | {space.total} | "
              + " | ".join(f"{100 * ranks[n]:.4f}% ({space.better[values[n]]})" for n in names) + " |",
              flush=True)
    print("| worst | | | | " + " | ".join(f"{100 * worst[n]:.4f}%" for n in names) + " |")


def milp_table() -> None:
    print("\n## Exact routes on the small and medium shipped instances (seconds)")
    print("| instance | DP | MILP build (with search) | MILP hand-off | MILP solve | MILP = DP |")
    print("|---|---:|---:|---:|---:|---|")
    for path in sorted(INSTANCES.glob("[01]-*.toml")):
        inst = load(path).instance
        dp, t_dp = timed(scope_dp.dynamic_program, inst)
        if inst.n_layers > 12:
            print(f"| {path.stem} | {t_dp:.2f} | - | - | - | (MILP not run: {inst.n_layers} layers) |")
            continue
        model, t_build = timed(searched_model, inst)
        result = solve_model(model, SolveOptions(gap=1e-9, time_limit=600))
        agree = result.status == "optimal" and abs(result.objective / dp["objective"] - 1) < 1e-9
        print(f"| {path.stem} | {t_dp:.2f} | {t_build:.2f} | {result.handoff:.2f} | {result.solve:.2f} | "
              f"{'yes' if agree else result.status} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="module sizes 4 and 16 only, fewer seeds")
    args = parser.parse_args()
    sizes = [4, 16] if args.quick else [4, 16, 36, 64]
    milp_table()
    rank_table(seeds=3 if args.quick else 10)
    throughput_table(50, [4, 16] if args.quick else [4, 16, 36])
    throughput_table(152, sizes)
    print("\n## Heuristics: gap to the DP optimum / certified gap to the dual bound, and run time")
    print("| layers | chiplets | optimum over the bound | search | search_resegment | annealing |")
    print("|---:|---:|---|---|---|---|")
    print("\n".join(HEURISTIC_ROWS))


if __name__ == "__main__":
    main()
