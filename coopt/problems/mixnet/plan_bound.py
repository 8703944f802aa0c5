"""The plan's dual bound (problem ``mixnet_plan``, the registered ``bound``): the DP over segments of
:mod:`.plan_exact` run on lower bounds of the segment values, each raised on demand by outer
approximation, so that it ends at the optimum where time allows and is a valid lower bound at any
moment before.

A layer's time on fixed circuits is convex in the circuits. With ``c = B x`` the closed form of
:mod:`.model` reads ``n_l / theta_l(x) = max over servers i, sides and subsets S of i's pairs of
n_l D_l(S) / (B_E + B x(S))``: a maximum of terms ``g(y) = a / (B_E + B y)`` of the integer
``y = x(S)``, each convex and decreasing. For a convex ``g`` the line through ``(k, g(k))`` and
``(k + 1, g(k + 1))`` lies on or below ``g`` at every integer (convexity: it is above ``g`` only
strictly between ``k`` and ``k + 1``), so::

    T_l >= g(k) + (g(k + 1) - g(k)) (x(S) - k)

is valid for every integer circuit set (a secant cut). The segment value ``C(a, b) = min_x
sum_{l=a..b} T_l(x)`` over integer ``x`` with ``sum_j x_ij <= alpha`` is then bounded below by the
master MILP ``min sum_l T_l`` over those ``x`` and any set of secant cuts; adding the cuts of the
terms that are (nearly) largest at the master's answer, and solving again, is outer approximation
for a convex integer program (Duran and Grossmann, "An outer-approximation algorithm for a class of
mixed-integer nonlinear programs", Math. Programming 36, 1986; with secants in place of tangents,
as for separable convex integer terms): each round the master's dual bound is a lower bound on
``C(a, b)``, its answer an upper bound (the circuits' exact time), and it stops when they meet
(finite: an integer answer met again has its cuts and its exact time). Every cut of layer ``l`` is
valid in every segment that holds ``l``, so the cuts are pooled per layer. Each master also keeps
``T_l >=`` the layer's own lower bound: the larger of its M1 LP relaxation and M1's own dual bound
(:func:`plan_exact.layer_lower_bounds`; the M1 optimum where it ends), or its own segment's value
once refined.

The DP (``F(b) = min_a F(a - 1) + e_a + G(a, b)``) runs on ``G``, the largest known lower bound of
each segment closed under superadditivity (``C(a, b) >= C(a, m) + C(m + 1, b)``: circuits kept for
``a..b`` are one choice for each part), so every segment has a lower bound before it is refined and
the DP's value is a lower bound on the plan's optimum. Before the DP every segment gets a first
bound. Where each server's integer circuit rows are few (:data:`HULL_POINTS`, :data:`HULL_CELLS`),
from the server-hull bound of :class:`_Hull`: a Lagrangian relaxation whose subproblems are one
server's integer row each, enumerated, so it sees the integrality of each server's ports (at its
LP-optimal multipliers it is at least the continuous relaxation, and on the 56-layer file about
10 % above it); the hull LPs of the windows of a few tilings (:data:`SWEEPS`) give every layer
multipliers, and every segment is priced at once at its layers' multipliers. Then every segment
a least plan of the DP keeps gets its own hull LP (:class:`_Pricer`): of the segments without one,
the one with the least DP value through it (:func:`_through`: ``F(a) + e_a + G(a, b) + B(b + 1)``
with ``B`` the DP backward; the DP's value is the least of these) is priced while that value is
the DP's, by one LP per start grown a layer at a time and warm-started (:class:`_HullLP`), every
segment on the way priced too; the other segments keep their tilings' bounds (on the 56-layer
file about 1,600 of its 6,328 segments get their own LP). The continuous relaxation (Kelley's
cutting planes on the same cuts, an LP) is grown from every start, one layer longer per round for
every start, up to :data:`GROW_LENGTH` layers: without the hull (too many rows) in its place, with
it once the pricing is done (the hull is at least that relaxation; its cuts seed the pool the
masters start from). When the DP's minimiser keeps only segments with their own hull LP (or there
is no hull), its segments are refined by outer approximation (the continuous phase, then
:data:`ROUNDS` master MILPs a turn); when every segment of it is proven (its master's bound meets
its best circuits' time) the value is a plan's time, the optimum. When it reaches a known plan's
time (the ``incumbent``, or a plan of the masters' circuits) that plan is optimal. The bound
returned is the DP's last value (at most the best known plan's time), never below
:func:`plan_exact.layer_bound` (the singletons start at least at the per-layer LP values, every
plan pays ``e_0`` and ``G`` is superadditive).

Once the pricing is done, more hull LPs would not raise the minimiser's segments: a segment's hull
LP value is at least the sum of its parts' (its solution, cut to a part's layers, is one of the
part's), so above that point only the masters do.

Time: the per-layer M1 bounds take at most :data:`SINGLE_SHARE` of the time limit, the tilings
:data:`SWEEP_SHARE` of what is left, the growing :data:`GROW_SHARE` of the limit (without the
hull) or of what the pricing left; the pricing and the refinement stop at 95 % of it. Without a
limit it runs until the DP's segments are proven: the optimum (tests check it against the exact DP
on the small family).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from coopt.problem import BoundOutcome, Solution, SolveOptions
from coopt.problems.mixnet.model import busiest
from coopt.problems.mixnet.plan_exact import layer_lower_bounds
from coopt.problems.mixnet.plan_heuristics import layer_plans
from coopt.problems.mixnet.plan_model import Instance

#: Terms of a layer cut at a circuit set: those within this fraction of the layer's time there.
NEAR_ACTIVE = 0.97
#: Relative distance at which a master's bound meets its best circuits' time (proven).
PROVEN = 1e-9
#: Master MILP rounds per refinement of one segment, before the DP is run again.
ROUNDS = 2
#: Most Kelley rounds of a master's continuous phase (it stops earlier when it stalls).
LP_ROUNDS = 30
#: Seconds one master solve may take at most (the rest of the limit is shared by the others).
SOLVE_CAP = 10.0
#: Segments from each start whose continuous relaxation is grown first, and Kelley rounds per layer.
GROW_LENGTH = 16
GROW_ROUNDS = 4
#: Share of the time limit the growing may take without the hull (from the start, the singles'
#: share included); with it, share of the time the pricing left.
GROW_SHARE = 0.5
#: Share of the time left after the singles that the tilings may take (at least the first tiling
#: runs when any time is left); then the segments' own hull LPs (:class:`_Pricer`).
SWEEP_SHARE = 0.06
#: Share of the time limit M1 may take on the single layers.
SINGLE_SHARE = 0.25
#: Most integer circuit rows per server for the server-hull bound (:class:`_Hull`); above it the
#: bound is skipped (8 servers and 6 ports: 1,716 rows).
HULL_POINTS = 6000
#: Most table entries (layers x servers x rows) for the server-hull bound (the 56-layer file: 1.5 M).
HULL_CELLS = 4_000_000
#: Relative margin taken off every server-hull bound for the rounding of its sums (about 1e-15).
ROUNDING = 1e-12
#: Columns per server added per round of the hull LP's column generation.
HULL_COLUMNS = 4
#: Whether the server-hull bound is used (its tilings, then the segments' own hull LPs, before the
#: masters).
USE_HULL = True
#: The tilings (window width, first window's start) of :meth:`_Hull.sweep`, in order, while
#: :data:`SWEEP_SHARE` lasts.
SWEEPS = ((8, 0), (8, 4), (16, 0), (4, 0), (4, 2), (16, 8), (12, 0), (12, 6), (6, 0), (6, 3), (2, 0), (2, 1))


@dataclass
class _Cuts:
    """The secant cuts of one layer: (pair indices of S, numerator a in time units, k) each once."""

    seen: set[tuple[tuple[int, ...], int]] = field(default_factory=set)
    rows: list[tuple[np.ndarray, float, int]] = field(default_factory=list)


class _Terms:
    """The instance's layers as terms of the closed form, times in units of ``tau`` (a thousandth
    of the plan's circuit-free time, so a plan's time is about 10^3 in the masters)."""

    def __init__(self, instance: Instance):
        f = instance.fabric
        self.instance = instance
        self.servers = instance.servers
        self.alpha = f.alpha
        self.nic, self.eps = f.nic_rate, f.eps_rate
        layers = instance.layers
        heavy = sum(item.all_to_alls * busiest(item.bits()) for item in layers)
        self.tau = heavy / max(self.eps, f.alpha * f.nic_rate + self.eps) / 1e3
        r = self.servers
        self.pair_of = np.full((r, r), -1, dtype=int)
        self.pairs = [(i, j) for i in range(r) for j in range(i + 1, r)]
        for k, (i, j) in enumerate(self.pairs):
            self.pair_of[i, j] = self.pair_of[j, i] = k
        self.ends = (np.array([i for i, _ in self.pairs], dtype=int),
                     np.array([j for _, j in self.pairs], dtype=int))
        self.loads = [item.all_to_alls * item.bits() / self.tau for item in layers]
        self.cuts = [_Cuts() for _ in layers]

    def g(self, numerator: float, y: float) -> float:
        rate = self.eps + self.nic * y
        return numerator / rate if rate > 0 else math.inf

    def time(self, layer: int, x: np.ndarray) -> float:
        """``T_l(x)`` in units of tau (the closed form, fractional ``x`` allowed)."""
        return max((value for value, _, _ in self.terms(layer, x)), default=0.0)

    def terms(self, layer: int, x: np.ndarray) -> list[tuple[float, np.ndarray, float]]:
        """Per server and side, the largest term at ``x``: (value, pair indices of S, numerator)."""
        load = self.loads[layer]
        capacity = np.asarray(x, dtype=float)
        found = []
        for side, circuits in ((load, capacity), (load.T, capacity.T)):
            for i in range(self.servers):
                row = side[i]
                others = np.nonzero(row > 0)[0]
                if not len(others):
                    continue
                order = others[np.argsort(circuits[i, others] / row[others], kind="stable")]
                sent = np.cumsum(row[order])
                carried = np.cumsum(circuits[i, order])
                rate = self.eps + self.nic * carried
                with np.errstate(divide="ignore"):
                    values = np.where(rate > 0, sent / np.where(rate > 0, rate, 1.0), np.inf)
                k = int(np.argmax(values))
                found.append((float(values[k]), self.pair_of[i, order[: k + 1]], float(sent[k])))
        return found

    def cuts_at(self, layer: int, x: np.ndarray) -> list[tuple[np.ndarray, float, int]]:
        """New secant cuts of ``layer`` at ``x`` (its nearly largest terms; integer ``x`` gives
        the secants on both sides of ``x(S)``, fractional ``x`` the one around it), pooled."""
        terms = self.terms(layer, x)
        if not terms:
            return []
        top = max(value for value, _, _ in terms)
        pool, fresh = self.cuts[layer], []
        for value, pairs, numerator in terms:
            if value < NEAR_ACTIVE * top:
                continue
            y = float(np.asarray(x, dtype=float)[self.ends[0][pairs], self.ends[1][pairs]].sum())
            low = math.floor(y + 1e-9)
            for k in ({low - 1, low} if abs(y - low) <= 1e-9 else {low}):
                row = self._pooled(pool, pairs, numerator, k)
                if row is not None:
                    fresh.append(row)
        return fresh

    def _pooled(self, pool: _Cuts, pairs: np.ndarray, numerator: float,
                k: int) -> tuple[np.ndarray, float, int] | None:
        """The secant cut of the term ``(pairs, numerator)`` between ``k`` and ``k + 1`` into
        ``pool``, unless one of the same pairs and ``k`` is there already (or ``k`` is negative, or
        ``g(k)`` infinite). Leaving a cut out is always valid."""
        key = (tuple(sorted(int(p) for p in pairs)), k)
        if k < 0 or key in pool.seen or not math.isfinite(self.g(numerator, k)):
            return None
        pool.seen.add(key)
        row = (np.array(key[0], dtype=np.int32), float(numerator), k)
        pool.rows.append(row)
        return row


class _Relaxation:
    """A HiGHS model over the circuits of every pair (``0 <= x <= alpha``, the port rows) and one
    ``T`` column per layer of a segment, holding the pooled cuts of its layers."""

    def __init__(self, terms: _Terms, first: int):
        import highspy

        self.terms, self.first, self.layers = terms, first, []
        self.taken: list[int] = []  # per layer of the segment: pool rows already in the model
        npair = len(terms.pairs)
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.setOptionValue("threads", 1)
        highs.setOptionValue("mip_rel_gap", 1e-9)
        highs.addCols(npair, np.zeros(npair), np.zeros(npair), np.full(npair, float(terms.alpha)), 0,
                      np.array([], dtype=np.int32), np.array([], dtype=np.int32), np.array([], dtype=float))
        for s in range(terms.servers):
            touching = np.array([k for k, p in enumerate(terms.pairs) if s in p], dtype=np.int32)
            if len(touching):
                highs.addRow(-highspy.kHighsInf, float(terms.alpha), len(touching), touching,
                             np.ones(len(touching)))
        self.highs = highs

    def add_layer(self, floor: float) -> None:
        """The segment's next layer: its ``T`` column (``T >= floor``, units of tau) and its cuts."""
        import highspy

        self.layers.append(self.first + len(self.layers))
        self.taken.append(0)
        self.highs.addCol(1.0, floor, highspy.kHighsInf, 0, np.array([], dtype=np.int32),
                          np.array([], dtype=float))
        self._sync(len(self.layers) - 1)

    def _sync(self, index: int) -> int:
        """Add the pool's rows of layer ``index`` not in the model yet; how many."""
        import highspy

        rows = self.terms.cuts[self.layers[index]].rows
        column = len(self.terms.pairs) + index
        for pairs, numerator, k in rows[self.taken[index]:]:
            g0, g1 = self.terms.g(numerator, k), self.terms.g(numerator, k + 1)
            slope = g1 - g0  # <= 0: T_l - slope x(S) >= g0 - slope k
            cols = np.concatenate([[column], pairs]).astype(np.int32)
            vals = np.concatenate([[1.0], np.full(len(pairs), -slope)])
            self.highs.addRow(g0 - slope * k, highspy.kHighsInf, len(cols), cols, vals)
        added = len(rows) - self.taken[index]
        self.taken[index] = len(rows)
        return added

    def cut(self, x: np.ndarray) -> int:
        """The cuts of every layer at ``x`` (pooled), and any pooled by others since; how many."""
        added = 0
        for index, l in enumerate(self.layers):
            self.terms.cuts_at(l, x)
            added += self._sync(index)
        return added

    def circuits(self, values: np.ndarray, integral: bool) -> np.ndarray:
        r = self.terms.servers
        x = np.zeros((r, r))
        found = values[: len(self.terms.pairs)]
        x[self.terms.ends] = np.round(found) if integral else found
        return x + x.T

    def kelley(self, rounds: int, deadline: float) -> float | None:
        """Up to ``rounds`` LP solves of the continuous relaxation, cutting at each answer, until
        no cut is new or the value stalls: the last LP value (a lower bound, units of tau)."""
        import highspy

        value = None
        for _ in range(rounds):
            self.highs.setOptionValue("time_limit", max(0.01, min(SOLVE_CAP, deadline - time.perf_counter())))
            self.highs.run()
            if self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                return value
            found = self.highs.getInfo().objective_function_value
            stalled = value is not None and found <= value * (1 + 1e-6)
            value = found
            if stalled or time.perf_counter() >= deadline:
                break
            if not self.cut(self.circuits(np.asarray(self.highs.getSolution().col_value), integral=False)):
                break
        return value


class _Master(_Relaxation):
    """The outer-approximation master of one segment: integer circuits per pair, ``T_l`` per layer
    (at least the layer's own lower bound), the port rows and the pooled cuts of its layers."""

    def __init__(self, terms: _Terms, first: int, last: int, floors: list[float]):
        super().__init__(terms, first)
        for _ in range(first, last + 1):
            self.add_layer(floors[self.first + len(self.layers)])
        self.lower, self.upper, self.proven = 0.0, math.inf, False
        self.integral = False
        self.best: np.ndarray | None = None  # the circuits of ``upper`` (integer, symmetric)

    def refine(self, deadline: float, rounds: int = ROUNDS) -> None:
        """One step: the continuous phase (Kelley) the first time, then up to ``rounds`` master MILP
        solves, cutting at each answer, until proven or out of time."""
        import highspy

        if not self.integral:
            value = self.kelley(LP_ROUNDS, deadline)
            if value is not None:
                self.lower = max(self.lower, value * self.terms.tau)
            npair = len(self.terms.pairs)
            if npair:
                self.highs.changeColsIntegrality(npair, np.arange(npair, dtype=np.int32),
                                                 np.array([highspy.HighsVarType.kInteger] * npair))
            self.integral = True
            return
        for _ in range(rounds):
            left = deadline - time.perf_counter()
            if left <= 0 or self.proven:
                return
            self.highs.setOptionValue("time_limit", max(0.01, min(SOLVE_CAP, left)))
            self.highs.run()
            info = self.highs.getInfo()
            if math.isfinite(info.mip_dual_bound):
                self.lower = max(self.lower, float(info.mip_dual_bound) * self.terms.tau)
            if info.primal_solution_status == 0:
                return
            x = self.circuits(np.asarray(self.highs.getSolution().col_value), integral=True)
            value = sum(self.terms.time(l, x) for l in self.layers) * self.terms.tau
            if value < self.upper:
                self.upper, self.best = value, x.astype(int)
            if self.lower >= self.upper * (1 - PROVEN):
                self.proven = True
                return
            self.cut(x)


class _Hull:
    """The server-hull bound of a segment: a Lagrangian bound whose subproblems are one server's
    integer circuit row each, solved by enumeration.

    Server ``i``'s terms of the closed form depend only on its row ``x_i`` of the circuits (its
    send side on ``x_i``, its receive side on the column, equal by symmetry), so ``T_l(x) = max_i
    h_li(x_i)`` with ``h_li`` the largest of them; every integer row with ``sum_j x_ij <= alpha``
    is a point ``p`` of a finite set (``HULL_POINTS`` at most), and ``H[l, i, p] = h_li(p)`` is
    tabulated exactly. Copy the circuits per server (``x^i``) and require ``x^i_j = x^j_i``. For
    every ``pi_l >= 0`` with ``sum_i pi_li <= 1`` and any real ``rho_ij`` (``i < j``), every
    integer circuit set ``x`` of the segment has::

        sum_l T_l(x) >= sum_l sum_i pi_li h_li(x_i) - sum_{i<j} rho_ij (x_ij - x_ji)
                     >= sum_i min_p [sum_l pi_li H[l, i, p] - sum_{j != i} s_ij rho_ij p_j]

    (``T_l`` is a maximum of non-negative terms, so at least any sub-convex combination; the
    ``rho`` terms vanish on a symmetric ``x``; ``s_ij = +1`` for ``i < j``, ``-1`` else), so the
    right side, evaluated exactly by enumerating each server's rows, is a lower bound on the
    segment value ``C(a, b)`` whatever the multipliers (the Lagrangian relaxation of the
    maximum and of the symmetry, Geoffrion, "Lagrangean relaxation for integer programming",
    Math. Programming Study 2, 1974). The multipliers are the duals of the hull LP (the master over
    convex combinations of each server's rows: ``lambda_ip >= 0``, ``sum_p lambda_ip = 1``, ``T_l >=
    sum_p lambda_ip H[l, i, p]``, the copies' symmetry rows; :meth:`multipliers`), at whose optimal
    duals the bound is that LP's value: ``C(a, b)`` with each server's row in the convex hull of its
    integer rows, at least the continuous relaxation (``h_li`` is convex, so a convex combination
    of rows pays at least ``h_li`` at their mean). An LP stopped early or inexact, or multipliers
    borrowed from other segments (:meth:`sweep`), only give a weaker bound; the evaluation above
    keeps it valid. Units of tau, as :class:`_Terms`."""

    def __init__(self, terms: _Terms):
        self.terms = terms
        r, alpha = terms.servers, terms.alpha
        self.points = _rows(r - 1, alpha) if math.comb(r - 1 + alpha, alpha) <= HULL_POINTS else None
        self.tables: dict[int, np.ndarray] = {}
        self.kept: list[tuple[np.ndarray, np.ndarray]] | None = None  # per layer: (pi, rho share)
        self.stacked: np.ndarray | None = None  # :meth:`stack`

    def usable(self) -> bool:
        """Rows few enough to enumerate, and layers x servers x rows within :data:`HULL_CELLS`
        (the tables and the pricing of every segment hold that many numbers)."""
        return (self.points is not None and len(self.points) > 0
                and len(self.terms.loads) * self.terms.servers * len(self.points) <= HULL_CELLS)

    def table(self, layer: int) -> np.ndarray:
        """``H[i, p] = h_li(p)`` of ``layer`` (servers x rows), in units of tau."""
        if layer not in self.tables:
            load, points, r = self.terms.loads[layer], self.points, self.terms.servers
            found = np.zeros((r, len(points)))
            for i in range(r):
                others = [j for j in range(r) if j != i]
                for row in (load[i, others], load[others, i]):
                    if not (row > 0).any():
                        continue
                    demand = np.broadcast_to(row, points.shape)
                    with np.errstate(divide="ignore", invalid="ignore"):
                        ratio = np.where(demand > 0, points / np.where(demand > 0, demand, 1.0), np.inf)
                    order = np.argsort(ratio, axis=1, kind="stable")
                    sent = np.cumsum(np.take_along_axis(demand, order, 1), axis=1)
                    carried = np.cumsum(np.take_along_axis(points, order, 1), axis=1)
                    rate = self.terms.eps + self.terms.nic * carried
                    with np.errstate(divide="ignore", invalid="ignore"):
                        values = np.where(rate > 0, sent / np.where(rate > 0, rate, 1.0), np.inf)
                    found[i] = np.maximum(found[i], values.max(axis=1))
            self.tables[layer] = found
        return self.tables[layer]

    def multipliers(self, first: int, last: int, deadline: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The duals of segment ``first..last``'s hull LP as multipliers (:meth:`_HullLP.solve`);
        None when the LP gives no duals before ``deadline``."""
        lp = _HullLP(self, first)
        for _ in range(first, last + 1):
            lp.add_layer()
        return lp.solve(deadline)

    def value(self, first: int, pi: np.ndarray, signed: np.ndarray) -> float:
        """The Lagrangian bound (units of tau) of segment ``first..first + len(pi) - 1`` at the
        multipliers ``pi`` (layers x servers, rows summing to at most 1) and ``signed`` (the
        segment's ``rho``, signed per server): ``sum_i min_p`` of server ``i``'s prices, less
        :data:`ROUNDING`."""
        r = self.terms.servers
        others = np.array([np.delete(signed[i], i) for i in range(r)])  # servers x (r - 1)
        total = np.einsum("li,lip->ip", pi, self.stack()[first: first + len(pi)]) - others @ self.points.T
        return max(float(total.min(axis=1).sum()) * (1 - ROUNDING), 0.0)

    def stack(self) -> np.ndarray:
        """Every layer's table (layers x servers x rows, units of tau)."""
        if self.stacked is None:
            self.stacked = np.array([self.table(l) for l in range(len(self.terms.loads))])
        return self.stacked

    def prices(self, layer: int, pi: np.ndarray, signed: np.ndarray) -> np.ndarray:
        """Per server and row, ``pi_i H[i, p] - sum_j signed[i, j] p_j`` of one layer (its share
        of the Lagrangian; ``pi`` per server, ``signed`` that layer's share of ``rho``)."""
        r = self.terms.servers
        others = np.array([np.delete(signed[i], i) for i in range(r)])  # servers x (r - 1)
        return pi[:, None] * self.table(layer) - others @ self.points.T

    def sweep(self, width: int, offset: int, deadline: float) -> np.ndarray | None:
        """Lower bounds on every segment (units of tau, ``[a, b]`` for ``a <= b``) from one tiling:
        the hull LP of each window ``offset + k width ..`` of ``width`` layers gives its layers
        their multipliers (``pi`` its row, ``rho`` split evenly: any split is valid, the segment's
        ``rho`` being the sum of its layers' shares); layers no window reached keep those of an
        earlier sweep (at first ``pi = 1 / servers``, ``rho = 0``). Every segment's bound is then
        the Lagrangian at these multipliers, by running sums of the layers' prices (windows not
        reached by ``deadline`` are skipped). None when no window was solved."""
        n, r = len(self.terms.loads), self.terms.servers
        if self.kept is None:
            self.kept = [(np.full(r, 1.0 / r), np.zeros((r, r))) for _ in range(n)]
        first, solved = offset, 0
        while first < n and time.perf_counter() < deadline:
            last = min(n - 1, first + width - 1)
            found = self.multipliers(first, last, deadline)
            if found is not None:
                pi, signed = found
                solved += 1
                for l in range(first, last + 1):
                    self.kept[l] = (pi[l - first], signed / (last - first + 1))
            first = last + 1
        return self.evaluate() if solved else None

    def evaluate(self) -> np.ndarray:
        """Every segment's Lagrangian bound (units of tau, ``[a, b]`` for ``a <= b``) at the kept
        multipliers of its layers (``rho`` the sum of the layers' shares), by differences of
        running sums (less :data:`ROUNDING`)."""
        n = len(self.terms.loads)
        prices = np.array([self.prices(l, *self.kept[l]) for l in range(n)])
        prefix = np.concatenate([np.zeros((1, *prices.shape[1:])), np.cumsum(prices, axis=0)])
        lower = np.zeros((n, n))
        for a in range(n):
            lower[a, a:] = (prefix[a + 1:] - prefix[a]).min(axis=2).sum(axis=1)
        return np.maximum(lower * (1 - ROUNDING), 0.0)

    def bound(self, first: int, last: int, deadline: float) -> float:
        """The server-hull bound of segment ``first..last`` (units of tau; 0 when its LP gives no
        multipliers before ``deadline``)."""
        found = self.multipliers(first, last, deadline)
        if found is None:
            return 0.0
        pi, signed = found
        if self.kept is not None:  # the segment's multipliers for its layers, for :meth:`evaluate`
            for l in range(first, last + 1):
                self.kept[l] = (pi[l - first], signed / (last - first + 1))
        return self.value(first, pi, signed)


class _HullLP:
    """The hull LP of :class:`_Hull` (its docstring) for the segment ``first..first + count - 1``,
    grown one layer at a time (:meth:`add_layer`: the layer's ``T`` column and its servers' rows,
    over the columns generated so far) and solved by column generation (:meth:`solve`), each solve
    warm from the last basis. Rows: the servers' convexity (``sum_p lambda_ip = 1``), the pairs'
    symmetry (``sum_p lambda_ip p_j - sum_q lambda_jq q_i = 0``, ``i < j``), then per layer ``k``
    of the segment and server ``i`` the row ``T_k - sum_p lambda_ip H[k, i, p] >= 0`` at
    ``base + k servers + i``."""

    def __init__(self, hull: _Hull, first: int):
        import highspy

        self.hull, self.first, self.count = hull, first, 0
        r = hull.terms.servers
        pairs = hull.terms.pairs
        highs = highspy.Highs()
        highs.setOptionValue("output_flag", False)
        highs.setOptionValue("threads", 1)
        no_rows, no_index, no_values = np.zeros(1, dtype=np.int32), np.array([], dtype=np.int32), np.array([])
        highs.addRows(r, np.ones(r), np.ones(r), 0, no_rows, no_index, no_values)
        highs.addRows(len(pairs), np.zeros(len(pairs)), np.zeros(len(pairs)), 0, no_rows, no_index, no_values)
        self.highs, self.base, self.columns = highs, r + len(pairs), 0
        row_of, sign_of = np.zeros((r, r), dtype=np.int32), np.zeros((r, r))
        for k, (i, j) in enumerate(pairs):
            row_of[i, j] = row_of[j, i] = r + k
            sign_of[i, j], sign_of[j, i] = 1.0, -1.0
        # per server: its symmetry rows and signs, in the order of the entries of its rows (j != i)
        self.symmetry = [(np.delete(row_of[i], i), np.delete(sign_of[i], i)) for i in range(r)]
        self.index: list[list[int]] = [[] for _ in range(r)]  # per server: its columns
        self.point: list[list[int]] = [[] for _ in range(r)]  # per server: the rows they hold
        self.taken: list[set[int]] = [set() for _ in range(r)]
        zero = int(np.nonzero(hull.points.sum(axis=1) == 0)[0][0])
        for i in range(r):
            self._add(i, [zero])

    def _add(self, i: int, points: list[int]) -> None:
        """Server ``i``'s rows ``points`` as columns: convexity 1, symmetry ``+-p_j``, ``T`` rows
        ``-H``."""
        import highspy

        if not points:
            return
        r = self.hull.terms.servers
        rows, signs = self.symmetry[i]
        tables = self.hull.stack()[self.first: self.first + self.count, i][:, points]  # layers x points
        t_rows = self.base + np.arange(self.count) * r + i
        starts, index, values = [], [], []
        for c, p in enumerate(points):
            starts.append(len(index))
            row = self.hull.points[p] * signs
            h = -tables[:, c]
            index += [i, *rows[row != 0], *t_rows[h != 0]]
            values += [1.0, *row[row != 0], *h[h != 0]]
            self.index[i].append(self.columns + c)
            self.point[i].append(p)
            self.taken[i].add(p)
        self.highs.addCols(len(points), np.zeros(len(points)), np.zeros(len(points)),
                           np.full(len(points), highspy.kHighsInf), len(index),
                           np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32),
                           np.array(values))
        self.columns += len(points)

    def add_layer(self) -> None:
        """The segment's next layer: its ``T`` column (cost 1) and one row per server."""
        import highspy

        r = self.hull.terms.servers
        table = self.hull.stack()[self.first + self.count]
        self.highs.addCol(1.0, 0.0, highspy.kHighsInf, 0, np.array([], dtype=np.int32), np.array([]))
        column = self.columns
        self.columns += 1
        starts, index, values = [], [], []
        for i in range(r):
            starts.append(len(index))
            h = -table[i, self.point[i]]
            index += [column, *np.asarray(self.index[i])[h != 0]]
            values += [1.0, *h[h != 0]]
        self.highs.addRows(r, np.zeros(r), np.full(r, highspy.kHighsInf), len(index),
                           np.array(starts, dtype=np.int32), np.array(index, dtype=np.int32),
                           np.array(values))
        self.count += 1

    def solve(self, deadline: float) -> tuple[np.ndarray, np.ndarray] | None:
        """The LP's duals as multipliers: ``pi`` (layers x servers, each row summing to at most 1)
        and ``rho`` signed per server (``s_ij rho_ij`` at ``[i, j]``); None when the LP gives no
        duals before ``deadline``. Column generation: each server's rows priced by enumeration,
        the most negative :data:`HULL_COLUMNS` of each added per round; stopped early its duals
        are still multipliers (the bound at them, :meth:`_Hull.value`, stays valid)."""
        r = self.hull.terms.servers
        tables = self.hull.stack()[self.first: self.first + self.count]
        points, pairs = self.hull.points, self.hull.terms.pairs
        found = None
        while time.perf_counter() < deadline:
            self.highs.setOptionValue("time_limit", max(0.01, min(SOLVE_CAP, deadline - time.perf_counter())))
            self.highs.run()
            solution = self.highs.getSolution()
            if not solution.dual_valid:
                break
            duals = np.asarray(solution.row_dual)
            sigma, rho = duals[:r], duals[r: self.base]
            pi = np.maximum(duals[self.base:].reshape(self.count, r), 0.0)
            signed = np.zeros((r, r))
            for k, (i, j) in enumerate(pairs):
                signed[i, j], signed[j, i] = rho[k], -rho[k]
            found = pi / np.maximum(pi.sum(axis=1, keepdims=True), 1.0), signed  # sum_i pi_li <= 1
            others = np.array([np.delete(signed[i], i) for i in range(r)])
            reduced = np.einsum("li,lip->ip", pi, tables) - others @ points.T - sigma[:, None]
            fresh = 0
            for i in range(r):
                order = np.argsort(reduced[i])[:HULL_COLUMNS]
                new = [int(p) for p in order
                       if reduced[i, p] < -1e-9 * max(1.0, abs(sigma[i])) and int(p) not in self.taken[i]]
                self._add(i, new)
                fresh += len(new)
            if not fresh:
                break
        return found


def _rows(width: int, alpha: int) -> np.ndarray:
    """Every non-negative integer vector of ``width`` entries summing to at most ``alpha``."""
    found = [np.zeros((1, 0))]
    for _ in range(width):
        found = [np.concatenate([np.repeat(part, alpha + 1, axis=0),
                                 np.tile(np.arange(alpha + 1), len(part))[:, None]], axis=1)
                 for part in found]
        found = [part[part.sum(axis=1) <= alpha] for part in found]
    return found[0]


def _closure(direct: np.ndarray) -> np.ndarray:
    """``G[a, b] = max(direct[a, b], max_m G[a, m] + G[m + 1, b])`` (superadditive closure),
    by segment length; ``direct`` holds the known lower bounds (0 where none)."""
    n = direct.shape[0]
    by_length = [None, np.diag(direct).copy()]  # by_length[d][a] = G[a, a + d - 1]
    for d in range(2, n + 1):
        starts = np.arange(n - d + 1)
        best = direct[starts, starts + d - 1].copy()
        for k in range(1, d):
            np.maximum(best, by_length[k][: n - d + 1] + by_length[d - k][k: k + n - d + 1], out=best)
        by_length.append(best)
    closed = np.zeros_like(direct)
    for d in range(1, n + 1):
        starts = np.arange(n - d + 1)
        closed[starts, starts + d - 1] = by_length[d]
    return closed


def _forward(exposed: np.ndarray, lower: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The DP forward on the closed lower bounds: ``F`` over the first ``b`` layers (``F(0) = 0``)
    and, per ``b``, the first layer of the last segment of a least plan of them."""
    n = lower.shape[0]
    best = np.full(n + 1, math.inf)
    best[0] = 0.0
    choice = np.zeros(n + 1, dtype=int)
    for end in range(1, n + 1):
        totals = best[:end] + exposed[:end] + lower[:end, end - 1]
        choice[end] = int(np.argmin(totals))
        best[end] = totals[choice[end]]
    return best, choice


def _dp(instance: Instance, lower: np.ndarray) -> tuple[float, list[tuple[int, int]]]:
    """``F(b) = min_a F(a - 1) + e_a + G(a, b)`` on the closed lower bounds: value and segments."""
    n = lower.shape[0]
    best, choice = _forward(np.array([instance.exposed(l) for l in range(n)]), lower)
    segments, end = [], n
    while end > 0:
        segments.insert(0, (int(choice[end]), end - 1))
        end = int(choice[end])
    return float(best[n]), segments


def segment_bound(instance: Instance, options: SolveOptions,
                  incumbent: Solution | None = None) -> BoundOutcome | float:
    """The registered dual bound (module docstring): a lower bound on the plan's time, the optimum
    when every segment the DP keeps is proven within the time limit (or the ``incumbent``, the
    runner's warm start, is met). Stops at ``options.time_limit`` with the DP's last value. The
    optimum comes as a :class:`coopt.problem.BoundOutcome` marked ``optimal``, any other value as
    the bare number."""
    start = time.perf_counter()
    budget = math.inf if options.time_limit is None else options.time_limit
    deadline = start + 0.95 * budget
    plain = SolveOptions(threads=options.threads, gap=1e-9)
    floors_s = layer_lower_bounds(instance, plain)
    single_deadline = start + SINGLE_SHARE * (deadline - start) if math.isfinite(deadline) else None
    integral = layer_lower_bounds(instance, plain, integral=True, deadline=single_deadline)
    floors_s = [max(a, b) for a, b in zip(floors_s, integral, strict=True)]
    terms = _Terms(instance)
    floors = [value / terms.tau for value in floors_s]
    n = len(instance.layers)
    for l, x in enumerate(layer_plans(instance, polish=False)):
        terms.cuts_at(l, x)  # a first cut pool: every layer's own circuits
    direct = np.zeros((n, n))
    direct[np.arange(n), np.arange(n)] = floors_s
    grow_deadline = start + GROW_SHARE * (deadline - start) if math.isfinite(deadline) else deadline
    hull = _Hull(terms) if USE_HULL else None
    hull = hull if hull is not None and hull.usable() else None
    known = math.inf if incumbent is None else float(incumbent["objective"])
    pricer, grown = None, False
    if hull is not None:
        now = time.perf_counter()
        sweep_deadline = now + SWEEP_SHARE * (deadline - now) if math.isfinite(deadline) else deadline
        _sweep(hull, direct, sweep_deadline, deadline)
        pricer = _Pricer(hull, n)
    else:
        grown = True
        _grow(terms, floors, direct, grow_deadline)  # also fills the cut pool the masters start from
    masters: dict[tuple[int, int], _Master] = {}
    value, proven = -math.inf, False
    while True:
        closed = _closure(direct)
        value, segments = _dp(instance, closed)
        open_segments = [s for s in segments if not (s in masters and masters[s].proven)]
        # optimal: a known plan is met, or every kept segment is proven (the value is a plan's time)
        proven = value >= known * (1 - PROVEN) or not open_segments
        if proven or time.perf_counter() >= deadline:
            break
        if pricer is not None and pricer.step(instance, closed, value, direct, deadline):
            continue  # a least plan kept a segment without its own hull LP: it has one now
        if not grown:  # before the first master: the continuous relaxations fill the cut pool
            grown = True
            now = time.perf_counter()
            until = now + GROW_SHARE * (deadline - now) if math.isfinite(deadline) else deadline
            _grow(terms, floors, direct, until)
            continue
        for first, last in open_segments:
            if time.perf_counter() >= deadline:
                break
            master = masters.get((first, last))
            if master is None:
                master = masters[first, last] = _Master(terms, first, last, floors)
            master.refine(deadline)
            direct[first, last] = max(direct[first, last], master.lower)
            if first == last:
                floors[first] = max(floors[first], master.lower / terms.tau)
        known = min(known, _plan_upper(instance, masters))
    if proven:
        return BoundOutcome(min(value, known), optimal=True, source="segment DP, every kept segment proven")
    return min(value, known)


def _sweep(hull: _Hull, direct: np.ndarray, deadline: float, last: float) -> None:
    """Raise ``direct`` (s) by the server-hull bounds of every segment, one tiling of
    :data:`SWEEPS` after the other, until ``deadline``; the first until ``last`` (the run's own
    deadline: without a tiling the long segments keep their sums of singles, and the pricing would
    grow LPs through them)."""
    for k, (width, offset) in enumerate(SWEEPS):
        until = last if k == 0 else deadline
        lower = hull.sweep(width, offset, until) if time.perf_counter() < until else None
        if lower is None:
            return
        np.maximum(direct, lower * hull.terms.tau, out=direct)


class _Pricer:
    """Each segment's own hull LP (:class:`_HullLP`), one LP per start grown on demand: the
    segments of a start are priced in order of their last layer, each warm from the one before."""

    def __init__(self, hull: _Hull, n: int):
        self.hull = hull
        self.grown: dict[int, _HullLP] = {}
        self.reach = np.full(n, -1)  # per start: the last layer whose segment has its own LP

    def step(self, instance: Instance, closed: np.ndarray, value: float, direct: np.ndarray,
             deadline: float) -> bool:
        """Of the segments without their own LP, the one with the least DP value through it
        (:func:`_through` on the closed bounds ``closed``) gets it, when that value is the DP's
        ``value`` (a least plan keeps it): its start's LP is grown up to its last layer, raising
        ``direct`` (s) at every segment on the way. Whether it priced one."""
        n = closed.shape[0]
        through = _through(instance, closed)
        waiting = np.arange(n)[None, :] > self.reach[:, None]  # b beyond a's reach (through: inf for b < a)
        least = np.where(waiting, through, math.inf)
        first, last = (int(k) for k in np.unravel_index(np.argmin(least), least.shape))
        if not least[first, last] <= value * (1 + PROVEN):
            return False
        lp = self.grown.setdefault(first, _HullLP(self.hull, first))
        while first + lp.count <= last and time.perf_counter() < deadline:
            lp.add_layer()
            found = lp.solve(deadline)
            end = first + lp.count - 1
            if found is not None:
                found_s = self.hull.value(first, *found) * self.hull.terms.tau
                direct[first, end] = max(direct[first, end], found_s)
            self.reach[first] = end
        return True


def _through(instance: Instance, lower: np.ndarray) -> np.ndarray:
    """``P[a, b]``: the DP's least value (on the closed lower bounds ``lower``) over the plans that
    keep segment ``a..b``, ``F(a) + e_a + G(a, b) + B(b + 1)`` with ``F`` the DP forward and ``B``
    backward (inf for ``a > b``). The DP's value is the least of them."""
    n = lower.shape[0]
    exposed = np.array([instance.exposed(l) for l in range(n)])
    forward, _ = _forward(exposed, lower)
    backward = np.full(n + 1, math.inf)
    backward[n] = 0.0
    for first in range(n - 1, -1, -1):
        backward[first] = exposed[first] + np.min(lower[first, first:] + backward[first + 1:])
    through = forward[:n, None] + exposed[:, None] + lower + backward[None, 1:]
    through[np.tril_indices(n, -1)] = math.inf
    return through


def _grow(terms: _Terms, floors: list[float], direct: np.ndarray, deadline: float) -> None:
    """Raise ``direct`` (s) by the continuous relaxation of the segments from every start, every
    start one layer longer per round, up to :data:`GROW_LENGTH` layers, until ``deadline``."""
    n = direct.shape[0]
    growing = [_Relaxation(terms, first) for first in range(n)]
    for length in range(1, min(n, GROW_LENGTH) + 1):
        for first in range(n - length + 1):
            if time.perf_counter() >= deadline:
                return
            relaxation = growing[first]
            relaxation.add_layer(floors[first + length - 1])
            value = relaxation.kelley(GROW_ROUNDS, deadline)
            if value is not None:
                direct[first, first + length - 1] = max(direct[first, first + length - 1], value * terms.tau)


def _plan_upper(instance: Instance, masters: dict[tuple[int, int], _Master]) -> float:
    """The best plan made of the masters' best circuit sets (a DP over the refined segments)."""
    n = len(instance.layers)
    best = [0.0] + [math.inf] * n
    ending: dict[int, list[tuple[int, float]]] = {}
    for (first, last), master in masters.items():
        if math.isfinite(master.upper):
            ending.setdefault(last, []).append((first, master.upper))
    for end in range(1, n + 1):
        for first, upper in ending.get(end - 1, []):
            best[end] = min(best[end], best[first] + instance.exposed(first) + upper)
    return best[n]
