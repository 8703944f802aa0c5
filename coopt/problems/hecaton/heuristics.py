"""Hecaton's polynomial heuristics, and the warm start of its exact method.

Each works on the candidate table of :mod:`.dp` (:class:`~coopt.problems.hecaton.dp.Menu`) and
returns a solution the checker recomputes from the instance alone: :func:`repair` cuts a choice's
DRAM stash with the cheapest changes per byte; :func:`best_uniform`, :func:`greedy` and
:func:`mesh_search` build choices and repair them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable

from coopt.problem import NoSolution, Solution
from coopt.problems.hecaton.dp import Layout, LayoutFilter, Menu, _anything, _scheme_filters, layered_dp, menu
from coopt.problems.hecaton.model import (
    Instance,
    Option,
    stash_total,
    to_solution,
    total,
)


def repair(
    instance: Instance, chosen: list[Option], allowed: LayoutFilter = _anything
) -> list[Option] | None:
    """Cut the stash until it fits DRAM: repeatedly apply the single-block change with the least
    objective increase per stash byte saved (re-layout costs included). None if stuck.

    Complexity O((Lambda + moves) log Lambda) heap operations plus O(|O|) per distinct (width,
    option, neighbour layouts) context: the best move of every block sits in a heap; a change only
    alters the best move of its block and the two neighbours, whose entries are replaced (stale
    ones skipped when popped); a block's best move depends on its width, its option and its
    neighbours' layouts only, so it is computed once per such context. Each move strictly lowers
    the stash."""
    chosen = list(chosen)
    need = stash_total(instance, chosen) - instance.stash_capacity
    if need <= 0:
        return chosen
    m = menu(instance)
    kinds = m.kinds.tolist()
    where = [{o: i for i, o in enumerate(row)} for row in m.options]
    usable = [[i for i in range(len(row)) if allowed(row[i].layout)] for row in m.options]
    pick = [where[w][o] for w, o in zip(kinds, chosen, strict=True)]
    layouts = [int(m.layout[w][i]) for w, i in zip(kinds, pick, strict=True)]
    version = [0] * len(chosen)
    moves: dict[tuple[int, int, int, int], tuple[float, int] | None] = {}

    def best_move(block: int) -> tuple | None:
        before = layouts[block - 1] if block > 0 else -1
        after = layouts[block + 1] if block + 1 < len(chosen) else -1
        context = (kinds[block], pick[block], before, after)
        if context not in moves:
            moves[context] = _best_change(m, usable[kinds[block]], *context)
        move = moves[context]
        return None if move is None else (move[0], block, move[1])

    heap = [move + (0,) for move in map(best_move, range(len(chosen))) if move is not None]
    heapq.heapify(heap)
    while need > 0:
        while heap and heap[0][-1] != version[heap[0][1]]:
            heapq.heappop(heap)
        if not heap:
            return None
        _, block, alt, _ = heapq.heappop(heap)
        w = kinds[block]
        need -= int(m.stash[w][pick[block]]) - int(m.stash[w][alt])
        pick[block], layouts[block] = alt, int(m.layout[w][alt])
        for other in (block - 1, block, block + 1):
            if 0 <= other < len(chosen):
                version[other] += 1
                move = best_move(other)
                if move is not None:
                    heapq.heappush(heap, move + (version[other],))
    return [m.options[w][i] for w, i in zip(kinds, pick, strict=True)]


def _best_change(m: Menu, usable: list[int], width: int, current: int, before: int, after: int
                 ) -> tuple[float, int] | None:
    """(objective increase per stash byte saved, option index) of the best single change of a block
    of ``width`` running option ``current`` between neighbours of layouts ``before`` and ``after``
    (-1: none); None when no allowed option saves stash. Ties go to the first option in sorted
    order."""
    stash, value, layout = m.stash[width], m.value[width], m.layout[width]

    def relayout(a: int) -> float:
        return (m.tau[before, a] if before >= 0 else 0.0) + (m.tau[a, after] if after >= 0 else 0.0)

    base = value[current] + relayout(layout[current])
    best = None
    for alt in usable:
        saved = int(stash[current]) - int(stash[alt])
        if saved > 0:
            key = (float((value[alt] + relayout(layout[alt]) - base) / saved), alt)
            if best is None or key < best:
                best = key
    return best


def _cheapest(instance: Instance, allowed: LayoutFilter) -> list[Option] | None:
    """Every block's cheapest allowed option on its own (None: some block has none)."""
    m = menu(instance)
    mask = m.mask(allowed)
    pick = []
    for w in range(len(m.options)):
        usable = [i for i in range(len(m.options[w])) if mask[m.layout[w][i]]]
        pick.append(min(usable, key=lambda i, w=w: (m.value[w][i], i)) if usable else None)
    if any(pick[w] is None for w in set(m.kinds.tolist())):
        return None
    return [m.options[w][pick[w]] for w in m.kinds]


def _best_repaired(
    instance: Instance, start: Callable[[Instance, LayoutFilter], list[Option] | None]
) -> Solution:
    """Per scheme filter (one under ``one_scheme`` per scheme, else one), ``start``'s choice with its
    stash repaired; the best of them."""
    tries = []
    for allowed in _scheme_filters(instance):
        chosen = start(instance, allowed)
        if chosen is not None:
            tries.append(repair(instance, chosen, allowed))
    return _best(instance, tries)


def _best(instance: Instance, tries: Iterable[list[Option] | None]) -> Solution:
    found = [t for t in tries if t is not None]
    if not found:
        raise NoSolution("no option fits SRAM and DRAM")
    return to_solution(instance, min(found, key=lambda chosen: total(instance, chosen)))


def best_uniform(instance: Instance, seed: int = 0) -> Solution:
    """One layout (scheme and mesh) for every block, the cheapest micro-batching and recompute per
    block inside it, stash repaired inside the layout; the best layout wins.

    Guarantee: feasible when returned; optimal when every block shares one layout in some optimum
    and the stash row is slack. Complexity O(A (Lambda + |O|)) plus A repairs. Source: notes
    section 1.c H1 (the Hecaton vs Megatron vs SUMMA table)."""
    del seed  # deterministic
    tries = []
    for layout in menu(instance).layouts:
        def inside(candidate: Layout, layout: Layout = layout) -> bool:
            return candidate == layout

        chosen = _cheapest(instance, inside)
        if chosen is not None:
            tries.append(repair(instance, chosen, inside))
    return _best(instance, tries)


def greedy(instance: Instance, seed: int = 0) -> Solution:
    """Each block takes its cheapest option on its own; re-layouts are then paid as they fall and
    the stash is repaired greedily (best objective increase per byte saved).

    Guarantee: feasible when returned; optimal when re-layouts vanish and the stash row is slack.
    Complexity O(Lambda + |O|) plus the repair. Source: notes section 1.c H2."""
    del seed
    return _best_repaired(instance, _cheapest)


def mesh_search(instance: Instance, seed: int = 0) -> Solution:
    """For every factorization r x c of N: the layered DP over the layouts that mesh allows (agrs on
    r x c, summa if square, 1d), then stash repair; the best mesh wins.

    Guarantee: feasible when returned; optimal when some optimum uses a single mesh and the stash
    row is slack. Complexity O(d(N) Lambda (A^2 + |O|)) plus d(N) repairs, d(N) the divisor count.
    Source: notes section 1.c H3 (mesh-factor search for the AGRS scheme)."""
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


def warm_start(instance: Instance) -> Solution:
    """The exact method's first upper bound: the layered DP's optimum (DRAM row dropped) with its
    stash repaired (:func:`repair`), per scheme under ``one_scheme``; the best one. Raises
    NoSolution when no repair fits DRAM. Complexity O(Lambda (A^2 + |O|)) plus the repairs."""
    return _best_repaired(instance, layered_dp)


HEURISTICS = {"best_uniform": best_uniform, "greedy": greedy, "mesh_search": mesh_search}
