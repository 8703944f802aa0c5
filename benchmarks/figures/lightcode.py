"""LightCode benchmark: the figures of docs/lightcode.md (the comparisons with the authors' data are
in benchmarks/figures/lightcode_paper.py).

1. Energy and makespan of all-electronic, all-PTU-possible and optimal hybrid mappings over the
   sequence length, for GPT-2 and Llama-2-7B prefill, in three hardware settings (the repo's CPU +
   PHU with its SRAM-hop transfers; an H100-like GPU + the same PHU; the GPU + a multiplexed PTU
   with realistic transfers), beside the paper's claims (up to 50% energy, >10x latency).
2. Latency-optimal vs energy-optimal mappings: how many operators differ and what each costs in
   the other objective.
3. Heuristic gaps to the optimum (and their run times) on the shipped medium instances.
4. Energy crossover lengths: sequence-length scan of the solved model vs the closed form L*.
5. Exact routes: build / hand-off / solve times of the one-piece MILP and the decomposition.
6. The large tier: every heuristic's certified gap to the dual bound (``dual_bound``) on the
   Llama-2-7B and GPT-2 full operator graphs.
7. Scaling: time of every method on the generated family (blocks 1 .. 2048, and 20480 for all of
   them), median of three runs with the Stacked Graph built, and the fitted exponent of t ~ n^k.

Run: ``.venv/bin/python benchmarks/figures/lightcode.py`` (about ten minutes on two busy cores);
``--only scaling`` (or another table's name) runs one table.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import replace
from pathlib import Path

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.lightcode import PROBLEM, decomposition, schedule
from coopt.problems.lightcode.closed_forms import ROLE_BOUND
from coopt.problems.lightcode.data import Instance, preset_device
from coopt.problems.lightcode.decomposition import dual_bound, exact
from coopt.problems.lightcode.graph import ptu_cycles, stacked_graph
from coopt.problems.lightcode.model import energy, makespan
from coopt.registry import closed_forms as bounds
from coopt.run import run

SHIPPED = Path(__file__).parents[2] / "instances" / "lightcode"
OPTIONS = SolveOptions(gap=1e-9, time_limit=120)

CPU = preset_device("coopt", "cpu")
REPO_PTU = preset_device("coopt", "ptu")
MUX_PTU = replace(REPO_PTU, cores=16, wavelengths=64, spatial=32)
GPU = preset_device("coopt", "gpu")
SETTINGS = {
    "repo: CPU + PHU(m=20), sram_hop": ((CPU, REPO_PTU), "sram_hop"),
    "GPU + PHU(m=20), sram_hop": ((GPU, REPO_PTU), "sram_hop"),
    "GPU + PTU(mc=32768), realistic": ((GPU, MUX_PTU), "realistic"),
}
LENGTHS = {"gpt2": (32, 128, 512, 1024), "llama": (32, 128, 512, 2048, 4096)}


def base(family: str) -> Instance:
    return load(
        SHIPPED / ("1-gpt2-L128-energy.toml" if family == "gpt2" else "1-llama-L512-energy.toml")
    ).instance


def variant(family: str, devices, transfer: str, length: int, objective: str) -> Instance:
    b = base(family)
    return replace(
        b,
        devices=devices,
        transfer_model=transfer,
        objective=objective,
        model=replace(b.model, sequence_length=length),
    )


def scheduled(instance: Instance, assign: list[str]) -> float:
    graph = stacked_graph(instance)
    return makespan(graph, assign, schedule.list_schedule(graph, assign))


def optimum_assignment(instance: Instance) -> list[str]:
    outcome = exact(instance, OPTIONS)
    assert outcome.status == "optimal", outcome.status
    return [outcome.solution["assignment"][op.name] for op in stacked_graph(instance).ops]


def table_hybrid() -> None:
    print("\n## 1-2. All-electronic vs all-PTU-possible vs optimal hybrid (energy in mJ, makespan in ms)\n")
    print(
        "| setting | model | L | E elec | E all-PTU | E opt | saving | T elec | T all-PTU | T opt | speed-up"
        " | ops differing (E-opt vs T-opt) | T of E-opt | E of T-opt |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for setting, (devices, transfer) in SETTINGS.items():
        for family, lengths in LENGTHS.items():
            for length in lengths:
                e_inst = variant(family, devices, transfer, length, "energy")
                t_inst = replace(e_inst, objective="makespan")
                g = stacked_graph(e_inst)
                elec = [devices[0].name] * len(g.ops)
                all_ptu = ["ptu" if "ptu" in s else devices[0].name for s in g.stacks]
                e_opt, t_opt = optimum_assignment(e_inst), optimum_assignment(t_inst)
                e = [energy(g, a) * 1e3 for a in (elec, all_ptu, e_opt)]
                t = [scheduled(t_inst, a) * 1e3 for a in (elec, all_ptu, t_opt)]
                differ = sum(x != y for x, y in zip(e_opt, t_opt, strict=True))
                print(
                    f"| {setting} | {family} | {length} | {e[0]:.4g} | {e[1]:.4g} | {e[2]:.4g} | "
                    f"{100 * (1 - e[2] / e[0]):.1f}% | {t[0]:.4g} | {t[1]:.4g} | {t[2]:.4g} | "
                    f"{t[0] / t[2]:.2f}x | "
                    f"{differ} | {scheduled(t_inst, e_opt) * 1e3:.4g} | {energy(g, t_opt) * 1e3:.4g} |"
                )


def table_heuristics() -> None:
    print("\n## 3. Heuristic gap to the optimum (%), and run time (s)\n")
    names = sorted(PROBLEM.heuristics)
    print("| instance | optimum | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for path in sorted(SHIPPED.glob("[12]-*.toml")):
        instance = load(path).instance
        best = run(PROBLEM, instance, "exact", OPTIONS)
        cells = []
        for name in names:
            t0 = time.perf_counter()
            value = PROBLEM.heuristics[name](instance)["objective"]
            cells.append(f"{100 * (value / best.objective - 1):.2f} ({time.perf_counter() - t0:.2f})")
        print(f"| {path.stem} | {best.objective:.6g} ({best.status}) | " + " | ".join(cells) + " |")


def table_crossovers() -> None:
    print("\n## 4. Energy crossover length: scan of the solved model vs closed form L* (sram_hop)\n")
    print("| electronic device | model | operator | K x N or d_h | L* closed form | first L on PTU (scan) |")
    print("|---|---|---|---|---|---|")
    for electronic in (GPU, CPU):
        for family, limit in (("gpt2", 2048), ("llama", 4096)):
            instance = variant(family, (electronic, REPO_PTU), "sram_hop", 128, "energy")
            instance = replace(instance, model=replace(instance.model, layers=1))
            values = {
                "e": electronic.mac_energy,
                "e_PTU": REPO_PTU.mac_energy,
                "E_DAC": REPO_PTU.dac_energy,
                "E_ADC": REPO_PTU.adc_energy,
            }
            seen = set()
            for op in stacked_graph(instance).ops:
                if op.role not in ROLE_BOUND or op.role in seen:
                    continue
                seen.add(op.role)
                if op.kind == "dense":
                    shape = {"K": op.inner, "N": op.outputs // instance.model.sequence_length}
                    label = f"{shape['K']} x {shape['N']}"
                else:
                    shape = {"d_h": instance.model.d_head}
                    label = f"d_h = {shape['d_h']}"
                predicted = float(bounds()[ROLE_BOUND[op.role]].evaluate(values | shape))
                first = _scan(instance, op.role, limit)
                shown = f"{predicted:.1f}" if predicted > 0 else "never"
                print(
                    f"| {electronic.name} | {family} | {op.role} | {label} | {shown} | "
                    f"{first if first is not None else f'none <= {limit}'} |"
                )


def _scan(instance: Instance, role: str, limit: int) -> int | None:
    """First L in 1..limit whose energy optimum puts ``role`` on the PTU (coarse grid, then refine)."""
    grid = sorted({1, *range(8, limit + 1, 8)})
    hits = decomposition.photonic_lengths(instance, role, grid)
    if not hits:
        return None
    lo = max(1, hits[0] - 8)
    fine = decomposition.photonic_lengths(instance, role, list(range(lo, hits[0] + 1)))
    return fine[0]


def table_exact_times() -> None:
    print("\n## 5. Exact routes: build / hand-off / solve / total seconds\n")
    print("| instance | method | status | objective | bound | build | hand-off | solve | total |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(SHIPPED.glob("*.toml")):
        instance = load(path).instance
        for method in ("milp", "exact"):
            r = run(PROBLEM, instance, method, OPTIONS)
            t = r.times
            bound = "-" if r.bound is None else f"{r.bound:.6g}"
            print(
                f"| {path.stem} | {method} | {r.status} | {r.objective:.6g} | {bound} | {t['build']:.2f} | "
                f"{t['handoff']:.2f} | {t['solve']:.2f} | {t['total']:.2f} |"
            )


def table_multiplexing() -> None:
    print("\n## Latency vs multiplexing: GPT-2 fc1 at L = 1024, PTU lanes m c vs the GPU roofline\n")
    instance = variant("gpt2", (GPU, REPO_PTU), "realistic", 1024, "makespan")
    op = next(op for op in stacked_graph(instance).ops if op.role == "fc1")
    gpu_time = 2 * op.macs / GPU.peak_flops
    speedup = bounds()["lightcode.ptu_speedup"]
    print("| m c | model speed-up (cycles) | closed form 2 m c f / Phi |")
    print("|---|---|---|")
    for lanes in (20, 1000, 25500, 65536, 262144):
        cycles = ptu_cycles(op, replace(REPO_PTU, wavelengths=lanes))
        model = gpu_time / (cycles / REPO_PTU.clock)
        closed = float(speedup.evaluate({"m": lanes, "c": 1, "f_PTU": 9.7e9, "Phi": 494.7e12}))
        print(f"| {lanes} | {model:.4g} | {closed:.4g} |")
    print(f"\ncrossover m c = {float(bounds()['lightcode.latency_crossover_lanes'].evaluate({})):.0f}")


def table_certified() -> None:
    print("\n## 6. The large tier: certified gaps to the dual bound (full operator graphs)\n")
    cases = {
        "2-llama-full-L4096-energy (coopt, realistic, GPU + CPU + PTU)": load(
            SHIPPED / "2-llama-full-L4096-energy.toml"
        ).instance,
        "2-gpt2-full-L1024-makespan (coopt)": load(SHIPPED / "2-gpt2-full-L1024-makespan.toml").instance,
    }
    paper = load(SHIPPED / "1-llama-full-L3900-energy-paper-sweep.toml").instance
    cases["Llama-2-7B full, L = 3900, makespan (authors-paper-sweep)"] = replace(paper, objective="makespan")
    llama = load(SHIPPED / "2-llama-full-L4096-energy.toml").instance
    cases["Llama-2-7B full, L = 4096, makespan (coopt, realistic, 3 devices)"] = replace(
        llama, objective="makespan"
    )
    names = sorted(PROBLEM.heuristics)
    print("| instance | operators | dual bound (s) | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for label, instance in cases.items():
        t0 = time.perf_counter()
        bound = dual_bound(instance, OPTIONS)
        took = time.perf_counter() - t0
        cells = []
        for name in names:
            t0 = time.perf_counter()
            value = run(PROBLEM, instance, name, OPTIONS).objective
            elapsed = time.perf_counter() - t0
            cells.append("-" if value is None else f"{100 * (value - bound) / bound:.2f} % ({elapsed:.2f} s)")
        unit = PROBLEM.describe_objective(instance)[1].split(" ")[0]
        print(
            f"| {label} | {len(stacked_graph(instance).ops)} | {bound:.6g} {unit} ({took:.1f}) | "
            + " | ".join(cells)
            + " |"
        )


def table_scaling() -> None:
    print("\n## 7. Scaling on the generated family: median seconds of three runs (the graph built once)\n")
    methods = ["exact", *sorted(PROBLEM.heuristics)]
    for seed in (0, 9):
        first = PROBLEM.generate(seed, 1)
        print(f"\nseed {seed}: {first.model.family}, {first.objective}, {first.transfer_model}\n")
        print("| blocks | operators | graph build | " + " | ".join(methods) + " |")
        print("|---|---|---|" + "---|" * len(methods))
        times: dict[str, list[tuple[int, float]]] = {m: [] for m in methods}
        for size in (1, 4, 16, 64, 256, 1024, 2048, 20480):
            instance = PROBLEM.generate(seed, size)
            stacked_graph.cache_clear()
            t0 = time.perf_counter()
            graph = stacked_graph(instance)
            build = time.perf_counter() - t0
            cells = []
            for method in methods:
                reps = 1 if size > 2048 else 3
                took = statistics.median(
                    run(PROBLEM, instance, method, SolveOptions(time_limit=60)).times["total"]
                    for _ in range(reps)
                )
                times[method].append((size, took))
                cells.append(f"{took:.3g}")
            print(f"| {size} | {len(graph.ops)} | {build:.3g} | " + " | ".join(cells) + " |", flush=True)
        print(
            "| fitted k (64..20480) | | | " + " | ".join(f"{_exponent(times[m]):.2f}" for m in methods) + " |"
        )


def _exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of ln t on ln n over the sizes from 64 on (below, timer noise)."""
    pts = [(math.log(n), math.log(max(t, 1e-4))) for n, t in points if n >= 64]
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


TABLES = {
    "multiplexing": table_multiplexing,
    "crossovers": table_crossovers,
    "hybrid": table_hybrid,
    "heuristics": table_heuristics,
    "exact": table_exact_times,
    "certified": table_certified,
    "scaling": table_scaling,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(TABLES), help="tables to run (default: all)")
    args = parser.parse_args()
    start = time.perf_counter()
    for name, table in TABLES.items():
        if not args.only or name in args.only:
            table()
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
