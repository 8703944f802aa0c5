"""The figures of docs/mixnet.md (timings on the shared 2-core box: read ratios, not seconds).

    python benchmarks/figures/mixnet.py families [--seeds 24]   greedy vs optimal theta per traffic family
    python benchmarks/figures/mixnet.py plan                    the plan against the policies across delta
    python benchmarks/figures/mixnet.py robust                  robust circuits vs mean-matrix, stale planning
    python benchmarks/figures/mixnet.py cost                    perf per dollar at 100 and 400 Gbit/s
    python benchmarks/figures/mixnet.py iteration               our normalized times beside the calculator's
    python benchmarks/figures/mixnet.py large [--time-limit 60] certified gaps on the 2-* files
    python benchmarks/figures/mixnet.py all
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from coopt.instance import load
from coopt.problem import ExactOutcome, SolveOptions
from coopt.problems.mixnet import circuits as H
from coopt.problems.mixnet import exact as mixnet_exact
from coopt.problems.mixnet import iteration, model, plan_exact, traffic
from coopt.problems.mixnet import plan_heuristics as P
from coopt.problems.mixnet import plan_model as plan
from coopt.problems.mixnet.model import Fabric, Instance, Traffic
from coopt.problems.topoopt.model import DEFAULT_PRICES
from coopt.registry import closed_form as get
from coopt.run import run
from coopt.shipped import shipped

ROOT = Path(__file__).resolve().parents[2]
EXACT = SolveOptions(time_limit=60, gap=1e-6)


def exact_m1(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """M1's exact route as the runner runs it: each region's MILP warm-started from ``fill_and_swap``
    (the problem's warm start, timed with the solve)."""
    return mixnet_exact.exact(instance, options, incumbent=H.fill_and_swap(instance))


def table(header: list[str], rows: list[list[object]]) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def geomean_gap(gaps: list[float]) -> float:
    return float(np.exp(np.mean(np.log1p(gaps))) - 1) if gaps else math.nan


def one_region(matrix: np.ndarray, alpha: int, rate: float, name: str = "") -> Instance:
    demand = tuple(tuple(float(v) for v in row) for row in matrix)
    return Instance(Fabric(alpha, 8, rate), (Traffic(name, 0, demand),))


# -- greedy vs optimal per family -------------------------------------------------------------


def families(seeds: int) -> str:
    """Per family: the authors' greedy and ours against the proven optimum (gap = 1 - theta /
    theta*), and the electrical-only share, on single-region instances drawn as the generator
    draws them; the authors' measured matrices (shipped 0/1/2 files) as their own family."""
    rows, summary = [], {}
    cases: dict[str, list[Instance]] = {}
    for family in traffic.FAMILIES:
        rng = np.random.default_rng([seeds, 15, len(family)])
        for _ in range(seeds):
            servers = int(rng.choice(model.REGION_SIZES))
            alpha = int(rng.choice(model.ALPHAS))
            rate = float(rng.choice(model.RATES_GBIT)) * 1e9
            matrix = traffic.draw(rng, family, servers, model.ROW_BYTES)
            cases.setdefault(family, []).append(one_region(matrix, alpha, rate, family))
    measured = [p for p in shipped("mixnet") if "-wm-" in p.name and "robust" not in p.name]
    cases["measured (wm_ep*)"] = [load(p).instance for p in measured]
    for family, instances in cases.items():
        gaps: dict[str, list[float]] = {"mixnet_greedy": [], "fill_and_swap": [], "electrical_only": []}
        exact_times, heuristic_times, proved = [], [], 0
        for instance in instances:
            t0 = time.perf_counter()
            outcome = exact_m1(instance, EXACT)
            exact_times.append(time.perf_counter() - t0)
            if outcome.status != "optimal":
                continue
            proved += 1
            best = outcome.solution["objective"]
            for method in gaps:
                t0 = time.perf_counter()
                value = H.HEURISTICS[method](instance)["objective"]
                if method == "fill_and_swap":
                    heuristic_times.append(time.perf_counter() - t0)
                gaps[method].append(max(0.0, 1 - value / best))
        speed = float(np.median(np.array(exact_times[: len(heuristic_times)]) / np.array(heuristic_times)))
        rows.append([family, len(instances), proved,
                     f"{100 * np.mean(gaps['mixnet_greedy']):.2f} / {100 * max(gaps['mixnet_greedy']):.2f}",
                     f"{100 * geomean_gap(gaps['fill_and_swap']):.3f} / "
                     f"{100 * max(gaps['fill_and_swap']):.2f}",
                     f"{100 * np.mean(gaps['electrical_only']):.1f}", f"{np.median(exact_times):.3f}",
                     f"{speed:.0f}"])
        summary[family] = gaps
    header = ["family", "instances", "proved", "authors' greedy gap % mean / worst",
              "fill_and_swap gap % geomean / worst", "electrical-only gap % mean", "exact median s",
              "exact / fill_and_swap time (median)"]
    return table(header, rows)


# -- the plan against the policies ---------------------------------------------------------------


def aggregate_plan(instance: plan.Instance, how: str) -> float:
    """The best plan whose segment circuits are M1's on the segment's summed (or element-wise
    maximum) matrix, by the exact DP over segments (time evaluated exactly)."""
    layers = len(instance.layers)
    best = [0.0] + [math.inf] * layers
    for last in range(layers):
        for first in range(last + 1):
            mats = [instance.layers[l].bits() * instance.layers[l].all_to_alls
                    for l in range(first, last + 1)]
            joined = sum(mats) if how == "sum" else np.maximum.reduce(mats)
            region = one_region(joined / 8, instance.fabric.alpha, instance.fabric.nic_rate)
            circuits = exact_m1(region, EXACT)
            x = np.array(circuits.solution["regions"][0]["circuits"])
            value = sum(instance.layer_time(l, x) for l in range(first, last + 1))
            best[last + 1] = min(best[last + 1], best[first] + instance.exposed(first) + value)
    return best[layers]


def plans() -> str:
    base = load(ROOT / "coopt" / "instances" / "mixnet_plan" / "1-moe-4layers-8servers-1ms.toml").instance
    rows = []
    problem = load(shipped("mixnet_plan")[0]).problem
    for delay in (0.025e-3, 1e-3, 5e-3, 25e-3, 50e-3, 100e-3):
        instance = replace(base, delay=delay)
        t0 = time.perf_counter()
        exact = run(problem, instance, "exact", EXACT)
        seconds = time.perf_counter() - t0
        row = [f"{delay * 1e3:g}", f"{exact.objective * 1e3:.2f}", exact.status,
               exact.solution["reconfigurations"]]
        for method in ("segment_dp", "threshold", "never_reconfigure", "always_reconfigure",
                       "mixnet_runtime"):
            value = P.HEURISTICS[method](instance)["objective"]
            row.append(f"{100 * (value / exact.objective - 1):.2f}")
        for how in ("sum", "max"):
            row.append(f"{100 * (aggregate_plan(instance, how) / exact.objective - 1):.2f}")
        row.append(f"{seconds:.1f}")
        rows.append(row)
    header = ["delta ms", "optimal ms", "status", "segments", "segment_dp %", "threshold %", "never %",
              "always %", "MixNet runtime %", "DP on summed demand %", "DP on max demand %", "exact s"]
    return ("Plan: 4 MoE layers forward then backward (8 plan layers) on an EP8 region, alpha 6, "
            "100 Gbit/s (1-moe-4layers-8servers-1ms with delta varied); % = above the optimum\n\n"
            + table(header, rows))


# -- robust allocation -------------------------------------------------------------------------


def robust() -> str:
    rows = []
    for stem in ("0-wm-ep8-robust-stale", "1-wm-ep16-robust-stale"):
        instance = load(ROOT / "coopt" / "instances" / "mixnet" / f"{stem}.toml").instance
        actual, stale = instance.traffic
        f = instance.fabric
        candidates = {
            "robust (M1 over both)": exact_m1(instance, EXACT).solution,
            "M1 on the mean matrix": exact_m1(
                one_region((actual.bits() + stale.bits()) / 16, f.alpha, f.nic_rate), EXACT).solution,
            "M1 on the stale matrix": exact_m1(Instance(f, (stale,)), EXACT).solution,
            "authors' greedy on the stale matrix": H.mixnet_greedy(Instance(f, (stale,))),
            "fill_and_swap over both": H.fill_and_swap(instance),
        }
        for name, solution in candidates.items():
            x = [np.array(solution["regions"][0]["circuits"])]
            on_actual = model.throughput(actual.bits(), x[0], f)
            worst = model.worst_case(instance, x)
            rows.append([stem, name, f"{on_actual:.2f}", f"{worst:.2f}"])
    header = ["instance", "circuits", "theta on the measured matrix (1/s)", "worst case over both (1/s)"]
    return table(header, rows)


# -- cost and performance per dollar ---------------------------------------------------------


def costs(rate_gbit: int, ocs: str) -> dict[str, float]:
    """US$ of the four fabrics at 128 servers, the calculator's ports (``ocs="calculator"``) or the
    ports that exist (``"physical"``: alpha OCS ports and the electrical switch ports charged)."""
    tier = next(t for t in DEFAULT_PRICES.tiers if t.rate == rate_gbit * 1e9)
    p = {"c_nic": tier.nic, "c_tr": tier.transceiver, "c_eps": tier.switch_port,
         "c_pp": tier.patch_panel_port}

    def pick(bound: str) -> dict[str, float]:
        return {k: v for k, v in p.items() if k in get(bound).symbols}

    mixnet = {**pick("mixnet.mixnet_cost"), **({"q": 6, "k": 1} if ocs == "physical" else {})}
    fat = get("mixnet.fattree_cost").evaluate(pick("mixnet.fattree_cost"))
    return {"fat-tree": fat, "rail-optimized": fat, "MixNet": get("mixnet.mixnet_cost").evaluate(mixnet),
            "TopoOpt": get("mixnet.topoopt_cost").evaluate(pick("mixnet.topoopt_cost"))}


def our_times() -> dict[str, dict[int, dict[str, float]]]:
    """Our normalized iteration times: model -> rate -> fabric (1 = the model's best)."""
    measured = load(ROOT / "coopt" / "instances" / "mixnet" / "0-wm-ep8-alpha4-400g.toml").instance
    shares = np.array(measured.traffic[0].demand) / (32768 * 12288)
    setup = iteration.MIXNET_SIM
    out = {}
    for name, moe in iteration.MODELS.items():
        demand = iteration.region_traffic(moe, setup, shares)
        raw = {}
        for gbit in (100, 200, 400, 800):
            rate = gbit * 1e9
            fat = iteration.FabricRates(iteration.fattree_all_to_all(demand, 8, rate), rate)
            theta = exact_m1(one_region(demand, 6, rate), EXACT).solution["objective"]
            mixnet = iteration.FabricRates(1 / theta, 2 * rate / 8)
            topo = iteration.FabricRates(iteration.topoopt_all_to_all(demand, rate), rate / 8)
            raw[gbit] = {"fat-tree": iteration.iteration_time(moe, setup, fat),
                         "MixNet": iteration.iteration_time(moe, setup, mixnet),
                         "rail-optimized": iteration.iteration_time(moe, setup, fat),
                         "TopoOpt": iteration.iteration_time(moe, setup, topo)}
        low = min(v for r in raw.values() for v in r.values())
        out[name] = {g: {k: v / low for k, v in r.items()} for g, r in raw.items()}
    return out


def calculator_times() -> dict[str, dict[int, dict[str, float]]]:
    return {m: {g: dict(zip(iteration.FABRICS, v, strict=True)) for g, v in rates.items()}
            for m, rates in iteration.CALCULATOR_TIMES.items()}


def perf_per_dollar_ratios(times: dict, rate: int, ocs: str) -> dict[str, float]:
    """MixNet's perf per dollar over the fat-tree's, per model."""
    price = costs(rate, ocs)
    ppd = get("mixnet.perf_per_dollar")
    return {m: ppd.evaluate({"t": r[rate]["MixNet"], "C": price["MixNet"]})
            / ppd.evaluate({"t": r[rate]["fat-tree"], "C": price["fat-tree"]}) for m, r in times.items()}


def cost_table() -> str:
    ours, theirs = our_times(), calculator_times()
    rows = []
    for rate, paper in ((100, "1.2-1.5"), (400, "1.9-2.3")):
        for label, times in (("calculator times", theirs), ("our times", ours)):
            for ocs in ("calculator", "physical"):
                ratios = perf_per_dollar_ratios(times, rate, ocs)
                rows.append([f"{rate}G", label, f"{ocs} ports", paper,
                             f"{min(ratios.values()):.2f}-{max(ratios.values()):.2f}",
                             ", ".join(f"{m} {v:.2f}" for m, v in ratios.items())])
    price_rows = [[f"{g}G"] + [f"{v / 1e6:.3f}" for v in costs(g, "calculator").values()]
                  + [f"{costs(g, 'physical')['MixNet'] / 1e6:.3f}"] for g in (100, 200, 400, 800)]
    header = ["rate", "times", "MixNet ports", "paper", "MixNet / fat-tree perf per $", "per model"]
    return (table(header, rows)
            + "\n\nFabric cost at 128 servers (US$ M):\n\n"
            + table(["rate", "fat-tree", "rail-optimized", "MixNet", "TopoOpt", "MixNet (physical ports)"],
                    price_rows))


def iteration_table() -> str:
    ours, theirs = our_times(), calculator_times()
    rows = []
    for name in iteration.MODELS:
        for gbit in (100, 200, 400, 800):
            rows.append([name, gbit] + [f"{theirs[name][gbit][f]:.3f} / {ours[name][gbit][f]:.3f}"
                                        for f in iteration.FABRICS])
    return ("Normalized iteration time, calculator / ours (1 = the model's best fabric and rate):\n\n"
            + table(["model", "Gbit/s", *iteration.FABRICS], rows))


# -- the large tier: certified gaps ------------------------------------------------------------


def large(time_limit: float) -> str:
    rows = []
    options = SolveOptions(time_limit=time_limit, gap=1e-6)
    for name in ("mixnet", "mixnet_plan"):
        for path in [p for p in shipped(name) if p.name.startswith("2-")]:
            item = load(path)
            heuristic = "fill_and_swap" if name == "mixnet" else "segment_dp"
            t0 = time.perf_counter()
            value = run(item.problem, item.instance, heuristic, options).objective
            seconds = time.perf_counter() - t0
            lp = run(item.problem, item.instance, "bound", options).bound
            if name == "mixnet_plan":
                lp = max(lp, plan_exact.layer_bound(item.instance, SolveOptions(gap=1e-6)))
            exact = run(item.problem, item.instance, "exact", options)
            bound = exact.bound if exact.bound is not None else lp
            bound = min(bound, lp) if name == "mixnet" else max(bound, lp)
            gap = abs(value - bound) / abs(bound)
            rows.append([name, path.stem, f"{value:.6g}", f"{seconds:.2f}", f"{lp:.6g}", exact.status,
                         f"{exact.times['total']:.1f}", f"{bound:.6g}", f"{100 * gap:.3f}"])
    return table(["problem", "instance", "best heuristic", "heuristic s", "LP bound", "exact status",
                  "exact s", "best bound", "certified gap %"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("families", "plan", "robust", "cost", "iteration", "large", "all"))
    parser.add_argument("--seeds", type=int, default=24)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args(argv)
    parts = {
        "families": lambda: families(args.seeds),
        "plan": plans,
        "robust": robust,
        "cost": cost_table,
        "iteration": iteration_table,
        "large": lambda: large(args.time_limit),
    }
    for name, part in parts.items():
        if args.what in (name, "all"):
            print(f"## {name}\n\n{part()}\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
