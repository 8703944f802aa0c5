"""Circuit allocation (problem ``mixnet``): the authors' regional greedy, our fill-and-swap (a
deficit fill, then local search around the bottleneck; :class:`RegionPlanner`, which the plan's
heuristics reuse), the electrical-only baseline. The exact decomposition over regions and the LP bound are in
:mod:`.exact`.

Every heuristic returns the circuits of every region; :func:`model.solution_of` turns them into
the worst-case throughput and the certificate rates, so a heuristic's value is exactly what its
circuits reach.
"""

from __future__ import annotations

import bisect
import math
from typing import NamedTuple

import numpy as np

from coopt.problem import Solution
from coopt.problems.mixnet.model import Instance, no_circuits, prefix_roots, solution_of

#: A local-search move: pair changes ``(i, j, +1 add / -1 remove)``.
Move = tuple[tuple[int, int, int], ...]

#: The authors' damping: after the c-th circuit of a pair its remaining demand is divided by 100 c.
DAMPING = 100.0


def authors_greedy(symmetric: np.ndarray, alpha: int) -> np.ndarray:
    """The circuit counts ``RegionalTopoManager::regional_topo_reconfig`` computes from one
    region's symmetric demand ``T = D + D^T`` (Gabriel-Yoon/mixnet-htsim,
    ``src/clos/mixnet_topomanager.cpp`` lines 370-417 at commit c94bae3; the recorder symmetrises
    the matrix at lines 51-53, ``Matrix2D::transform2symmetric`` in ``src/clos/tcp.h``).

    Every server starts with ``alpha`` free ports. While some port is free: take the largest
    remaining entry off the diagonal; stop if it is 0; give that pair one circuit (one port at each
    end) and divide its entry by ``100 c`` (``c`` its circuit count now); zero the row and column
    of a server whose ports ran out. The authors sort with ``std::sort`` (``get_sorted_indices``
    in ``tcp.h``), which leaves the order of equal entries unspecified; we take the first in
    row-major order. ``O(alpha R^3)``: one argmax over the matrix per circuit."""
    remaining = np.array(symmetric, dtype=float)
    np.fill_diagonal(remaining, 0.0)
    servers = remaining.shape[0]
    conn = np.zeros((servers, servers), dtype=int)
    free = np.full(servers, alpha)
    while free.sum() > 0:
        flat = int(np.argmax(remaining))
        i, j = divmod(flat, servers)
        if remaining[i, j] == 0:
            break
        conn[i, j] += 1
        conn[j, i] += 1
        free[i] -= 1
        free[j] -= 1
        remaining[i, j] = remaining[j, i] = remaining[i, j] / (conn[i, j] * DAMPING)
        for k in (i, j):
            if free[k] == 0:
                remaining[k, :] = 0.0
                remaining[:, k] = 0.0
    return conn


def mixnet_greedy(instance: Instance, seed: int = 0) -> Solution:
    """MixNet's regional greedy (:func:`authors_greedy`), faithful to the authors' simulator, run per
    region on ``D + D^T`` summed over the region's matrices (their controller plans on one
    recorded matrix; with several scenarios it sees their sum).

    Guarantee: a feasible circuit set (symmetric, at most ``alpha`` ports per server). The 1/(100 c)
    damping almost never gives a pair a second circuit, so on skewed traffic it can fall far below
    the optimum. Running time ``O(alpha R^3)`` per region. Source: MixNet (SIGCOMM 2025);
    Gabriel-Yoon/mixnet-htsim ``mixnet_topomanager.cpp:370-417``."""
    circuits = []
    for region in range(instance.regions):
        total = sum(instance.traffic[k].bits() for k in instance.traffic_of(region))
        circuits.append(authors_greedy(total + total.T, instance.fabric.alpha))
    return solution_of(instance, circuits)


def electrical_only(instance: Instance, seed: int = 0) -> Solution:
    """No circuits: every byte on the electrical fabric, ``theta = B_E / max_i max(row_i, col_i)``.

    A baseline, not a heuristic: the answer to "what do the circuits save?" on this instance.
    ``O(R^2)``."""
    return solution_of(instance, no_circuits(instance))


# -- ours: deficit fill, then swaps on the bottleneck ----------------------------------------


class RegionPlanner:
    """One region's planning: its matrices (scaled so the busiest server side moves 1 unit; a
    circuit carries 1 unit per time unit, the EPS ``b_E``), every server's send and receive root on
    given circuits, the deficit fill and the local searches."""

    #: Local search stops after this many improving moves (it converges far sooner in practice).
    MAX_MOVES = 500

    def __init__(self, matrices: list[np.ndarray], alpha: int, nic_rate: float, eps_rate: float):
        self.unit = max(float(max(m.sum(axis=1).max(), m.sum(axis=0).max())) for m in matrices)
        self.demand = np.stack([m / self.unit for m in matrices])  # (T, R, R)
        self.servers = self.demand.shape[1]
        self.alpha = alpha
        self.b_eps = eps_rate / nic_rate
        self.rate_per_unit = nic_rate / self.unit  # theta in model units -> 1/s
        self._receives = np.ascontiguousarray(np.swapaxes(self.demand, 1, 2))  # row i: column i
        self._cache: dict[tuple[int, tuple[int, ...]], tuple[float, ...]] = {}  # :meth:`cached_roots`
        upper = np.triu_indices(self.servers, 1)
        self._upper = upper, list(zip(*(u.tolist() for u in upper), strict=True))  # :meth:`fill`'s pairs
        self._sides = np.stack([self.demand, self._receives])  # (2, T, R, R): send, receive
        self._none = np.full((2, len(self.demand), self.servers, 1), -np.inf)  # :meth:`_sinking`
        self._low: dict[tuple[int, tuple[int, ...]], float] = {}  # the smallest of each

    # -- evaluation -------------------------------------------------------------------------
    def roots(self, x: np.ndarray) -> np.ndarray:
        """``(T, 2, R)``: every matrix's send (0) and receive (1) root of every server."""
        c = np.asarray(x, dtype=float)
        sends = prefix_roots(self.demand, np.broadcast_to(c, self.demand.shape), self.b_eps)
        receives = prefix_roots(self._receives, np.broadcast_to(c.T, self.demand.shape), self.b_eps)
        return np.stack([sends, receives], axis=1)

    def throughput(self, x: np.ndarray) -> float:
        """The worst case over the matrices of ``x`` (symmetric), by way of the row cache: the same
        roots as :meth:`roots`, row by row, and the rows stay cached for :meth:`improve`."""
        return min(self.cached_lows(list(enumerate(self._state(x)[0]))))

    def port_bound(self) -> float:
        busiest = np.maximum(self.demand.sum(axis=2), self.demand.sum(axis=1)).max(axis=1)
        return float(((self.alpha + self.b_eps) / busiest).min())

    # -- construction -----------------------------------------------------------------------
    def fill(self, target: float, start: np.ndarray | None = None) -> np.ndarray:
        """Deficit fill at a target throughput, from ``start`` (default no circuits): at ``target``
        every side of every server has an EPS deficit ``(sum_j (target d_ij - x_ij)^+ - b_E)^+``,
        and a circuit on a pair removes deficit on the four sides it serves (capped by each). In
        rounds, circuits go to pairs by decreasing removal, at most one per server per round (so
        each removal is exact when its circuit is placed), until no pair with free ports at both
        ends removes any."""
        servers = self.servers
        x = np.zeros((servers, servers), dtype=int) if start is None else start.copy()
        free = (self.alpha - x.sum(axis=1)).tolist()
        want = target * self.demand
        upper, pairs = self._upper
        while True:
            spill = np.maximum(want - x, 0.0)
            short_out = np.maximum(spill.sum(axis=2) - self.b_eps, 0.0)[:, :, None]
            short_in = np.maximum(spill.sum(axis=1) - self.b_eps, 0.0)[:, None, :]
            relief = np.minimum(spill, 1.0)
            gain = (np.minimum(short_out, relief) + np.minimum(short_in, relief)).sum(axis=0)
            gain = (gain + gain.T)[upper]
            full = np.array(free) == 0
            gain[full[upper[0]] | full[upper[1]]] = 0.0
            order = np.argsort(-gain, kind="stable")[: int((gain > 1e-12).sum())].tolist()
            placed = [False] * servers
            for i, j in map(pairs.__getitem__, order):
                if placed[i] or placed[j]:
                    continue
                x[i, j] += 1
                x[j, i] += 1
                free[i] -= 1
                free[j] -= 1
                placed[i] = placed[j] = True
            if not any(placed):
                return x

    # -- local search -----------------------------------------------------------------------
    #
    # A move changes the rows of at most four servers, and the same rows recur from move to move
    # and round to round: every server's roots are cached by its circuit row, and each round
    # computes the rows it has not seen in one batch (the per-call overhead of numpy on a region's
    # small arrays, not the arithmetic, is the cost in a profile). Rows are tuples.

    def _compute(self, keys: list[tuple[int, tuple[int, ...]]]) -> None:
        """Cache the roots (and their smallest) of the keys not cached yet, in one
        :func:`model.prefix_roots` call."""
        cache = self._cache
        missing = list({key for key in keys if key not in cache})
        if missing:
            caps = np.array([row for _, row in missing], dtype=float)  # (K, R)
            sides = self._sides[:, :, [server for server, _ in missing]]  # (2, T, K, R)
            roots = prefix_roots(sides, np.broadcast_to(caps, sides.shape), self.b_eps).min(axis=0).T  # K, T
            low = self._low
            for key, found, smallest in zip(missing, roots.tolist(), roots.min(axis=1).tolist(), strict=True):
                cache[key] = tuple(found)
                low[key] = smallest

    def cached_roots(self, keys: list[tuple[int, tuple[int, ...]]]) -> list[tuple[float, ...]]:
        """Per ``(server, row)`` key, every matrix's smallest root (send or receive side) of
        ``server`` when its circuits are ``row``; the keys not cached yet go to one
        :func:`model.prefix_roots` call. ``O(T R log R)`` per new key, ``O(R)`` (its hash) per
        cached one."""
        self._compute(keys)
        cache = self._cache
        return [cache[key] for key in keys]

    def cached_lows(self, keys: list[tuple[int, tuple[int, ...]]]) -> list[float]:
        """Per key, the smallest of :meth:`cached_roots` (the server's worst case over the
        matrices), from the same cache."""
        self._compute(keys)
        low = self._low
        return [low[key] for key in keys]

    def lifting_trades(self, rows: list[tuple[int, ...]], free: list[int], b: int, theta: float,
                       which: list[int]) -> list[tuple[int, int]]:
        """The trades ``(m, u)`` of server ``b`` (drop a circuit to ``m``, or nothing when
        ``m = -1`` and ``b`` has a free port; add one to ``u``) after which ``b``'s smallest root
        on the matrices ``which`` exceeds ``theta (1 + 1e-9)``; by ``m`` (as listed), then ``u``."""
        row_b = rows[b]
        losses = [m for m in range(self.servers) if row_b[m] > 0] + ([-1] if free[b] > 0 else [])
        # b's root on a side exceeds theta' = theta (1 + 1e-9) iff its spill there,
        # f(theta') = sum_j (theta' d_j - c_j)^+, stays below b_E (f is continuous and rises)
        limit = theta * (1 + 1e-9)
        d = np.concatenate([self.demand[which, b], self._receives[which, b]])  # (2 |which|, R)
        c = np.asarray(row_b, dtype=float)
        spill = np.maximum(limit * d - c, 0.0)
        gain = spill - np.maximum(limit * d - c - 1.0, 0.0)  # one more circuit to u
        loss = np.maximum(limit * d - c + 1.0, 0.0) - spill  # one fewer to m
        lost = [m for m in losses if m >= 0]
        dropped = np.concatenate([loss[:, lost], np.zeros((len(d), len(losses) - len(lost)))], axis=1)
        after = spill.sum(axis=1)[:, None, None] - gain[:, None, :] + dropped[:, :, None]
        lifted = (after < self.b_eps).all(axis=0)  # (losses, R)
        kept = [(m, u) for n, m in enumerate(losses) for u in np.flatnonzero(lifted[n]).tolist()
                if u != b and u != m]
        return kept

    def _sinking(self, rows: list[tuple[int, ...]], floor: float) -> bytes:
        """At ``(a (R + 1) + x) (R + 1) + y``, nonzero where server ``a``'s row with one circuit
        fewer to ``x`` and one more to ``y`` (index ``R``: none) has its root on some side of some
        matrix certainly below ``floor``.

        A side's spill ``f(theta) = sum_j (theta d_j - c_j)^+`` rises with theta and the root is
        where it reaches ``b_E``, so the root is below a level iff the spill there exceeds
        ``b_E``. At ``floor (1 - 1e-9)`` (far more than rounding below ``floor``) the spill of the
        changed row is the current one plus what the lost circuit carried there minus what the
        added one carries (``f`` is a sum over the entries), for every ``a, x, y`` at once.
        ``O(T R^3)`` in one numpy pass."""
        level = floor * (1 - 1e-9)
        excess = level * self._sides - np.array(rows, dtype=float)  # (2, T, R, R)
        excess = np.concatenate([excess, self._none], axis=-1)  # y or x = R: -inf, no change
        spill = np.maximum(excess, 0.0)
        gain = spill - np.maximum(excess - 1.0, 0.0)  # one more circuit to y
        loss = np.maximum(excess + 1.0, 0.0) - spill  # one fewer to x
        after = spill.sum(axis=-1)[..., None, None] + loss[..., :, None] - gain[..., None, :]
        return (after > self.b_eps).any(axis=(0, 1)).tobytes()

    def _neighbourhood(self, rows: list[tuple[int, ...]], free: list[int], b: int, theta: float,
                       which: list[int], floor: float | None = None
                       ) -> list[tuple[Move, list[tuple[int, tuple[int, ...]]]]]:
        """Candidate moves around the bottleneck server ``b``, each a tuple of pair changes
        (i, j, +1 add / -1 remove) with the ``(server, new row)`` of every server it touches (in
        the order they first appear in the move). Server ``b`` trades partner ``m`` for ``u`` (or,
        with a free port, just gains ``u``); only the trades that lift ``b``'s own smallest root on
        the matrices ``which`` above ``theta`` are expanded (:meth:`lifting_trades`), into:
        re-point (u has a free port: remove b-m, add b-u, and re-attach m to a server v with a
        free port, or not), swap (remove b-m and u-w, add b-u and m-w), steal (b has a free port:
        remove u-w, add b-u, and re-attach w to v, or not) and add (both free: add b-u). Listed
        by type, then trade, then the third server.

        With a ``floor``, the moves that leave a touched server other than ``b`` certainly below
        it on some matrix (:meth:`_sinking`) are left out before their rows are built: a move's
        worst case is at most every touched server's, so each of them is worse than ``floor``.
        (In one profile, 160 of 525 moves at ``floor = theta (1 - 1e-12)`` were kept.)

        Every move keeps every port budget, by construction: a removal takes a circuit that is
        there (b-m with ``x_bm > 0``, u-w with ``x_uw > 0``, w not b or m), and a server's count
        grows only where it has a free port (u in a re-point or an add, v, b when ``m = -1``, and
        u twice only with two free ports); every other touched server loses one circuit and gains
        one."""
        kept = self.lifting_trades(rows, free, b, theta, which)
        n = self.servers
        sink = bytes(n * (n + 1) ** 2) if floor is None or not kept else self._sinking(rows, floor)
        at = _Around(rows, free, b, n, sink, [v for v in range(n) if free[v] > 0 and v != b],
                     {u: [w for w in range(n) if rows[u][w] > 0 and w != b] for _, u in kept})
        trades = [(m, u, at.changed(b, (m, -1), (u, 1)) if m >= 0 else at.changed(b, (u, 1)))
                  for m, u in kept]
        return _repoints(at, trades) + _swaps(at, trades) + _steals(at, trades)

    @staticmethod
    def _evaluate(touched: list[int], roots: list[tuple[float, ...]], ranked: list[list[int]],
                  current: list[tuple[float, ...]]) -> list[float]:
        """Every matrix's throughput after a move whose touched servers get ``roots``. Exact: the
        other servers keep their roots ``current``, and the smallest of those per matrix is the
        first untouched server of ``ranked[t]`` (servers by root)."""
        thetas = []
        for t, order in enumerate(ranked):
            theta = min(found[t] for found in roots)
            for s in order:
                if s not in touched:
                    if current[s][t] < theta:
                        theta = current[s][t]
                    break
            thetas.append(theta)
        return thetas

    @staticmethod
    def _apply(rows: list[tuple[int, ...]], free: list[int], move: tuple[tuple[int, int, int], ...]) -> None:
        for i, j, step in move:
            for a, c in ((i, j), (j, i)):
                row = list(rows[a])
                row[c] += step
                rows[a] = tuple(row)
            free[i] -= step
            free[j] -= step

    def _state(self, x: np.ndarray) -> tuple[list[tuple[int, ...]], list[int]]:
        rows = [tuple(r) for r in np.asarray(x, dtype=int).tolist()]
        return rows, [self.alpha - sum(r) for r in rows]

    def _candidates(self, listed: list[tuple[Move, list[tuple[int, tuple[int, ...]]]]]
                    ) -> list[tuple[Move, list[int], list[tuple[float, ...]]]]:
        """The moves of :meth:`_neighbourhood`, each with its touched servers and their new roots
        (computed in one batch)."""
        roots = iter(self.cached_roots([key for _, keys in listed for key in keys]))
        return [(move, [a for a, _ in keys], [next(roots) for _ in keys]) for move, keys in listed]

    def _current(self, rows: list[tuple[int, ...]]) -> tuple[list[tuple[float, ...]], list[list[int]]]:
        """Every server's roots and, per matrix, the servers by increasing root (ties: lower
        index), as many as a move can touch plus one."""
        current = self.cached_roots(list(enumerate(rows)))
        ranked = [sorted(range(self.servers), key=lambda s, t=t: (current[s][t], s))[:5]
                  for t in range(len(self.demand))]
        return current, ranked

    def improve(self, x: np.ndarray) -> np.ndarray:
        """Best-improvement local search over :meth:`_neighbourhood` around the worst-case
        bottleneck: a move is taken when it raises the worst-case throughput, or keeps it and
        lowers the number of servers at it (so that ties among bottlenecks are worked off one by
        one), the first listed among the best.

        A move's worst case is the smallest of its touched servers' new worst cases
        (:meth:`cached_lows`) and the smallest untouched server's: the minimum over the matrices
        of :meth:`_evaluate`, taken in the other order, so only one number per row is needed."""
        rows, free = self._state(x)
        which = list(range(len(self.demand)))
        for _ in range(self.MAX_MOVES):
            per_server = self.cached_lows(list(enumerate(rows)))
            theta = min(per_server)
            b = per_server.index(theta)
            levels = sorted(per_server)
            tied = bisect.bisect_right(levels, theta * (1 + 1e-9))
            order = sorted(range(self.servers), key=per_server.__getitem__)[:5]  # stable: ties by index
            rise, floor = theta * (1 + 1e-9), theta * (1 - 1e-12)
            listed = self._neighbourhood(rows, free, b, theta, which, floor)
            lows = iter(self.cached_lows([key for _, keys in listed for key in keys]))
            best, best_key = None, -math.inf
            for move, keys in listed:
                found = [next(lows) for _ in keys]
                touched = [a for a, _ in keys]
                theta_new = min(found)
                for s in order:
                    if s not in touched:
                        theta_new = min(theta_new, per_server[s])
                        break
                limit = theta_new * (1 + 1e-9)
                ties = (bisect.bisect_right(levels, limit) + sum(low <= limit for low in found)
                        - sum(per_server[a] <= limit for a in touched))
                if not (theta_new > rise or (theta_new >= floor and ties < tied)):
                    continue
                key = theta_new - 1e-12 * ties
                if key > best_key:
                    best, best_key = move, key
            if best is None:
                break
            self._apply(rows, free, best)
        return np.array(rows, dtype=int)

    def improve_sum(self, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Best-improvement local search for ``min sum_t w_t / theta_t(x)`` (a stretch of layers
        on one circuit set, ``w_t`` their all-to-all counts): the moves around every server that is
        some matrix's bottleneck (lifting it above the lowest throughput of those matrices), taken
        while the weighted sum of times falls."""
        rows, free = self._state(x)
        weights = [float(w) for w in weights]
        matrices = range(len(self.demand))
        for _ in range(self.MAX_MOVES):
            current, ranked = self._current(rows)
            thetas = [current[order[0]][t] for t, order in enumerate(ranked)]
            total = sum(w / theta for w, theta in zip(weights, thetas, strict=True))
            bottlenecks = [order[0] for order in ranked]
            moves = []
            for b in sorted(set(bottlenecks)):  # one move set per server that is some matrix's bottleneck
                which = [t for t in matrices if bottlenecks[t] == b]
                moves += self._neighbourhood(rows, free, b, min(thetas[t] for t in which), which)
            best, best_total = None, total * (1 - 1e-12)
            for move, touched, roots in self._candidates(moves):
                after = self._evaluate(touched, roots, ranked, current)
                moved = sum(w / theta for w, theta in zip(weights, after, strict=True))
                if moved < best_total:
                    best, best_total = move, moved
            if best is None:
                break
            self._apply(rows, free, best)
        return np.array(rows, dtype=int)

    def plan(self) -> np.ndarray:
        """The better deficit fill of two targets (100 and 85 % of the port bound), topped up at
        the port bound (a circuit never lowers the throughput, and spare ones give the swaps
        room), improved by :meth:`improve` and topped up again."""
        bound = self.port_bound()
        best = max((self.fill(bound * share) for share in (1.0, 0.85)), key=self.throughput)
        return self.fill(bound, self.improve(self.fill(bound, best)))


#: A move with the ``(server, new row)`` of every server it touches.
Listed = tuple[Move, list[tuple[int, tuple[int, ...]]]]
#: A trade of the bottleneck ``b``: drop partner ``m`` (-1: none), add ``u``, and ``b``'s new row.
Trade = tuple[int, int, tuple[int, tuple[int, ...]]]


class _Around(NamedTuple):
    """What the moves around one bottleneck server ``b`` are built from
    (:meth:`RegionPlanner._neighbourhood`): the rows and free ports, the sinking table (index
    ``(a k + x) k + y`` with ``k = n + 1``: ``a``'s row less ``x`` and plus ``y``, ``n`` for none, is
    certainly below the floor), the servers with a free port other than ``b``, and each added
    partner ``u``'s circuits to servers other than ``b``."""

    rows: list[tuple[int, ...]]
    free: list[int]
    b: int
    n: int
    sink: bytes
    spare: list[int]
    links: dict[int, list[int]]

    def changed(self, a: int, *steps: tuple[int, int]) -> tuple[int, tuple[int, ...]]:
        row = list(self.rows[a])
        for c, step in steps:
            row[c] += step
        return a, tuple(row)


def _repoints(at: _Around, trades: list[Trade]) -> list[Listed]:
    """``b`` trades ``m`` for ``u`` (or just gains ``u``), ``u`` having a free port; then the same
    with ``m`` re-attached to a server ``v`` with a free port."""
    b, n, free, sink, changed = at.b, at.n, at.free, at.sink, at.changed
    k = n + 1
    found: list[Listed] = []
    for m, u, kb in trades:
        if free[u] > 0 and not sink[(u * k + n) * k + b]:
            if m < 0:
                found.append((((b, u, 1),), [kb, changed(u, (b, 1))]))
            elif not sink[(m * k + b) * k + n]:
                found.append((((b, m, -1), (b, u, 1)), [kb, changed(m, (b, -1)), changed(u, (b, 1))]))
    for m, u, kb in trades:
        if m >= 0 and free[u] > 0:
            ku = changed(u, (b, 1))
            for v in at.spare:
                if v == m or sink[(m * k + b) * k + v]:
                    continue
                if v != u:
                    if not (sink[(u * k + n) * k + b] or sink[(v * k + n) * k + m]):
                        found.append((((b, m, -1), (b, u, 1), (m, v, 1)),
                                      [kb, changed(m, (b, -1), (v, 1)), ku, changed(v, (m, 1))]))
                elif free[u] > 1:
                    found.append((((b, m, -1), (b, u, 1), (m, u, 1)),
                                  [kb, changed(m, (b, -1), (u, 1)), changed(u, (b, 1), (m, 1))]))
    return found


def _swaps(at: _Around, trades: list[Trade]) -> list[Listed]:
    """``b`` trades ``m`` for ``u``, ``u`` drops ``w`` and ``m`` takes it."""
    b, sink, changed = at.b, at.sink, at.changed
    k = at.n + 1
    found: list[Listed] = []
    for m, u, kb in trades:
        if m >= 0:
            found += [(((b, m, -1), (b, u, 1), (u, w, -1), (m, w, 1)),
                       [kb, changed(m, (b, -1), (w, 1)), changed(u, (b, 1), (w, -1)),
                        changed(w, (u, -1), (m, 1))]) for w in at.links[u]
                      if w != m and not (sink[(m * k + b) * k + w] or sink[(u * k + w) * k + b]
                                         or sink[(w * k + u) * k + m])]
    return found


def _steals(at: _Around, trades: list[Trade]) -> list[Listed]:
    """``b`` uses a free port: ``u`` drops ``w``, and ``w`` stays free; then the same with ``w``
    re-attached to a server ``v`` with a free port."""
    b, n, sink, changed = at.b, at.n, at.sink, at.changed
    k = n + 1
    found: list[Listed] = []
    for m, u, kb in trades:
        if m < 0:
            found += [(((b, u, 1), (u, w, -1)), [kb, changed(u, (b, 1), (w, -1)), changed(w, (u, -1))])
                      for w in at.links[u] if not (sink[(u * k + w) * k + b] or sink[(w * k + u) * k + n])]
    for m, u, kb in trades:
        if m < 0:
            for w in at.links[u]:
                if sink[(u * k + w) * k + b]:
                    continue
                ku = changed(u, (b, 1), (w, -1))
                found += [(((b, u, 1), (u, w, -1), (w, v, 1)),
                           [kb, ku, changed(w, (u, -1), (v, 1)), changed(v, (w, 1))])
                          for v in at.spare if v != u and v != w
                          and not (sink[(w * k + u) * k + v] or sink[(v * k + n) * k + w])]
    return found


def fill_and_swap(instance: Instance, seed: int = 0) -> Solution:
    """Ours: deficit fill at a target throughput, then swaps around the bottleneck, per region.

    Construction (:meth:`RegionPlanner.fill`): at a target ``theta`` each server side has an EPS
    deficit; circuits go one by one to the pair whose circuit removes the most deficit, with no
    damping (a hot pair gets as many circuits as its spill asks). Two targets (85 and 100 % of the
    port bound) are tried and the better kept, then free ports are topped up. Improvement
    (:meth:`RegionPlanner.improve`): moves around the bottleneck server that keep every port
    budget (swap two circuits' ends, re-point one and re-attach the partner it dropped, take a
    port from a neighbour, add one), each evaluated exactly on the rows it changes, best first,
    until none raises the worst case or unties a bottleneck.

    Guarantee: feasible; at least the better of its two fills. Running time per region of ``R``
    servers and ``T`` matrices: ``O(alpha R^3 T)`` per fill; each improving move screens the
    ``O(alpha R)`` trades of the bottleneck in ``O(T)`` each (two terms of its spill change),
    leaves out the moves that sink a touched server below the current level (one ``O(T R^3)``
    numpy pass) and evaluates at most ``O(alpha R^2)`` moves in ``O(R)`` each, plus
    ``O(T R log R)`` per circuit row not seen before (rows are cached). Source: ours."""
    f = instance.fabric
    circuits = []
    for region in range(instance.regions):
        matrices = [instance.traffic[k].bits() for k in instance.traffic_of(region)]
        circuits.append(RegionPlanner(matrices, f.alpha, f.nic_rate, f.eps_rate).plan())
    return solution_of(instance, circuits)


HEURISTICS = {
    "mixnet_greedy": mixnet_greedy,
    "fill_and_swap": fill_and_swap,
    "electrical_only": electrical_only,
}
