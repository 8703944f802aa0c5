"""LightCode benchmark: the figures issue 5 asks for.

1. Energy and makespan of all-electronic, all-PTU-possible and optimal hybrid mappings over the
   sequence length, for GPT-2 and Llama-2-7B prefill, in three hardware settings (the repo's CPU +
   PHU with its SRAM-hop transfers; an H100-like GPU + the same PHU; the GPU + a multiplexed PTU
   with realistic transfers), beside the paper's claims (up to 50% energy, >10x latency).
2. Latency-optimal vs energy-optimal mappings: how many operators differ and what each costs in
   the other objective.
3. Heuristic gaps to the optimum (and their run times) on the shipped medium instances.
4. Energy crossover lengths: sequence-length scan of the solved model vs the closed form L*.
5. Exact routes: build / hand-off / solve times of the one-piece MILP and the decomposition.

Run: ``.venv/bin/python benchmarks/lightcode.py`` (about five minutes on two cores).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from coopt.analysis.bounds import registry as bounds
from coopt.analysis.bounds.lightcode import ROLE_BOUND
from coopt.formulations.lightcode import PROBLEM
from coopt.formulations.lightcode.model import (
    Instance,
    energy,
    makespan,
    preset_device,
    ptu_cycles,
    stacked_graph,
)
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.run import run
from coopt.solvers import lightcode as heuristics
from coopt.solvers.lightcode import exact

SHIPPED = Path(__file__).parents[1] / "instances" / "lightcode"
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
    return makespan(graph, assign, heuristics.list_schedule(graph, assign))


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
    hits = heuristics.photonic_lengths(instance, role, grid)
    if not hits:
        return None
    lo = max(1, hits[0] - 8)
    fine = heuristics.photonic_lengths(instance, role, list(range(lo, hits[0] + 1)))
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


def main() -> None:
    start = time.perf_counter()
    table_multiplexing()
    table_crossovers()
    table_hybrid()
    table_heuristics()
    table_exact_times()
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
