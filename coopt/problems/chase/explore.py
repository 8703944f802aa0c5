"""The outer loop of CHASE: evolve an architecture (a ``chase_arch`` design) for a portfolio of
workloads, guided by the simulator's telemetry, and the exhaustive search that is its oracle.

Evaluation (:func:`evaluate`). A design becomes its hardware graph
(:func:`coopt.problems.chase.arch_model.hardware_of`); every workload of the portfolio is mapped
onto it by a mapper of :mod:`.mapping` (the CHASE mapper by default) and replayed by the
discrete-event simulator with link contention; the score is the geometric mean of the simulated
makespans (seconds, lower is better; inf when a workload has a task no device of the design can
run). The telemetry kept is the critical-path blame of each replay: run time per device type,
transfer time per link class (``nic``: device to ToR, ``island``: scale-up, ``uplink``: ToR to
spine, ``core``: spine backplane), and the device utilisation per type.

Search space: the device counts per rack of the design space, each with its minimal network; only
designs the ``chase_arch`` checker accepts are ever evaluated (infeasible candidates are rejected
before any mapping).

:func:`explore` (research notes 3.c, TelemetryGuidedOuter): from a start design, each iteration
reads the blame of the current design and collects the moves that relieve its bottleneck: add a
device of the blamed type, replace a device (or two) of another type, or drop a device of the
least used type (compute-bound); merge the smallest rack into the largest one (always); move a
device from the smallest rack into the largest one, drop devices from a rack that crosses the
uplinks, add island devices (transfer-bound). The
feasible, not yet visited relief moves are scored by a surrogate (HEFT's contention-free
makespan, no simulation) and the best is evaluated, unless the best of every other move (add,
remove, replace, move any device) scores ``OVERRIDE`` lower on the surrogate, or no relief move
is left. The evaluated design becomes current
if it scores better, or the same for less money (idle devices are dropped, which frees budget
for the bottleneck). After ``STALL`` evaluations without a better design the search is kicked
(``KICK_MOVES`` random changes to the best design). An iteration is one simulation-backed
evaluation, so ``iterations`` is the simulation budget, as in the paper's "64 iterations".

:func:`exhaustive` evaluates every feasible design of a small space (racks are identical, so
designs that only permute racks are evaluated once) and returns the global optimum the outer loop
is measured against; :func:`random_search` draws feasible designs uniformly at the same budget.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from coopt.problems.chase.arch_model import (
    ArchInstance,
    Design,
    cost,
    hardware_of,
    minimal_network,
    violations,
)
from coopt.problems.chase.hardware import Hardware
from coopt.problems.chase.mapping import Mapping, chase_mapping, heft_mapping
from coopt.problems.chase.model import Instance, Tables
from coopt.problems.chase.schedule import semi_active
from coopt.problems.chase.simulator import simulate
from coopt.problems.chase.workloads import Workload

Counts = tuple[tuple[int, ...], ...]
Mapper = Callable[[Instance], Mapping]


def chase_mapper_of(inst: Instance) -> Mapping:
    return chase_mapping(inst)


@dataclass
class Evaluation:
    """One design scored on the portfolio (see the module docstring)."""

    design: Design
    score: float
    makespans: tuple[float, ...] = ()
    blame: dict[tuple[str, str], float] = field(default_factory=dict)
    utilisation: dict[str, float] = field(default_factory=dict)


def link_class(hw: Hardware, link: int) -> str:
    """``nic``, ``island``, ``uplink`` or ``core`` for a link of :func:`hardware_of`'s graph."""
    a, b = hw.links[link].ends
    devices = {d.name for d in hw.devices}
    if a in devices or b in devices:
        return "island" if ".island" in (b if a in devices else a) else "nic"
    return "core" if a.startswith("spine") and b.startswith("spine") else "uplink"


def runnable(tab: Tables) -> bool:
    return all(tab.compatible[v] for v in range(tab.n))


def evaluate(arch: ArchInstance, design: Design, portfolio: Sequence[Workload],
             mapper: Mapper = chase_mapper_of) -> Evaluation:
    """Score ``design`` on ``portfolio`` with the simulator (see the module docstring)."""
    hw = hardware_of(arch, design)
    if not hw.devices:
        return Evaluation(design, math.inf)
    makespans: list[float] = []
    blame: dict[tuple[str, str], float] = {}
    busy: dict[str, list[float]] = {}
    for workload in portfolio:
        inst = Instance(hw, workload)
        if not runnable(inst.tables):
            return Evaluation(design, math.inf)
        assignment, order = mapper(inst)
        telemetry = simulate(inst, assignment, order)
        makespans.append(telemetry.makespan)
        for (kind, what), seconds in telemetry.blame.items():
            key = (kind, what) if kind == "compute" else (kind, link_class(hw, int(what)))
            blame[key] = blame.get(key, 0.0) + seconds / telemetry.makespan
        for p, seconds in enumerate(telemetry.device_busy):
            busy.setdefault(hw.devices[p].type, []).append(seconds / telemetry.makespan)
    score = math.exp(sum(math.log(t) for t in makespans) / len(makespans))
    utilisation = {kind: sum(shares) / len(shares) for kind, shares in busy.items()}
    return Evaluation(design, score, tuple(makespans), blame, utilisation)


def surrogate(arch: ArchInstance, design: Design, portfolio: Sequence[Workload]) -> float:
    """The cheap estimate of :func:`explore`: geometric mean of HEFT's contention-free makespan."""
    hw = hardware_of(arch, design)
    if not hw.devices:
        return math.inf
    values = []
    for workload in portfolio:
        inst = Instance(hw, workload)
        if not runnable(inst.tables):
            return math.inf
        assignment, order = heft_mapping(inst.tables)
        values.append(semi_active(inst.tables, assignment, order)[1])
    return math.exp(sum(math.log(v) for v in values) / len(values))


def feasible(arch: ArchInstance, counts: Counts) -> Design | None:
    design = minimal_network(arch, counts)
    return None if violations(arch, design) else design


def canonical(counts: Counts) -> Counts:
    """Racks are identical: the counts with racks sorted (largest first), one key per class."""
    return tuple(sorted(counts, reverse=True))


def _change(counts: Counts, edits: Sequence[tuple[int, int, int]]) -> Counts | None:
    rows = [list(row) for row in counts]
    for rack, kind, delta in edits:
        rows[rack][kind] += delta
        if rows[rack][kind] < 0:
            return None
    return tuple(tuple(row) for row in rows)


Edits = list[tuple[int, int, int]]  # (rack, device type, change of its count)


def _moves(arch: ArchInstance, current: Evaluation) -> tuple[list[Counts], list[Counts]]:
    """(moves that relieve the blamed bottleneck, every other move) from the current design."""
    counts = current.design.counts
    seen: set[Counts] = set()
    out: tuple[list[Counts], list[Counts]] = ([], [])
    for group, moves in ((0, _relief_edits(arch, current)), (1, _other_edits(arch))):
        for edits in moves:
            changed = _change(counts, edits)
            if changed is not None and changed not in seen:
                seen.add(changed)
                out[group].append(changed)
    return out


def _relief_edits(arch: ArchInstance, current: Evaluation) -> list[Edits]:
    """The moves the blame points to: where transfers dominate, fewer racks or more islands;
    then merge the smallest rack into the largest; then more of the most blamed compute type,
    paid for by the least utilised type."""
    counts = current.design.counts
    T, R = range(len(arch.types)), range(arch.racks)
    names = [t.name for t in arch.types]
    compute = {kind: s for (k, kind), s in current.blame.items() if k == "compute"}
    transfer = sum(s for (k, _), s in current.blame.items() if k in ("transfer", "contention"))
    network = sum(s for (k, c), s in current.blame.items()
                  if k in ("transfer", "contention") and c in ("uplink", "core"))
    blamed = max(T, key=lambda i: (compute.get(names[i], 0.0), -i))
    idle = min(T, key=lambda i: (current.utilisation.get(names[i], math.inf), i))
    size = [sum(row) for row in counts]
    big = max(R, key=lambda r: (size[r], -r))
    small = min(R, key=lambda r: (size[r] if size[r] else math.inf, r))
    guided: list[Edits] = []
    if transfer > sum(compute.values()):
        if network > 0:
            guided += [[(small, i, -1), (big, i, +1)] for i in T if counts[small][i] and small != big]
            guided += [[(small, i, -1)] for i in T if counts[small][i]]
        guided += [[(r, i, +1)] for r in R for i in T if arch.types[i].island_size > 1]
    if small != big and size[small]:  # merge the smallest rack into the largest (locality)
        guided.append([(rack, i, sign * counts[small][i]) for i in T if counts[small][i]
                       for rack, sign in ((small, -1), (big, +1))])
    return guided + _compute_edits(counts, R, T, size, blamed, idle)


def _compute_edits(counts: Counts, R: range, T: range, size: list[int], blamed: int,
                   idle: int) -> list[Edits]:
    """More of the ``blamed`` type (largest racks first), alone or instead of the ``idle`` type
    or of two of any other."""
    guided = [[(r, blamed, +1)] for r in sorted(R, key=lambda r: (-size[r], r))]
    guided += [[(r, idle, -1), (r, blamed, +1)] for r in R if counts[r][idle] and idle != blamed]
    guided += [[(r, idle, -1)] for r in R if counts[r][idle] and idle != blamed]
    guided += [[(r, i, -2), (r, blamed, +1)] for r in R for i in T if i != blamed and counts[r][i] >= 2]
    return guided


def _other_edits(arch: ArchInstance) -> list[Edits]:
    """Every single add, remove, swap (one for one, or two for one) and move between racks."""
    T, R = range(len(arch.types)), range(arch.racks)
    others = [[(r, i, +1)] for r in R for i in T]
    others += [[(r, i, -1)] for r in R for i in T]
    others += [[(r, i, -1), (r, j, +1)] for r in R for i in T for j in T if i != j]
    others += [[(r, i, -2), (r, j, +1)] for r in R for i in T for j in T if i != j]
    others += [[(r, i, -1), (s, i, +1)] for r in R for s in R for i in T if r != s]
    return others


#: A move outside the relief moves is evaluated instead when its surrogate is this much lower.
OVERRIDE = 0.02
#: Evaluations without a better design after which :func:`explore` kicks the search.
STALL = 8
#: Random moves of a kick (applied to the best design).
KICK_MOVES = 3


def explore(arch: ArchInstance, portfolio: Sequence[Workload], start: Counts, *, iterations: int = 64,
            seed: int = 0, mapper: Mapper = chase_mapper_of) -> list[Evaluation]:
    """The telemetry-guided outer loop (module docstring). Returns the best evaluation after each
    iteration (one simulation-backed evaluation each; entry ``k`` is the best of the first
    ``k + 1``)."""
    rng = random.Random(seed)
    design = feasible(arch, start)
    if design is None:
        raise ValueError("the start design breaks a deployment row")
    current = evaluate(arch, design, portfolio, mapper)
    best, stalled = current, 0
    visited = {canonical(design.counts)}
    trace = [best]
    cache: dict[Counts, float] = {}

    def score(option: Design) -> float:
        key = canonical(option.counts)
        if key not in cache:
            cache[key] = surrogate(arch, option, portfolio)
        return cache[key]

    while len(trace) < iterations:
        chosen = None
        if stalled < STALL:
            relief, other = ([d for d in (feasible(arch, c) for c in group if canonical(c) not in visited)
                              if d is not None] for group in _moves(arch, current))
            pick = min(relief, key=lambda d: (score(d), d.counts), default=None)
            alternative = min(other, key=lambda d: (score(d), d.counts), default=None)
            if pick is None or (alternative is not None
                                and score(alternative) < score(pick) * (1 - OVERRIDE)):
                pick = alternative
            chosen = pick
        if chosen is None:  # stalled, or a local optimum of the move set: kick from the best design
            chosen = kicked(arch, best.design.counts, rng, visited) or random_design(arch, rng, visited)
            if chosen is None:
                break
            stalled = 0
            current = best
        visited.add(canonical(chosen.counts))
        result = evaluate(arch, chosen, portfolio, mapper)
        if better(arch, result, current):
            current = result
        if better(arch, result, best):
            best, stalled = result, 0
        else:
            stalled += 1
        trace.append(best)
    return trace


def better(arch: ArchInstance, a: Evaluation, b: Evaluation) -> bool:
    """``a`` scores lower, or scores the same and costs less (so idle devices get dropped, which
    frees budget for the devices the bottleneck needs)."""
    if a.score != b.score:
        return a.score < b.score
    return cost(arch, a.design) < cost(arch, b.design)


def kicked(arch: ArchInstance, counts: Counts, rng: random.Random, avoid: set[Counts]) -> Design | None:
    """A feasible, unvisited design ``KICK_MOVES`` random single-device changes away from ``counts``."""
    for _ in range(200):
        edits = [(rng.randrange(arch.racks), rng.randrange(len(arch.types)), rng.choice((-1, 1)))
                 for _ in range(KICK_MOVES)]
        changed = _change(counts, edits)
        if changed is None or canonical(changed) in avoid or not any(map(sum, changed)):
            continue
        design = feasible(arch, changed)
        if design is not None:
            return design
    return None


def designs(arch: ArchInstance) -> list[Design]:
    """Every feasible design of the space, one per class of rack permutations."""
    per_type = [[split for split in itertools.product(range(t.max_count + 1), repeat=arch.racks)
                 if sum(split) <= t.max_count] for t in arch.types]
    out, seen = [], set()
    for choice in itertools.product(*per_type):
        counts = tuple(tuple(choice[i][r] for i in range(len(arch.types))) for r in range(arch.racks))
        key = canonical(counts)
        if key in seen:
            continue
        seen.add(key)
        design = feasible(arch, counts)
        if design is not None and any(sum(row) for row in counts):
            out.append(design)
    return out


def exhaustive(arch: ArchInstance, portfolio: Sequence[Workload],
               mapper: Mapper = chase_mapper_of) -> tuple[Evaluation, int]:
    """(the best design of the whole space, the number of designs evaluated)."""
    space = designs(arch)
    best = min((evaluate(arch, d, portfolio, mapper) for d in space),
               key=lambda e: (e.score, e.design.counts))
    return best, len(space)


def random_design(arch: ArchInstance, rng: random.Random, avoid: set[Counts] | None = None,
                  tries: int = 1000) -> Design | None:
    """A feasible design drawn uniformly from the count vectors (rejection sampling)."""
    for _ in range(tries):
        rows = [[0] * len(arch.types) for _ in range(arch.racks)]
        for i, t in enumerate(arch.types):
            total = rng.randint(0, t.max_count)
            for _ in range(total):
                rows[rng.randrange(arch.racks)][i] += 1
        counts = tuple(tuple(row) for row in rows)
        if not any(map(sum, counts)) or (avoid is not None and canonical(counts) in avoid):
            continue
        design = feasible(arch, counts)
        if design is not None:
            return design
    return None


def random_search(arch: ArchInstance, portfolio: Sequence[Workload], *, iterations: int = 64, seed: int = 0,
                  mapper: Mapper = chase_mapper_of) -> list[Evaluation]:
    """Random feasible designs at the same budget; the best after each evaluation."""
    rng = random.Random(seed)
    trace: list[Evaluation] = []
    seen: set[Counts] = set()
    while len(trace) < iterations:
        design = random_design(arch, rng, seen)
        if design is None:
            break
        seen.add(canonical(design.counts))
        result = evaluate(arch, design, portfolio, mapper)
        trace.append(result if not trace or result.score < trace[-1].score else trace[-1])
    return trace

