"""``link_swap_search``: local search over degree-preserving link swaps, screened by Benders cuts and
by the cut condition.

The inner evaluation is the routing LP on a topology (P1 with the links fixed; a topology leaving
some demand unreachable is found by a reachability check instead, ``theta = 0``), which costs a few
milliseconds at ``n = 8-12``. Warm-starting one LP over every arc from the previous basis does not
pay here: a swap moves the bottleneck, and the dual simplex needs as many iterations from the old
basis as from scratch (measured: 35 / 74 / 176 / 617 iterations warm against 39 / 83 / 162 / 452
cold at n = 6 / 8 / 10 / 16). What pays is evaluating few topologies. Every routing LP's dual,
extended to the arcs the topology lacks (:meth:`TopologyLP.prices`), is a price ``Y`` per arc with
``theta(c) <= sum_ij Y_ij c_ij`` for *every* link matrix ``c`` (weak duality; the dual's feasible set
does not depend on the links). The search keeps every such cut (:class:`.screening.Cuts`) and
bounds every swap of the current topology by the least of them: ``O(cuts x swaps)`` arithmetic, no
LP. Only a swap whose bound exceeds the current ``theta`` can improve it; those are evaluated
exactly, best bound first, each LP adding its cut. When no swap's bound exceeds ``theta``, the
topology is a proven local optimum of the swap neighbourhood (no single swap improves it, by the
cuts alone).

The dual cuts are loose for a swap far from the topologies they were taken at (1.2-2x the swap's
``theta`` on the default families), so up to ``CUT_SERVERS`` servers a second bound screens the
swaps they leave open: the cut condition over every set of servers (:class:`SubsetCuts`), whose
least ratio of links leaving a set to bytes that must leave it equals ``theta`` on most topologies
of these sizes (the bottleneck is a cut). A swap's cut bound is the topology's cut capacities plus
``(m_s - m_c)(m_b - m_t)`` per set (``m`` the set's membership), computed for the best-bounded open
swaps a batch at a time. With it most swaps that would not improve are never routed, and a
swap-local optimum is usually proven with no LP at all; the search then stops there (on the default
bench families restarts from kicked topologies found nothing more, at more than twice the routing
LPs).

A swap removes two links and reconnects their ends: ``s -> b, c -> t`` become ``s -> t, c -> b``
(with duplex links the edges ``{s, b}, {c, t}`` become ``{s, t}, {c, b}``), so every degree is kept;
its bound under a cut ``Y`` is ``Y . c + W_st + W_cb - W_sb - W_ct`` with ``W = Y`` (directed) or
``Y + Y^T`` (duplex).
"""

from __future__ import annotations

import time

import numpy as np

from coopt.problem import NoSolution, Solution
from coopt.problems.topoopt.bound import moore_bound, port_bound
from coopt.problems.topoopt.fabric import LP_SERVERS, lp_routed_solution, swapped_links
from coopt.problems.topoopt.finder import guided_swap_search, portfolio_candidates
from coopt.problems.topoopt.model import Instance
from coopt.problems.topoopt.routing import Routed
from coopt.problems.topoopt.screening import SCREEN, Cuts, best_screened, cut_levels

#: Default wall-clock guard of :func:`link_swap_search`, seconds (the evaluation budget binds first
#: on every shipped and generated instance; the guard only caps a pathological LP).
GUARD_SECONDS = 30.0
#: At a swap-local optimum the search may step to a neighbour losing at most this fraction of ``theta``.
PLATEAU = 0.01
#: Swaps whose cut bound (:class:`SubsetCuts`) is computed at once, best dual-cut bound first.
REFINE = 32


def _moves(links: np.ndarray, symmetric: bool) -> tuple[np.ndarray, ...]:
    """Every distinct swap of ``links`` as arrays ``(s, b, c, t)``: remove ``s -> b`` and ``c -> t``,
    add ``s -> t`` and ``c -> b``. Directed: each unordered pair of distinct loaded arcs once. Duplex:
    each unordered pair of edges, the first as ``(min, max)``, the second both ways (the two
    reconnections). Swaps that would make a self-loop or change nothing are left out."""
    if symmetric:
        a, b = np.nonzero(np.triu(links))
        first, second = np.triu_indices(len(a), 1)
        s, bb = a[first], b[first]
        c = np.concatenate((a[second], b[second]))
        t = np.concatenate((b[second], a[second]))
        s, bb = np.concatenate((s, s)), np.concatenate((bb, bb))
    else:
        tails, heads = np.nonzero(links)
        first, second = np.triu_indices(len(tails), 1)
        s, bb, c, t = tails[first], heads[first], tails[second], heads[second]
    ok = (s != t) & (s != c) & (bb != c) & (bb != t)
    return s[ok], bb[ok], c[ok], t[ok]


def _bounds(prices: np.ndarray, links: np.ndarray, symmetric: bool, s: np.ndarray, b: np.ndarray,
            c: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``cuts x swaps``: each cut's bound on each swap's ``theta`` (module docstring). ``prices`` holds
    ``W`` per cut (``n^2`` each)."""
    n = len(links)
    return (cut_levels(prices, links, symmetric)[:, None] + prices[:, s * n + t] + prices[:, c * n + b]
            - prices[:, s * n + b] - prices[:, c * n + t])


def link_swap_search(
    instance: Instance, seed: int = 0, max_evaluations: int | None = None, time_limit: float | None = None,
    patience: int | None = None, kicks: int | None = None,
) -> Solution:
    """Local search over degree-preserving link swaps from the best of our constructions, every swap
    screened by the routing LPs' dual cuts and, up to ``CUT_SERVERS`` servers, by the cut bound over
    every server set; only the swaps both leave open are routed (module docstring).

    Start: the topologies of ``topology_finder_lp``'s portfolio and the authors' topology (same
    ``seed``), each routed by the routing LP unless the dual cuts of those before it or its own cut
    bound already bound it by the best; the best is the start. Then, repeatedly: bound every swap of
    the current topology by the least of the dual cuts, refine the best-bounded ones by their cut
    bounds; route the swap with the largest bound (its LP adds a dual cut, which may lower the other
    bounds) until one improves ``theta`` (move there) or no bound exceeds ``theta`` (a proven
    swap-local optimum). At a local optimum the search moves to the best routed neighbour within 1 %
    of ``theta`` whose neighbourhood it has not yet left (a plateau step) or, if there is none and
    ``kicks`` allow, restarts from the best topology kicked by two random swaps (``seed``).

    Budget (deterministic): it stops when ``theta`` reaches the port/Moore bound (proven optimal), at
    a proven swap-local optimum with no plateau step once ``kicks`` restarts are spent (default: none
    where the cut bounds screen, ``n <= CUT_SERVERS``; unlimited above, where only the next rules
    stop it), after ``patience`` evaluations of the swap phase in a row without a strict improvement
    of the best (default ``max(6, n/2)``), or after ``max_evaluations`` evaluations in all (default
    ``4 n``, the start's included). An evaluation is a routing LP, or, for a topology that leaves some
    demand unreachable (``theta = 0``), the reachability check that finds it
    (:meth:`TopologyLP.routable`). A wall-clock guard, ``time_limit`` seconds (default
    :data:`GUARD_SECONDS`), only stops a pathological run (then the result depends on the machine).
    Above ``LP_SERVERS`` servers the LP costs seconds and the search is the load-guided one of
    :func:`guided_swap_search` (ECMP evaluations, its own budget).

    Guarantee: never below ``topology_finder_lp`` for ``n <= LP_SERVERS`` (every candidate of its
    portfolio is routed optimally or proven no better by a bound, and the authors' own routing is
    never above the LP's on their topology); where it stops at a local optimum, no single swap of the
    returned topology is better (both bounds are valid for every topology); a checker-feasible
    ``d``-regular topology, routed at the end by the routing LP exactly as every other heuristic's
    (the search's own LP values only rank topologies). Time: the portfolio's construction
    (``O(d n^3)`` matchings) and at most ``max_evaluations`` routing LPs of ``n^2 d`` flow columns,
    plus ``O(cuts x (n d)^2)`` arithmetic per screened move and ``O(2^n)`` per swap whose cut bound is
    taken. Deterministic for a seed. Source: ours; the dual cuts are Benders'
    optimality cuts (Numer. Math. 4, 1962) of P1 with the routing as the subproblem, the cut bound
    the multicommodity cut condition (e.g. Leighton and Rao, J. ACM 46, 1999).
    """
    n = instance.servers
    if n > LP_SERVERS:
        return guided_swap_search(instance, seed, max_evaluations, time_limit)
    rng = np.random.default_rng(seed)
    deadline = time.perf_counter() + (GUARD_SECONDS if time_limit is None else time_limit)
    cuts = Cuts(instance)
    best, best_links, answer = best_screened(cuts, portfolio_candidates(instance, seed)[0])
    if best_links is None:
        raise NoSolution("no construction routes the demand (a degree-1 duplex fabric is a matching)")
    walk = _Walk(instance, cuts, rng, deadline, (best, best_links, answer),
                 budget=4 * n if max_evaluations is None else max_evaluations,
                 patience=max(6, n // 2) if patience is None else patience)
    links, theta = best_links, best
    if kicks is None and cuts.sets is not None:
        kicks = 0  # the cut bounds prove swap-local optima, where the search then stops
    while walk.going():
        moved, plateau = walk.best_swap(links, theta)
        if moved is not None:
            theta, links = moved
            walk.record(theta, links)
            continue
        walk.left.add(links.tobytes())
        if plateau is not None:
            theta, links = plateau
            continue
        if kicks is not None:
            if kicks == 0:
                break
            kicks -= 1
        links = walk.kicked()
        theta = cuts.evaluate(links)
    return lp_routed_solution(instance, walk.best_links, walk.answer)


#: Routing LPs per server of :func:`link_swap_deep` (its budget is this times ``n``).
DEEP_EVALUATIONS = 25
#: Wall-clock guard of :func:`link_swap_deep`, seconds.
DEEP_GUARD_SECONDS = 50.0


def deep_applies(instance: Instance) -> bool:
    """:func:`link_swap_deep` runs where the routing LP evaluates (at most ``LP_SERVERS`` servers)."""
    return instance.servers <= LP_SERVERS


def link_swap_deep(instance: Instance, seed: int = 0) -> Solution:
    """:func:`link_swap_search` given the budget to leave swap-local optima: ``DEEP_EVALUATIONS n``
    routing LPs, patience half of that, and a restart from the best topology kicked by two random
    swaps wherever the walk is stuck (a proven swap-local optimum with no plateau step), where the
    default stops after ``4 n`` LPs, ``max(6, n/2)`` without a strict improvement, and, up to
    ``CUT_SERVERS`` servers, at the first proven local optimum.

    Guarantee: never below :func:`link_swap_search` for the same ``seed``: the walk is the same
    deterministic sequence of moves, only its stopping rules differ, and this one stops later, so
    the best it returns is at least the best the other had when it stopped; a checker-feasible
    ``d``-regular topology routed by the routing LP. Deterministic for a seed unless the wall-clock
    guard :data:`DEEP_GUARD_SECONDS` stops it first. Only up to ``LP_SERVERS`` servers
    (:func:`deep_applies`): above, the guided search given 10x its evaluations gave the same
    topology on the 32-server NCF and DLRM files. Time: at most ``DEEP_EVALUATIONS n`` routing LPs
    (about 15-30 s at ``n = 16, d = 6``). Source: ours (iterated local search, Lourenco, Martin and
    Stuetzle, Handbook of Metaheuristics, 2003, on the search of :func:`link_swap_search`)."""
    budget = DEEP_EVALUATIONS * instance.servers
    return link_swap_search(instance, seed, max_evaluations=budget, time_limit=DEEP_GUARD_SECONDS,
                            patience=budget // 2, kicks=budget)


class _Walk:
    """One run of :func:`link_swap_search`: the cuts, the best topology found and its routing, the
    neighbourhoods the plateau walk has left, and the stopping rules."""

    def __init__(self, instance: Instance, cuts: Cuts, rng: np.random.Generator, deadline: float,
                 start: tuple[float, np.ndarray, Routed], budget: int, patience: int):
        self.cuts, self.rng, self.deadline = cuts, rng, deadline
        self.symmetric = instance.symmetric
        self.best, self.best_links, self.answer = start
        self.budget, self.patience = budget, patience
        self.top = min(port_bound(instance), moore_bound(instance))
        self.left: set[bytes] = set()  # topologies whose neighbourhood the plateau walk has left
        self.improved = cuts.evaluations  # the evaluation count at the best's last strict improvement

    def going(self) -> bool:
        cuts = self.cuts
        return (cuts.evaluations < self.budget and cuts.evaluations - self.improved < self.patience
                and self.best < self.top * (1 - SCREEN) and time.perf_counter() < self.deadline)

    def record(self, theta: float, links: np.ndarray) -> None:
        """The walk moved to ``links`` (``theta``): keep it if it is the best."""
        if theta > self.best * (1 + SCREEN):
            self.improved = self.cuts.evaluations
        if theta > self.best:
            self.best, self.best_links, self.answer = theta, links, self.cuts.lp.routed()

    def best_swap(self, links: np.ndarray, theta: float
                  ) -> tuple[tuple[float, np.ndarray] | None, tuple[float, np.ndarray] | None]:
        """``(moved, plateau)``: the first swap of ``links`` found to improve ``theta``, routing the
        swaps by decreasing bound (each LP's cut lowering the others' bounds), or None at a proven
        swap-local optimum or when the budget runs out; and the best routed swap within
        :data:`PLATEAU` of ``theta`` whose neighbourhood the walk has not left."""
        cuts, symmetric = self.cuts, self.symmetric
        s, b, c, t = _moves(links, symmetric)
        order = self.rng.permutation(len(s))  # ties broken at random (seeded)
        s, b, c, t = s[order], b[order], c[order], t[order]
        bound = _bounds(np.array(cuts.prices), links, symmetric, s, b, c, t).min(axis=0)
        refined = np.zeros(len(s), dtype=bool) if cuts.sets is not None else np.ones(len(s), dtype=bool)
        capacity = cuts.sets.capacity(links) if cuts.sets is not None else None
        plateau = None
        while self.going():
            k = int(np.argmax(bound))
            if bound[k] <= theta * (1 + SCREEN):
                break  # no swap can improve: a swap-local optimum
            if not refined[k]:  # the cut bounds of the best-bounded swaps still open (no LP)
                open_ = np.flatnonzero(~refined & (bound > theta * (1 + SCREEN)))
                pick = open_[np.argsort(-bound[open_], kind="stable")[:REFINE]]
                sets = cuts.sets.swap_bounds(capacity, s[pick], b[pick], c[pick], t[pick])
                bound[pick] = np.minimum(bound[pick], sets)
                refined[pick] = True
                continue
            new = swapped_links(links, symmetric, int(s[k]), int(b[k]), int(c[k]), int(t[k]))
            bound[k] = -np.inf
            if new.tobytes() in cuts.seen:
                continue
            value = cuts.evaluate(new)
            if value > theta * (1 + SCREEN):
                return (value, new), plateau
            if value >= theta * (1 - PLATEAU) and new.tobytes() not in self.left and (
                    plateau is None or value > plateau[0]):
                plateau = (value, new)
            if value > 0:  # the new cut may lower the other swaps' bounds
                bound = np.minimum(bound, _bounds(cuts.prices[-1][None, :], links, symmetric, s, b, c, t)[0])
        return None, plateau

    def kicked(self) -> np.ndarray:
        """The best topology kicked by two random swaps."""
        links = self.best_links
        for _ in range(2):
            s, b, c, t = _moves(links, self.symmetric)
            if len(s):
                k = int(self.rng.integers(len(s)))
                links = swapped_links(links, self.symmetric, int(s[k]), int(b[k]), int(c[k]), int(t[k]))
        return links
