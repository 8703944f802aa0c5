"""Simulated service failure (blocking) ratio vs load per priority class on NSFNET and USNET for
the baseline (KSP-FF) and the single-layer degraded-provisioning policies, then the multi-layer
(grooming) architecture with optical / electrical degradation switches, plus the Erlang-B
validation of the simulator on one link. Prints tables; writes JSON and PNGs (matplotlib, Agg)
to --out.

    .venv/bin/python benchmarks/figures/provisioning_simulation.py [--arrivals 20000] [--seeds 3] [--out DIR]
        [--multilayer-seeds 1] [--skip-single]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coopt.commands.simulate import claims, plot, points_json, print_points, sweep
from coopt.instance import load
from coopt.problems import provisioning
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.simulation import SINGLE_LAYER, RunControl, Traffic, erlang_b, simulate

ROOT = Path(__file__).resolve().parents[2] / "instances" / "provisioning"
#: Loads chosen so that the baseline blocking spans roughly 1e-3 .. 1e-1 (100 slots, GB = 1).
SWEEPS = {"2-nsfnet-static": (40, 55, 70, 85, 100), "2-usnet-static": (30, 45, 60, 75, 90)}
#: The grooming architecture carries more: its sweep starts where the single layer saturates.
MULTILAYER_SWEEPS = {"2-nsfnet-static": (70, 100, 130, 160), "2-usnet-static": (60, 90, 120, 150)}
MULTILAYER_POLICIES = ["grooming", "grooming_optical", "grooming_electrical", "grooming_degraded",
                       "ksp_first_fit", "qos_assured"]


def erlang_check(console: Console, arrivals: int) -> None:
    table = Table(title="simulator vs Erlang-B: one link, one slot per request, no guard band")
    for col in ("slots", "load (Erl)", "Erlang-B", "simulated (95% CI)", "covered", "wall s"):
        table.add_column(col, justify="right")
    for slots, load_erlang in ((5, 3.0), (10, 7.0), (20, 15.0), (40, 32.0)):
        network = P.Instance(("a", "b"), (P.Link("a", "b", 100e3),), False, slots, 12.5e9, 0, 1,
                             (P.Modulation("one", 100e9, 1e6),), (P.PriorityClass("only", 1.0, 0.0),), (1.0,),
                             False, "time_expanded", 0, ())
        result = simulate(network, Traffic(load_erlang, bandwidths_gbit_per_s=(100.0,)), "ksp_first_fit",
                          RunControl(arrivals=arrivals, warmup=arrivals // 10, batches=20, seed=11))
        exact = erlang_b(slots, load_erlang)
        table.add_row(str(slots), f"{load_erlang:g}", f"{exact:.5f}",
                      f"{result.blocking.mean:.5f} ± {result.blocking.half_width:.5f}",
                      "yes" if result.blocking.covers(exact) else "NO", f"{result.wall_s:.2f}")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--arrivals", type=int, default=20_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--multilayer-seeds", type=int, default=1)
    parser.add_argument("--skip-single", action="store_true", help="only the multi-layer sweep")
    parser.add_argument("--out", default="provisioning-bench")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    console = Console(width=170)
    runs = [("provisioning_multilayer", MULTILAYER_SWEEPS, MULTILAYER_POLICIES, args.multilayer_seeds)]
    if not args.skip_single:
        erlang_check(console, 100_000)
        runs.insert(0, ("provisioning_blocking", SWEEPS, SINGLE_LAYER, args.seeds))
    for stem, sweeps, policies, seeds in runs:
        points = []
        started = time.perf_counter()
        for name, loads in sweeps.items():
            instance = load(ROOT / f"{name}.toml", registry_get=lambda n: provisioning.PROBLEM).instance
            control = RunControl(arrivals=args.arrivals, warmup=args.warmup, batches=10, seed=0)
            points += sweep({name: instance}, loads, policies, Traffic(loads[0]), control, seeds,
                            lambda text: print(text, file=sys.stderr, flush=True))
        print_points(points, policies[0])
        verdicts = claims(points, policies[0])
        console.print(f"claims held: {sum(ok for _, ok in verdicts)} of {len(verdicts)}; "
                      f"simulation wall time {time.perf_counter() - started:.0f} s")
        (out / f"{stem}.json").write_text(json.dumps(points_json(points), indent=1))
        plot(points, str(out / f"{stem}.png"))
        console.print(f"wrote {out / stem}.json and .png")


if __name__ == "__main__":
    main()
