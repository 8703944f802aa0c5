"""Scope's headline numbers beside ours (rows of docs/fidelity.md), and the sweeps behind them.

    .venv/bin/python benchmarks/fidelity/fidelity_scope.py            the figures, then the sensitivity sweeps

Scope (arXiv 2602.14393) claims up to 1.73x throughput on ResNet-152 inference at similar energy
over the state of the art, and a search whose solutions rank in the top 0.05 %. A third-party
summary (www.emergentmind.com/papers/2602.14393) names that state of the art: the segmented
pipeline with input-shared and weight-shared partitions and DP mapping. Ours is exactly that:
``segmented_pipeline`` is the exact DP restricted to one layer per pipeline stage, every stage
choosing IS or WS and its chiplets, the segmentation chosen by the same DP; Scope's merged
pipeline is the unrestricted DP. Module: the Gemini/Simba grid of the research notes (1024
GMAC/s, 2 MiB SRAM, 32 GB/s links per chiplet, DRAM at 'TOPS' GB/s, batch 64), at 16, 36 and 64
chiplets (4 x 4, Simba's 6 x 6, 8 x 8); the paper's module sizes are not readable.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from coopt.instance import load
from coopt.problems.scope import brute
from coopt.problems.scope import dp as scope_dp
from coopt.problems.scope import heuristics as solvers
from coopt.problems.scope import model as scope_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import Claim, Ours  # noqa: E402

SIZES = (16, 36, 64)
COMMAND = ".venv/bin/python benchmarks/fidelity/fidelity_scope.py"
PAPER = "Scope (arXiv 2602.14393)"
SHIPPED = Path(__file__).resolve().parents[2] / "coopt" / "instances" / "scope"
SLICE = SHIPPED / "0-resnet152-conv4-tail6-m8.toml"


@cache
def merged_and_segmented(chiplets: int, **module: float) -> tuple[dict, dict, scope_model.Instance]:
    inst = scope_model.resnet_instance(152, chiplets, **module)
    return scope_dp.dynamic_program(inst), solvers.segmented_pipeline(inst), inst


def speedup(chiplets: int, **module: float) -> float:
    merged, segmented, _ = merged_and_segmented(chiplets, **module)
    return segmented["objective"] / merged["objective"]


def energy_ratio(chiplets: int) -> float:
    merged, segmented, inst = merged_and_segmented(chiplets)
    joules = [scope_model.energy(inst, scope_model.parse(s)[0]) for s in (merged, segmented)]
    return joules[0] / joules[1]


def _throughput() -> Ours:
    ratios = {m: speedup(m) for m in SIZES}
    best = max(ratios.values())
    cells = ", ".join(f"{r:.2f}x at {m}" for m, r in ratios.items())
    status = "reproduced" if abs(best / 1.73 - 1) <= 0.10 else "explained"
    return Ours(f"up to {best:.2f}x ({cells}; {100 * (best / 1.73 - 1):+.0f} %)", status,
                "our baseline is the same segmented pipeline (IS/WS, DP mapping) under our reconstructed "
                "cost model; the ratio moves most with the NoP link bandwidth (sweep in docs/scope.md)")


def _energy() -> Ours:
    ratios = {m: energy_ratio(m) for m in SIZES}
    cells = ", ".join(f"{r:.2f} at {m}" for m, r in ratios.items())
    similar = all(abs(r - 1) <= 0.15 for r in ratios.values())
    return Ours(f"merged / segmented energy {cells}", "reproduced" if similar else "explained",
                "energy constants [S] (0.2 pJ/MAC, 1 pJ/bit NoP, 10 pJ/bit DRAM); merging trades DRAM "
                "spills for NoP all-gathers")


def rank_cases() -> list[tuple[str, scope_model.Instance]]:
    cases = [(f"generate {seed} {size}", scope_model.generate(seed, size))
             for size in (1, 2) for seed in range(10)]
    return cases + [("0-resnet152-conv4-tail6-m8", load(SLICE).instance)]


def _rank() -> Ours:
    ranks = []
    for _, inst in rank_cases():
        value = solvers.search(inst)["objective"]
        ranks.append(brute.enumerate_space(inst, (value,)).percentile(value))
    inside = sum(r <= 0.0005 for r in ranks)
    return Ours(f"top 0.05 % on {inside} of {len(ranks)} fully enumerated spaces "
                f"(worst {100 * max(ranks):.2f} %)",
                "reproduced" if inside == len(ranks) else "explained",
                "our search is a reconstruction from the abstract; on the tiny spaces a handful of better "
                "mappings already exceeds 0.05 %")


CLAIMS = [
    Claim("scope", PAPER, "throughput over the segmented pipeline, ResNet-152", "up to 1.73x", COMMAND,
          _throughput),
    Claim("scope", PAPER, "energy at that throughput", "similar energy", COMMAND, _energy),
    Claim("scope", PAPER, "search quality", "top 0.05 %", COMMAND, _rank),
]

#: One assumption at a time, at 16 chiplets (the DP there takes seconds).
SWEEPS = {
    "nop_bandwidth_gbyte_per_s": (8.0, 16.0, 32.0, 64.0),
    "dram_bandwidth_gbyte_per_s": (16.384, 32.768, 65.536, 131.072),  # TOPS/2 .. 4 TOPS
    "batch": (16, 64, 256),
    "sram_kib": (1024.0, 2048.0, 4096.0),
}


def main() -> None:
    for claim in CLAIMS:
        print(f"{claim.claim}: paper {claim.paper_value}; ours {claim.compute().value}", flush=True)
    print("\nmerged / segmented throughput on ResNet-152 at 16 chiplets, one assumption moved at a time")
    print("| assumption | " + " | ".join("value -> speed-up" for _ in range(4)) + " |")
    print("|---|---|---|---|---|")
    for field, values in SWEEPS.items():
        cells = [f"{v:g} -> {speedup(16, **{field: v}):.2f}x" for v in values]
        print(f"| {field} | " + " | ".join(cells + [""] * (4 - len(cells))) + " |", flush=True)


if __name__ == "__main__":
    main()
