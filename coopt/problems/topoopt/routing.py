"""Routing LPs of TopoOpt in matrix form, handed to HiGHS directly (no Pyomo model: these are solved
thousands of times by the oracle and the local search, where building a Pyomo model would cost more
than solving it).

:class:`RoutingLP` is P1 (:mod:`.milp`) with the links fixed: the best concurrent-flow rate ``theta``
any routing and AllReduce ring split achieves on a topology, an LP. It is built once over a set of
arcs; a new topology only changes the capacity rows' bounds, and HiGHS re-solves from the previous
basis. :func:`route` routes one topology; :func:`relaxation` is P1 with the links free and
fractional (integrality dropped): P1's LP relaxation, a dual bound.

Both use P1's scaling (the busiest server sends 1, a link carries 1) and its variables: ``theta``,
``mu_gq = theta lambda_gq``, link values (relaxation only) and source-aggregated flows ``f^s_a`` on
the arcs ``a``. Rows: one split row per group (``sum_q mu_gq = theta``), conservation for every
source ``s`` and server ``v != s`` (the row ``v = s`` is the negated sum of the others), and a
capacity row per arc; with free links, the degree rows (one per server and direction, or one per
server with symmetric links).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coopt.problems.topoopt.model import (
    Instance,
    busiest_sender,
    candidate_strides,
    mp_matrix,
    ring_bytes,
)

INF = 1e30
_quiet = False  # set once this process's first Highs() has printed its banner (into a capture)


@dataclass(frozen=True)
class Routed:
    """An optimal routing: ``theta`` (iterations/s), ring shares per group ``[[stride, share], ...]``
    and per-source flows ``[[s, i, j, bytes], ...]`` carrying one iteration's demand."""

    theta: float
    ring_share: list[list[list[float]]]
    flows: list[list[float]]


class Columns:
    """Column-wise sparse matrix under construction: blocks of (rows, column, value) triples."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []

    def add(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=float))

    def csc(self, ncol: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r, c, v = (np.concatenate(x) for x in (self.rows, self.cols, self.vals))
        order = np.lexsort((r, c))
        r, c, v = r[order], c[order], v[order]
        return np.searchsorted(c, np.arange(ncol + 1)).astype(np.int32), r.astype(np.int32), v


def highs_lp(ncol: int, nrow: int, matrix: Columns, row_lo: np.ndarray, row_hi: np.ndarray,
             col_hi: np.ndarray):
    """A quiet one-thread ``highspy.Highs`` holding ``max x_0`` over the rows, columns in ``[0, col_hi]``."""
    import highspy

    start, index, value = matrix.csc(ncol)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = ncol, nrow
    cost = np.zeros(ncol)
    cost[0] = 1.0
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(ncol)
    lp.col_upper_ = col_hi
    lp.row_lower_, lp.row_upper_ = row_lo, row_hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
    lp.sense_ = highspy.ObjSense.kMaximize
    highs = quiet_highs()
    highs.passModel(lp)
    return highs


def quiet_highs():
    """A ``highspy.Highs`` on one thread with its output off."""
    import highspy
    from pyomo.common.tee import capture_output

    global _quiet
    if _quiet:
        highs = highspy.Highs()
    else:
        with capture_output(capture_fd=True):  # only the first Highs() of a process prints a banner
            highs = highspy.Highs()
        _quiet = True
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    return highs


def solve_lp(ncol: int, nrow: int, matrix: Columns, row_lo: np.ndarray, row_hi: np.ndarray,
             col_hi: np.ndarray) -> np.ndarray | None:
    """Maximise column 0 once; the column values, or None unless optimal."""
    highs = highs_lp(ncol, nrow, matrix, row_lo, row_hi, col_hi)
    return _optimal(highs)


def _optimal(highs) -> np.ndarray | None:
    import highspy

    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(highs.getSolution().col_value)


class RoutingLP:
    """P1's routing LP on the arcs ``(tails, heads)``: with ``capacity`` (links per arc) the links are
    fixed; with ``capacity=None`` they are free fractional variables with P1's degree rows."""

    def __init__(self, instance: Instance, tails: np.ndarray, heads: np.ndarray,
                 capacity: np.ndarray | None):
        n, d = instance.servers, instance.degree
        self.instance, self.tails, self.heads = instance, tails, heads
        self.unit = unit = busiest_sender(instance)
        mp = mp_matrix(instance) / unit
        groups = instance.allreduce
        self.shares = [(g, q) for g, group in enumerate(groups) for q in candidate_strides(n, group.size)]
        narc = len(tails)
        self.sources = sources = np.flatnonzero((mp.sum(axis=1) > 0) | bool(groups))
        free = capacity is None
        if free and instance.symmetric:
            pairs, link_index = np.unique(np.minimum(tails, heads) * n + np.maximum(tails, heads),
                                          return_inverse=True)
            nlink = len(pairs)
        else:
            link_index = np.arange(narc)
            nlink = narc if free else 0

        c_link = 1 + len(self.shares)  # theta, then mu per share (:func:`_split_columns`)
        self.c_flow = c_flow = c_link + nlink  # the flows after the free links' columns, if any
        ncol = c_flow + len(sources) * narc
        r_cons = len(groups)  # rows 0..G-1: the split rows
        self.r_cap = r_cap = r_cons + len(sources) * (n - 1)
        r_deg = r_cap + narc
        nrow = r_deg + ((n if instance.symmetric else 2 * n) if free else 0)

        def cons_row(k: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
            return r_cons + k * (n - 1) + v - (v > s)

        m = Columns()
        _split_columns(m, instance, mp, sources, self.shares, unit, lambda k, v: cons_row(k, sources[k], v))
        # flows: +1 at the tail, -1 at the head (rows v != s only), +1 in the arc's capacity row
        k = np.repeat(np.arange(len(sources)), narc)
        a = np.tile(np.arange(narc), len(sources))
        s = sources[k]
        col = c_flow + k * narc + a
        for ends, sign in ((tails[a], 1.0), (heads[a], -1.0)):
            keep = ends != s
            m.add(cons_row(k[keep], s[keep], ends[keep]), col[keep], np.full(int(keep.sum()), sign))
        m.add(r_cap + a, col, np.ones(len(a)))
        row_lo, row_hi = np.zeros(nrow), np.zeros(nrow)
        row_lo[r_cap:r_deg] = -INF
        col_hi = np.full(ncol, INF)
        if free:
            # links: -1 in the capacity rows of the arcs they carry, +1 in the degree rows of their ends
            m.add(r_cap + np.arange(narc), c_link + link_index, -np.ones(narc))
            if instance.symmetric:
                m.add(np.r_[r_deg + pairs // n, r_deg + pairs % n], np.tile(c_link + np.arange(nlink), 2),
                      np.ones(2 * nlink))
            else:
                m.add(np.r_[r_deg + tails, r_deg + n + heads], np.tile(c_link + np.arange(narc), 2),
                      np.ones(2 * narc))
            row_lo[r_deg:] = row_hi[r_deg:] = d
            col_hi[c_link:c_flow] = d
        else:
            row_hi[r_cap:r_deg] = capacity
        self.highs = highs_lp(ncol, nrow, m, row_lo, row_hi, col_hi)

    def set_capacity(self, capacity: np.ndarray) -> None:
        """New link counts on the arcs (fixed-link LP only); the next solve starts from the last basis."""
        narc = len(self.tails)
        index = np.arange(self.r_cap, self.r_cap + narc, dtype=np.int32)
        self.highs.changeRowsBounds(narc, index, np.full(narc, -INF), np.asarray(capacity, dtype=float))

    def solve(self) -> np.ndarray | None:
        return _optimal(self.highs)

    def theta(self, values: np.ndarray | None) -> float:
        """``theta`` in iterations/s of a solve's values (0 for None or a null rate)."""
        if values is None or values[0] <= 1e-12:
            return 0.0
        return float(values[0]) * self.instance.port_rate / self.unit

    def routed(self, values: np.ndarray) -> Routed:
        """The routing of a solve's values, in problem units."""
        return routed(self.instance, self.shares, self.sources, self.tails, self.heads, self.unit, values,
                      self.c_flow)


def routed(instance: Instance, shares: list[tuple[int, int]], sources: np.ndarray, tails: np.ndarray,
           heads: np.ndarray, unit: float, values: np.ndarray, start: int) -> Routed:
    """The routing in problem units of an optimal solution of the routing LP laid out as
    :class:`RoutingLP` (``theta``, ``mu`` per (group, stride) of ``shares``, flows per source x arc
    from column ``start``)."""
    theta = float(values[0])
    ring_share: list[list[list[float]]] = [[] for _ in instance.allreduce]
    for column, (g, q) in enumerate(shares):
        mu = values[1 + column]
        if mu > 1e-12 * theta:
            ring_share[g].append([q, mu])
    for g, entries in enumerate(ring_share):
        total = sum(mu for _, mu in entries)
        ring_share[g] = [[q, mu / total] for q, mu in entries]
    flow = values[start:start + len(sources) * len(tails)].reshape(len(sources), len(tails))
    k, a = np.nonzero(flow > 1e-12 * theta)
    amounts = flow[k, a] / theta * unit
    flows = [[int(s), int(i), int(j), float(b)]
             for s, i, j, b in zip(sources[k], tails[a], heads[a], amounts, strict=True)]
    return Routed(theta * instance.port_rate / unit, ring_share, flows)


def all_arcs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of distinct servers, as (tails, heads)."""
    tails, heads = np.nonzero(~np.eye(n, dtype=bool))
    return tails, heads


def route(instance: Instance, links: np.ndarray) -> Routed | None:
    """The best routing and ring split on ``links`` (an ``n x n`` link-count matrix): P1 with ``x``
    fixed. None when no routing carries the demand (some destination unreachable: ``theta = 0``)."""
    links = np.asarray(links)
    tails, heads = np.nonzero(links)
    lp = RoutingLP(instance, tails, heads, links[tails, heads].astype(float))
    values = lp.solve()
    return lp.routed(values) if lp.theta(values) > 0 else None


def relaxation(instance: Instance) -> float:
    """P1's LP relaxation (links fractional in ``[0, d]`` with the degree rows, symmetric where the
    instance says so), in iterations/s: an upper bound on every topology's ``theta``."""
    lp = RoutingLP(instance, *all_arcs(instance.servers), None)
    values = lp.solve()
    if values is None:
        raise ArithmeticError("P1's LP relaxation did not solve to optimality")
    return lp.theta(values)


#: Up to this many servers :class:`SubsetCuts` enumerates every server set (``2^n - 2`` of them).
CUT_SERVERS = 12


class SubsetCuts:
    """The cut bound on ``theta`` of a topology, over every set ``S`` of servers (``n <= CUT_SERVERS``):
    whatever crosses from ``S`` to the rest crosses some arc out of ``S``, so
    ``theta(c) <= (B/8) c(S -> ~S) / (M(S -> ~S) + sum_g c_g min_q R_gq(S))``, where ``c(S -> ~S)``
    counts the links leaving ``S``, ``M(S -> ~S)`` the model-parallel bytes from ``S`` to the rest and
    ``R_gq(S)`` the servers of ``S`` whose ring successor ``s + q`` is outside (any split of a group
    over its strides sends at least its least-crossing stride's bytes across). Valid for every
    routing and split of ``c``; on small fabrics it is often ``theta`` itself (the least cut is the
    bottleneck). A swap changes four arcs (eight with duplex links), so the bound of every swap of a
    topology is the cut capacities of that topology plus a correction per set (:meth:`swap_bounds`):
    ``O(2^n)`` arithmetic per swap, no LP."""

    def __init__(self, instance: Instance):
        n = instance.servers
        members = ((np.arange(1, 2 ** n - 1)[:, None] >> np.arange(n)) & 1).astype(bool)
        inside, outside = members.astype(float), (~members).astype(float)
        crossing = ((inside @ mp_matrix(instance)) * outside).sum(axis=1)
        rows = np.arange(n)
        for group in instance.allreduce:
            steps = np.array([(members[:, rows] & ~members[:, (rows + q) % n]).sum(axis=1)
                              for q in candidate_strides(n, group.size)])
            crossing = crossing + ring_bytes(group) * steps.min(axis=0)
        keep = crossing > 0
        self.inside, self.outside = inside[keep], outside[keep]
        self.member = np.ascontiguousarray(self.inside.T)  # per server, its membership of each set
        self.per_link = instance.port_rate / crossing[keep]  # iterations/s per link leaving the set
        self.twice = 2.0 if instance.symmetric else 1.0

    def capacity(self, links: np.ndarray) -> np.ndarray:
        """Links leaving each set."""
        return ((self.inside @ links) * self.outside).sum(axis=1)

    def bound(self, links: np.ndarray) -> float:
        """The least cut bound of ``links`` (iterations/s; ``inf`` without demand)."""
        return float((self.capacity(links) * self.per_link).min(initial=np.inf))

    def swap_bounds(self, capacity: np.ndarray, s: np.ndarray, b: np.ndarray, c: np.ndarray,
                    t: np.ndarray) -> np.ndarray:
        """The least cut bound of each swap (remove ``s -> b, c -> t``, add ``s -> t, c -> b``, and the
        reverses with duplex links) of a topology whose :meth:`capacity` is ``capacity``. With
        ``m_v = [v in S]`` the links leaving ``S`` change by ``m_s (1 - m_t) + m_c (1 - m_b) - m_s (1 -
        m_b) - m_c (1 - m_t) = (m_s - m_c)(m_b - m_t)``, and the reverse arcs by the same amount."""
        member = self.member
        change = (member[s] - member[c]) * (member[b] - member[t]) * self.twice
        return ((capacity + change) * self.per_link).min(axis=1, initial=np.inf)


_FLOW_SIGNS = np.array([1.0, -1.0, 1.0])  # a flow column's entries: tail row, head row, capacity row
_COLWISE, _MAXIMIZE = 1, -1  # highspy's MatrixFormat.kColwise and ObjSense.kMaximize, as passModel's ints


def _split_columns(m: Columns, instance: Instance, mp: np.ndarray, sources: np.ndarray,
                   shares: list[tuple[int, int]], unit: float, cons) -> None:
    """The columns of the routing LP that do not depend on the links, added to ``m``: ``theta``
    (column 0: -1 in every split row, ``M_sv`` in the conservation rows, v != s) and ``mu_gq`` per
    share (column ``1 + index``: +1 in its split row, ``c_g`` in the conservation row of
    ``(s, s + q)`` for every source s); ``cons(k, v)`` is the row of (the k-th source, server v)."""
    n, groups = instance.servers, instance.allreduce
    m.add(np.arange(len(groups)), np.zeros(len(groups)), -np.ones(len(groups)))
    ks, vs = np.nonzero(mp[sources] > 0)
    m.add(cons(ks, vs), np.zeros(len(ks)), mp[sources[ks], vs])
    for column, (g, q) in enumerate(shares):
        dest = (sources + q) % n
        keep = np.flatnonzero(dest != sources)
        m.add(np.r_[g, cons(keep, dest[keep])], np.full(1 + len(keep), 1 + column),
              np.r_[1.0, np.full(len(keep), ring_bytes(groups[g]) / unit)])


class TopologyLP:
    """The routing LP of :class:`RoutingLP` for many topologies of one instance, built for speed: the
    ``theta`` and ``mu`` columns (which do not depend on the links) are laid out once, a topology only
    adds its flow columns (three entries each) and capacity rows, and one ``Highs`` object is reused
    (primal simplex without presolve: 2-3x faster than the defaults on these LPs at n = 8-10). The
    same LP as :func:`route` (a test compares both with P1's Pyomo model on fixed links); after
    :meth:`solve`, :meth:`prices` gives its dual as a cut valid for every topology."""

    def __init__(self, instance: Instance):
        n = instance.servers
        self.instance, self.n = instance, n
        self.unit = unit = busiest_sender(instance)
        self.scale = instance.port_rate / unit
        mp = mp_matrix(instance) / unit
        groups = instance.allreduce
        self.shares = shares = [(g, q) for g, group in enumerate(groups)
                                for q in candidate_strides(n, group.size)]
        self.sources = sources = np.flatnonzero((mp.sum(axis=1) > 0) | bool(groups))
        k = len(sources)
        self.r_cons = len(groups)
        self.r_cap = self.r_cons + k * (n - 1)
        self.ncol0 = 1 + len(shares)
        # theta and mu columns: entries (row, column) and values, fixed for the instance
        fixed = Columns()
        _split_columns(fixed, instance, mp, sources, shares, unit, self._cons)
        self.fixed_start, self.fixed_index, self.fixed_value = fixed.csc(self.ncol0)
        # the conservation row of (source k, server v), -1 where v is the source itself
        v = np.arange(n)[None, :]
        self.cons_row = np.where(v == sources[:, None], -1, self._cons(np.arange(k)[:, None], v))
        self._signs: dict[int, np.ndarray] = {}  # flow-column entry values per arc count
        self._columns: dict[int, tuple[np.ndarray, ...]] = {}  # column data per column count
        # the pairs that must be reachable for theta > 0: every model-parallel demand, and per group
        # every (source, source + q) of at least one of its candidate strides q
        self._mp_pairs = mp > 0
        self._ring_pairs = []
        for group in groups:
            masks = np.zeros((len(candidate_strides(n, group.size)), n, n), dtype=bool)
            for m, q in enumerate(candidate_strides(n, group.size)):
                masks[m, sources, (sources + q) % n] = True
                masks[m, sources, sources] = False
            self._ring_pairs.append(masks)
        self.highs = quiet_highs()
        self.highs.setOptionValue("presolve", "off")
        self.highs.setOptionValue("simplex_strategy", 4)  # primal
        self.arcs: tuple[np.ndarray, np.ndarray] | None = None

    def _cons(self, k: np.ndarray, v: np.ndarray) -> np.ndarray:
        s = self.sources[k]
        return self.r_cons + k * (self.n - 1) + v - (v > s)

    def routable(self, links: np.ndarray) -> bool:
        """Whether ``theta(links) > 0``: every model-parallel demand and, for every group, every ring
        step of one of its candidate strides has a path (a shared split of a group needs each of its
        strides whole; reachability by repeated squaring of the adjacency, ``O(n^3 log n)``)."""
        reach = (links > 0) | np.eye(self.n, dtype=bool)
        for _ in range(max(1, (self.n - 1).bit_length())):
            reach = (reach.astype(np.int32) @ reach.astype(np.int32)) > 0
        if not reach[self._mp_pairs].all():
            return False
        return all((reach | ~masks).all(axis=(1, 2)).any() for masks in self._ring_pairs)

    def solve(self, links: np.ndarray) -> float:
        """``theta`` in iterations/s of the best routing and ring split on ``links`` (0 when some
        demand is unreachable, then found by :meth:`routable` without an LP)."""
        import highspy

        if not self.routable(links):
            self.arcs = None
            return 0.0
        tails, heads = np.nonzero(links)
        self.arcs = (tails, heads)
        narc, k = len(tails), len(self.sources)
        # flow column (k, a): +1 at the tail's row, -1 at the head's (when not the source), +1 capacity
        rows = np.empty((k, narc, 3), dtype=np.int32)
        rows[:, :, 0], rows[:, :, 1] = self.cons_row[:, tails], self.cons_row[:, heads]
        rows[:, :, 2] = self.r_cap + np.arange(narc)
        rows = rows.reshape(-1, 3)
        keep = rows >= 0
        ncol, nrow = self.ncol0 + k * narc, self.r_cap + narc
        if ncol not in self._columns:  # cost (theta alone), bounds [0, inf), integrality: continuous
            cost = np.zeros(ncol)
            cost[0] = 1.0
            self._columns[ncol] = (cost, np.zeros(ncol), np.full(ncol, INF), np.zeros(ncol, dtype=np.int32))
        start = np.empty(ncol + 1, dtype=np.int32)
        start[:self.ncol0 + 1] = self.fixed_start
        np.cumsum(keep.sum(axis=1, dtype=np.int32), out=start[self.ncol0 + 1:])
        start[self.ncol0 + 1:] += self.fixed_start[-1]
        if narc not in self._signs:
            self._signs[narc] = np.tile(_FLOW_SIGNS, k * narc)
        index = np.concatenate((self.fixed_index, rows[keep]))
        value = np.concatenate((self.fixed_value, self._signs[narc][keep.ravel()]))
        row_lo, row_hi = np.zeros(nrow), np.zeros(nrow)
        row_lo[self.r_cap:], row_hi[self.r_cap:] = -INF, links[tails, heads]
        cost, col_lo, col_hi, integrality = self._columns[ncol]
        self.highs.passModel(ncol, nrow, len(index), _COLWISE, _MAXIMIZE, 0.0, cost, col_lo, col_hi,
                             row_lo, row_hi, start, index, value, integrality)
        self.highs.run()
        if self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return 0.0
        theta = self.highs.getObjectiveValue()  # the objective is theta alone
        return theta * self.scale if theta > 1e-12 else 0.0

    def routed(self) -> Routed:
        """After a :meth:`solve` with ``theta > 0``: its optimal routing and ring split."""
        assert self.arcs is not None
        values = np.asarray(self.highs.getSolution().col_value)
        return routed(self.instance, self.shares, self.sources, *self.arcs, self.unit, values, self.ncol0)

    def prices(self) -> np.ndarray:
        """After an optimal :meth:`solve`: prices ``Y >= 0`` per arc (``n x n``, iterations/s per
        link) with ``sum_ij Y_ij c_ij >= theta(c)`` for *every* link matrix ``c``, equality at the
        links just solved (a Benders optimality cut on the topology).

        Why: ``c`` appears only in the capacity rows' right-hand side, so the dual objective is
        ``y . c`` and the dual's feasible set does not depend on ``c``; weak duality gives the
        inequality for every ``c`` once ``y`` is feasible for the LP over *all* arcs. The row duals
        are feasible for this LP's own columns: a flow column ``(s, i -> j)`` has reduced cost
        ``-(pi^s_i - pi^s_j + y_ij) <= 0``, i.e. ``y_ij >= pi^s_j - pi^s_i`` (``pi^s_s = 0``, the
        row left out). An absent arc gets the least price keeping every source's column dual
        feasible, ``max(0, max_s pi^s_j - pi^s_i)``; ``theta`` and ``mu`` touch no arc."""
        assert self.arcs is not None
        tails, heads = self.arcs
        n, k = self.n, len(self.sources)
        duals = np.asarray(self.highs.getSolution().row_dual)
        pi = np.zeros((k, n))
        mask = self.cons_row >= 0
        pi[mask] = duals[self.cons_row[mask]]
        prices = np.maximum((pi[:, None, :] - pi[:, :, None]).max(axis=0), 0.0)
        np.fill_diagonal(prices, 0.0)
        y = np.maximum(duals[self.r_cap:self.r_cap + len(tails)], 0.0)
        prices[tails, heads] = np.maximum(prices[tails, heads], y)
        return prices * self.scale
