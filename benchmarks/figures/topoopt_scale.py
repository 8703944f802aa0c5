"""The certified-gap table of docs/topoopt.md at the papers' scale: the bound before and after the
pair-distance bound, ``topology_finder_lp`` (the best heuristic before, by ECMP above 28 servers)
beside its topology re-routed by column generation (``topology_finder_cg``) and ``expander_search``,
with the dual bound of each routed topology (how far its routing is from the best routing of the
same links).

    python benchmarks/figures/topoopt_scale.py [FILE ...]

Default files: the large tier's cases above 2 % (``coopt/instances/topoopt/2-*``). One process, one
HiGHS thread; times are wall clock on a shared machine, read them as ratios.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from coopt.instance import load
from coopt.problems.topoopt import bound, concurrent_flow, expander, rerouted
from coopt.problems.topoopt import model as T
from coopt.problems.topoopt.finder import topology_finder_lp
from coopt.problems.topoopt.routing import relaxation

INSTANCES = Path(__file__).resolve().parents[2] / "coopt" / "instances" / "topoopt"
DEFAULT = [f"2-model-{m}-n{n}.toml" for m, n in (
    ("ncf", "32-d4-100g"), ("ncf", "64-d8-40g"), ("dlrm", "64-d8-40g"), ("candle", "64-d8-40g"),
    ("ncf", "128-d4-100g"), ("ncf", "128-d6-40g"), ("ncf", "128-d8-100g"),
    ("dlrm", "128-d4-100g"), ("dlrm", "128-d6-40g"), ("dlrm", "128-d8-100g"),
    ("candle", "128-d4-100g"), ("candle", "128-d6-40g"), ("bert", "128-d6-40g"), ("vgg16", "128-d6-40g"))]


def old_bound(instance: T.Instance) -> float:
    """The registered bound before the pair-distance bound: port, Moore, and the LP relaxation."""
    bounds = [bound.port_bound(instance), bound.moore_bound(instance)]
    if instance.symmetric and instance.servers <= bound.RELAXATION_SERVERS:
        bounds.append(relaxation(instance))
    return min(bounds)


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def checked(instance: T.Instance, solution: dict) -> float:
    violations = T.check(instance, solution)
    if violations:
        raise AssertionError(f"checker: {violations[:2]}")
    return T.objective(instance, solution)


def row(path: Path) -> dict:
    instance = load(path).instance
    before, t_old = timed(old_bound, instance)
    after, t_new = timed(bound.dual_bound, instance)
    start, t_lp = timed(topology_finder_lp, instance)
    base = checked(instance, start)
    cg, t_cg = timed(concurrent_flow.route, instance, np.array(start["links"]),
                     time_limit=rerouted.ROUTING_SECONDS)
    cg_value = max(base, checked(instance, cg.solution))
    if instance.servers > expander.LP_ROUTING_SERVERS:
        (links, _), t_an = timed(expander.anneal, instance, 0, None, expander.LARGE_GUARD_SECONDS)
        ex, t_ex = timed(concurrent_flow.route, instance, links, time_limit=expander.ROUTING_SECONDS)
        ex_value, ex_graph = checked(instance, ex.solution), ex.graph_bound
    else:
        solution, t_ex = timed(expander.expander_search, instance)
        t_an, ex_value, ex_graph = 0.0, checked(instance, solution), float("nan")
    best = max(cg_value, ex_value)
    return {"file": path.stem, "old": before, "new": after, "t_old": t_old, "t_new": t_new,
            "lp": base, "t_lp": t_lp, "cg": cg_value, "t_cg": t_lp + t_cg, "cg_graph": cg.graph_bound,
            "ex": ex_value, "t_ex": t_an + t_ex, "ex_graph": ex_graph,
            "gap_before": (before - base) / before, "gap_after": (after - best) / after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="instance files (default: the large tier's worst)")
    args = parser.parse_args()
    paths = [Path(f) for f in args.files] or [INSTANCES / name for name in DEFAULT]
    print("| instance | bound before | bound after (s) | topology_finder_lp (s) | topology_finder_cg (s) "
          "| its graph bound | expander_search (s) | its graph bound | gap before (lp) | gap after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        r = row(path)
        print(f"| `{r['file']}` | {r['old']:.3f} | {r['new']:.3f} ({r['t_new']:.1f}) "
              f"| {r['lp']:.3f} ({r['t_lp']:.1f}) | {r['cg']:.3f} ({r['t_cg']:.1f}) | {r['cg_graph']:.3f} "
              f"| {r['ex']:.3f} ({r['t_ex']:.1f}) "
              f"| {r['ex_graph']:.3f} | {100 * r['gap_before']:.2f} % | {100 * r['gap_after']:.2f} % |",
              flush=True)


if __name__ == "__main__":
    main()
