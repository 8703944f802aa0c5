"""Bubble and memory of every uncapped schedule beside the papers' claims.

For p in {4, 8, 16} and m in {2p, 4p, 8p}, on unit times (F = B = W = 1) and on the LLaMA instance's
F:B:W = 1 : 1.04 : 0.96 (benchmarks/figures/pipeline.py Part B), each schedule's span bubble (largest
per-device span minus the device's load) and peak activation memory, both as fractions of 1F1B's.
Memory follows the papers' accounting: a micro-batch's activations stay until its W (a_W = a); the
two-chunk schedules place two chunks per device in a V.

The papers' claims (Zero Bubble README; Qi et al. 2024): 1F1B bubble B and memory 1x; ZB-H1 B/3
and 1x; ZB-H2 0 and 2x; ZB-V 0 and 1x; V-Half B/2 and 1/2x; V-Min 2B/3 and 1/3x.

    python benchmarks/figures/pipeline_schedules.py [--p 4 8 16]
"""

from __future__ import annotations

import argparse
import time

from coopt.problem import NoSolution
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.model import GB

#: (label, method, chunks in a V, claimed bubble / 1F1B's, claimed memory / 1F1B's)
ROWS = [
    ("1F1B", "1f1b", 1, "1", "1"),
    ("ZB-H1", "zb_h1", 1, "1/3", "1"),
    ("ZB-H2", "zb_h2", 1, "0", "2"),
    ("ZB auto (uncapped)", "zb_auto", 1, "-", "-"),
    ("ZB-V", "zb_v", 2, "0", "1"),
    ("V-Half", "v_half", 2, "1/2", "1/2"),
    ("V-Min", "v_min", 2, "2/3", "1/3"),
]
RATIOS = {"unit": (1.0, 1.0, 1.0), "LLaMA 1:1.04:0.96": (1.0, 1.04, 0.96)}


def instance(p: int, m: int, ratio: tuple[float, float, float], chunks: int) -> pm.Instance:
    f, b, w = ratio
    return pm.Instance(
        stages=p, microbatches=m, chunks=chunks, placement="vshape" if chunks == 2 else "interleaved",
        forward_s=(f,) * p, backward_s=(b,) * p, weight_s=(w,) * p,
        activation_bytes=(2 * GB,) * p, weight_grad_bytes=(2 * GB,) * p, objective="stage_span",
    )


def measure(method: str, inst: pm.Instance) -> tuple[float, float] | None:
    """(span bubble, peak bytes) of one schedule, or None when it does not apply."""
    try:
        return bubble_and_peak(inst, schedules.HEURISTICS[method](inst))
    except NoSolution:
        return None


def bubble_and_peak(inst: pm.Instance, solution: dict) -> tuple[float, float]:
    """(span bubble, peak bytes) of a solution: largest per-device span minus the device load."""
    timed, _ = pm.parse(inst, solution)
    load = inst.microbatches * (inst.forward_s[0] + inst.backward_s[0] + inst.weight_s[0])
    return timed.stage_span(inst) - load, max(pm.peaks(inst, timed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=int, nargs="+", default=[4, 8, 16])
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    for label, ratio in RATIOS.items():
        print(f"\n**{label}** (bubble / 1F1B's bubble, memory / 1F1B's peak; claim in brackets)\n")
        cases = [(p, m) for p in args.p for m in (2 * p, 4 * p, 8 * p)]
        print("| schedule | " + " | ".join(f"p={p} m={m}" for p, m in cases) + " |")
        print("|---|" + "---|" * len(cases))
        base = {case: measure("1f1b", instance(*case, ratio, 1)) for case in cases}
        for name, method, chunks, bubble_claim, memory_claim in ROWS:
            cells = []
            for case in cases:
                got = measure(method, instance(*case, ratio, chunks))
                if got is None:
                    cells.append("-")
                    continue
                (b0, m0), (b, mem) = base[case], got
                cells.append(f"{max(b / b0, 0.0):.2f} / {mem / m0:.2f}")
            print(f"| {name} [{bubble_claim} / {memory_claim}] | " + " | ".join(cells) + " |", flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
