"""Circuit allocation (problem ``mixnet``): the authors' regional greedy, our fill-and-swap (a
deficit fill, then local search around the bottleneck; :class:`RegionPlanner`, which the plan's
heuristics reuse), the electrical-only baseline, the exact decomposition over regions and the LP
bound.

Every heuristic returns the circuits of every region; :func:`model.solution_of` turns them into
the worst-case throughput and the certificate rates, so a heuristic's value is exactly what its
circuits reach.
"""

from __future__ import annotations

import time

import numpy as np
import pyomo.environ as pyo

from coopt.formulations.mixnet import milp
from coopt.formulations.mixnet.model import Instance, no_circuits, prefix_roots, solution_of
from coopt.problem import ExactOutcome, Solution, SolveOptions
from coopt.solvers.highs import solve_model

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

    # -- evaluation -------------------------------------------------------------------------
    def roots(self, x: np.ndarray) -> np.ndarray:
        """``(T, 2, R)``: every matrix's send (0) and receive (1) root of every server."""
        c = np.asarray(x, dtype=float)
        sends = prefix_roots(self.demand, np.broadcast_to(c, self.demand.shape), self.b_eps)
        flipped = np.swapaxes(self.demand, 1, 2)
        receives = prefix_roots(flipped, np.broadcast_to(c.T, self.demand.shape), self.b_eps)
        return np.stack([sends, receives], axis=1)

    def throughput(self, x: np.ndarray) -> float:
        return float(self.roots(x).min())

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
        free = self.alpha - x.sum(axis=1)
        want = target * self.demand
        upper = np.triu_indices(servers, 1)
        while True:
            spill = np.maximum(want - x, 0.0)
            short_out = np.maximum(spill.sum(axis=2) - self.b_eps, 0.0)[:, :, None]
            short_in = np.maximum(spill.sum(axis=1) - self.b_eps, 0.0)[:, None, :]
            relief = np.minimum(spill, 1.0)
            gain = (np.minimum(short_out, relief) + np.minimum(short_in, relief)).sum(axis=0)
            gain = (gain + gain.T)[upper]
            gain[(free[upper[0]] == 0) | (free[upper[1]] == 0)] = 0.0
            order = np.argsort(-gain, kind="stable")
            placed = np.zeros(servers, dtype=bool)
            for k in order[: int((gain > 1e-12).sum())]:
                i, j = int(upper[0][k]), int(upper[1][k])
                if placed[i] or placed[j]:
                    continue
                x[i, j] += 1
                x[j, i] += 1
                free[i] -= 1
                free[j] -= 1
                placed[i] = placed[j] = True
            if not placed.any():
                return x

    # -- local search -----------------------------------------------------------------------
    def _server_root(self, rows: np.ndarray, server: int, which: list[int]) -> np.ndarray:
        """The smallest root of ``server`` (over the matrices ``which``, both sides) for each of a
        stack of its possible circuit rows ``rows`` ``(M, R)``."""
        cap = rows.astype(float)
        out = np.full(len(rows), np.inf)
        for t in which:
            d = self.demand[t]
            send = prefix_roots(np.broadcast_to(d[server], cap.shape), cap, self.b_eps)
            receive = prefix_roots(np.broadcast_to(d[:, server], cap.shape), cap, self.b_eps)
            out = np.minimum(out, np.minimum(send, receive))
        return out

    def _moves(self, x: np.ndarray, b: int, theta: float, which: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Candidate moves around the bottleneck server ``b`` that keep every port budget, as
        ``(M, 4, 3)`` rows of (i, j, +1 add / -1 remove / 0 nothing) and the ``(M, 4)`` servers
        each touches. Server ``b`` trades partner
        ``m`` for ``u`` (or, with a free port, just gains ``u``); only the trades that lift ``b``'s
        own smallest root on the matrices ``which`` above ``theta`` are expanded, into: swap
        (remove b-m and u-w, add b-u and m-w), re-point (u has a free port: remove b-m, add b-u,
        and re-attach m to a server with a free port, or not), steal (b has a free port: remove
        u-w, add b-u, and re-attach w, or not) and add (both free: add b-u)."""
        free = self.alpha - x.sum(axis=1)
        partners = [int(m) for m in np.flatnonzero(x[b] > 0)]
        losses = partners + ([-1] if free[b] > 0 else [])
        trades = [(m, u) for m in losses for u in range(self.servers) if u not in (b, m)]
        none = np.zeros((0, 4, 3), dtype=int), np.zeros((0, 4), dtype=int)
        if not trades:
            return none
        rows = np.broadcast_to(x[b], (len(trades), self.servers)).copy()
        for n, (m, u) in enumerate(trades):
            if m >= 0:
                rows[n, m] -= 1
            rows[n, u] += 1
        lifted = self._server_root(rows, b, which) > theta * (1 + 1e-9)
        kept = np.array(trades)[lifted]
        if len(kept) == 0:
            return none
        m, u = kept[:, 0], kept[:, 1]
        servers = np.arange(self.servers)
        lost = m >= 0
        m_or_b = np.where(lost, m, b)  # a padding pair (b, b) with step 0 where b loses nothing
        blocks, touched = [], []

        def block(rows: list[tuple[np.ndarray, np.ndarray, int | np.ndarray]],
                  ends: list[np.ndarray]) -> None:
            """Stack one move type: each entry of ``rows`` gives the (i, j, step) arrays of one
            pair change, ``ends`` the (at most four) servers the type touches."""
            count = len(rows[0][0])
            if count == 0:
                return
            out = np.zeros((count, 4, 3), dtype=int)
            for k, (i, j, step) in enumerate(rows):
                out[:, k, 0], out[:, k, 1], out[:, k, 2] = i, j, step
            blocks.append(out)
            padded = (ends + ends[-1:] * 4)[:4]
            touched.append(np.stack([np.broadcast_to(e, (count,)) for e in padded], axis=1))

        drop = lost.astype(int) * -1  # step of the (b, m) change: -1, or 0 when b used a free port
        # b trades m for u (or just gains u), u having a free port
        sel = free[u] > 0
        block([(np.full(sel.sum(), b), m_or_b[sel], drop[sel]), (np.full(sel.sum(), b), u[sel], 1)],
              [np.full(sel.sum(), b), m_or_b[sel], u[sel]])
        # ... and m re-attaches to a server v with a free port
        v_ok = ((free[None, :] > 0) & (servers[None, :] != b) & (servers[None, :] != m[:, None])
                & ((servers[None, :] != u[:, None]) | (free[u] > 1)[:, None])
                & (lost & (free[u] > 0))[:, None])
        k, v = np.nonzero(v_ok)
        block([(np.full(len(k), b), m[k], -1), (np.full(len(k), b), u[k], 1), (m[k], v, 1)],
              [np.full(len(k), b), m[k], u[k], v])
        # u is full: it drops w, and m takes w (a swap) or, when b used a free port, w stays free
        w_ok = (x[u] > 0) & (servers[None, :] != b) & (servers[None, :] != m[:, None])
        k, w = np.nonzero(w_ok & lost[:, None])
        block([(np.full(len(k), b), m[k], -1), (np.full(len(k), b), u[k], 1), (u[k], w, -1), (m[k], w, 1)],
              [np.full(len(k), b), m[k], u[k], w])
        k, w = np.nonzero(w_ok & ~lost[:, None])
        block([(np.full(len(k), b), u[k], 1), (u[k], w, -1)], [np.full(len(k), b), u[k], w])
        # ... or w re-attaches to a server v with a free port
        v = servers[None, None, :]
        vw_ok = (w_ok & ~lost[:, None])[:, :, None] & (free[None, None, :] > 0) & (v != b)
        vw_ok &= (v != u[:, None, None]) & (v != servers[None, :, None])
        k, w, v = np.nonzero(vw_ok)
        block([(np.full(len(k), b), u[k], 1), (u[k], w, -1), (w, v, 1)], [np.full(len(k), b), u[k], w, v])
        return (np.concatenate(blocks), np.concatenate(touched)) if blocks else none

    def _evaluate(self, x: np.ndarray, moves: np.ndarray, touched: np.ndarray,
                  roots: np.ndarray) -> tuple[np.ndarray, ...]:
        """For each move: whether it keeps the port budgets, every matrix's new throughput
        ``(M, T)`` and every server's new smallest root ``(M, R)``; exact, recomputing only the rows
        of the (at most four) servers the move touches."""
        count, slots = touched.shape
        # each touched server's row changes at the other end of every pair change it is part of
        i, j, step = (moves[:, None, :, c] for c in range(3))  # (M, 1, 4)
        server = touched[:, :, None]  # (M, 4, 1)
        ends = np.concatenate([np.where(i == server, j, 0), np.where(j == server, i, 0)], axis=2)
        steps = np.concatenate([np.where(i == server, step, 0), np.where(j == server, step, 0)], axis=2)
        delta = np.zeros((count, slots, self.servers), dtype=int)
        np.add.at(delta, (np.arange(count)[:, None, None], np.arange(slots)[None, :, None], ends), steps)
        new_x = x[touched] + delta  # (M, 4, R): each touched server's circuit row after the move
        valid = ~(new_x < 0).any(axis=(1, 2)) & (new_x.sum(axis=2) <= self.alpha).all(axis=1)
        cap = new_x.astype(float)
        per_matrix = roots.min(axis=1)  # (T, R)
        theta = np.empty((count, len(self.demand)))
        server_new = np.broadcast_to(per_matrix.min(axis=0), (count, self.servers)).copy()
        changed_all = np.full((count, slots), np.inf)
        for t, d in enumerate(self.demand):
            changed = np.minimum(prefix_roots(d[touched], cap, self.b_eps),
                                 prefix_roots(d.T[touched], cap, self.b_eps))
            untouched = np.broadcast_to(per_matrix[t], (count, self.servers)).copy()
            np.put_along_axis(untouched, touched, np.inf, axis=1)
            theta[:, t] = np.minimum(untouched.min(axis=1), changed.min(axis=1))
            changed_all = np.minimum(changed_all, changed)
        np.put_along_axis(server_new, touched, changed_all, axis=1)
        return valid, theta, server_new

    @staticmethod
    def _apply(x: np.ndarray, move: np.ndarray) -> None:
        for i, j, step in move:
            if step:
                x[i, j] += step
                x[j, i] += step

    def improve(self, x: np.ndarray) -> np.ndarray:
        """Best-improvement local search over :meth:`_moves` around the worst-case bottleneck: a
        move is taken when it raises the worst-case throughput, or keeps it and lowers the number
        of servers at it (so that ties among bottlenecks are worked off one by one)."""
        x = x.copy()
        which = list(range(len(self.demand)))
        for _ in range(self.MAX_MOVES):
            roots = self.roots(x)
            per_server = roots.min(axis=(0, 1))
            theta = float(per_server.min())
            tied = int((per_server <= theta * (1 + 1e-9)).sum())
            moves, touched = self._moves(x, int(np.argmin(per_server)), theta, which)
            if len(moves) == 0:
                return x
            valid, thetas, server_new = self._evaluate(x, moves, touched, roots)
            theta_new = thetas.min(axis=1)
            ties_new = (server_new <= theta_new[:, None] * (1 + 1e-9)).sum(axis=1)
            better = valid & ((theta_new > theta * (1 + 1e-9))
                              | ((theta_new >= theta * (1 - 1e-12)) & (ties_new < tied)))
            if not better.any():
                return x
            self._apply(x, moves[int(np.argmax(np.where(better, theta_new - 1e-12 * ties_new, -np.inf)))])
        return x

    def improve_sum(self, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Best-improvement local search for ``min sum_t w_t / theta_t(x)`` (a stretch of layers
        on one circuit set, ``w_t`` their all-to-all counts): the moves around every server that is
        some matrix's bottleneck (lifting it above the lowest throughput of those matrices), taken
        while the weighted sum of times falls."""
        x = x.copy()
        weights = np.asarray(weights, dtype=float)
        for _ in range(self.MAX_MOVES):
            roots = self.roots(x)
            per_matrix = roots.min(axis=1)  # (T, R)
            thetas = per_matrix.min(axis=1)
            total = float((weights / thetas).sum())
            bottlenecks = per_matrix.argmin(axis=1)
            found = []
            for b in np.unique(bottlenecks):  # one move set per server that is some matrix's bottleneck
                which = [int(t) for t in np.flatnonzero(bottlenecks == b)]
                found.append(self._moves(x, int(b), float(thetas[which].min()), which))
            moves = np.concatenate([f[0] for f in found])
            if len(moves) == 0:
                return x
            valid, thetas_new, _ = self._evaluate(x, moves, np.concatenate([f[1] for f in found]), roots)
            totals = np.where(valid, (weights / thetas_new).sum(axis=1), np.inf)
            best = int(np.argmin(totals))
            if not totals[best] < total * (1 - 1e-12):
                return x
            self._apply(x, moves[best])
        return x

    def plan(self) -> np.ndarray:
        """The better deficit fill of two targets (100 and 85 % of the port bound), topped up at
        the port bound (a circuit never lowers the throughput, and spare ones give the swaps
        room), improved by :meth:`improve` and topped up again."""
        bound = self.port_bound()
        best = max((self.fill(bound * share) for share in (1.0, 0.85)), key=self.throughput)
        return self.fill(bound, self.improve(self.fill(bound, best)))


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
    servers and ``T`` matrices: ``O(alpha R^3 T)`` per fill; each improving move screens
    ``O(alpha R)`` trades of the bottleneck in ``O(T R log R)`` each and evaluates at most
    ``O(alpha R^2)`` moves in ``O(T R log R)`` each. Source: ours (issue 15)."""
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


# -- exact by decomposition over regions, and the LP bound ---------------------------------


def exact(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """The M1 MILP of each region alone, the worst region's throughput.

    Exact: regions share no decision (ports and circuits are per region), so the maximum over all
    circuit sets of ``min_r theta_r`` is ``min_r`` of each region's own maximum. Every region's
    circuits are that region's optimum. The time limit is shared by the regions, in order."""
    start = time.perf_counter()
    circuits, bound, status = [], np.inf, "optimal"
    for region in range(instance.regions):
        part = instance.only_region(region)
        elapsed = time.perf_counter() - start
        left = None if options.time_limit is None else max(0.0, options.time_limit - elapsed)
        if left == 0.0:
            return ExactOutcome(None, "time_limit")
        model = milp.build(part)
        result = solve_model(model, SolveOptions(left, options.gap, options.threads, options.seed))
        if result.objective is None:
            return ExactOutcome(None, "time_limit" if result.status == "time_limit" else result.status)
        circuits.append(milp.circuits_from(model, part)[0])
        bound = min(bound, result.bound if result.bound is not None else np.inf)
        if result.status != "optimal":
            status = "feasible"
    solution = solution_of(instance, circuits)
    return ExactOutcome(solution, status, float(bound) if np.isfinite(bound) else None)


def lp_bound(instance: Instance, options: SolveOptions) -> float:
    """The LP relaxation of the M1 MILP, region by region (``min_r`` of each region's relaxation,
    which is the relaxation of the whole model): an upper bound on the worst-case throughput at
    any size, without branching."""
    best = np.inf
    for region in range(instance.regions):
        model = milp.build(instance.only_region(region), limit=None, warm=False)
        pyo.TransformationFactory("core.relax_integer_vars").apply_to(model)
        result = solve_model(model, options)
        if result.status != "optimal" or result.objective is None:
            raise RuntimeError(f"the LP relaxation of region {region} ended {result.status}")
        best = min(best, result.objective)
    return float(best)

