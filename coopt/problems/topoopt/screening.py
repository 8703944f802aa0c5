"""The routing LPs' dual cuts, and the best of a list of topologies found with few LPs.

Every routing LP's dual (P1 with the links fixed), extended to the arcs the topology lacks
(:meth:`coopt.problems.topoopt.routing.TopologyLP.prices`), is a price ``Y`` per arc with
``theta(c) <= sum_ij Y_ij c_ij`` for *every* link matrix ``c`` (weak duality: the dual's feasible set
does not depend on the links), a Benders optimality cut (Numer. Math. 4, 1962) of P1 with the
routing as the subproblem. :class:`Cuts` keeps them; :func:`best_screened` routes a topology only
when neither the cuts nor, up to ``CUT_SERVERS`` servers, the cut condition over every server set
(:class:`coopt.problems.topoopt.routing.SubsetCuts`) already bound it by the best so far. Both bounds
are valid for every topology, so the best found is the best of the list (up to :data:`SCREEN`).
"""

from __future__ import annotations

import numpy as np

from coopt.problems.topoopt.model import Instance
from coopt.problems.topoopt.routing import CUT_SERVERS, Routed, SubsetCuts, TopologyLP

#: A topology is routed only when its bound exceeds the best ``theta`` by this fraction (the cuts
#: are exact to HiGHS' dual feasibility tolerance, 1e-7; improvements below 1e-6 are not sought).
SCREEN = 1e-6


class Cuts:
    """The routing LP per topology (:class:`TopologyLP`), and every LP's dual prices kept as cuts."""

    def __init__(self, instance: Instance):
        self.symmetric = instance.symmetric
        self.lp = TopologyLP(instance)
        self.prices: list[np.ndarray] = []  # W per cut, flattened n x n
        self.evaluations = 0
        self.seen: dict[bytes, float] = {}
        self.sets = SubsetCuts(instance) if instance.servers <= CUT_SERVERS else None

    def evaluate(self, links: np.ndarray) -> float:
        """``theta`` of ``links`` in iterations/s (0 when some demand is unreachable); keeps the
        LP's cut. A topology already evaluated costs nothing."""
        key = links.tobytes()
        if key not in self.seen:
            theta = self.lp.solve(links)
            self.evaluations += 1
            if theta > 0:
                y = self.lp.prices()
                self.prices.append((y + y.T if self.symmetric else y).ravel())
            self.seen[key] = theta
        return self.seen[key]


def cut_levels(prices: np.ndarray, links: np.ndarray, symmetric: bool) -> np.ndarray:
    """Each cut's bound on ``theta(links)``: ``Y . c`` (``W . c`` counts a duplex edge twice)."""
    return prices @ links.ravel().astype(float) / (2.0 if symmetric else 1.0)


def best_screened(cuts: Cuts, candidates: list[np.ndarray]) -> tuple[float, np.ndarray | None, Routed | None]:
    """The best of ``candidates`` by the routing LP: ``(theta, links, routing)``, ``(0, None, None)``
    when none routes the demand. Each is routed unless the cuts of those before it already bound it
    by the best so far (then it is no better, up to :data:`SCREEN`); ties go to the first."""
    best, best_links, answer = 0.0, None, None
    for links in candidates:
        levels = cut_levels(np.array(cuts.prices), links, cuts.symmetric) if cuts.prices else None
        if levels is not None and levels.min() <= best * (1 + SCREEN):
            continue  # a cut proves it no better than the best so far
        if best > 0 and cuts.sets is not None and cuts.sets.bound(links) <= best * (1 + SCREEN):
            continue
        value = cuts.evaluate(links)
        if value > best:
            best, best_links, answer = value, links, cuts.lp.routed()
    return best, best_links, answer
