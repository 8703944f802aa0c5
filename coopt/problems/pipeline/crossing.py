"""The pair table of keep-only grid instances: how two micro-batches in flight together on the
stages after a token stage cross, and the trips each crossing allows.

Applies where the window relaxation of :mod:`.window` does (keep-only, one chunk per device, a
cap, makespan) and every duration and the lag are integer multiples of one unit ``q``
(:func:`.grid.time_unit`). Then some optimal schedule ``sigma*`` is FIFO per lane (Model P's
(P2)) and starts every pass on the ``q`` grid (:mod:`.grid`); the release times ``r_x`` and tails
``q_x`` of :mod:`.bound` hold for it.

**The pair table.** Fix a stage ``s`` (the token stage) and two micro-batches ``i < k`` whose
forwards F(s, i), F(s, k) start at 0 and ``delta > 0``. Keep only their F and B passes on stages
``s..K-1`` (W passes, the other micro-batches and every cap dropped: that only relaxes). With FIFO
per lane, F(t, i) precedes F(t, k) and B(t, i) precedes B(t, k); F(t, i) precedes B(t, k) through
the chain; the only open order on a stage t is F(t, k) against B(t, i). If F(t+1, k) precedes
B(t+1, i), then F(t, k) < F(t+1, k) < B(t+1, i) < B(t, i): the stages where k's forward runs
first are a prefix ``s..sigma-1``, ``sigma`` in ``s..K``. For each ``sigma`` the earliest start
of every pass is a longest path (a DAG), so the trips ``tau_i = E_B(s,i) - 0`` and ``tau_k =
E_B(s,k) - delta`` are each as small as that order allows; every FIFO schedule of the two has
some ``sigma`` and trips at least these. The table keeps, per ``delta`` (in units of q, below
the round trip ``R_s``; for ``delta >= R_s`` both trips ``R_s`` are attainable and nothing
binds), the Pareto-minimal pairs ``(A, B)`` over the ``sigma`` whose F(s, k) can start at
``delta`` (B(s, i) ending by then where ``sigma = s``).

The pattern schedules of :mod:`.pattern` (part of the warm start) take their crossing orders
from this table; every schedule they build is judged by the checker. The crossing relaxation
X(S) built on it is a research study (``research/pipeline/crossing_relaxation.py``).
"""

from __future__ import annotations

from coopt.problems.pipeline.grid import time_unit
from coopt.problems.pipeline.model import Instance
from coopt.problems.pipeline.window import applies as window_applies

#: A Pareto pair (trip of the earlier micro-batch, trip of the later one), in units of q.
Trips = tuple[int, int]


def applies(instance: Instance) -> bool:
    """The table is exact: the window relaxation's conditions and durations on a common grid."""
    return window_applies(instance) and time_unit(instance) is not None


def round_trip(instance: Instance, s: int) -> float:
    """R_s: F(s, j)'s start to B(s, j)'s end along the chain, nothing waiting (seconds)."""
    K = instance.virtual_stages
    trip = sum(instance.t_f(k) + instance.t_b(k) for k in range(s, K))
    return trip + sum(instance.lag(k, k + 1) + instance.lag(k + 1, k) for k in range(s, K - 1))


def pair_trips(instance: Instance, s: int, delta: float, sigma: int) -> tuple[float, float] | None:
    """Earliest (E_B(s, i), E_B(s, k) - delta) with F(s, i) at 0, F(s, k) at delta and F(t, k)
    before B(t, i) exactly on the stages t < sigma; None when F(s, k) cannot start at delta."""
    K = instance.virtual_stages
    tf, tb = instance.t_f, instance.t_b
    fi: dict[int, float] = {}
    t = 0.0
    for k in range(s, K):  # i runs first everywhere on the forward wave: nothing delays it
        fi[k] = t
        t += tf(k) + (instance.lag(k, k + 1) if k + 1 < K else 0.0)
    bi: dict[int, float] = {}
    fk: dict[int, float] = {}

    def b_of_i(k: int) -> None:
        after = fi[K - 1] + tf(K - 1) if k == K - 1 else bi[k + 1] + tb(k + 1) + instance.lag(k + 1, k)
        bi[k] = max(after, fk[k] + tf(k)) if k < sigma else after

    for k in reversed(range(max(s, sigma), K)):  # i's backwards that k's forwards wait for
        b_of_i(k)
    t = delta
    for k in range(s, K):
        start = max(t, fi[k] + tf(k))
        if k >= sigma:
            start = max(start, bi[k] + tb(k))
        if k == s and start > delta:
            return None  # F(s, k) is fixed at delta
        fk[k] = start
        t = start + tf(k) + (instance.lag(k, k + 1) if k + 1 < K else 0.0)
    for k in reversed(range(s, min(sigma, K))):
        b_of_i(k)
    t = fk[K - 1] + tf(K - 1)
    for k in reversed(range(s, K)):
        start = max(t, bi[k] + tb(k))
        t = start + tb(k) + (instance.lag(k, k - 1) if k > s else 0.0)
        end_k = start + tb(k)
    return bi[s] + tb(s), end_k - delta


def crossing_table(instance: Instance, s: int) -> dict[int, list[Trips]]:
    """For every offset ``d`` (units of q) from T_F(s) up to below R_s, the Pareto-minimal trips
    (A, B) of two micro-batches entering stage s d apart (module docstring)."""
    q = time_unit(instance)
    R = round(round_trip(instance, s) / q)
    table: dict[int, list[Trips]] = {}
    for d in range(max(1, round(instance.t_f(s) / q)), R):
        found = set()
        for sigma in range(s, instance.virtual_stages + 1):
            trips = pair_trips(instance, s, d * q, sigma)
            if trips is not None:
                found.add((round(trips[0] / q), round(trips[1] / q)))
        table[d] = sorted(p for p in found if not any(
            o != p and o[0] <= p[0] and o[1] <= p[1] for o in found))
    return table
