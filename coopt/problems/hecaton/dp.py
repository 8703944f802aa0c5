"""Hecaton: the exact dynamic programmes and the Lagrangian dual bound (the problem's ``exact`` and
``bound``).

Every method works on the per-block candidate table of
:func:`coopt.problems.hecaton.model.candidates` (SRAM-feasible, dominated options removed),
held once per instance as a :class:`Menu` of numpy arrays (blocks of one FFN width share their
rows), and returns a solution the checker recomputes from the instance alone. The heuristics that share
the table are in :mod:`.heuristics`.

Exact methods (research notes section 1.b):

* :func:`layered_dp`: shortest path through the layered DAG (stage = block, node = layout) on the
  option costs plus ``penalty`` per stash byte; with ``penalty = 0`` exact when the DRAM stash row
  is slack. O(Lambda A^2 + Lambda |O|), A layouts, |O| options.
* :func:`lagrangian`: the DRAM row dualised, max over lambda >= 0 of
  ``layered_dp(lambda) - lambda D_cap``; concave and piecewise linear in lambda, maximised exactly
  by intersecting the lines of the solutions found (each step a layered DP). Without the DRAM row
  the MILP's LP is the integral shortest-path polytope, so this dual equals the LP relaxation
  (Geoffrion 1974); it is the problem's ``bound`` and also yields a DRAM-feasible solution.
* :func:`capacity_dp`: the same DAG with the stash total as a second label; labels are exact
  integer byte totals and a label is dropped when another label of the same layout has no more
  stash and no more cost, when even the least stash of the remaining blocks no longer fits, or when
  its cost plus the Lagrangian cost-to-go exceeds a known feasible value. Exact with the row.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from coopt.limits import timed_out
from coopt.problem import ExactOutcome, NoSolution, Solution, SolveOptions, Termination
from coopt.problems.hecaton.model import (
    Instance,
    Option,
    candidates,
    cost,
    objective,
    stash_total,
    to_solution,
    total,
    transition,
)

Layout = tuple[str, int, int]
LayoutFilter = Callable[[Layout], bool]


def _anything(_: Layout) -> bool:
    return True


def _scheme_filters(instance: Instance) -> list[LayoutFilter]:
    """One filter per scheme under ``one_scheme`` (the uniform variant), else one open filter."""
    if not instance.one_scheme:
        return [_anything]
    return [lambda layout, s=s: layout[0] == s for s in instance.schemes]


# -- the candidate table as arrays -----------------------------------------------------------
@dataclass(frozen=True)
class Menu:
    """The candidates of an instance as arrays. ``kinds[b]`` is block b's FFN width index; per
    width ``w``: ``options[w]`` (sorted), ``layout[w]`` (index into ``layouts``), ``stash[w]``
    (int64 bytes), ``value[w]`` (objective units); ``tau[a, a2]`` the re-layout cost."""

    layouts: tuple[Layout, ...]
    tau: np.ndarray
    kinds: np.ndarray
    options: tuple[tuple[Option, ...], ...]
    layout: tuple[np.ndarray, ...]
    stash: tuple[np.ndarray, ...]
    value: tuple[np.ndarray, ...]

    def mask(self, allowed: LayoutFilter) -> np.ndarray:
        return np.array([allowed(a) for a in self.layouts], dtype=bool)


@cache
def menu(instance: Instance) -> Menu:
    widths = sorted(set(instance.model.block_ffn))
    options = tuple(candidates(instance, f) for f in widths)
    layouts = tuple(sorted({o.layout for row in options for o in row}))
    where = {a: i for i, a in enumerate(layouts)}
    tau = np.array([[transition(instance, a, b) for b in layouts] for a in layouts], dtype=float)
    tau = tau.reshape(len(layouts), len(layouts))
    return Menu(
        layouts=layouts,
        tau=tau,
        kinds=np.array([widths.index(f) for f in instance.model.block_ffn], dtype=np.int64),
        options=options,
        layout=tuple(np.array([where[o.layout] for o in row], dtype=np.int64) for row in options),
        stash=tuple(np.array([cost(instance, f, o).stash_bytes for o in row], dtype=np.int64)
                    for f, row in zip(widths, options, strict=True)),
        value=tuple(np.array([cost(instance, f, o).objective for o in row])
                    for f, row in zip(widths, options, strict=True)),
    )


def _local(m: Menu, mask: np.ndarray, penalty: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per width: the least (value + penalty stash) of each layout (inf where none or masked out)
    and the option reaching it (the first in sorted order on ties)."""
    best, pick = [], []
    for w in range(len(m.options)):
        score = m.value[w] + penalty * m.stash[w]
        low = np.full(len(m.layouts), np.inf)
        arg = np.full(len(m.layouts), -1)
        for index in np.lexsort((np.arange(score.size), score))[::-1]:  # the first minimum wins
            a = m.layout[w][index]
            if mask[a]:
                low[a], arg[a] = score[index], index
        best.append(low)
        pick.append(arg)
    return best, pick


# -- exact -----------------------------------------------------------------------------------
def layered_dp(instance: Instance, allowed: LayoutFilter = _anything, penalty: float = 0.0
               ) -> list[Option] | None:
    """Min-cost per-block options ignoring the DRAM stash row, each option costing its objective
    plus ``penalty`` per stash byte (None: some block has no option).

    Guarantee: optimal for the instance without its capacity row (``penalty = 0``), hence a lower
    bound with it. Complexity O(Lambda (A^2 + |O|)), vectorised over layouts. Source: Viterbi over
    the layered DAG of notes section 1.b (H4)."""
    m = menu(instance)
    best, pick = _local(m, m.mask(allowed), penalty)
    if any(not np.isfinite(best[w]).any() for w in set(m.kinds.tolist())):
        return None
    kinds = m.kinds
    value = best[kinds[0]].copy()
    back = np.zeros((len(kinds), len(m.layouts)), dtype=np.int64)
    for block in range(1, len(kinds)):
        moved = value[:, None] + m.tau
        back[block] = np.argmin(moved, axis=0)
        value = moved[back[block], np.arange(len(m.layouts))] + best[kinds[block]]
    layout = int(np.argmin(value))
    chosen = []
    for block in range(len(kinds) - 1, -1, -1):
        chosen.append(m.options[kinds[block]][pick[kinds[block]][layout]])
        layout = int(back[block, layout])
    return chosen[::-1]


def _cost_to_go(instance: Instance, mask: np.ndarray, penalty: float) -> np.ndarray:
    """``h[b, a]``: the least (value + penalty stash) of blocks b+1.. plus their re-layouts, given
    block b runs layout a (the backward pass of :func:`layered_dp`)."""
    m = menu(instance)
    best, _ = _local(m, mask, penalty)
    h = np.zeros((len(m.kinds), len(m.layouts)))
    for block in range(len(m.kinds) - 2, -1, -1):
        h[block] = np.min(m.tau + (best[m.kinds[block + 1]] + h[block + 1])[None, :], axis=1)
    return h


@dataclass(frozen=True)
class Dual:
    """The Lagrangian dual of the DRAM row: its value (a lower bound), the multiplier reaching it,
    and a DRAM-feasible solution found on the way (None when none was)."""

    value: float
    multiplier: float
    feasible: list[Option] | None


def lagrangian(instance: Instance, allowed: LayoutFilter = _anything) -> Dual | None:
    """max over lambda >= 0 of L(lambda) = min_x [cost(x) + lambda (stash(x) - D_cap)] (None: some
    block has no option; value inf: not even the least-stash choice fits DRAM).

    Every L(lambda) is a lower bound of the DRAM-constrained optimum. L is the lower envelope of
    one line per solution, so its maximum lies where the line of a solution over the row meets the
    line of one under it: intersect the two, solve there, keep the solution on the side its stash
    falls on, until the solution found lies on both lines (at most one step per envelope line).
    Guarantee: the exact dual value (up to float rounding); equals the MILP's LP relaxation.
    Complexity: O(steps) layered DPs; steps grow with the number of envelope lines crossed."""
    m = menu(instance)
    cap = _attainable(m, m.mask(allowed), instance.stash_capacity)
    free = layered_dp(instance, allowed)
    if free is None:
        return None
    over = (total(instance, free), stash_total(instance, free), free)
    if over[1] <= cap:
        return Dual(over[0], 0.0, free)
    fewest = layered_dp(instance, allowed, penalty=_big_penalty(m))
    under = (total(instance, fewest), stash_total(instance, fewest), fewest)
    if under[1] > cap:
        return Dual(math.inf, math.inf, None)
    for _ in range(10 * len(m.kinds) * len(m.layouts) + 100):
        lam = (under[0] - over[0]) / (over[1] - under[1])
        chosen = layered_dp(instance, allowed, penalty=lam)
        found = (total(instance, chosen), stash_total(instance, chosen), chosen)
        envelope = found[0] + lam * found[1]
        if envelope >= over[0] + lam * over[1] - 1e-12 * max(1.0, abs(envelope)):
            return Dual(over[0] + lam * (over[1] - cap), lam, under[2])
        if found[1] > cap:
            over = found
        else:
            under = found
    raise RuntimeError("the Lagrangian search did not converge")  # unreachable: finitely many lines


def _attainable(m: Menu, mask: np.ndarray, capacity: int) -> int:
    """The largest stash total at most ``capacity`` that the options can sum to in whole multiples
    of their gcd q: q floor(capacity / q). Every choice's stash is such a multiple, so the DRAM row
    holds with this right-hand side exactly when it holds with ``capacity`` (the MILP's row, written
    in units of q, has the same right-hand side)."""
    values = [int(v) for w in range(len(m.options)) for i, v in enumerate(m.stash[w]) if mask[m.layout[w][i]]]
    quantum = math.gcd(*values) if any(values) else 1
    return quantum * (capacity // quantum) if capacity >= 0 else capacity


def _big_penalty(m: Menu) -> float:
    """A multiplier large enough that the layered DP minimises the stash first: more than the
    whole cost spread per byte of the least stash difference."""
    spread = sum(float(np.ptp(v)) if v.size else 0.0 for v in m.value) * len(m.kinds) + float(np.ptp(m.tau))
    return 4.0 * (spread + 1.0)


def capacity_dp(instance: Instance, allowed: LayoutFilter = _anything, upper: float = math.inf,
                dual: Dual | None = None) -> list[Option] | None:
    """Min-cost per-block options with the DRAM stash row (None: infeasible, or nothing at most
    ``upper``).

    Labels (stash, cost) per layout, stash the exact integer bytes so far. A label is dropped when
    another of its layout has no more stash and no more cost (Pareto), when even the least stash of
    the blocks still to come no longer fits, or, given a feasible value ``upper`` and the dual's
    multiplier lambda, when cost + h_lambda(b, a) - lambda (D_cap - stash) > upper: any completion
    with remaining stash S_r <= D_cap - stash costs at least h_lambda - lambda S_r (h_lambda the
    least remaining cost + lambda stash, :func:`_cost_to_go`), so the label cannot beat ``upper``;
    the labels of a solution at most ``upper`` always pass. Guarantee: optimal. Per block, each
    layout's labels are the Pareto front of every previous label moved into it (re-layout cost
    added), then of those plus each of its options: O(Lambda A (A + |O_a|) F log F) with F the
    labels kept per layout, in numpy. Source: the capacity-bucket DP of notes section 1.b."""
    m = menu(instance)
    capacity = instance.stash_capacity
    mask = m.mask(allowed)
    rows = [[i for i in range(len(m.options[w])) if mask[m.layout[w][i]]] for w in range(len(m.options))]
    if capacity < 0 or any(not rows[w] for w in set(m.kinds.tolist())):
        return None
    least = np.array([min(int(m.stash[w][i]) for i in rows[w]) for w in m.kinds], dtype=np.int64)
    rest = np.concatenate([np.cumsum(least[::-1])[::-1][1:], [0]])
    lam = dual.multiplier if dual is not None and math.isfinite(upper) else 0.0
    h = _cost_to_go(instance, mask, lam) if math.isfinite(upper) else None
    slack = upper + 1e-9 * abs(upper) if math.isfinite(upper) else math.inf
    steps: list[dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = []
    labels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for block, w in enumerate(m.kinds):
        room = capacity - int(rest[block])
        by_layout: dict[int, list[int]] = {}
        for index in rows[w]:
            by_layout.setdefault(int(m.layout[w][index]), []).append(index)
        step, nxt = {}, {}
        for a, indices in sorted(by_layout.items()):
            if block == 0:
                stash, value = np.zeros(1, dtype=np.int64), np.zeros(1)
                back_layout, back_label = np.full(1, -1), np.full(1, -1)
            else:
                stash, value, back_layout, back_label = _entering(labels, a, m.tau)
            parts = []
            for index in indices:
                grown, paid = stash + m.stash[w][index], value + m.value[w][index]
                fits = grown <= room
                if h is not None:
                    fits &= paid + h[block, a] - lam * (capacity - grown) <= slack
                parts.append((grown[fits], paid[fits], back_layout[fits], back_label[fits],
                              np.full(int(fits.sum()), index)))
            merged = [np.concatenate(column) for column in zip(*parts, strict=True)]
            keep = _front(merged[0], merged[1])
            if keep.size:
                step[a] = (merged[2][keep], merged[3][keep], merged[4][keep])
                nxt[a] = (merged[0][keep], merged[1][keep])
        if not nxt:
            return None
        steps.append(step)
        labels = nxt
    _, _, a, label = min((float(labels[a][1][i]), int(labels[a][0][i]), a, i)
                         for a in sorted(labels) for i in range(len(labels[a][0])))
    chosen: list[Option] = []
    for block in range(len(m.kinds) - 1, -1, -1):
        back_layout, back_label, option = steps[block][a]
        chosen.append(m.options[m.kinds[block]][int(option[label])])
        if block:
            a, label = sorted(steps[block - 1])[int(back_layout[label])], int(back_label[label])
    return chosen[::-1]


def _entering(labels: dict[int, tuple[np.ndarray, np.ndarray]], layout: int, tau: np.ndarray):
    """Every previous label moved into ``layout`` (re-layout cost added), Pareto-pruned: stash,
    cost, and for each kept label the index of its previous layout (in sorted order) and label."""
    previous = sorted(labels)
    stash = np.concatenate([labels[a][0] for a in previous])
    value = np.concatenate([labels[a][1] + tau[a, layout] for a in previous])
    source = np.concatenate([np.full(len(labels[a][0]), k) for k, a in enumerate(previous)])
    index = np.concatenate([np.arange(len(labels[a][0])) for a in previous])
    keep = _front(stash, value)
    return stash[keep], value[keep], source[keep], index[keep]


def _front(stash: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Indices of the Pareto front (least cost for the stash, cost strictly falling as the stash
    grows), in ascending stash order; ties keep the first in input order."""
    if stash.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((value, stash))
    ordered = value[order]
    running = np.minimum.accumulate(ordered)
    keep = np.empty(order.size, dtype=bool)
    keep[0] = True
    keep[1:] = ordered[1:] < running[:-1]
    return order[keep]


def exact(instance: Instance, options: SolveOptions, incumbent: Solution | None = None) -> ExactOutcome:
    """The natural exact method: the layered DP; if its optimum overflows DRAM, the Lagrangian
    dual (a bound, a multiplier and a DRAM-feasible solution), then the capacity DP pruned by the
    better of that solution and ``incumbent`` (a checked solution, the runner's
    :func:`warm_start`). Under ``one_scheme`` once per scheme; the best scheme wins.

    The incumbent only prunes labels that cannot beat it; the labels of every solution at most
    its value pass, so the optimum returned is the same with or without it (only slower without).
    Past the time limit it stops with ``incumbent`` (status ``time_limit``; none without one)."""
    stopped, outcome = timed_out(lambda: _exact(instance, options, incumbent), options.time_limit,
                                 "the hecaton DP")
    if stopped:
        return ExactOutcome(incumbent, Termination.LIMIT, None)
    return outcome


def _exact(instance: Instance, options: SolveOptions, incumbent: Solution | None) -> ExactOutcome:
    ceiling = math.inf if incumbent is None else objective(instance, incumbent)
    ceiling = ceiling if math.isfinite(ceiling) else math.inf
    best: list[Option] | None = None
    for allowed in _scheme_filters(instance):
        free = layered_dp(instance, allowed)
        if free is None:
            continue
        if stash_total(instance, free) <= instance.stash_capacity:
            chosen = free
        else:
            dual = lagrangian(instance, allowed)
            if dual.feasible is None:
                continue  # even the least stash of this scheme overflows DRAM
            chosen = capacity_dp(instance, allowed, min(total(instance, dual.feasible), ceiling), dual)
        if chosen is not None and (best is None or total(instance, chosen) < total(instance, best)):
            best = chosen
    if best is None and math.isfinite(ceiling):
        return _exact(instance, options, None)  # unreachable for a feasible incumbent: it passes its scheme
    if best is None:
        return ExactOutcome(None, Termination.INFEASIBLE, None)
    solution = to_solution(instance, best)
    return ExactOutcome(solution, Termination.OPTIMAL, solution["objective"])


def bound(instance: Instance, options: SolveOptions) -> float:
    """The dual bound at any size: the Lagrangian dual of the DRAM row (:func:`lagrangian`; the
    LP relaxation's value), the least over schemes under ``one_scheme``. Raises NoSolution when no
    choice fits SRAM and DRAM (nothing to bound)."""
    duals = [lagrangian(instance, allowed) for allowed in _scheme_filters(instance)]
    values = [d.value for d in duals if d is not None and math.isfinite(d.value)]
    if not values:
        raise NoSolution("no option fits SRAM and DRAM")
    return min(values)
