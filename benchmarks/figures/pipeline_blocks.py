"""The building-block search ``v_auto`` at memory budgets between V-Min's and ZB-V's.

For p in {4, 8} (``--p``), m = 4p, on unit times and on the LLaMA instance's F:B:W = 1 : 1.04 :
0.96, two chunks per device in a V, a = a_W (the papers' accounting, as in
benchmarks/figures/pipeline_schedules.py). Each budget is a fraction of 1F1B's peak activation memory
(p a per device) set as the cap. Per budget: ``v_auto``'s span bubble and peak memory as fractions
of 1F1B's; the same for the block search alone (without ZB-V / V-Half / V-Min among its
candidates); and each of ZB-V, V-Half, V-Min at its own memory, marked * where that memory fits
the budget. Then the large tier's V instance (2-llama70b-l64-pp8-m32-v2) against its dual
bound. The paper's claim: the search is at least as good as the named schedules at their own
memory (Qi et al., NeurIPS 2024, Section 3).

    python benchmarks/figures/pipeline_blocks.py [--p 4 8]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from pipeline_schedules import RATIOS, bubble_and_peak, instance, measure

from coopt.instance import load
from coopt.problem import NoSolution
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.heuristics import blocks

LLAMA_V2 = Path(__file__).resolve().parents[2] / "instances" / "pipeline" / "2-llama70b-l64-pp8-m32-v2.toml"

BUDGETS = (("1/3", 1 / 3), ("1/2", 1 / 2), ("2/3", 2 / 3), ("3/4", 3 / 4), ("1", 1.0))
NAMED = ("zb_v", "v_half", "v_min")


def blocks_alone(inst: pm.Instance) -> tuple[float, float] | None:
    """(span bubble, peak bytes) of the block search without the named schedules."""
    found, _ = blocks._block_search(inst)
    return None if found is None else bubble_and_peak(inst, found)


def llama() -> None:
    """The large tier's V instance (capped, recompute allowed): v_auto beside the portfolio and
    the registered dual bound (certified gap = value / bound - 1)."""
    inst = load(LLAMA_V2).instance
    bound = PROBLEM.bound(inst)
    print(f"\n**{LLAMA_V2.name}** (iteration time, s; dual bound {bound:.3f})\n")
    print("| method | value | certified gap | seconds |")
    print("|---|---|---|---|")
    for method in ("v_auto", "portfolio", "v_half", "v_min", "zb_v"):
        t0 = time.perf_counter()
        try:
            value = schedules.HEURISTICS[method](inst)["objective"]
        except NoSolution:
            print(f"| `{method}` | - | - | - |")
            continue
        gap = 100 * (value / bound - 1)
        print(f"| `{method}` | {value:.3f} | {gap:.1f} % | {time.perf_counter() - t0:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[4, 8])
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    for label, ratio in RATIOS.items():
        print(f"\n**{label}**, m = 4p (bubble / 1F1B's bubble, memory / 1F1B's peak; - = does not fit)\n")
        print("| p | budget | v_auto | blocks alone | ZB-V | V-Half | V-Min | best named that fits |")
        print("|---|---|---|---|---|---|---|---|")
        for p in args.p:
            m = 4 * p
            b0, m0 = measure("1f1b", instance(p, m, ratio, 1))
            free = instance(p, m, ratio, 2)
            named = {name: measure(name, free) for name in NAMED}

            def cell(got: tuple[float, float] | None, fits: bool = False, b0=b0, m0=m0) -> str:
                if got is None:
                    return "-"
                return f"{max(got[0] / b0, 0.0):.2f} / {got[1] / m0:.2f}" + ("*" if fits else "")

            for text, share in BUDGETS:
                capped = replace(free, memory_cap_bytes=(share * m0,) * p)
                fits = {n: got is not None and got[1] <= share * m0 * (1 + 1e-9) for n, got in named.items()}
                best = min((named[n][0], n) for n in NAMED if fits[n]) if any(fits.values()) else None
                row = [cell(measure("v_auto", capped)), cell(blocks_alone(capped))]
                row += [cell(named[n], fits[n]) for n in NAMED]
                row.append("-" if best is None else f"{best[1]} {max(best[0] / b0, 0.0):.2f}")
                print(f"| {p} | {text} | " + " | ".join(row) + " |", flush=True)
    llama()
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
