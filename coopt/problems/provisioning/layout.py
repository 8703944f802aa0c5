"""``capacity_guided_cpsat``: the capacity relaxation's plan, its first class laid out exactly by CP-SAT.

The capacity relaxation (:func:`coopt.problems.provisioning.bound.capacity_bound`) chooses one
(path, width) per served request so that every link carries at most ``|S|`` slots; it forgets
only contiguity and continuity. This heuristic takes its plan with no margin
(:func:`.packing.capacity_plan`, ``margin = 0``) and asks how many of the planned channels of the
first (heaviest) class can be laid out together: one optional interval per planned channel (its
width, first slot free in ``[0, |S| - n]``) on its planned path, the intervals on a link pairwise
disjoint (``NoOverlap``; in Model B a ``NoOverlap2D`` of slot interval x holding interval, over
the instants of :func:`.model.instants`), background lightpaths as fixed intervals, maximizing
their number. With paths and widths fixed this is an exact model of the layout step, and CP-SAT
starts from a hint (the channels by first fit, widest footprint first). The laid-out channels are
replayed first (:func:`.rmsa.replay`; one whose cells are taken falls back to the rule below),
then every other request by the rule of :func:`.packing.planned_rule` (its planned path and width
by first fit, else :func:`.rmsa.narrowest_choice`), with squeaky-wheel rounds (Joslin and
Clements, JAIR 10, 1999) over those; rip-up-and-re-insert moves (:func:`.repack.repack`) and
:func:`.rmsa.upgrade` end it; :func:`.rmsa.multistart_first_fit` is a candidate too.

Why the first class alone: on ``2-usnet-static`` every first-fit layout (any order, any margin)
serves 185 of the 188 gold requests the plan holds; this exact layout places all 188 (W 19377 ->
about 19600). CP-SAT on the second and third classes, around the gold, took 60 s and more for
one or two channels more, where first fit with squeaky-wheel rounds takes a second.

Guarantee: feasible and fixed for life (every connection is placed by the replay on free cells),
so the exact optimum bounds it; never below :func:`.rmsa.multistart_first_fit`. Deterministic for
a seed: CP-SAT runs one worker under a deterministic time limit (:data:`DETERMINISTIC_SECONDS`);
a wall-clock guard (:data:`GUARD_SECONDS`) only stops a pathological solve early (then the result
depends on the machine). Cost: the capacity relaxation's root node (HiGHS, one 0-1 column per
(request, path, fraction)), one CP-SAT search over the first class's planned channels, and
``1 + rounds`` replays. Source: ours (relax, then lay out exactly); the interval and no-overlap
constraints are CP-SAT's (OR-Tools).
"""

from __future__ import annotations

import bisect

from ortools.sat.python import cp_model

from coopt.problem import Solution
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning import repack, rmsa
from coopt.problems.provisioning.bound import Family, families
from coopt.problems.provisioning.packing import capacity_plan, planned_choices, planned_rule

#: CP-SAT's deterministic time limit for the layout (its own work units, about seconds).
DETERMINISTIC_SECONDS = 12.0
#: Wall-clock guard of that search, seconds.
GUARD_SECONDS = 40.0
#: Squeaky-wheel rounds over the requests the layout leaves to first fit.
SQUEAKY_ROUNDS = 10



def solve_one_worker(model: cp_model.CpModel, seed: int, seconds: float,
                     guard: float) -> cp_model.CpSolver | None:
    """Solve ``model`` on one CP-SAT worker with ``seed`` under a deterministic limit of ``seconds``
    (CP-SAT's work units) and a wall-clock ``guard``; the solver when it holds a solution, else
    None. Deterministic for a seed unless the guard stops it."""
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.num_workers = 1
    params.random_seed = seed
    params.max_deterministic_time = seconds
    params.max_time_in_seconds = guard
    status = solver.Solve(model)
    return solver if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None

def _weight(instance: P.Instance, r: int) -> int:
    return instance.classes[instance.requests[r].priority - 1].weight


def _background(instance: P.Instance) -> list[tuple[int, int, int, int, int]]:
    """Background lightpaths as (link, first slot, slots, first instant, end instant) over the
    instants of :func:`.model.instants` (the static model has one)."""
    times = P.instants(instance)
    out = []
    for bg in instance.background:
        t1 = 1 if instance.model == "static" else bisect.bisect_left(times, bg.end_s)
        for e in P.path_links(instance, bg.path) or ():
            if t1 > 0:
                out.append((e, bg.first_slot, bg.slots, 0, t1))
    return out


Cell = tuple[int, int, int, int, int]  # (link, first slot, slots, first instant, end instant)


def _fixed(instance: P.Instance, placed: dict[int, tuple[Family, int]]) -> list[Cell]:
    """The background and the channels placed so far, as (link, first slot, slots, first
    instant, end instant)."""
    out = _background(instance)
    for fam, f in placed.values():
        out.extend((e, f, fam.width, fam.t0, fam.t1) for e in fam.links)
    return out


def _hint(instance: P.Instance, options: dict[int, list[Family]], fixed: list[Cell]
          ) -> dict[int, tuple[Family, int]]:
    """The members placed by first fit around ``fixed``, planned ones first and widest planned
    footprint first, each on the first of its options with a free block, as
    ``request -> (family, first slot)``."""
    busy: dict[tuple[int, int], int] = {}  # (link, instant) -> slot mask
    for e, f, n, t0, t1 in fixed:
        for q in range(t0, t1):
            busy[e, q] = busy.get((e, q), 0) | (((1 << n) - 1) << f)
    full = (1 << instance.num_slots) - 1
    out = {}
    for r in sorted(options, key=lambda r: (-len(options[r][0].links) * options[r][0].width, r)):
        for fam in options[r]:
            used = 0
            for e in fam.links:
                for q in range(fam.t0, fam.t1):
                    used |= busy.get((e, q), 0)
            f = rmsa.lowest_block(~used & full, fam.width)
            if f is None:
                continue
            out[r] = (fam, f)
            for e in fam.links:
                for q in range(fam.t0, fam.t1):
                    busy[e, q] = busy.get((e, q), 0) | (((1 << fam.width) - 1) << f)
            break
    return out


def _lay_out(instance: P.Instance, options: dict[int, list[Family]], fixed: list[Cell], seconds: float,
             seed: int) -> dict[int, tuple[Family, int]]:
    """The most members CP-SAT lays out together around ``fixed``, each on one of its options
    (module docstring), as ``request -> (family, first slot)``; the first-fit hint where the
    search finds nothing better."""
    hint = _hint(instance, options, fixed)
    if len(hint) == len(options):
        return hint
    model = cp_model.CpModel()
    per_link: dict[int, list[tuple[cp_model.IntervalVar, cp_model.IntervalVar]]] = {}
    for e, f, n, t0, t1 in fixed:
        per_link.setdefault(e, []).append((model.NewFixedSizeIntervalVar(f, n, ""),
                                           model.NewFixedSizeIntervalVar(t0, t1 - t0, "")))
    chosen = {}
    for r, fams in options.items():
        for k, fam in enumerate(fams):
            x = model.NewBoolVar(f"x{r}_{k}")
            s = model.NewIntVar(0, instance.num_slots - fam.width, f"s{r}_{k}")
            slots = model.NewOptionalFixedSizeIntervalVar(s, fam.width, x, "")
            held = model.NewOptionalFixedSizeIntervalVar(fam.t0, fam.t1 - fam.t0, x, "")
            for e in fam.links:
                per_link.setdefault(e, []).append((slots, held))
            chosen[r, k] = (x, s)
            on = r in hint and hint[r][0] is fam
            model.AddHint(x, on)
            model.AddHint(s, hint[r][1] if on else 0)
        model.AddAtMostOne(chosen[r, k][0] for k in range(len(fams)))
    for items in per_link.values():
        if instance.model == "static":
            model.AddNoOverlap([slots for slots, _ in items])
        else:
            model.AddNoOverlap2D([slots for slots, _ in items], [held for _, held in items])
    model.Maximize(sum(x for x, _ in chosen.values()))
    solver = solve_one_worker(model, seed, seconds, GUARD_SECONDS)
    if solver is None:
        return hint
    found = {r: (options[r][k], int(solver.Value(s))) for (r, k), (x, s) in chosen.items() if solver.Value(x)}
    return found if len(found) >= len(hint) else hint


def exact_layout(instance: P.Instance, plan: dict[int, Family], seed: int = 0
                 ) -> dict[int, tuple[Family, int]]:
    """The most planned channels of the first (heaviest) class CP-SAT lays out together around the
    background (module docstring), as ``request -> (family, first slot)``."""
    options = {r: [fam] for r, fam in plan.items() if instance.requests[r].priority == 1}
    return _lay_out(instance, options, _background(instance), DETERMINISTIC_SECONDS, seed) if options else {}


def _rule(instance: P.Instance, plan: dict[int, Family], placed: dict[int, tuple[Family, int]]
          ) -> rmsa.ChoiceRule:
    """The replay's rule: a laid-out request on its path, width and first slot if those cells are
    free, else (and every other request) :func:`.packing.planned_rule`'s choice."""
    index = {id(req): r for r, req in enumerate(instance.requests)}  # the replay hands the objects over
    rest = planned_rule(instance, plan)

    def choose(instance: P.Instance, state: rmsa.SpectrumState, request: P.Request,
               routes: tuple[P.Route, ...]) -> rmsa.Choice | None:
        r = index[id(request)]
        if r in placed:
            fam, f = placed[r]
            block = ((1 << fam.width) - 1) << f
            for route, rho, n in planned_choices(instance, request, routes, fam):
                if (state.free_mask(route.links) & block) == block:
                    return rmsa.Choice(route, rho, f, n)
        return rest(instance, state, request, routes)

    return choose


def capacity_guided_cpsat(instance: P.Instance, seed: int = 0, *, rounds: int = SQUEAKY_ROUNDS) -> Solution:
    """The capacity relaxation's plan, its first class laid out exactly by CP-SAT, the other
    requests by first fit with squeaky-wheel rounds, then repacked and upgraded (module
    docstring). ``rounds`` defaults to :data:`SQUEAKY_ROUNDS`; fewer run the same steps fewer
    times."""
    reqs = instance.requests
    plan = capacity_plan(instance, families(instance), margin=0.0)
    placed = exact_layout(instance, plan, seed)
    rule = _rule(instance, plan, placed)
    footprint = {r: len(fam.links) * fam.width for r, fam in plan.items()}

    def key(s: Solution) -> tuple[int, float]:
        return sum(_weight(instance, c["request"]) for c in s["connections"]), s["objective"]

    best = rmsa.multistart_first_fit(instance, seed)
    order = sorted(range(len(reqs)), key=lambda r: (reqs[r].arrival_s, r not in placed, reqs[r].priority,
                                                    r not in plan, -footprint.get(r, 0), r))
    for _ in range(1 + rounds):
        solution = rmsa.upgrade(instance, rmsa.replay(instance, order, rule))
        if key(solution) > key(best):
            best = solution
        blocked = set(solution["blocked"])
        rank = {r: i for i, r in enumerate(order)}
        order = sorted(order, key=lambda r: (reqs[r].arrival_s, r not in placed, reqs[r].priority,
                                             r not in blocked, rank[r]))
    return repack.repack(instance, best)
