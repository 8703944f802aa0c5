"""Fidelity rows of the CHASE problems: the paper's headline claims from its abstract
(the body was not readable), each recomputed by benchmarks/figures/chase.py on the quick families.

    python benchmarks/fidelity/fidelity.py --only chase
"""

from __future__ import annotations

import contextlib
import io

from chase import explore_bench, gaps, mapping_times
from fidelity import Claim, Ours
from roofline_cpu import measured_in_subprocess

PAPER = "CHASE (2026)"


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def mapper_gap() -> Ours:
    table = _quiet(gaps, True)
    mapper, ours = table["chase_mapper"], table["local_search"]
    low = mapper["by_ccr"][0.1]
    status = "reproduced" if mapper["mean"] <= 0.0606 * 1.1 else "explained"
    return Ours(
        f"{mapper['mean']:.2%} mean ({low:.2%} at CCR 0.1, {mapper['by_ccr'][10.0]:.2%} at CCR 10); our "
        f"local search {ours['mean']:.2%} mean, {ours['worst']:.2%} worst",
        status,
        "the communication-to-computation ratio: our family mixes CCR 0.1, 1 and 10, and at 10 every list "
        "scheduler spreads tasks that the optimum keeps together; the CHASE mapper is our reading of the "
        "abstract, the optima the MILP's on 6-12 tasks (docs/chase.md, gaps table)",
    )


def mapping_time() -> Ours:
    times = _quiet(mapping_times, True)
    mapper, peft = times[200]
    saved = 1 - mapper / peft
    status = "reproduced" if abs(saved - 0.605) <= 0.0605 else "explained"
    return Ours(
        f"{saved:.1%} less at 200 tasks",
        status,
        "the pre-filter tries 2-4 devices per task where PEFT builds its O(e P^2) table and tries all P; "
        "the saving depends on the DAG's size and the machine's load (39-73 % over 50-400 tasks on 8 "
        "devices in docs/chase.md's run)",
    )


def outer_loop() -> Ours:
    result = _quiet(explore_bench, True)
    status = "reproduced" if result["gap64_mean"] <= 0.02 and result["hits64"] >= 0.8 else "explained"
    return Ours(
        f"{result['gap64_mean']:.2%} mean gap at 64 evaluations ({result['hits64']:.0%} of starts at the "
        f"exhaustive optimum; {result['gap16_mean']:.2%} at 16)",
        status,
        "a small design space (4 types, 2 racks, 2319 feasible designs) enumerated exhaustively; "
        "the paper's spaces are not known",
    )


def compute_model() -> Ours:
    result = measured_in_subprocess()
    one, aware = result["roofline"], result["cache_aware"]
    status = "reproduced" if aware["all"] <= 0.075 * 1.1 else "explained"
    return Ours(
        f"{aware['all']:.1%} MAPE over 50 kernels measured on one CPU core with the cache-aware roofline "
        f"(GEMMs {aware['gemm']:.1%}, those with every dimension >= 1024 "
        f"{result['gemm_by_least']['1024']:.1%}; kernels >= 1 ms {aware['large']:.1%}); "
        f"{one['all']:.0%} with one memory level",
        status,
        "the device: the paper's are not public, ours is one core of this machine (numpy float32), where one "
        "compute efficiency for every GEMM shape and the cache levels decide the error; sweep of both in "
        "benchmarks/figures/roofline_cpu.py",
    )


def speedups() -> Ours:
    result = _quiet(explore_bench, True)
    return Ours(
        f"{result['vs_homogeneous']:.2f}x over the best homogeneous design, {result['vs_random']:.2f}x over "
        "random search at 64 evaluations",
        "explained",
        "the paper's two baselines are not named in the abstract; ours are the best single-type design of "
        "the space and random search at the same simulation budget, on a small space where random search "
        "gets close",
    )


CLAIMS = [
    Claim("chase", PAPER, "topology-aware mapper's gap to exhaustive optima", "within 6.06 %",
          "python benchmarks/figures/chase.py --quick --part gaps", mapper_gap),
    Claim("chase", PAPER, "mapping time against PEFT", "60.5 % less",
          "python benchmarks/figures/chase.py --quick --part times", mapping_time),
    Claim("chase", PAPER, "outer loop reaches near-global optima", "within 64 iterations",
          "python benchmarks/figures/chase.py --quick --part explore", outer_loop),
    Claim("chase", PAPER, "compute-model error", "4.4-7.5 % (MAPE)",
          "python benchmarks/figures/roofline_cpu.py", compute_model),
    Claim("chase", PAPER, "geomean speed-ups of the designs found", "6.20x and 2.12x",
          "python benchmarks/figures/chase.py --quick --part explore", speedups),
]
