"""Hecaton: the exact dynamic programmes and the polynomial heuristics.

Every method works on the per-block candidate table of
:func:`coopt.formulations.hecaton.model.candidates` (SRAM-feasible, dominated options removed)
and returns a solution the checker recomputes from the instance alone.

Exact methods (research notes section 1.b):

* :func:`layered_dp`: shortest path through the layered DAG (stage = block, node = layout),
  exact when the DRAM stash row is slack. O(Lambda A^2 + Lambda |O|), A layouts, |O| options.
* :func:`capacity_dp`: the same DAG with the stash total as a second label; labels are exact
  integer byte totals ("buckets" keyed by the bytes themselves, so no rounding) and a label is
  dropped when another label of the same layout has no more stash and no more cost, or when even
  the smallest stash of the remaining blocks no longer fits. Exact with the capacity row;
  pseudo-polynomial in the number of distinct stash totals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from coopt.formulations.hecaton.model import (
    Instance,
    Option,
    candidates,
    cost,
    stash_total,
    to_solution,
    total,
    transition,
)
from coopt.problem import ExactOutcome, NoSolution, Solution, SolveOptions

Layout = tuple[str, int, int]
LayoutFilter = Callable[[Layout], bool]


def _anything(_: Layout) -> bool:
    return True


def _scheme_filters(instance: Instance) -> list[LayoutFilter]:
    """One filter per scheme under ``one_scheme`` (the uniform variant), else one open filter."""
    if not instance.one_scheme:
        return [_anything]
    return [lambda layout, s=s: layout[0] == s for s in instance.schemes]


def _table(instance: Instance, allowed: LayoutFilter) -> list[list[Option]]:
    return [[o for o in candidates(instance, f) if allowed(o.layout)] for f in instance.model.block_ffn]


# -- exact -----------------------------------------------------------------------------------
def layered_dp(instance: Instance, allowed: LayoutFilter = _anything) -> list[Option] | None:
    """Min-cost per-block options ignoring the DRAM stash row (None: some block has no option).

    Guarantee: optimal for the instance without its capacity row, hence a lower bound with it.
    Complexity O(Lambda (A^2 + |O|)). Source: Viterbi over the layered DAG of notes section 1.b (H4).
    """
    table = _table(instance, allowed)
    if any(not row for row in table):
        return None
    ffn = instance.model.block_ffn
    # best[layout] = (cost so far, options so far), keeping the cheapest option per layout per block
    best: dict[Layout, tuple[float, tuple[Option, ...]]] = {}
    for block, row in enumerate(table):
        local: dict[Layout, Option] = {}
        for o in row:
            if o.layout not in local or cost(instance, ffn[block], o).objective < cost(
                instance, ffn[block], local[o.layout]
            ).objective:
                local[o.layout] = o
        nxt: dict[Layout, tuple[float, tuple[Option, ...]]] = {}
        for layout, o in sorted(local.items()):
            here = cost(instance, ffn[block], o).objective
            if block == 0:
                nxt[layout] = (here, (o,))
                continue
            prev, (value, path) = min(
                best.items(), key=lambda item: (item[1][0] + transition(instance, item[0], layout), item[0])
            )
            nxt[layout] = (value + transition(instance, prev, layout) + here, (*path, o))
        best = nxt
    return list(min(best.values(), key=lambda v: v[0])[1])


def capacity_dp(instance: Instance, allowed: LayoutFilter = _anything) -> list[Option] | None:
    """Min-cost per-block options with the DRAM stash row (None: infeasible).

    Guarantee: optimal (labels are exact integer byte totals; only dominated labels are dropped).
    Complexity O(Lambda |O| F) with F the number of Pareto labels per stage (at most the number of
    distinct stash totals <= D_cap). Source: the capacity-bucket DP of notes section 1.b.
    """
    capacity = instance.stash_capacity
    table = _table(instance, allowed)
    if capacity < 0 or any(not row for row in table):
        return None
    ffn = instance.model.block_ffn
    least = [min(cost(instance, f, o).stash_bytes for o in row) for f, row in zip(ffn, table, strict=True)]
    rest = [sum(least[i + 1:]) for i in range(len(least))]
    # labels[layout] = list of (stash, cost, back), stash ascending and cost strictly descending;
    # back = (previous label, option) forms a linked list of choices
    labels: dict[Layout, list[tuple[int, float, tuple]]] = {}
    for block, row in enumerate(table):
        room = capacity - rest[block]
        incoming: dict[Layout, list[tuple[int, float, tuple]]] = {}
        for o in row:
            c = cost(instance, ffn[block], o)
            if block == 0:
                merged: Iterable[tuple[int, float, tuple]] = [(0, 0.0, ())]
            else:
                merged = _merge(labels, o.layout, instance)
            bucket = incoming.setdefault(o.layout, [])
            for stash, value, back in merged:
                if stash + c.stash_bytes <= room:
                    bucket.append((stash + c.stash_bytes, value + c.objective, ((stash, value, back), o)))
        labels = {layout: _pareto(found) for layout, found in incoming.items() if found}
        if not labels:
            return None
    final = min((label for found in labels.values() for label in found), key=lambda lab: (lab[1], lab[0]))
    chosen: list[Option] = []
    back = final[2]
    while back:
        previous, option = back
        chosen.append(option)
        back = previous[2]
    return chosen[::-1]


def _merge(labels: dict, layout: Layout, instance: Instance) -> list[tuple[int, float, tuple]]:
    """Every previous label moved into ``layout`` (re-layout cost added), Pareto-pruned."""
    moved = [
        (stash, value + transition(instance, prev, layout), back)
        for prev, found in labels.items()
        for stash, value, back in found
    ]
    return _pareto(moved)


def _pareto(found: list[tuple[int, float, tuple]]) -> list[tuple[int, float, tuple]]:
    found.sort(key=lambda lab: (lab[0], lab[1]))
    kept: list[tuple[int, float, tuple]] = []
    for label in found:
        if not kept or label[1] < kept[-1][1]:
            kept.append(label)
    return kept


def exact(instance: Instance, options: SolveOptions) -> ExactOutcome:
    """The natural exact method: the layered DP, then the capacity DP if its optimum overflows DRAM.

    Under ``one_scheme`` both run once per scheme and the best scheme wins.
    """
    best: list[Option] | None = None
    bound = None
    for allowed in _scheme_filters(instance):
        free = layered_dp(instance, allowed)
        if free is None:
            continue
        value = total(instance, free)
        bound = value if bound is None else min(bound, value)
        fits = stash_total(instance, free) <= instance.stash_capacity
        chosen = free if fits else capacity_dp(instance, allowed)
        if chosen is not None and (best is None or total(instance, chosen) < total(instance, best)):
            best = chosen
    if best is None:
        return ExactOutcome(None, "infeasible", None)
    solution = to_solution(instance, best)
    return ExactOutcome(solution, "optimal", solution["objective"])


# -- heuristics ------------------------------------------------------------------------------
def repair(
    instance: Instance, chosen: list[Option], allowed: LayoutFilter = _anything
) -> list[Option] | None:
    """Cut the stash until it fits DRAM: repeatedly apply the single-block change with the least
    objective increase per stash byte saved (re-layout costs included). None if stuck.

    Complexity O(Lambda |O| + moves (Lambda + |O|)): a change only alters the best move of its
    block and the two neighbours; at most Lambda |O| moves since each strictly lowers the stash.
    """
    chosen = list(chosen)
    ffn = instance.model.block_ffn
    # per block: (option, stash, objective) of every allowed candidate, computed once
    menus = [
        [
            (o, cost(instance, f, o).stash_bytes, cost(instance, f, o).objective)
            for o in candidates(instance, f)
            if allowed(o.layout)
        ]
        for f in ffn
    ]
    here = [cost(instance, f, o) for f, o in zip(ffn, chosen, strict=True)]
    stash = [c.stash_bytes for c in here]
    value = [c.objective for c in here]

    def best_move(block: int) -> tuple | None:
        move = None
        for alt, alt_stash, alt_value in menus[block]:
            saved = stash[block] - alt_stash
            if saved <= 0:
                continue
            delta = alt_value - value[block] + _relayout_delta(instance, chosen, block, alt)
            key = (delta / saved, block, alt, alt_stash, alt_value)
            if move is None or key < move:
                move = key
        return move

    moves = [best_move(b) for b in range(len(chosen))]
    need = sum(stash) - instance.stash_capacity
    while need > 0:
        found = [m for m in moves if m is not None]
        if not found:
            return None
        _, block, alt, alt_stash, alt_value = min(found)
        need -= stash[block] - alt_stash
        chosen[block], stash[block], value[block] = alt, alt_stash, alt_value
        for other in (block - 1, block, block + 1):
            if 0 <= other < len(chosen):
                moves[other] = best_move(other)
    return chosen


def _relayout_delta(instance: Instance, chosen: list[Option], block: int, alt: Option) -> float:
    delta = 0.0
    for other in (block - 1, block + 1):
        if 0 <= other < len(chosen):
            a, b = (chosen[other], chosen[block]) if other < block else (chosen[block], chosen[other])
            new = (chosen[other].layout, alt.layout) if other < block else (alt.layout, chosen[other].layout)
            delta += transition(instance, *new) - transition(instance, a.layout, b.layout)
    return delta


def _cheapest(instance: Instance, rows: list[list[Option]]) -> list[Option]:
    ffn = instance.model.block_ffn
    return [
        min(row, key=lambda o, f=f: cost(instance, f, o).objective) for f, row in zip(ffn, rows, strict=True)
    ]


def _best(instance: Instance, tries: Iterable[list[Option] | None]) -> Solution:
    found = [t for t in tries if t is not None]
    if not found:
        raise NoSolution("no option fits SRAM and DRAM")
    return to_solution(instance, min(found, key=lambda chosen: total(instance, chosen)))


def best_uniform(instance: Instance, seed: int = 0) -> Solution:
    """One layout (scheme and mesh) for every block, the cheapest micro-batching and recompute per
    block inside it, stash repaired inside the layout; the best layout wins.

    Guarantee: feasible when returned; optimal when every block shares one layout in some optimum
    and the stash row is slack. Complexity O(A Lambda |O|) plus repair. Source: notes section 1.c
    H1 (the Hecaton vs Megatron vs SUMMA table).
    """
    del seed  # deterministic
    ffn = instance.model.block_ffn
    layouts = sorted({o.layout for f in set(ffn) for o in candidates(instance, f)})
    tries = []
    for layout in layouts:
        def inside(candidate: Layout, layout: Layout = layout) -> bool:
            return candidate == layout

        rows = _table(instance, inside)
        if any(not row for row in rows):
            continue
        chosen = _cheapest(instance, rows)
        tries.append(repair(instance, chosen, inside))
    return _best(instance, tries)


def greedy(instance: Instance, seed: int = 0) -> Solution:
    """Each block takes its cheapest option on its own; re-layouts are then paid as they fall and
    the stash is repaired greedily (best objective increase per byte saved).

    Guarantee: feasible when returned; optimal when re-layouts vanish and the stash row is slack.
    Complexity O(Lambda |O|) plus repair. Source: notes section 1.c H2.
    """
    del seed
    tries = []
    for allowed in _scheme_filters(instance):
        rows = _table(instance, allowed)
        if any(not row for row in rows):
            continue
        chosen = _cheapest(instance, rows)
        tries.append(repair(instance, chosen, allowed))
    return _best(instance, tries)


def mesh_search(instance: Instance, seed: int = 0) -> Solution:
    """For every factorization r x c of N: the layered DP over the layouts that mesh allows (agrs on
    r x c, summa if square, 1d), then stash repair; the best mesh wins.

    Guarantee: feasible when returned; optimal when some optimum uses a single mesh and the stash
    row is slack. Complexity O(d(N) Lambda (A^2 + |O|)) plus repair, d(N) the divisor count.
    Source: notes section 1.c H3 (mesh-factor search for the AGRS scheme).
    """
    del seed
    n = instance.package.dies
    tries = []
    for rows in (r for r in range(1, n + 1) if n % r == 0):
        for scheme_ok in _scheme_filters(instance):
            def on_mesh(layout: Layout, rows: int = rows, scheme_ok: LayoutFilter = scheme_ok) -> bool:
                return scheme_ok(layout) and (layout[0] == "1d" or layout[1] == rows)

            chosen = layered_dp(instance, on_mesh)
            if chosen is not None:
                tries.append(repair(instance, chosen, on_mesh))
    return _best(instance, tries)


HEURISTICS = {"best_uniform": best_uniform, "greedy": greedy, "mesh_search": mesh_search}
