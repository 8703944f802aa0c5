"""ConfigTuner's headline claims, and the published Megatron-LM measurements its model must meet,
beside our figures (benchmarks/fidelity/fidelity.py writes them into docs/fidelity.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fidelity import Claim, Ours

HERE = Path(__file__).resolve().parent
PAPER = "ConfigTuner (arXiv 2512.24750)"


def _bench():
    path = HERE.parent / "figures" / "configtuner.py"
    spec = importlib.util.spec_from_file_location("configtuner_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rule_of_thumb() -> Ours:
    bench = _bench()
    rows = bench.searches(repeat=1)
    dense = [r for r in rows if "mixtral" not in r["instance"]]
    ratio = {r["instance"]: r["megatron"][0]["objective"] / r["exact"][0]["objective"] for r in rows}
    best_dense = max(dense, key=lambda r: ratio[r["instance"]])["instance"]
    moe = max(ratio[r["instance"]] for r in rows if "mixtral" in r["instance"])
    top = ratio[best_dense]
    status = "reproduced" if abs(top / 1.36 - 1) <= 0.10 else "explained"
    return Ours(f"up to {top:.2f}x on dense models ({best_dense}); {moe:.2f}x on Mixtral (EP)", status,
                "The baseline is our reconstruction of the rule of thumb (smallest TP that fits, fewest "
                "stages, "
                "micro-batch 1, SP + selective); the paper's baseline configurations are not public, and the "
                "rule has no expert parallelism, hence the larger MoE ratio.")


def same_answer_cheaper() -> Ours:
    bench = _bench()
    rows = bench.searches(repeat=1)
    same = sum(abs(r["configtuner"][0]["objective"] / r["exact"][0]["objective"] - 1) < 1e-12 for r in rows)
    shares = sorted(r["configtuner"][0]["evaluated"] / r["space"] for r in rows)
    return Ours(f"the exact optimum on {same}/{len(rows)} shipped instances, pricing "
                f"{100 * shares[len(shares) // 2]:.0f} % of the space (median; {100 * shares[0]:.0f}-"
                f"{100 * shares[-1]:.0f} %)", "reproduced" if same == len(rows) else "explained",
                "Our yardstick is the exact enumeration of the same space (C1), not Alpa, which needs a "
                "JAX GPU build; the pruning keeps TP and EP in a node and prices one recompute mode.")


def korthikanti_table5() -> Ours:
    v = _bench().validation()
    status = "reproduced" if v["worst"] <= 0.10 else "explained"
    return Ours(f"8 runs within {100 * v['worst']:.1f} % (worst)", status,
                "Defaults (U_max 0.8, kappa 2, NVLink 230 GB/s) were set before the comparison, but they are "
                "also the best point of a U_max +-0.1, kappa +-1 grid (worst 9-20 % elsewhere): a good "
                "calibration, not an independent prediction.")


def korthikanti_memory() -> Ours:
    rows = _bench().validation()["memory"]
    worst = max(max(abs(o / p - 1) for p, o in ((r[1], r[2]), (r[3], r[4]), (r[5], r[6]))) for r in rows)
    return Ours(f"12 figures within {100 * worst:.2f} %", "reproduced",
                "Korthikanti's per-layer formulas (34sbh + 5as^2b, /t with SP) and 18 bytes per parameter.")


def sc21_1t() -> Ours:
    s = _bench().validation()["sc21"]
    status = "reproduced" if abs(s["tflops"] / 163 - 1) <= 0.10 else "explained"
    return Ours(f"{s['tflops']:.0f} TFLOP/s hardware ({100 * s['hfu']:.1f} % HFU); "
                f"{s['model_tflops']:.0f} TFLOP/s "
                f"model ({100 * s['mfu']:.1f} % MFU)", status,
                "163 counts the recomputed forward (HFU). Our model matches Korthikanti's 2022 run of the "
                "same "
                "replica (94.4 s); SC21's 2021 software was about 8 % slower per replica.")


CLAIMS = [
    Claim("configtuner", PAPER, "throughput over Megatron-LM's configurations", "up to 1.36x",
          "python benchmarks/figures/configtuner.py", rule_of_thumb),
    Claim("configtuner", PAPER, "same configuration as Alpa at much lower search complexity",
          "same answer, cheaper",
          "python benchmarks/figures/configtuner.py", same_answer_cheaper),
    Claim("configtuner", "Korthikanti et al. 2022 (Table 5)",
          "iteration times, full recompute / SP + selective",
          "22B 1.42/1.10, 175B 18.13/13.75, 530B 49.05/37.83, 1T 94.42/71.49 s",
          "python benchmarks/figures/configtuner.py", korthikanti_table5),
    Claim("configtuner", "Korthikanti et al. 2022 (Fig. 1)",
          "memory per GPU: parameters + optimizer, activations",
          "e.g. 175B 45.56 / 66.84 / 12.35 GiB", "python benchmarks/figures/configtuner.py",
          korthikanti_memory),
    Claim("configtuner", "Narayanan et al. SC21 (Table 1)", "Megatron-LM 1T on 3072 A100",
          "163 TFLOP/s per GPU, 52 % of peak", "python benchmarks/figures/configtuner.py", sc21_1t),
]
