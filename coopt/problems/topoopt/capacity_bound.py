"""The capacity-aware Moore bound on TopoOpt's ``theta``: the Moore counting of :mod:`.bound` with
the capacity of the direct links charged too, valid for every topology, routing and ring split.

Statement
---------
Count loads in *units* of one port direction, ``u = B/8`` bytes/s, and write ``D'_st = theta D_st
/ u`` for the demand of ``s -> t`` at rate ``theta`` (ring bytes under any split, model-parallel
bytes). The ``n d`` arcs (``d`` per server; a duplex link is two arcs) carry at most ``n d`` units,
so with ``Phi_s`` the arc-units of source ``s``'s flow, ``sum_s Phi_s <= n d``. A ``theta`` for
which a lower bound on ``sum_s Phi_s`` exceeds ``n d`` is out of reach.

*Per source.* Let ``s`` have ``k`` distinct neighbours ``t`` with ``m_t >= 1`` links each
(``sum_t m_t = d``). A path to ``t`` has at least ``dist(s, t)`` arcs, and the only one-arc paths to
a neighbour are its ``m_t`` direct arcs, which carry at most ``m_t`` units whatever else shares
them. So

    Phi_s >= sum_t D'_st dist(s, t) + sum_{t neighbour} max(0, D'_st - m_t).          (1)

*Distances.* ``k`` servers lie one hop from ``s``. A level-2 server is a neighbour of some ``t``
other than ``s``, and ``t`` has ``d - m_t`` links that do not go to ``s`` (duplex links), so at most
``d k - d`` servers lie two hops away (directed links: ``d k``). Each deeper level is at most
``d - 1`` times the one before (a server spends a link on its parent; directed: ``d`` times). With
``k = d`` this is the Moore count of :func:`.bound.moore_levels`; parallel links (``k < d``) shrink
it, so a heavy pair cannot be given more than one link's worth at one hop for free.

*The split.* The ring split ``lambda`` is shared by all sources; minimising (1) with its own copy
of ``lambda`` per source gives at most the least of the sum, so the bound holds for every split.

Relaxation solved
-----------------
The destinations of ``s`` fall into *classes* ``C`` of equal model-parallel demand ``p_C`` and equal
set ``G_C`` of the AllReduce groups whose candidate strides reach them. A small MILP per class
signature (servers with equal signatures share it) minimises a lower bound on (1): integers
``a_C`` (members at one hop), ``n_Ch`` (at ``h`` hops, ``h = 2..L``), ``f_C`` (beyond ``L``, charged
``L + 1``), ``mu_C`` (links to the class, ``a_C <= mu_C <= d a_C``, ``sum mu_C = d``); continuous
``rho_Cg`` (ring units of group ``g`` on one-hop members of ``C``: ``rho_Cg <= c'_g a_C`` since a
destination gets at most all of ``c'_g``, and ``sum_C rho_Cg <= c'_g``) and ``v_C`` (units sent
directly, ``v_C <= mu_C`` and ``v_C <= p_C a_C + sum_g rho_Cg``). A unit at one hop costs 2 less
its direct part; ring units elsewhere cost at least 2 (a ring successor is never the source). So
the charge is ``2 R + sum_C (2 p_C a_C - v_C + sum_h h p_C n_Ch + (L + 1) p_C f_C)`` with ``R =
sum_g c'_g``, the level counts bounded as above; summing ``min(D'_t, m_t)`` over a class is at most
``min(sum D', sum m)``, so grouping loses nothing valid. The same count by destination (in-arcs)
is a second lower bound, the larger is used; it takes the same offsets, since a group's candidate
strides hold ``n - q`` with every ``q``, and it is skipped where its classes are the sources'.

The MILP's dual bound (HiGHS' ``mip_dual_bound``) is what is charged, so a stop on its time limit
only weakens the bound; a ``theta`` is ruled out only when the charge exceeds ``n d`` by a relative
:data:`MARGIN`, far above the solver's tolerances, and a solve that does not end with a bound rules
nothing out. The charge grows with ``theta``, so :func:`capacity_bound` bisects below a known bound
and returns the least ``theta`` it ruled out.

Where it bites: a pair whose ring demand at the bound exceeds one link (a size-2 group, whose only
stride is ``n / 2``, carrying more than ``u``) must use a parallel link, costing every server a
neighbour, or send the excess over two hops (``ncf`` n = 64 and 128 with ``d = 8``; measured in
docs/topoopt.md). Large groups spread their ring over many strides and stay within one link a
pair, and there it equals the Moore count.
"""

from __future__ import annotations

import numpy as np

from coopt.problems.topoopt.model import Instance, candidate_strides, mp_matrix, ring_bytes
from coopt.problems.topoopt.routing import quiet_highs

#: Relative excess over the ``n d`` arc capacity a charge needs to rule a ``theta`` out.
MARGIN = 1e-6
#: Relative width at which the bisection on ``theta`` stops (the upper end is returned).
TOLERANCE = 1e-5
#: Time limit of one class MILP (seconds); its dual bound at the limit is still valid.
MILP_SECONDS = 10.0
#: Distance levels charged beyond those the Moore count needs to reach every server.
EXTRA_LEVELS = 8

_COLWISE = 1  # highspy's MatrixFormat.kColwise, as passModel's int
_Signature = tuple[tuple[float, tuple[int, ...], int], ...]


def signatures(matrix: np.ndarray, instance: Instance) -> dict[_Signature, int]:
    """Per source (rows of ``matrix``, model-parallel bytes with a zero diagonal): its destination
    classes ``(p_C bytes, groups reaching them, members)``; returned as signature -> sources."""
    n = instance.servers
    reach: dict[int, list[int]] = {}
    for index, group in enumerate(instance.allreduce):
        for q in candidate_strides(n, group.size):
            reach.setdefault(q % n, []).append(index)
    counted: dict[_Signature, int] = {}
    for s in range(n):
        classes: dict[tuple[float, tuple[int, ...]], int] = {}
        for t in range(n):
            if t != s:
                key = (float(matrix[s, t]), tuple(reach.get((t - s) % n, ())))
                classes[key] = classes.get(key, 0) + 1
        signature = tuple(sorted((p, groups, size) for (p, groups), size in classes.items()))
        counted[signature] = counted.get(signature, 0) + 1
    return counted


class _Milp:
    """Columns and rows for one ``highspy`` MILP (minimisation)."""

    def __init__(self) -> None:
        self.lo: list[float] = []
        self.hi: list[float] = []
        self.cost: list[float] = []
        self.integer: list[int] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []

    def var(self, lo: float, hi: float, cost: float = 0.0, integer: bool = False) -> int:
        self.lo.append(lo)
        self.hi.append(hi)
        self.cost.append(cost)
        self.integer.append(int(integer))
        return len(self.lo) - 1

    def row(self, coefs: dict[int, float], lo: float, hi: float) -> None:
        self.rows.append((coefs, lo, hi))

    def dual_bound(self) -> float | None:
        """A lower bound on the least cost (HiGHS' MIP dual bound), or None if the solve gave none."""
        columns: list[list[tuple[int, float]]] = [[] for _ in self.lo]
        for r, (coefs, _, _) in enumerate(self.rows):
            for c, a in coefs.items():
                if a:
                    columns[c].append((r, a))
        start, index, value = [0], [], []
        for entries in columns:
            index += [r for r, _ in entries]
            value += [a for _, a in entries]
            start.append(len(index))
        highs = quiet_highs()
        highs.setOptionValue("time_limit", MILP_SECONDS)
        highs.setOptionValue("mip_rel_gap", 1e-9)
        highs.setOptionValue("mip_abs_gap", 1e-9)
        row_lo = np.array([r[1] for r in self.rows], float)
        row_hi = np.array([r[2] for r in self.rows], float)
        highs.passModel(len(self.lo), len(self.rows), len(index), _COLWISE, 1, 0.0,
                        np.array(self.cost), np.array(self.lo, float), np.array(self.hi, float),
                        row_lo, row_hi,
                        np.array(start, np.int32), np.array(index, np.int32), np.array(value, float),
                        np.array(self.integer, np.int32))
        highs.run()
        bound = float(highs.getInfo().mip_dual_bound)
        return bound if np.isfinite(bound) else None


def _levels(n: int, d: int, symmetric: bool) -> int:
    """Distance levels the Moore count needs to hold ``n - 1`` servers, plus :data:`EXTRA_LEVELS`."""
    total, width, level = 0, d, 0
    while total < n - 1 and width > 0:
        total += width
        level += 1
        width = width * (d - 1) if symmetric else width * d
    return min(n - 1, level + EXTRA_LEVELS)


def source_charge(signature: _Signature, theta: float, instance: Instance, levels: int) -> float | None:
    """A lower bound on ``Phi_s`` (units) of a source whose destination classes are ``signature``
    (module docstring), or None when the MILP gave no bound."""
    d, u = instance.degree, instance.port_rate
    ring = [theta * ring_bytes(g) / u for g in instance.allreduce]
    m = _Milp()
    demand = [theta * p / u for p, _, _ in signature]
    one_hop, links, direct, deeper, far, rho = [], [], [], [], [], {}
    for c, (_, groups, size) in enumerate(signature):
        one_hop.append(m.var(0, size, 2 * demand[c], True))
        links.append(m.var(0, d, 0.0, True))
        direct.append(m.var(0, d, -1.0))
        deeper.append([m.var(0, size, h * demand[c], True) for h in range(2, levels + 1)])
        far.append(m.var(0, size, (levels + 1) * demand[c], True))
        for g in groups:
            rho[c, g] = m.var(0, ring[g] * size)
    for c, (_, groups, size) in enumerate(signature):
        m.row({one_hop[c]: 1.0, far[c]: 1.0, **{x: 1.0 for x in deeper[c]}}, size, size)
        m.row({links[c]: 1.0, one_hop[c]: -1.0}, 0, np.inf)
        m.row({links[c]: 1.0, one_hop[c]: -float(d)}, -np.inf, 0)
        m.row({direct[c]: 1.0, links[c]: -1.0}, -np.inf, 0)
        for g in groups:
            m.row({rho[c, g]: 1.0, one_hop[c]: -ring[g]}, -np.inf, 0)
        m.row({direct[c]: 1.0, one_hop[c]: -demand[c], **{rho[c, g]: -1.0 for g in groups}}, -np.inf, 0)
    m.row({x: 1.0 for x in links}, d, d)
    for g, units in enumerate(ring):
        share = {rho[key]: 1.0 for key in rho if key[1] == g}
        if share:
            m.row(share, -np.inf, units)
    if levels >= 2:
        second = {deeper[c][0]: 1.0 for c in range(len(signature))}
        second.update({one_hop[c]: -float(d) for c in range(len(signature))})
        m.row(second, -np.inf, -float(d) if instance.symmetric else 0.0)
        growth = float(d - 1 if instance.symmetric else d)
        for h in range(1, levels - 1):  # deeper[c][h] is level h + 2
            row = {deeper[c][h]: 1.0 for c in range(len(signature))}
            row.update({deeper[c][h - 1]: -growth for c in range(len(signature))})
            m.row(row, -np.inf, 0)
    bound = m.dual_bound()
    return None if bound is None else 2 * sum(ring) + bound


def _ruled_out(instance: Instance, theta: float, by_source: dict[_Signature, int],
               by_destination: dict[_Signature, int], levels: int) -> bool:
    """:func:`rules_out` on the counts of :func:`signatures` (by source and by destination)."""
    capacity = instance.servers * instance.degree * (1 + MARGIN)
    sides = (by_source,) if by_destination == by_source else (by_source, by_destination)
    for counted in sides:
        total = 0.0
        for signature, sources in counted.items():
            charge = source_charge(signature, theta, instance, levels)
            if charge is None:
                break
            total += sources * charge
        else:
            if total > capacity:
                return True
    return False


def _counts(instance: Instance) -> tuple[dict[_Signature, int], dict[_Signature, int], int]:
    matrix = mp_matrix(instance)
    np.fill_diagonal(matrix, 0.0)
    levels = _levels(instance.servers, instance.degree, instance.symmetric)
    return signatures(matrix, instance), signatures(matrix.T.copy(), instance), levels


def rules_out(instance: Instance, theta: float) -> bool:
    """Whether the count proves that no topology, split and routing reaches ``theta``."""
    return _ruled_out(instance, theta, *_counts(instance))


def capacity_bound(instance: Instance, upper: float) -> float:
    """The least ``theta <= upper`` the count rules out (``upper`` where it rules none out); with
    ``upper`` an upper bound on ``theta``, the result is one too."""
    by_source, by_destination, levels = _counts(instance)
    if not _ruled_out(instance, upper, by_source, by_destination, levels):
        return upper
    lo, hi = 0.0, upper
    while hi - lo > TOLERANCE * hi:
        mid = 0.5 * (lo + hi)
        if _ruled_out(instance, mid, by_source, by_destination, levels):
            hi = mid
        else:
            lo = mid
    return hi
