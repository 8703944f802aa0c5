"""Our TopologyFinder family: the paper's degree split (``topology_finder``), rings only, matchings
only, the same constructions routed by the optimal LP (``topology_finder_lp``), and a local search
over degree-preserving link swaps (``guided_swap_search``; the cut-screened ``link_swap_search`` is
in :mod:`.swap`).

A *ring unit* is what one ring costs in ports: with directed links a ring ``i -> i + q`` uses one
port per server; with symmetric (duplex) links a ring is bidirectional, ``q`` and ``n - q`` together,
and uses two (``q = n/2`` is its own reverse and uses one). The remaining ports are rounds of
damped maximum-weight perfect matching on the model-parallel demand, which are symmetric.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.authors import topoopt_authors
from coopt.problems.topoopt.fabric import (
    LP_SERVERS,
    assignment_rounds,
    best_routed,
    ecmp_solution,
    ecmp_split_solution,
    lp_routed_solution,
    matching_rounds,
    paired,
    repeated_matching,
    ring_links,
    select_permutations,
    swapped_links,
)
from coopt.problems.topoopt.model import (
    Instance,
    candidate_strides,
    demand_matrix,
    mp_matrix,
    ring_bytes,
)
from coopt.problems.topoopt.routing import route
from coopt.problems.topoopt.screening import Cuts, best_screened
from coopt.problems.topoopt.strides import circulant_distances

# -- construction ------------------------------------------------------------------------------


def _select(instance: Instance, k: int, count: int, taken: Sequence[int], start: int = 0) -> list[int]:
    """``count`` ring strides for a group of size ``k``: SelectPermutations over ``C_k`` (directed), or
    its bidirectional form for duplex rings (:func:`select_duplex`), avoiding the rings ``taken``;
    ``start > 0`` drops the ``start`` smallest rings from the walk (while ``count`` remain), so the
    portfolio also tries rings other than the shortest."""
    n = instance.servers
    candidates = candidate_strides(n, k)
    if instance.symmetric:
        reps = sorted({min(q, n - q) for q in candidates})
        if start and len(reps) - start >= count:
            candidates = [q for q in candidates if min(q, n - q) >= reps[start]]
        return select_duplex(n, candidates, count, taken)
    if start and len(candidates) - start >= count:
        candidates = candidates[start:]
    return select_permutations(candidates, count, taken)


def select_duplex(n: int, candidates: Sequence[int], count: int, taken: Sequence[int] = ()) -> list[int]:
    """SelectPermutations for bidirectional rings (research notes 1(c): ratio ``(max/min)^(1/r)``): walk
    ``cur = min``, ``cur *= ratio``, taking the first candidate ``>= cur`` whose duplex ring ``{q, n - q}``
    is not yet taken. Returns representatives ``min(q, n - q)``; once every duplex ring of the group is
    taken, parallel copies. Guarantee: ``count`` rings, distinct while they last, the first the
    smallest candidate. O(count |candidates|). Source: TopoOpt, bidirectional rings."""
    rep = {q: min(q, n - q) for q in candidates}
    pool = sorted(set(rep.values()))
    free = [q for q in pool if q not in set(taken)] or pool
    if count >= len(free):
        copies, rest = divmod(count, len(free))
        return sorted(free * copies + (select_duplex(n, [q for q in candidates if rep[q] in free], rest)
                                       if rest else []))
    ordered = sorted(q for q in candidates if rep[q] in free)
    ratio = (ordered[-1] / ordered[0]) ** (1 / count)
    chosen: list[int] = []
    cur = float(ordered[0])
    for _ in range(count):
        left = [q for q in ordered if rep[q] not in chosen]
        at_least = [q for q in left if q >= cur - 1e-9]
        chosen.append(rep[at_least[0] if at_least else left[-1]])
        cur *= ratio
    return sorted(chosen)


def _nearest_candidate(n: int, candidates: Sequence[int], strides: Sequence[int]) -> int:
    """The candidate stride fewest hops away over the ring strides (coin change), smallest first."""
    dist = circulant_distances(n, strides)
    return min(candidates, key=lambda q: (dist[q], q))


def ring_plan(
    instance: Instance, units: int, each: bool = True, start: int = 0, span: bool = True
) -> tuple[list[int], list[list[list[float]]]]:
    """Give ``units`` ring units to the AllReduce groups, proportionally to their ring bytes.

    Groups are taken by traffic (largest first); with ``each`` (the notes' reading of the paper)
    every group gets ``>= 1`` ring while rings last, otherwise rings go by D'Hondt alone (a group
    far lighter than the others gets none); the heaviest group's walk skips its ``start`` shortest
    rings (:func:`_select`); with ``span`` one
    ring always spans all ``n`` servers (TopoOpt's connectivity guarantee). Groups left without a
    ring send on the candidate stride nearest over the chosen strides (coin change). Returns the
    strides of the permutations to lay (duplex rings as both directions) and the ring shares: each
    group's traffic split evenly over its own strides' permutations.
    """
    n = instance.servers
    paired_if = (lambda reps: paired(n, reps)) if instance.symmetric else (lambda reps: sorted(reps))
    if units <= 0:
        reps: list[int] = []
    elif not instance.allreduce:
        reps = _select(instance, n, units, [])
    else:
        reps = []
    own: dict[int, list[int]] = {}
    if instance.allreduce and units > 0:
        order = sorted(range(len(instance.allreduce)), key=lambda g: -ring_bytes(instance.allreduce[g]))
        spanning = not span or any(instance.allreduce[g].size == n for g in order[:units])
        budget = units if spanning else units - 1
        counts = dict.fromkeys(order, 0)
        for g in order[: budget if each else min(budget, 1)]:
            counts[g] = 1
        for _ in range(budget - sum(counts.values())):  # D'Hondt: next ring to the largest bytes per ring
            g = max(order, key=lambda h: ring_bytes(instance.allreduce[h]) / (counts[h] + 1))
            counts[g] += 1
        for g in order:
            if counts[g]:
                skip = start if g == order[0] else 0
                own[g] = _select(instance, instance.allreduce[g].size, counts[g], reps, skip)
                reps += own[g]
        if not spanning:
            reps += _select(instance, n, 1, reps)
    strides = paired_if(reps)
    shares = []
    for g, group in enumerate(instance.allreduce):
        if g in own:
            mine = paired_if(own[g])
            shares.append([[q, mine.count(q) / len(mine)] for q in sorted(set(mine))])
        else:
            shares.append([[_nearest_candidate(n, candidate_strides(n, group.size), strides), 1.0]])
    return strides, shares


def ring_units(instance: Instance) -> list[int]:
    """The ring-unit counts a construction may take: every count whose leftover ports can be perfect
    matchings (which need an even ``n``), at least one ring where one fits."""
    n, d = instance.servers, instance.degree
    most = d // 2 if instance.symmetric else d
    counts = [u for u in range(1 if most else 0, most + 1)]
    if n % 2:  # no perfect matching: every port must be a ring
        counts = [u for u in counts if (2 * u if instance.symmetric else u) == d]
    return counts


def construct(
    instance: Instance, units: int, matchings: Sequence[np.ndarray], each: bool = True, start: int = 0,
    span: bool = True,
) -> tuple[np.ndarray, list]:
    """Links and ring shares of ``units`` ring units (:func:`ring_plan`) plus matchings on the ports left
    over (``matchings[r]``: the first ``r`` rounds of :func:`repeated_matching`)."""
    strides, shares = ring_plan(instance, units, each, start, span)
    links = ring_links(instance.servers, strides)
    left = instance.degree - len(strides)
    if left:
        if len(matchings) <= left:
            raise NoSolution(f"{left} ports left for matchings, but n = {instance.servers} is odd")
        links = links + matchings[left]
    return links, shares


class _Rounds:
    """``stack[r]``: the link matrix of the first ``r`` matching rounds, computed on first use (a
    construction asks only for the rounds its leftover ports take); ``len``: the rounds available
    plus one."""

    def __init__(self, rounds: Iterator[np.ndarray], count: int):
        self._rounds, self._count, self._done = rounds, count, []

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, r: int) -> np.ndarray:
        if not 0 <= r < self._count:
            raise IndexError(r)
        while len(self._done) <= r:
            self._done.append(next(self._rounds))
        return self._done[r]


def _matching_stack(instance: Instance, assign: bool = False) -> _Rounds:
    """Damped matchings on the model-parallel demand, one round per leftover port (up to ``d``, each
    computed when first needed): involutions (:func:`matching_rounds`, the paper's MP sub-topology),
    or with ``assign`` and directed links general permutations (:func:`assignment_rounds`); with
    ``n`` odd only the empty round (no perfect matching)."""
    n, d = instance.servers, instance.degree
    if assign and not instance.symmetric:
        return _Rounds(assignment_rounds(mp_matrix(instance)), d + 1)
    if n % 2:
        return _Rounds(iter([np.zeros((n, n), dtype=int)]), 1)
    return _Rounds(matching_rounds(mp_matrix(instance)), d + 1)


def paper_units(instance: Instance) -> int:
    """The paper's degree split ``d_A = round(d T_A / (T_A + T_MP))`` (research notes 1(d)) in ring
    units: ``T_A = n sum_g c_g``, ``T_MP = sum M``; at least one ring, all ports when ``n`` is odd."""
    n, d = instance.servers, instance.degree
    t_a = n * sum(ring_bytes(g) for g in instance.allreduce)
    t_mp = float(mp_matrix(instance).sum())
    ports = d * t_a / (t_a + t_mp)
    counts = ring_units(instance)
    want = max(1, round(ports / 2)) if instance.symmetric else max(1, round(ports))
    return min(counts, key=lambda u: (abs(u - want), -u)) if counts else 0


# -- heuristics ------------------------------------------------------------------------------


def find_topology(instance: Instance) -> tuple[np.ndarray, list[int], list[list[list[float]]]]:
    """TopologyFinder's links, ring strides and ring shares (see :func:`topology_finder`)."""
    units = paper_units(instance)
    strides, _ = ring_plan(instance, units)
    links, shares = construct(instance, units, _matching_stack(instance))
    return links, strides, shares


def topology_finder(instance: Instance, seed: int = 0) -> Solution:
    """TopologyFinder as the paper describes it: split the degree between AllReduce rings and
    model-parallel matchings.

    ``d_A = round(d T_A / (T_A + T_MP))`` ports as rings (:func:`paper_units`), rings from
    TotientPerms + SelectPermutations per group (one always Hamiltonian; duplex with symmetric
    links), ``d - d_A`` rounds of damped max-weight matching on ``M``, ECMP shortest-path routing
    with each group's traffic split evenly on its rings. Guarantee: a ``d``-regular topology (``d``
    permutations, symmetric where the links are), strongly connected whenever a ring fits.
    O(d n^3) (the matchings dominate). Deterministic; ``seed`` unused. Source: TopoOpt (NSDI 2023)
    and research notes 1(c); the released code differs (it gives every port to rings and lays them
    differently: :func:`coopt.problems.topoopt.authors.topoopt_authors`).
    """
    links, _, shares = find_topology(instance)
    return ecmp_solution(instance, links, shares)


def rings_only(instance: Instance, seed: int = 0) -> Solution:
    """Every port a stride ring (geometric strides, one Hamiltonian), ECMP (coin-change) routing,
    each group's traffic split evenly on its rings. With symmetric links: ``d // 2`` duplex rings,
    and for odd ``d`` the self-reverse stride ``n/2`` (a perfect matching ``i <-> i + n/2``).
    Guarantee: a strongly connected circulant. O(d n^2). Deterministic. Source: the ring half of
    TopologyFinder; not the released code (see ``topoopt_authors``)."""
    n, d = instance.servers, instance.degree
    units = d // 2 if instance.symmetric else d
    strides, shares = ring_plan(instance, units)
    if len(strides) < d:
        if n % 2:
            raise NoSolution(f"an odd degree with symmetric links on odd n = {n} cannot be rings only")
        strides = sorted(strides + [n // 2] * (d - len(strides)))
    return ecmp_solution(instance, ring_links(n, strides), shares)


def matching_only(instance: Instance, seed: int = 0) -> Solution:
    """One Hamiltonian ring (stride 1; duplex with symmetric links) for connectivity plus damped
    max-weight matchings on the *total* demand for the other ports, each group's AllReduce kept on
    its base stride ``n/k`` (a demand-oblivious ring order, no mutability). Guarantee: a strongly
    connected ``d``-regular topology; NoSolution if ``n`` is odd and ports are left for matchings.
    O(d n^3). Deterministic. Source: the MP step of TopoOpt applied to all traffic, as a baseline
    for the degree split."""
    n, d = instance.servers, instance.degree
    base = [[(n // g.size, 1.0)] for g in instance.allreduce]
    ring = paired(n, [1]) if instance.symmetric and d >= 2 else ([1] if not instance.symmetric else [])
    links = ring_links(n, ring)
    left = d - len(ring)
    if left:
        if n % 2:
            raise NoSolution(f"{left} ports left for matchings, but n = {n} is odd")
        links = links + repeated_matching(demand_matrix(instance, base), left)[-1]
    return ecmp_solution(instance, links, [[[q, v] for q, v in g] for g in base])


#: How many starting rings the portfolio tries for the heaviest group (``n <= LP_SERVERS``).
RING_STARTS = 4


def portfolio_topologies(instance: Instance) -> list[np.ndarray]:
    """Every construction of :func:`ring_units`, with both ring allocations of :func:`ring_plan` and, up
    to ``LP_SERVERS`` servers, the heaviest group's walk started at each of its :data:`RING_STARTS`
    shortest rings and the rings laid without a forced Hamiltonian one (the matchings may connect
    the cosets; a candidate that leaves demand unreachable is dropped): rings plus damped matchings
    on the leftover ports, and with directed links rings plus damped assignments as well; distinct
    link matrices only."""
    stacks = [_matching_stack(instance)]
    if not instance.symmetric:
        stacks.append(_matching_stack(instance, assign=True))
    found = []
    units_allowed = ring_units(instance)
    if not instance.symmetric:  # assignments need no even n: every ring count is open to them
        units_allowed = sorted(set(units_allowed) | set(range(1, instance.degree + 1)))
    seen = set()
    small = instance.servers <= LP_SERVERS
    starts = range(RING_STARTS) if small else range(1)
    spans = (True, False) if small else (True,)
    for stack in stacks:
        for units in units_allowed:
            for each, start, span in itertools.product((True, False), starts, spans):
                try:
                    links = construct(instance, units, stack, each, start, span)[0]
                except NoSolution:
                    continue
                if links.tobytes() not in seen:
                    seen.add(links.tobytes())
                    found.append(links)
    return found


def portfolio_candidates(instance: Instance, seed: int) -> tuple[list[np.ndarray], list[Solution]]:
    """Every construction of :func:`portfolio_topologies` and the authors' topology; and the
    authors' own solution (none where their code refuses the instance)."""
    candidates = portfolio_topologies(instance)
    try:
        authors = topoopt_authors(instance, seed)
    except NoSolution:
        return candidates, []
    return [*candidates, np.array(authors["links"])], [authors]


def topology_finder_lp(instance: Instance, seed: int = 0) -> Solution:
    """Our constructions routed optimally: for every ring/matching split of the ports (each count of
    ring units whose leftover ports can be matchings, both ring allocations) the TopologyFinder
    construction, and the authors' released topology, each routed and ring-split by the routing LP
    (P1 with the links fixed) up to ``LP_SERVERS`` servers and by ECMP with the LP-best ring split
    above; the authors' own solution (their routing, same ``seed``) is a candidate too. The best is
    returned.

    Up to ``LP_SERVERS`` servers the candidates are routed by the fast routing LP of
    ``link_swap_search`` (:class:`TopologyLP`), and a candidate whose dual cut (from the LPs before
    it) bounds it by the best so far is not routed at all (it cannot be better, up to 1e-6); only the
    best is turned into a solution.

    Guarantee: never below :func:`topology_finder` for ``n <= LP_SERVERS`` (its topology is a
    candidate and the LP routes it optimally) and never below ``topoopt_authors`` with the same seed
    (their solution is a candidate); a checker-feasible ``d``-regular topology. O(d) LPs of ``n^2 d``
    flow columns (polynomial; simplex is far faster in practice than the interior-point bound) plus
    the matchings' O(d n^3). Deterministic for a seed. Source: ours (our topologies, routed
    by the LP).
    """
    candidates, found = portfolio_candidates(instance, seed)
    if instance.servers > LP_SERVERS:
        for links in candidates:
            with contextlib.suppress(NoSolution):
                found.append(best_routed(instance, links))
    else:
        _, links, routed = best_screened(Cuts(instance), candidates)
        if links is not None:
            found.append(lp_routed_solution(instance, links, routed))
    if not found:
        raise NoSolution("no construction routes the demand (a degree-1 duplex fabric is a matching)")
    return max(found, key=lambda s: s["objective"])


class _Evaluator:
    """``theta`` of a topology with the routing that gives it: the routing LP on its links
    (``n <= LP_SERVERS``; rebuilt per topology, which on these sizes is faster than one warm LP over
    every arc), or ECMP with the LP-best split. Each distinct topology is evaluated once: ``seen``
    keeps its ``theta``."""

    def __init__(self, instance: Instance):
        self.instance = instance
        self.seen: dict[bytes, float] = {}

    def evaluate(self, links: np.ndarray) -> tuple[float, _Routing | None]:
        """``theta`` (0 when no routing carries the demand) and the ring shares and flows achieving it."""
        if self.instance.servers > LP_SERVERS:
            try:
                solution = ecmp_split_solution(self.instance, links)
            except NoSolution:
                return 0.0, None
            return solution["objective"], _Routing(solution["ring_share"], solution["flows"])
        routed = route(self.instance, links)
        return (0.0, None) if routed is None else (routed.theta, _Routing(routed.ring_share, routed.flows))

    def visit(self, links: np.ndarray) -> tuple[float, _Routing | None]:
        """:meth:`evaluate`, keeping ``theta`` in ``seen``."""
        theta, routing = self.evaluate(links)
        self.seen[links.tobytes()] = theta
        return theta, routing

    def solution(self, links: np.ndarray) -> Solution:
        return best_routed(self.instance, links)


class _Routing(NamedTuple):
    """A routing of one topology: ring shares per group and per-source flows ``[s, i, j, bytes]``."""

    ring_share: list
    flows: list


def _guide(instance: Instance, routing: _Routing) -> tuple[np.ndarray, np.ndarray]:
    """What a routing says about its topology: the bytes of each demand ``s -> t`` not carried on the
    arc ``s -> t`` itself (the pairs a new direct link would relieve), and the bytes each arc
    ``i -> j`` carries (the links a swap can take away at least cost)."""
    n = instance.servers
    shares = [[(int(q), float(v)) for q, v in g] for g in routing.ring_share]
    demand = demand_matrix(instance, shares)
    direct, load = np.zeros((n, n)), np.zeros((n, n))
    if routing.flows:
        flows = np.asarray(routing.flows, dtype=float)
        s, i, j = (flows[:, k].astype(int) for k in range(3))
        np.add.at(load, (i, j), flows[:, 3])
        first = s == i
        np.add.at(direct, (i[first], j[first]), flows[first, 3])
    np.fill_diagonal(demand, 0.0)
    return np.maximum(demand - direct, 0.0), load


def _swap(links: np.ndarray, symmetric: bool, rng: np.random.Generator, target: tuple[int, int] | None,
          load: np.ndarray | None = None) -> np.ndarray | None:
    """One degree-preserving swap: remove ``s -> b`` and ``c -> t``, add ``s -> t`` and ``c -> b``
    (for duplex links the edges ``{s, b}, {t, c}`` become ``{s, t}, {b, c}``). ``target`` fixes the
    new link ``(s, t)``; otherwise both removed links are drawn at random. With ``load`` (bytes per
    arc) the removed links of a targeted swap are drawn in proportion to their spare bytes
    (``max - load`` per link over the candidates, plus 0.1 % of the max so every link stays possible):
    a lightly loaded link is the cheapest to give up."""
    if target is None:
        tails, heads = np.nonzero(links)
        first, second = rng.choice(len(tails), 2, replace=False)
        s, b, c, t = tails[first], heads[first], tails[second], heads[second]
    else:
        s, t = target
        outs = np.flatnonzero(links[s])
        ins = np.flatnonzero(links[:, t])
        outs, ins = outs[outs != t], ins[ins != s]
        if not len(outs) or not len(ins):
            return None
        if load is None:
            b, c = rng.choice(outs), rng.choice(ins)
        else:
            carried = load + load.T if symmetric else load
            b = _lightest(rng, outs, carried[s, outs] / links[s, outs])
            c = _lightest(rng, ins, carried[ins, t] / links[ins, t])
    if s in (t, c) or b in (c, t) or links[s, b] == 0 or links[c, t] == 0:
        return None
    new = swapped_links(links, symmetric, s, b, c, t)
    return None if (new < 0).any() or np.diag(new).any() else new


def _kicked(links: np.ndarray, symmetric: bool, rng: np.random.Generator) -> np.ndarray:
    """``links`` after two random swaps (a swap that would break the topology is skipped)."""
    for _ in range(2):
        kicked = _swap(links, symmetric, rng, None)
        links = links if kicked is None else kicked
    return links


def _lightest(rng: np.random.Generator, candidates: np.ndarray, carried: np.ndarray) -> int:
    """One of ``candidates`` drawn in proportion to its spare bytes ``max - carried + 0.1 % max``
    (uniformly when none carries anything)."""
    top = float(carried.max())
    if top <= 0:
        return int(rng.choice(candidates))
    spare = 1.001 - carried / top
    return int(rng.choice(candidates, p=spare / spare.sum()))


#: :func:`guided_swap_search` keeps a move that loses at most this fraction of ``theta``
#: (threshold accepting, Dueck and Scheuer, J. Comput. Phys. 90, 1990).
THRESHOLD = 0.01


def guided_swap_search(
    instance: Instance, seed: int = 0, max_evaluations: int | None = None, time_limit: float | None = None
) -> Solution:
    """The load-guided link-swap search (``link_swap_search`` before the cut screening of
    :mod:`.swap`, which calls this one above ``LP_SERVERS`` servers;
    ``benchmarks/figures/topoopt.py`` compares the two). Iterated local search over
    degree-preserving link swaps from :func:`topology_finder_lp`'s topology, each move evaluated by
    the routing LP.

    A move removes two links and reconnects their ends (``s -> b, c -> t`` become ``s -> t, c -> b``;
    duplex edges ``{s, b}, {t, c}`` become ``{s, t}, {b, c}``), so every degree is kept. Every move
    aims at a pair whose demand travels more than one hop (drawn in proportion to its detoured bytes
    in the current routing) and gives up the links ``s -> b`` and ``c -> t`` that carry the fewest
    bytes (drawn in proportion to their spare bytes); a random swap only when no demand is detoured.
    A move is kept when ``theta`` drops by at most :data:`THRESHOLD` (threshold accepting; sideways
    and slightly worse moves walk the plateaus of the bottleneck objective, where most swaps leave
    ``theta`` unchanged); a topology already evaluated is never revisited, so the walk cannot cycle.
    After ``max(20, 2 n)`` moves in a row without a strict improvement the search restarts
    from the best topology found, kicked by two random swaps. It stops after ``max_evaluations``
    routing LPs (default ``40 + 8 n``; 20 above ``LP_SERVERS`` servers, where each is an ECMP map),
    or, given ``time_limit``, after that many seconds (then the result depends on the machine).
    Guarantee: never below ``topology_finder_lp`` (the best visited topology is returned, and the
    start is one); a checker-feasible ``d``-regular topology. O(max_evaluations) routing LPs (ECMP
    with the LP-best split above ``LP_SERVERS`` servers), one per move: the move's routing gives the
    next guide (at most ``50 (max_evaluations + 1)`` moves are drawn, so it ends even where every move
    lands on a topology already seen). Deterministic for a seed. Source: ours.
    """
    rng = np.random.default_rng(seed)
    start = topology_finder_lp(instance, seed)
    evaluator = _Evaluator(instance)
    n = instance.servers
    best_links = links = np.array(start["links"])
    best, routing = evaluator.evaluate(links)
    if best <= 0 or routing is None:
        return start
    theta = best
    evaluator.seen[links.tobytes()] = theta
    guide, load = _guide(instance, routing)
    default = 40 + 8 * n if n <= LP_SERVERS else 20
    budget = default if max_evaluations is None else max_evaluations
    patience = max(20, 2 * n)
    evaluations = stale = tries = 0
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    # every loop either evaluates a topology or counts a failure; ``tries`` bounds the loops where
    # every move lands on a topology already seen
    while evaluations < budget and tries < 50 * (budget + 1) and (
            deadline is None or time.perf_counter() < deadline):
        tries += 1
        if stale >= patience:  # restart from the best, kicked by two random swaps
            links, theta, stale = _kicked(best_links, instance.symmetric, rng), best, 0
            if links.tobytes() in evaluator.seen:
                theta = evaluator.seen[links.tobytes()]
                continue  # a seen topology (its routing is not kept): the last guide serves
            theta, routing = evaluator.visit(links)
            evaluations += 1
            if routing is not None:
                guide, load = _guide(instance, routing)
            continue
        target = None
        weights = guide.reshape(-1)
        if weights.sum() > 0:
            target = divmod(int(rng.choice(len(weights), p=weights / weights.sum())), n)
        moved = _swap(links, instance.symmetric, rng, target, load)
        if moved is None or moved.tobytes() in evaluator.seen:
            stale += 1
            continue
        value, routing = evaluator.visit(moved)
        evaluations += 1
        if value > 0 and routing is not None and value >= theta * (1 - THRESHOLD):
            stale = 0 if value > theta * (1 + 1e-9) else stale + 1
            links, theta = moved, value
            guide, load = _guide(instance, routing)
            if theta > best * (1 + 1e-9):
                best_links, best = links, theta
        else:
            stale += 1
    solution = evaluator.solution(best_links)
    return solution if solution["objective"] >= start["objective"] else start
