"""Energetic lower bounds on the ``chase`` makespan: heads and tails that count the work before and
after a task, and energetic reasoning over time windows on a weighted pool of devices.

Weighted capacity
-----------------
Give every device ``p`` a weight ``w_p >= 0`` and let ``W = sum_p w_p``. A device runs at most one
task at a time, so at every instant the running tasks carry at most ``W`` weight in total: the
devices form one cumulative resource of capacity ``W`` on which task ``v`` on ``p`` needs
``w_p`` for ``t_v(p)``, its *energy* ``w_p t_v(p)``. This holds for every non-negative weight
vector; weights proportional to the speed of each device (:func:`speed_weights`) make a task's
energy nearly the same wherever it runs, so the least energy ``e_v = min_p w_p t_v(p)`` loses
little. With all weights 1 it is the familiar "at most |P| tasks at once".

Heads and tails with energy
---------------------------
Every ancestor of ``v`` ends before ``v`` starts and starts at or after time 0, so the ancestors'
energy fits in ``[0, S_v]``: ``S_v >= sum_{u in anc(v)} e_u / W``. Symmetrically the descendants
run in ``[E_v, C]``: ``C >= E_v + sum_{s in desc(v)} e_s / W``. :func:`energetic_heads_tails`
takes the larger of these, the join and fork bounds below and the routed recursions of
:func:`.schedule.heads` and :func:`.schedule.tails` (with these stronger values fed along), each a
valid lower bound, so the maximum is.

Joins and forks: a shared device or a transfer
----------------------------------------------
The routed head lets every predecessor of ``v`` run on the device best for it alone, so two
predecessors may both sit on ``v``'s device at once. In a schedule with ``v`` on ``p`` each
predecessor ``u`` runs on some ``q_u``, starts at ``head(u, q_u)`` or later, and its data reach
``p`` ``c_uv(q_u, p)`` after it ends (0 on ``p``); the predecessors that share a device run one at a
time. For the predecessors on one device ``q``, jobs with release ``r_u = head(u, q)``, run time
``t_u(q)`` and delivery ``c_uv(q, p)``, ``S_v`` is at least each job's ``r + t + c`` and at least
the end of the last of them plus the least delivery, and that end is at least the
earliest-release-first makespan (optimal on one device with releases). So ``S_v`` is at least
the least, over every choice of devices for the predecessors, of the largest of these per-device
values: :func:`_shared`, enumerated over at most :data:`SHARED_JOBS` predecessors (those with the
largest least ``r + t + c``; leaving predecessors out only relaxes the bound). A fork is the mirror
image: the successors of ``v`` on ``p`` get their data ``c_vs(p, q)`` after ``E_v`` (the release
counted from ``E_v``), run one at a time on each device and need ``tail(s, q)`` after they end, so
``C - E_v`` is at least the same least-over-choices value. On two servers with costly transfers
between them this is where a join pays either the transfer or the wait (measured in
docs/chase.md); with cheap transfers it adds little.

*Counting* (:func:`_counted`) takes any number of predecessors. Let ``J`` be a set of them and,
on device ``q``, ``R_q`` and ``c_q`` the least head and least transfer to ``p`` among ``J``. In a
schedule with ``v`` on ``p``, say ``k_q`` of ``J`` run on ``q`` (``sum_q k_q = |J|``); they start at
``R_q`` or later one at a time, so ``S_v >= R_q + (sum of the k_q shortest run times of J on q)
+ c_q =: point(q, k_q)``. The points grow with ``k``, so every ``point(q, k)`` with ``1 <= k <= k_q``
is at most ``S_v``: that is ``|J|`` points, and ``S_v`` is at least the ``|J|``-th smallest of all
points (over every ``q`` and ``k >= 1``). This is how the eliminations of one step of Gauss
elimination, more of them than fast devices and all between two pivots, cost two rounds and not
their work divided by the devices. The sets tried are the predecessors whose least head, or
least transfer, is at least a given one's. Forks mirror it (release ``c_vs(p, q)`` after ``E_v``,
delivery ``tail(s, q)``).

Energetic reasoning
-------------------
For a makespan ``T``, task ``v`` on ``p`` runs inside ``[r, d] = [head_vp, T - tail_vp]``; if
``r + t_v(p) > d`` it cannot run on ``p`` at all. Within a window ``[t1, t2]`` it then occupies at
least ``max(0, min(t, t2 - t1, r + t - t1, t2 - d + t))`` with ``t = t_v(p)`` (the left-shifted and
right-shifted placements; Lopez and Esquirol 1996, Baptiste, Le Pape and Nuijten 1999, "Satisfiability
tests and time-bound adjustments for cumulative scheduling problems", Annals of OR 92). Weighted
by ``w_p`` and minimised over the devices ``v`` may still use, the sum over all tasks is at most
``W (t2 - t1)`` in every schedule of makespan at most ``T`` (integrate the capacity over the
window). :func:`window_test` checks that inequality on a set of windows; when one window fails,
no schedule ends by ``T``. The test only gets easier as ``T`` grows (windows widen, options are
added), so :func:`energetic_bound` bisects on ``T`` between the critical-path bound and a makespan
some schedule reaches, and returns a ``T`` at which the test failed: below the optimum. Any subset
of windows gives a valid (weaker) test; large instances use a quantile subset
(:data:`MAX_WINDOW_POINTS`).

Floats: a window fails only when its energy exceeds the capacity by ``SLACK`` of ``W T`` and an
option is dropped only when it misses ``T`` by a relative ``SLACK``, both far above the rounding of
the sums, so a failure is a failure in exact arithmetic.
"""

from __future__ import annotations

import math
from itertools import product
from typing import TYPE_CHECKING

import numpy as np

from coopt.problems.chase.schedule import critical_path_bound, reachability

if TYPE_CHECKING:
    from coopt.problems.chase.instance import Tables

#: Relative slack of the window test (energies against ``W T``, option fits against ``T``).
SLACK = 1e-9
#: At most this many window ends of each side (quantiles of the heads and deadlines) are tried,
#: and fewer where options times ends squared would pass :data:`WORK`.
MAX_WINDOW_POINTS = 200
#: Work budget of one window test (options x window starts x window ends).
WORK = 2e7
#: Most predecessors (successors) of a task whose devices :func:`_shared` enumerates, most device
#: choices it tries for one task and device, and at most this many in all (tasks x devices x
#: choices; fewer choices each on large instances).
SHARED_JOBS = 6
SHARED_CHOICES = 256
SHARED_WORK = 300_000
#: Bisection steps on ``T``: the bound returned is within ``2^-STEPS`` times the searched interval
#: of the largest makespan the test refutes.
STEPS = 30


def speed_weights(tab: Tables) -> list[float]:
    """``w_p``: the mean run time of the fastest device over the mean run time of ``p`` (over the
    tasks each may run); 0 for a device no task may use (it never carries any weight)."""
    means: list[float | None] = []
    for p in range(tab.devices):
        times = [tab.time[v][p] for v in range(tab.n) if p in tab.compatible[v]]
        means.append(sum(times) / len(times) if times and sum(times) > 0 else None)
    known = [m for m in means if m is not None]
    if not known:
        return [1.0] * tab.devices
    fastest = min(known)
    return [fastest / m if m is not None else 0.0 for m in means]


def energetic_heads_tails(tab: Tables, weights: list[float]) -> tuple[list[list[float]], list[list[float]]]:
    """(head, tail) of :mod:`.schedule` raised by the energy of the ancestors and descendants on
    the pool of weight ``W = sum(weights)`` and by the join and fork bounds (module docstring);
    inf where ``v`` cannot run on ``p``. O(n^2 + e P^2), and the choices of :func:`_shared`."""
    compatible = tab.compatible
    W = float(sum(weights))
    energy = [min(weights[p] * tab.time[v][p] for p in compatible[v]) for v in range(tab.n)]
    reach = reachability(tab)
    before = [0.0] * tab.n
    after = [0.0] * tab.n
    for u in range(tab.n):
        bits, v = reach[u], 0
        while bits:
            if bits & 1:
                before[v] += energy[u]
                after[u] += energy[v]
            bits >>= 1
            v += 1
    P = tab.devices
    limit = min(SHARED_CHOICES, SHARED_WORK // max(1, tab.n * P))
    head = [[math.inf] * P for _ in range(tab.n)]
    for v in tab.topo:
        for p in compatible[v]:
            best = before[v] / W if W > 0 else 0.0
            for u, e in tab.preds[v]:
                arrive = min(head[u][q] + tab.time[u][q] + tab.comm(e, q, p) for q in compatible[u])
                best = max(best, arrive)
            jobs = [[(head[u][q], tab.time[u][q], tab.comm(e, q, p)) if q in compatible[u] else None
                     for q in range(P)] for u, e in tab.preds[v]]
            head[v][p] = max(best, _shared(jobs, limit), _counted(jobs))
    tail = [[math.inf] * P for _ in range(tab.n)]
    for v in reversed(tab.topo):
        for p in compatible[v]:
            best = after[v] / W if W > 0 else 0.0
            for s, e in tab.succs[v]:
                rest = min(tab.comm(e, p, q) + tab.time[s][q] + tail[s][q] for q in compatible[s])
                best = max(best, rest)
            jobs = [[(tab.comm(e, p, q), tab.time[s][q], tail[s][q]) if q in compatible[s] else None
                     for q in range(P)] for s, e in tab.succs[v]]
            tail[v][p] = max(best, _shared(jobs, limit), _counted(jobs))
    return head, tail


def _one_device(group: list[tuple[float, float, float]]) -> float:
    """A lower bound on ``max_j (C_j + q_j)`` for jobs ``(r_j, t_j, q_j)`` (release, run time,
    delivery) run one at a time on one device from their releases: every job alone, ``r_j + t_j +
    q_j``, and the last completion, at least the earliest-release-first makespan (optimal for one
    device with releases), plus the least delivery."""
    alone = max(r + t + q for r, t, q in group)
    end = 0.0
    for r, t, _ in sorted(group):
        end = max(end, r) + t
    return max(alone, end + min(q for _, _, q in group))


def _counted(jobs: list[list[tuple[float, float, float] | None]]) -> float:
    """The counting bound on ``max_j (C_j + q_j)`` over jobs ``jobs[j][q] = (r, t, q)`` (release,
    run time, delivery of job ``j`` on device ``q``; None where it cannot run there), each on a
    device of its choice, one at a time on each (module docstring): for a set ``J`` of the jobs,
    the ``|J|``-th smallest of the points ``R_q + (k smallest run times of J on q) + c_q`` over
    devices ``q`` and ``k >= 1``, with ``R_q`` and ``c_q`` the least release and delivery of ``J``
    on ``q``. The sets tried: the jobs whose least release, or least delivery, is at least each
    job's; 0 with fewer than two jobs."""
    if len(jobs) < 2:
        return 0.0
    best = 0.0
    for field in (0, 2):
        ranked = sorted(jobs, key=lambda row: min(job[field] for job in row if job is not None))
        for i in range(len(ranked) - 1):
            chosen = ranked[i:]
            points: list[float] = []
            for q in range(len(chosen[0])):
                here = [row[q] for row in chosen if row[q] is not None]
                if not here:
                    continue
                base = min(r for r, _, _ in here) + min(c for _, _, c in here)
                for t in sorted(t for _, t, _ in here):
                    base += t
                    points.append(base)
            points.sort()
            best = max(best, points[len(chosen) - 1])
    return best


def _shared(jobs: list[list[tuple[float, float, float] | None]], limit: int) -> float:
    """The least, over every choice of a device for each job (``jobs[j][q]``: release, run time and
    delivery of job ``j`` on device ``q``, None where it cannot run there), of the largest
    :func:`_one_device` bound among the devices: the jobs that share a device run one at a time.
    Only the :data:`SHARED_JOBS` jobs with the largest least ``r + t + q`` take part when there are
    more, and fewer while their choices pass ``limit`` (leaving jobs out relaxes the bound); 0 with
    fewer than two jobs."""
    if len(jobs) < 2:
        return 0.0
    options = [[(q, job) for q, job in enumerate(row) if job is not None] for row in jobs]
    options.sort(key=lambda row: -min(r + t + q for _, (r, t, q) in row))
    options = options[:SHARED_JOBS]
    while len(options) > 1 and math.prod(len(row) for row in options) > limit:
        options.pop()
    if len(options) < 2:
        return 0.0
    best = math.inf
    for choice in product(*options):
        groups: dict[int, list[tuple[float, float, float]]] = {}
        for q, job in choice:
            groups.setdefault(q, []).append(job)
        value = max(_one_device(group) for group in groups.values())
        if value < best:
            best = value
    return best


def _points(values: np.ndarray, most: int) -> np.ndarray:
    points = np.unique(values)
    if points.size > most:
        points = np.unique(np.quantile(points, np.linspace(0.0, 1.0, most), method="nearest"))
    return points


def window_test(tab: Tables, head: list[list[float]], tail: list[list[float]], weights: list[float],
                T: float) -> bool:
    """False where some window proves that no schedule ends by ``T`` (module docstring); True
    where none does (which proves nothing)."""
    options = [(v, p) for v in range(tab.n) for p in tab.compatible[v]
               if head[v][p] + tab.time[v][p] + tail[v][p] <= T * (1 + SLACK)]
    if len({v for v, _ in options}) < tab.n:
        return False
    task = np.array([v for v, _ in options])
    release = np.array([head[v][p] for v, p in options])
    length = np.array([tab.time[v][p] for v, p in options])
    deadline = np.array([T - tail[v][p] for v, p in options])
    weight = np.array([weights[p] for _, p in options], dtype=float)
    W = float(sum(weights))
    excess = SLACK * W * T
    most = int(max(16, min(MAX_WINDOW_POINTS, math.sqrt(WORK / len(options)))))
    starts = _points(np.concatenate([release, deadline - length]), most)
    ends = _points(np.concatenate([deadline, release + length]), most)
    for t1 in starts:
        t2 = ends[ends > t1]
        if t2.size == 0:
            continue
        width = t2 - t1
        left = (release + length - t1)[:, None]  # the left-shifted placement's part in the window
        right = t2[None, :] - (deadline - length)[:, None]  # the right-shifted one's
        inside = np.minimum(np.minimum(length[:, None], width[None, :]), np.minimum(left, right))
        energy = np.maximum(inside, 0.0) * weight[:, None]
        least = np.full((tab.n, t2.size), np.inf)
        np.minimum.at(least, task, energy)
        if np.any(least.sum(axis=0) > W * width + excess):
            return False
    return True


def energetic_bound(tab: Tables, upper: float, weight_sets: list[list[float]] | None = None,
                    lower: float = 0.0) -> float:
    """A lower bound on the optimal makespan, at least the critical-path bound and ``lower`` (a
    lower bound the caller vouches for): for each weight vector (default: all ones and
    :func:`speed_weights`), the critical path over the energetic heads and tails, then the
    largest makespan in ``[that, upper]`` the window test refutes, found by bisection (module
    docstring). ``upper`` is a makespan some schedule reaches (the bisection's other end; a larger
    one only costs steps)."""
    best = max(lower, critical_path_bound(tab))
    tried: list[list[float]] = []
    for weights in weight_sets or [[1.0] * tab.devices, speed_weights(tab)]:
        if sum(weights) <= 0 or weights in tried:
            continue
        tried.append(weights)
        head, tail = energetic_heads_tails(tab, weights)
        lo = max(best, critical_path_bound(tab, head, tail))
        hi = max(lo, upper)
        if window_test(tab, head, tail, weights, lo):
            best = lo
            continue
        for _ in range(STEPS):
            mid = (lo + hi) / 2
            if window_test(tab, head, tail, weights, mid):
                hi = mid
            else:
                lo = mid
        best = max(best, lo)
    return best
