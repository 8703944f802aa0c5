"""The figures of docs/configtuner.md: the analytic model against published measurements, the best
configuration of every shipped instance against Megatron-LM's rule of thumb, what each search
prices and how long it takes, and the layer-to-stage partition (C2) against the uniform split.

    python benchmarks/figures/configtuner.py                  print the tables (Markdown)
    python benchmarks/figures/configtuner.py --update-docs    rewrite the generated section of the docs page

Search times are medians of --repeat runs after one warm-up call (the warm-up pays the one-off
lambdify of the SymPy model, about 0.5 s per process); they are wall times on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from coopt.instance import load  # noqa: E402
from coopt.problem import SolveOptions  # noqa: E402
from coopt.problems.configtuner import exact as exact_c1  # noqa: E402
from coopt.problems.configtuner import heuristics as solvers  # noqa: E402
from coopt.problems.configtuner import model, partition  # noqa: E402
from coopt.problems.configtuner.partition import (  # noqa: E402
    partition_feasible,
    pipeline_time,
    stage_data,
    uniform_partition,
)
from coopt.shipped import shipped  # noqa: E402

DOC = HERE.parents[1] / "docs" / "configtuner.md"
BEGIN, END = "<!-- configtuner:begin -->", "<!-- configtuner:end -->"

#: Korthikanti et al. 2022 Table 5 (s) and Fig. 1 (GiB), configurations as Calculon ships them
#: (calculon-ai/calculon validation/seqsel/{tab5,fig1}/*.json and calculon/llm/validation.py @ caa4b11f).
KORTHIKANTI = {
    "22b": (8, 8, 1, 1, 4, 1.42, 1.10, 45.5625, 59.25, 9.5625),
    "175b": (64, 8, 8, 3, 1, 18.13, 13.75, 45.5625, 66.84375, 12.3515625),
    "530b": (280, 8, 35, 3, 1, 49.05, 37.83, 31.640625, 114.0234375, 23.076171875),
    "1t": (512, 8, 64, 1, 1, 94.42, 71.49, 32.958984375, 131.25, 26.5625),
}
SEARCHES = ("exact", "configtuner", "two_phase", "calculon", "megatron")


def instance_of(stem: str):
    return load(next(p for p in shipped("configtuner") if p.stem == stem)).instance


def korthikanti_config(name: str, recompute: str, sequence_parallel: bool) -> dict:
    _, t, p, v, b, *_ = KORTHIKANTI[name]
    return {"tp": t, "pp": p, "dp": 1, "ep": 1, "microbatch": b, "interleave": v, "recompute": recompute,
            "sequence_parallel": sequence_parallel, "zero": 0}


def validation() -> dict:
    """Table 5, Fig. 1 and SC21's 1T run: (rows, worst absolute error of Table 5)."""
    rows, worst = [], 0.0
    for name, (gpus, *_rest) in KORTHIKANTI.items():
        instance = instance_of(f"1-korthikanti-{name}-{gpus}xa100")
        *_, full, seqsel, states, act_none, act_seqsel = KORTHIKANTI[name]
        modes = (("full recompute", korthikanti_config(name, "full", False), full),
                 ("seq. parallel + selective", korthikanti_config(name, "selective", True), seqsel))
        for label, cfg, measured in modes:
            out = model.evaluate(instance, model.space_of(cfg))
            error = out["time"][0] / measured - 1
            worst = max(worst, abs(error))
            rows.append((name.upper(), gpus, label, measured, out["time"][0], error, out["mfu"][0],
                         out["hfu"][0], out["memory"][0] / model.GIB))
    memory = []
    for name, (gpus, _, p, *_rest) in KORTHIKANTI.items():
        instance = instance_of(f"1-korthikanti-{name}-{gpus}xa100")
        *_, states, act_none, act_seqsel = KORTHIKANTI[name]
        none = model.evaluate(instance, model.space_of(korthikanti_config(name, "none", False)))
        ss = model.evaluate(instance, model.space_of(korthikanti_config(name, "selective", True)))
        gib = model.GIB
        memory.append((name.upper(), states, instance.layers // p * none["layer_states"][0] / gib,
                       act_none, none["activations"][0] / gib, act_seqsel, ss["activations"][0] / gib))
    sc21 = instance_of("2-megatron-1t-3072xa100")
    cfg = {"tp": 8, "pp": 64, "dp": 6, "ep": 1, "microbatch": 1, "interleave": 1, "recompute": "full",
           "sequence_parallel": False, "zero": 0}
    out = model.evaluate(sc21, model.space_of(cfg))
    return {"table5": rows, "worst": worst, "memory": memory,
            "sc21": {"hfu": out["hfu"][0], "mfu": out["mfu"][0], "time": out["time"][0],
                     "tflops": out["hfu"][0] * sc21.peak_flops / 1e12,
                     "model_tflops": out["mfu"][0] * sc21.peak_flops / 1e12}}


def sensitivity() -> list[tuple[float, float, float, float]]:
    """Table 5 again with the two curve parameters that matter most moved off their defaults:
    (U_max, kappa, worst absolute error, mean signed error)."""
    out = []
    for u_max in (0.7, 0.8, 0.9):
        for kappa in (1.0, 2.0, 3.0):
            errors = []
            for name, (gpus, *_rest) in KORTHIKANTI.items():
                instance = replace(instance_of(f"1-korthikanti-{name}-{gpus}xa100"),
                                   gemm_max_utilization=u_max, elementwise_traffic=kappa)
                *_, full, seqsel, _, _, _ = KORTHIKANTI[name]
                for cfg, measured in ((korthikanti_config(name, "full", False), full),
                                      (korthikanti_config(name, "selective", True), seqsel)):
                    errors.append(model.evaluate(instance, model.space_of(cfg))["time"][0] / measured - 1)
            out.append((u_max, kappa, max(map(abs, errors)), sum(errors) / len(errors)))
    return out


def timed(fn, repeat: int):
    fn()  # warm-up: the lambdify
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, statistics.median(times)


def config_text(c: dict) -> str:
    ep = f" e{c['ep']}" if c["ep"] > 1 else ""
    flags = (c["recompute"][:3] + (" SP" if c["sequence_parallel"] else "") + f" Z{c['zero']}")
    return f"t{c['tp']} p{c['pp']} d{c['dp']}{ep} b{c['microbatch']} v{c['interleave']} {flags}"


def searches(repeat: int) -> list[dict]:
    out = []
    for path in shipped("configtuner"):
        instance = load(path).instance
        row = {"instance": path.stem, "space": len(model.space(instance))}
        for name in SEARCHES:
            if name == "exact":
                run = lambda i=instance: exact_c1.exact(i, SolveOptions()).solution  # noqa: E731
            else:
                run = lambda i=instance, f=solvers.HEURISTICS[name]: f(i)  # noqa: E731
            row[name] = timed(run, repeat)
        out.append(row)
    return out


def partitions() -> list[tuple]:
    """C2 on each shipped instance's best 1F1B configuration with pp >= 2 (interleave 1)."""
    rows = []
    for path in shipped("configtuner"):
        instance = load(path).instance
        configs = model.space(instance)
        mask = (configs.pp >= 2) & (configs.interleave == 1)
        if not mask.any():
            continue
        best = exact_c1.best_of(instance, model.subset(configs, mask.nonzero()[0]))
        if best is None:
            continue
        config = best["config"]
        data = stage_data(instance, config)
        uniform = uniform_partition(instance, config)
        counts, value = partition.partition_dp(instance, config)
        milp_counts, milp_value = partition.partition_milp(instance, config)
        uniform_value = pipeline_time(data, uniform) if partition_feasible(instance, data, uniform) else None
        rows.append((path.stem, config_text(config), uniform_value, value, milp_value, counts))
    return rows


def partition_sweep(stems: tuple[str, ...]) -> list[tuple]:
    """C2 over every 1F1B configuration (pp >= 2, interleave 1) of each instance: how many the
    non-uniform split speeds up, by how much, and how many it makes fit where the uniform one
    does not."""
    rows = []
    for stem in stems:
        instance = instance_of(stem)
        configs = model.space(instance)
        chosen = ((configs.pp >= 2) & (configs.interleave == 1)).nonzero()[0]
        gains, rescued, fitting = [], 0, 0
        for index in chosen:
            config = configs.config(int(index))
            data = stage_data(instance, config)
            found = partition.partition_dp(instance, config)
            uniform = uniform_partition(instance, config)
            if found is None:
                continue
            fitting += 1
            if not partition_feasible(instance, data, uniform):
                rescued += 1
                continue
            gains.append(pipeline_time(data, uniform) / found[1] - 1)
        improved = [g for g in gains if g > 1e-9]
        rows.append((stem, len(chosen), fitting, len(improved), 100 * max(gains, default=0.0), rescued))
    return rows


def render(repeat: int) -> str:
    v = validation()
    lines = ["### The model against published measurements", "",
             "Korthikanti et al. 2022 Table 5 (A100-80GB, sequence 2048, global batch 4 / 64 / 280 / 512; "
             "the configurations of Calculon's validation files):", "",
             "| model | GPUs | mode | measured [s] | ours [s] | error | MFU | HFU | memory [GiB] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, gpus, label, measured, ours, error, mfu, hfu, mem in v["table5"]:
        lines.append(f"| {name} | {gpus} | {label} | {measured:.2f} | {ours:.2f} | {100 * error:+.1f} % | "
                     f"{100 * mfu:.1f} % | {100 * hfu:.1f} % | {mem:.1f} |")
    lines += ["", f"Worst absolute error {100 * v['worst']:.1f} %. The same runs with the GEMM ceiling "
              "U_max and the element-wise traffic kappa moved off their defaults (worst / mean signed "
              "error):", "", "| U_max | kappa 1 | kappa 2 | kappa 3 |", "|---|---|---|---|"]
    grid = sensitivity()
    for u_max in sorted({g[0] for g in grid}):
        cells = [f"{100 * worst:.1f} / {100 * mean:+.1f} %" for u, _, worst, mean in grid if u == u_max]
        lines.append(f"| {u_max:g} | " + " | ".join(cells) + " |")
    lines += ["",
              "Korthikanti et al. Fig. 1, memory per GPU [GiB] (paper / ours): parameters + gradients + "
              "Adam of the transformer layers; activations without recompute; with sequence parallel + "
              "selective:", "",
              "| model | params + optimizer | activations, none | activations, seq + sel |",
              "|---|---|---|---|"]
    for name, states, ours_states, act, ours_act, act_ss, ours_ss in v["memory"]:
        lines.append(f"| {name} | {states:.2f} / {ours_states:.2f} | {act:.2f} / {ours_act:.2f} | "
                     f"{act_ss:.2f} / {ours_ss:.2f} |")
    s = v["sc21"]
    lines += ["", f"Megatron-LM 1T on 3072 A100 (Narayanan et al. SC21 Table 1: 163 TFLOP/s per GPU, 52 % of "
              f"peak, counting the recomputed forward): ours {s['tflops']:.1f} TFLOP/s hardware "
              f"({100 * s['hfu']:.1f} % HFU), {s['model_tflops']:.1f} TFLOP/s model "
              f"({100 * s['mfu']:.1f} % MFU), "
              f"{s['time']:.1f} s per iteration.", ""]

    rows = searches(repeat)
    lines += ["### Best configuration against the rule of thumb", "",
              "| instance | space | best (exact) | time [s] | tokens/s/GPU | MFU | rule of thumb | "
              "time [s] | ratio |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        best, rule = r["exact"][0], r["megatron"][0]
        instance = instance_of(r["instance"])
        tokens = instance.global_batch * instance.seq_length / (best["objective"] * instance.gpus)
        lines.append(f"| {r['instance']} | {r['space']} | {config_text(best['config'])} | "
                     f"{best['objective']:.3f} | {tokens:.0f} | {100 * best['mfu']:.1f} % | "
                     f"{config_text(rule['config'])} | {rule['objective']:.3f} | "
                     f"{rule['objective'] / best['objective']:.2f}x |")
    terms = ("compute", "tp", "ep", "recompute", "pp", "bubble", "dp", "optimizer")
    lines += ["", "### Where the time goes (share of the iteration, best configuration / rule of thumb)", "",
              "| instance | " + " | ".join(terms) + " |", "|---|" + "---|" * len(terms)]
    for r in rows:
        best, rule = r["exact"][0], r["megatron"][0]
        # max(0, .): a one-stage pipeline's bubble is 0 up to rounding
        cells = [f"{100 * max(best['breakdown'][t], 0.0) / best['objective']:.0f} / "
                 f"{100 * max(rule['breakdown'][t], 0.0) / rule['objective']:.0f}" for t in terms]
        lines.append(f"| {r['instance']} | " + " | ".join(cells) + " |")
    lines += ["", "### What each search prices, its gap and its time", "",
              "| instance | " + " | ".join(f"{n}: priced, gap, ms" for n in SEARCHES) + " |",
              "|---|" + "---|" * len(SEARCHES)]
    for r in rows:
        best = r["exact"][0]["objective"]
        cells = []
        for name in SEARCHES:
            solution, seconds = r[name]
            gap = solution["objective"] / best - 1
            cells.append(f"{solution['evaluated']}, {100 * gap:.2f} %, {1e3 * seconds:.2f}")
        lines.append(f"| {r['instance']} | " + " | ".join(cells) + " |")
    lines += ["", "### C2: the layer-to-stage partition of the best 1F1B configuration", "",
              "| instance | configuration | uniform split [s] | DP [s] | MILP [s] | layers per stage (DP) |",
              "|---|---|---|---|---|---|"]
    for stem, cfg, uniform, value, milp, counts in partitions():
        shown = "-" if uniform is None else f"{uniform:.3f}"
        split = " ".join(map(str, counts))
        lines.append(f"| {stem} | {cfg} | {shown} | {value:.3f} | {milp:.3f} | {split} |")
    lines += ["", "Over every 1F1B configuration of the small and medium instances:", "",
              "| instance | 1F1B configurations | some split fits | faster non-uniform | largest gain | "
              "fit only non-uniform |", "|---|---|---|---|---|---|"]
    stems = tuple(p.stem for p in shipped("configtuner") if p.name.startswith(("0-", "1-")))
    for stem, total, fitting, improved, gain, rescued in partition_sweep(stems):
        lines.append(f"| {stem} | {total} | {fitting} | {improved} | {gain:.1f} % | {rescued} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite the section of {DOC.name}")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per search (median)")
    args = parser.parse_args(argv)
    text = render(args.repeat)
    if args.update_docs:
        doc = DOC.read_text(encoding="utf-8")
        head, rest = doc.split(BEGIN, 1)
        DOC.write_text(head + BEGIN + "\n" + text + END + rest.split(END, 1)[1], encoding="utf-8")
        print(f"wrote {DOC}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
