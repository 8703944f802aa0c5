"""Exact at scale: what each modelling choice to the exact route does, the largest generator size
the exact route proves within 60 s, and the certified gap of every heuristic on NSFNET and USNET.

    .venv/bin/python benchmarks/figures/provisioning_scale.py [--part changes|scaling|certified|all]
        [--seeds 0,1,2] [--time-limit 60]

changes    per change, on the same instances, with and without it: stage-1 (or stage-2) nodes, the
           LP-relaxation gap (LP value vs the optimum), time, and the rows/nonzeros the change
           saves; stage 1 is max W (what the change is for), stage 2 min Q at W*
stages     the whole exact route of ``provisioning`` per stage, stage 2 with and without
           ``restrict_to_weight`` (reduced-cost fixing, class-count rows), sizes 3 and 6: status,
           nodes, root gap (the stage model's LP against its incumbent) and HiGHS time per stage
scaling    generator sizes 1, 2, 3, 6 (and 12) per seed: status and time of ``exact`` and ``milp``
certified  NSFNET (400 requests) and USNET (600): every heuristic's value, the ``bound`` method's
           value and the certified gap (bound - value) / bound

Times are one HiGHS thread on the shared 2-core machine, under other sessions' load: ratios and
node counts travel better than seconds.
"""

from __future__ import annotations

import argparse
import time

import pyomo.environ as pyo

from coopt import registry
from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.provisioning import brute, exact, grooming_milp, milp
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.rmsa import best_heuristic_solution
from coopt.run import run
from coopt.solvers.highs import highs_version, objective_unit, solve_model

PROVISIONING, GROOMING = registry.get("provisioning"), registry.get("provisioning_grooming")


def served_weight_stage(model: pyo.ConcreteModel, w_max: float, options: SolveOptions) -> tuple:
    """Solve max W on ``model``; (status, W, nodes, seconds, LP value, rows, nonzeros)."""
    model.stage = pyo.Objective(expr=model.served_weight / w_max, sense=pyo.maximize)
    model.objective_unit = w_max
    t0 = time.perf_counter()
    result = solve_model(model, options)
    seconds = time.perf_counter() - t0
    relaxed = model.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(relaxed)
    lp = solve_model(relaxed, SolveOptions()).objective
    size = result.size
    return (result.status, result.objective, result.bound, result.nodes, seconds, lp, size.get("rows"),
            size.get("nonzeros"))


def row(label: str, variant: str, out: tuple) -> str:
    status, value, bound, nodes, seconds, lp, rows, nonzeros = out
    gap = "-" if value is None or lp is None else f"{(lp - value) / value:.2%}"
    shown = "-" if value is None else f"{value:.0f}"
    cells = (label, variant, status, shown, f"{bound:.1f}", nodes, gap, f"{seconds:.1f}", rows, nonzeros)
    return "| " + " | ".join(str(c) for c in cells) + " |"


#: (label, builder, seeds -> [(seed, instance)], variants): a variant is a name and the builder's
#: keywords.
CHANGES = (
    ("grooming size 6", grooming_milp.grooming_model, lambda seeds: [(s, G.generate(s, 6)) for s in seeds],
     (("no linking, free rates", {"linking": False}),
      ("no linking, floor rates", {"linking": False, "lowest_rates": True}),
      ("linking, floor rates (exact's stage 1)", {"lowest_rates": True}))),
    ("provisioning size 6, static", milp.channel_model,
     lambda seeds: [(s, P.generate(s, 6)) for s in seeds if s % 2 == 0],
     (("all channels", {}),
      ("narrowest channels (exact's stage 1)", {"narrowest": True}),
      ("narrowest, symmetry rows", {"narrowest": True, "symmetry": True}))),
    ("provisioning size 3, time-expanded", milp.channel_model,
     lambda seeds: [(s, P.generate(s, 3)) for s in (1, 3)],
     (("a row per (link, slot, arrival)", {"maximal_rows": False}),
      ("maximal instants only (exact's)", {}))),
)


def changes(seeds: list[int], options: SolveOptions) -> None:
    print("| instance | variant | status | W | bound | nodes | LP gap | s | rows | nonzeros |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, builder, instances, variants in CHANGES:
        for seed, instance in instances(seeds):
            w_max = max(c.weight for c in instance.classes)
            for variant, kwargs in variants:
                out = served_weight_stage(builder(instance, **kwargs), w_max, options)
                print(row(f"{label}, seed {seed}", variant, out), flush=True)
    print()
    print("The whole exact route (two stages with cutoff rows) against one weighted solve (milp):")
    print("| instance | exact: status, s | milp: status, s |")
    print("|---|---|---|")
    for problem in (PROVISIONING, GROOMING):
        for seed in seeds:
            instance = problem.generate(seed, 3)
            cells = [run(problem, instance, method, options) for method in ("exact", "milp")]
            print(f"| {problem.name} seed {seed} size 3 | "
                  + " | ".join(f"{c.status}, {c.times['total']:.1f}" for c in cells) + " |", flush=True)
    print()
    warm_start_defect()


def warm_start_defect() -> None:
    """Why the exact route hands HiGHS no start: on stage 2 of brute.tiny_grooming(1), a start
    given through setSolution makes HiGHS 1.16.0 stop at the start, claiming optimality."""
    instance = brute.tiny_grooming(1)
    eps1, eps2 = G.epsilons(instance)
    first = grooming_milp.grooming_model(instance, lowest_rates=True)
    first.stage = pyo.Objective(expr=first.served_weight, sense=pyo.maximize)
    solve_model(first, SolveOptions())
    weight = pyo.value(first.served_weight)
    answers = []
    for warm in (False, True):
        second = grooming_milp.grooming_model(instance)
        for name in ("y", "z", "lam", "h", "rho"):  # stage 1's solution: feasible for stage 2
            for index, var in getattr(second, name).items():
                var.value = getattr(first, name)[index].value
        second.keep = pyo.Constraint(expr=second.served_weight >= weight - 0.5)
        tie = eps1 * second.degradation + eps2 * second.lightpath_count
        second.stage = pyo.Objective(expr=tie / eps2, sense=pyo.minimize)
        second.objective_unit = eps2
        second.warm_start = warm
        result = solve_model(second, SolveOptions(gap=1e-9))
        returned = pyo.value(second.stage) * eps2
        answers.append(f"{'with' if warm else 'without'} the start: {result.status}, reported Q "
                       f"{result.objective:.6f}, Q of the solution returned {returned:.6f}")
    print(f"Warm start on stage 2 of brute.tiny_grooming(1), HiGHS {highs_version()}: " + "; ".join(answers))


def root_gap(stage: exact.Stage) -> str:
    """|LP - incumbent| / max(|incumbent|, unit) of a stage model, in the stage's own units."""
    if stage.result.objective is None:
        return "-"
    relaxed = stage.model.clone()
    pyo.TransformationFactory("core.relax_integer_vars").apply_to(relaxed)
    lp = solve_model(relaxed, SolveOptions()).objective
    value, unit = stage.result.objective, objective_unit(stage.model)
    return "-" if lp is None else f"{abs(lp - value) / max(abs(value), unit):.1%}"


def stages(seeds: list[int], options: SolveOptions, sizes: tuple[int, ...] = (3, 6)) -> None:
    """Per stage of ``provisioning``'s exact route: before (``restrict=False``) and after."""
    print("| size | seed | model | stage 2 | route: status, s | stage 1: status, nodes, root gap, s | "
          "stage 2: status, nodes, root gap, s |")
    print("|---|---|---|---|---|---|---|")
    for size in sizes:
        for seed in seeds:
            instance = P.generate(seed, size)
            start = best_heuristic_solution(instance)
            for restrict in (False, True):
                log: list[exact.Stage] = []
                t0 = time.perf_counter()
                outcome = exact.solve(exact.provisioning_spec(instance, restrict), start, options, log)
                seconds = time.perf_counter() - t0
                cells = {s.stage: f"{s.result.status}, {s.result.nodes}, {root_gap(s)}, {s.result.solve:.1f}"
                         for s in log}
                variant = "restricted" if restrict else "plain"
                print(f"| {size} | {seed} | {instance.model} | {variant} | {outcome.status}, {seconds:.1f} | "
                      f"{cells.get(1, '-')} | {cells.get(2, '-')} |", flush=True)


def scaling(seeds: list[int], options: SolveOptions, sizes: tuple[int, ...] = (1, 2, 3, 6, 12)) -> None:
    """Each method climbs the sizes while every seed is proved optimal within the time limit (as
    ``coopt bench --family scaling`` does)."""
    print("| problem | size | seed | requests | exact: status, s | milp: status, s |")
    print("|---|---|---|---|---|---|")
    limit = options.time_limit or float("inf")
    for problem in (PROVISIONING, GROOMING):
        alive = {"exact", "milp"}
        for size in sizes:
            if not alive:
                break
            failed = set()
            for seed in seeds:
                instance = problem.generate(seed, size)
                cells = []
                for method in ("exact", "milp"):
                    if method not in alive:
                        cells.append("stopped")
                        continue
                    report = run(problem, instance, method, options)
                    if report.status != "optimal" or report.times["total"] > limit:
                        failed.add(method)
                    cells.append(f"{report.status}, {report.times['total']:.1f}")
                print(f"| {problem.name} | {size} | {seed} | {len(instance.requests)} | {cells[0]} | "
                      f"{cells[1]} |", flush=True)
            alive -= failed


def certified(options: SolveOptions) -> None:
    print("| instance | requests | bound | bound s | " + " | ".join(sorted(PROVISIONING.heuristics)) + " |")
    print("|---|---|---|---|" + "---|" * len(PROVISIONING.heuristics))
    for name in ("2-nsfnet-static", "2-usnet-static"):
        item = load(f"provisioning/{name}")
        # the bound's master LP seeded with the warm start's channels, as the exact route starts
        t0 = time.perf_counter()
        bound = PROVISIONING.bound(item.instance, options, incumbent=PROVISIONING.warm_start(item.instance))
        seconds = time.perf_counter() - t0
        cells = []
        for method in sorted(PROVISIONING.heuristics):
            report = run(PROVISIONING, item.instance, method, options)
            gap = (bound - report.objective) / bound
            cells.append(f"{report.objective:.0f} ({gap:.1%}, {report.times['total']:.1f} s)")
        print(f"| {name} | {len(item.instance.requests)} | {bound:.0f} | {seconds:.0f} | "
              + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=("changes", "stages", "scaling", "certified", "all"))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    options = SolveOptions(time_limit=args.time_limit)
    if args.part in ("changes", "all"):
        changes(seeds, options)
    if args.part in ("stages", "all"):
        stages(seeds, options)
    if args.part in ("scaling", "all"):
        scaling(seeds, options)
    if args.part in ("certified", "all"):
        certified(SolveOptions(time_limit=120.0))


if __name__ == "__main__":
    main()
