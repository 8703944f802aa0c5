"""The pass order every exact model of the pipeline shares: the precedence edges, the symmetry
breaking that loses nothing, their transitive closure, and the relabellings that put any schedule
into the form those edges admit.

* :func:`fifo_is_lossless`: FIFO per lane (kind, virtual stage) loses nothing on keep-only
  instances (proof: :mod:`.milp`, (P2)); with recompute or offload only the first lane F(0, j) is
  ordered (a global relabelling of identical micro-batches).
* :func:`successors`, :func:`topological_order`, :func:`reachability`: the direct edges of (P1) and
  (P2) and the passes each pass must end before (transitive closure).
* :func:`fifo_relabel`, :func:`first_lane_relabel`: the same start times under the relabelling of
  (P2) or (P2)(a); times, memory and objective are unchanged.
"""

from __future__ import annotations

from coopt.problem import Solution
from coopt.problems.pipeline.model import Instance, PassKey, Timed, to_solution


def fifo_is_lossless(instance: Instance) -> bool:
    """True when FIFO per (kind, virtual stage) loses nothing: keep-only instances (proof in the
    module docstring, (P2)). With recompute or offload it can lose
    (shipped ``0-p3m3-offload-overtake``: optimum 22, FIFO optimum 23)."""
    return not (instance.allow_recompute or instance.allow_offload)


def successors(instance: Instance, fifo: bool | None = None) -> dict[PassKey, list[PassKey]]:
    """Direct successors of every pass: data-flow edges (P1) and the symmetry-breaking edges (P2):
    FIFO per (kind, k) where it is lossless (``fifo``, default :func:`fifo_is_lossless`), else the
    relabelling edges F(0, j-1) -> F(0, j) only."""
    fifo = fifo_is_lossless(instance) if fifo is None else fifo
    succ: dict[PassKey, list[PassKey]] = {x: [] for x in instance.passes()}
    for x in instance.passes():
        for q, _ in instance.predecessors(x):
            succ[q].append(x)
        kind, k, j = x
        if j > 0 and (fifo or (kind, k) == ("F", 0)):
            succ[(kind, k, j - 1)].append(x)
    return succ


def topological_order(succ: dict[PassKey, list[PassKey]]) -> list[PassKey]:
    """The passes in an order that puts every pass after its predecessors (Kahn)."""
    indegree = dict.fromkeys(succ, 0)
    for targets in succ.values():
        for y in targets:
            indegree[y] += 1
    order = [x for x in succ if indegree[x] == 0]
    for x in order:
        for y in succ[x]:
            indegree[y] -= 1
            if indegree[y] == 0:
                order.append(y)
    return order


def reachability(instance: Instance, fifo: bool | None = None) -> dict[PassKey, set[PassKey]]:
    """For every pass, every pass that must start after it ends (by (P1) and (P2))."""
    succ = successors(instance, fifo)
    order = topological_order(succ)
    reach: dict[PassKey, set[PassKey]] = {}
    for x in reversed(order):
        reach[x] = set()
        for y in succ[x]:
            reach[x] |= {y} | reach[y]
    return reach


def fifo_relabel(instance: Instance, solution: Solution) -> Solution:
    """A keep-only schedule with every lane (kind, k) relabelled FIFO: its i-th pass to start
    becomes micro-batch i's. Same start times, so the same exclusivity, memory profile and
    objective, and the sorted matching keeps every precedence (the proof of (P2)); this is how
    a schedule in which micro-batches overtake becomes a start for the FIFO model."""
    if not fifo_is_lossless(instance):
        raise ValueError("relabelling is lossless only on keep-only instances")
    lanes: dict[tuple[str, int], list[float]] = {}
    for x in solution["passes"]:
        lanes.setdefault((x["kind"], x["stage"]), []).append(x["start"])
    start = {(kind, k, j): t for (kind, k), times in lanes.items() for j, t in enumerate(sorted(times))}
    return to_solution(instance, Timed(start=start, modes={}, d2h={}, h2d={}))


def first_lane_relabel(instance: Instance, solution: Solution) -> Solution:
    """The schedule with its micro-batches renumbered in the order their F(0, j) start (ties by
    number), every pass, mode and copy carried along: the global relabelling of (P2)(a), so the
    same times, memory and objective, and the form whose F(0, j) chain Model P imposes."""
    first = {x["microbatch"]: (x["start"], x["microbatch"])
             for x in solution["passes"] if x["kind"] == "F" and x["stage"] == 0}
    new = {j: i for i, j in enumerate(sorted(first, key=first.__getitem__))}
    return {
        **solution,
        "passes": [{**x, "microbatch": new[x["microbatch"]]} for x in solution["passes"]],
        "recompute": sorted([k, new[j]] for k, j in solution.get("recompute", [])),
        "recompute_layers": sorted([k, new[j], r] for k, j, r in solution.get("recompute_layers", [])),
        "offload": sorted(({**o, "microbatch": new[o["microbatch"]]} for o in solution.get("offload", [])),
                          key=lambda o: (o["stage"], o["microbatch"])),
    }
