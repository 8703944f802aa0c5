"""A dual bound for the pipeline problem at any size, without the MILP (``--method bound``).

The bound is the largest of the valid lower bounds below; each holds for every schedule the
checker accepts, so none can cut off an optimum.

* **Critical path**: the longest path through the precedence graph (P1) plus the lossless
  symmetry-breaking edges of Model P (P2: FIFO on keep-only instances, the F(0, j) chain
  otherwise; both keep some optimum, see :mod:`.milp`; the edges are :mod:`.order`'s), with
  keep-mode durations (a mode only lengthens a pass) and lags. Model P's LP relaxation contains
  the same edges, so this part alone is what the LP gets from precedence.
* **Device load**: device d cannot start before the forwards of the stages in front of its
  first chunk have run (``head_d``), then runs its whole load, and on a fused backward the
  upstream backwards of the micro-batch it finishes last still follow (``tail_d``). This is
  Model P's load cut (P7) with the tail added.
* **Memory fill** (keep-only, one chunk per device): on stage s every micro-batch holds at least
  ``a_s`` from its F's start to its B's end, an interval no shorter than the round trip
  ``R_s = sum_{k >= s} (T_F + T_B) + 2 (p - 1 - s) c``. At most ``n_s = floor(cap_s / a_s)`` such
  intervals overlap (releases come first at equal times), so by colouring the interval graph
  with ``n_s`` colours some colour holds ``ceil(m / n_s)`` disjoint intervals:
  ``C >= head_s + ceil(m / n_s) R_s + tail_s`` and ``span >= ceil(m / n_s) R_s``.
* **Memory-aware release times** (:func:`releases`; keep-only, one chunk per device):
  a lower bound ``r_x`` on the start of every pass in every FIFO schedule, hence (FIFO is
  lossless there, Model P's (P2)) a lower bound on the makespan of every schedule:
  ``C >= max_x r_x + d_x``. Micro-batches are taken in order j = 0..m-1 and, within j, along
  the data flow F(0..K-1), B(K-1..0), W; each pass starts no earlier than its data-flow
  predecessor's end plus lag and its lane predecessor's end (FIFO), and a forward F(s, j) also
  no earlier than its **memory rule**: in a FIFO schedule the B ends ``b_i`` and W ends ``w_i``
  of stage s grow with i, and at F(s, j)'s start ``f`` only micro-batches i < j hold memory
  (later forwards start later, durations are positive), i holding ``a`` while ``b_i > f``,
  ``a_W`` while ``b_i <= f < w_i`` (releases first at equal times). So the micro-batches still
  in their F..B window are the last ``x`` before j and those not yet past W the last ``y >= x``;
  the level ``x a + (y - x) a_W + a`` must fit the cap, and ``b_{j-x-1} <= f``, ``w_{j-y-1} <= f``.
  Hence ``f >= min over the (x, y) that fit of max(b_{j-x-1}, w_{j-y-1})`` (terms with a
  negative index drop; no (x, y) fits: infeasible). Every step is monotone in the lower bounds
  it reads, so replacing b and w by their lower bounds keeps it a lower bound. For fixed x the
  largest y that fits is best (w grows with i), so each F costs O(n_s). This bound contains
  the memory fill (``f_j >= b_{j - n_s} >= f_{j - n_s} + R_s``), the a_W held until W, the
  head before stage s and the chain after it, and the interplay of every stage's cap along one
  micro-batch's path.
* **Memory-aware tails** (:func:`tails`): the mirror, a lower bound ``q_x`` on ``C - S_x``: the
  longest path from x's start to a sink's end, and at the ends of B and W the cap read
  backwards. Just before B(s, j) ends, j holds ``a`` and so does every later micro-batch whose
  F has started (its B ends later): at most ``n_s - 1`` of them, so F(s, j + n_s) starts no
  earlier than B(s, j) ends and ``C - b_j >= q_F(s, j + n_s)``. Just before W(s, j) ends, the
  earlier micro-batches have released everything (their W ended earlier), j holds ``a_W``, and
  the later ones whose F has started, j+1..j+z (a prefix), hold ``a`` while before their B end
  (the last u of them, b grows with i) and ``a_W`` after: ``a_W (1 + z - u) + a u`` fits the cap,
  F(s, j+z+1) starts no earlier than ``w_j`` and, if u >= 1, B(s, j+z-u+1) ends no earlier. So
  ``C - w_j >= min over the (z, u) that fit of max(q_F(s, j+z+1), q_B(s, j+z-u+1) - T_B)``, the
  largest z that fits being best for each u. ``C >= r_x + q_x`` for every pass x.
* **Single machine with release times**: device d runs every pass x whose release ``r_x`` is at
  least t after t, and the last of them is followed by at least its tail ``q_x`` (the longest
  path from its end to a sink): ``C >= t + sum_{r_x >= t} d_x + min_{r_x >= t} q_x`` for every
  release t on d.

* **Memory exclusion with modes** (any modes; a cap). Write ``room`` for device d's cap with its
  tolerance, and for virtual stage k the keep-mode round trip ``R_k`` (F(k, j)'s start to B(k, j)'s
  end along the data flow, lags included), the modes an item may take (keep; recompute r of L
  layers; offload), each with what F allocates at its start, the least level ``l`` it holds until
  B starts (``a``; ``a - r (a - a_c) / L``; ``a - a_o`` between the copies) and the least extra
  hold length ``e`` (0; ``r T_R / L``; ``max(0, T_F + tau_d + tau_u + T_B - R_k)``). Every mode
  holds all of ``a`` while its B runs, and ``a_W`` from B's end to W's end. Two intervals of two
  items whose levels add up to more than ``room`` cannot overlap (where two half-open intervals
  overlap, the later start is an event at which both are held). Three bounds follow; each is 0
  where its condition fails.

  - *Hold chain* (stage k with ``a + h > room``, ``h`` the least ``l`` over the modes): two holds
    ``[S_F, E_B)`` of k are disjoint (Model M's (M7): while B(k, i) runs no other hold of k may
    contain it, so the earlier B ends before the later hold starts). If the later item j
    allocates ``alloc`` with ``alloc + a_W > room``, F(k, j) also waits for the earlier items' W
    (releases come first), ``T_W`` after their B end. So the m holds, each at least ``R_k + e``,
    follow each other with a gap of ``T_W`` before every such item but the first:
    ``C >= min_j r_F(k, j) + m R_k + min e + (m - 1) min_mode(e + T_W [alloc + a_W > room]) +
    min_j (q_B(k, j) - T_B)``.
  - *Big pieces* (device d): with ``t = max(room / 2, room - min a_W)`` (``room / 2`` where some
    stage of d has no ``a_W`` or the backward is fused) every interval in which an item holds more
    than ``t`` excludes every other such interval and every W pass of d (its item holds ``a_W``):
    B (all of ``a``), the time from F to B where ``l > t``, and an offloaded item's two copy
    windows ``[S_F, E_D)`` and ``[S_U, E_B)`` (``a`` each) where ``a > t``. They and the W passes
    lie between the first release of a forward on d and C, one after another:
    ``C >= min r_F + sum over items of min_mode(big length) + m sum T_W``. With one stage on d
    whose ``a`` exceeds ``t``, no W but the one of the item whose B ends last can run after that
    B starts (an earlier item holding ``a_W`` then would exceed the cap), so the time after it is
    ``min_j q_B - T_B`` instead of that W.
  - *Solid union* (stage k alone on its device, ``2a > room``, ``a + a_W > room``): an item's hold
    is *solid* where ``a + l > room`` (the chain's argument: solid holds are pairwise disjoint,
    and disjoint from every window where another item holds ``a``). Per item keep the solid
    hold, else the windows at level ``a`` (B; an offloaded item's copy windows), plus every W
    pass but the last: pairwise disjoint, except that a W may run inside a solid hold whose
    level leaves room for ``a_W``, and only in the part where the device is free and the item
    holds ``l`` (while away, for ``A = R_k - T_F - T_B`` at least; between the copies). With
    ``base`` the length that hosts no W and ``away`` the part that may, the union is at least
    ``sum base + max((m - 1) T_W, sum away)``, whatever W runs where (a W inside a hold lengthens
    nothing only up to the hold's ``away``). For any ``lam`` in [0, 1] that is at least
    ``lam (m - 1) T_W + m min_mode(base + (1 - lam) away)`` (the maximum of two numbers is at
    least any of their convex combinations); the bound takes the best of 101 values of ``lam``
    and, as for big pieces, ``min_j q_B - T_B`` after the last B.

* **Device warm-up** (:func:`warm_up`; any chunks and placement, no offload, a cap, recompute
  off or of whole items with ``T_R >= T_F``). Device d's first backward, of any of its virtual
  stages and any micro-batch, starts no earlier than ``b_d = min_{k on d} b(k)``, ``b(k)`` the
  data flow F(0..K-1), B(K-1..k+1) with keep-mode durations (the least) and lags. Before it d can
  run forwards only (B and W need a B of d), none before ``h_d``, the earliest start of a forward
  of d. Every forward started before ``b_d`` has ended when that B starts (one pass at a time)
  and none has released (only a B's or a W's end releases), so at the start of the last of them
  the device holds all of them: at most ``n_d = floor(room / a)`` kept (a chunk of d holds ``a``,
  the device's activation over its chunks), and ``r`` more recomputed. Work done before ``b_d``
  is at most ``min(b_d - h_d, (n_d + r) T_F)``; the device's work is its keep-mode load plus at
  least ``r T_R >= r T_F``, so ``C >= b_d + load_d - min(b_d - h_d, n_d T_F)``. On the LLaMA file
  (p = 8, m = 32, six activations fit stage 0) this is 0.4897 + 3.0587 - 0.1912 = 3.357 s; on its
  V twin (two chunks, 13 chunk activations fit a device) device 7, whose first B is B(8, j) at
  16 T_F + 7 T_B + 21 lags = 0.3751 s, gives 0.3751 + 3.0587 - 0.2071 = 3.2267 s.
* **Stage idle** (:func:`stage_idle`; the warm-up's conditions but ``T_R >= T_F``). The warm-up
  and a cool-down on one device d, with the recompute they may use paid once. Write ``N = m v``
  for d's items, ``g = min_{k on d} (R_k - T_F - T_B)`` for the least time from F(k, j)'s end to
  B(k, j)'s start (the data flow through the later virtual stages, lags included).
  *Cool-down*: if some forward of d starts at or after ``b_d``, so does the last one, F*; after
  it ends, its own B waits at least ``g``, and in that window d runs only B and W passes of other
  items (no forward is left). A B there belongs to an item that held its F-level at F*'s start
  (its B had not started; one pass at a time): ``a`` kept, ``a_c`` recomputed; a W there to such
  an item or to one that held ``a_W`` at F*'s start (B ended, W not started; releases first).
  F*'s start is an allocation the cap checks: ``alloc* + x_k a + x_r a_c + y a_W <= room``, so the
  work available in the window is at most ``x_k (T_B + T_W) + x_r (T_B + T_R + T_W) + y T_W``
  and d idles at least ``g`` minus that there, after ``b_d``. *Warm-up*: with ``n`` of the
  forwards before ``b_d`` recomputed, at most ``n + floor((room - n a_c) / a)`` (and at most N)
  run before it. *Recompute paid once*: the ``n`` warm-up items, the ``x_r`` pending ones and F*
  (if it recomputes, ``alloc* = a_c``) are recomputed items of d, F* distinct from both sets, so
  at least ``max(n, x_r) + [F* recomputes]`` of them each add ``T_R`` to d's load. So ``C >= load_d
  + min over (n, x_r, F*'s mode) of (recompute time + (b_d - work before b_d) + cool-down idle)``,
  where for a given n that lets all N forwards run before ``b_d`` the cool-down term is dropped
  (F* may then precede ``b_d``). The minimum runs over every n and x_r that can change it: beyond
  the first n whose forwards fill ``[h_d, b_d]`` a larger n only adds recompute time (except the
  first n that lets all N forwards run early, which is kept), and beyond the first x_r whose
  pending work covers ``g`` the idle is 0. Without recompute it is the warm-up plus the cool-down
  idle; with ``T_R >= T_F`` it is at least the warm-up bound (each warm-up recompute fills at most
  what it costs). The two windows are the bubbles at both ends of a pipeline schedule (warm-up
  and cool-down, as drawn for 1F1B and Zero Bubble by Qi et al., ICLR 2024); the memory-limited
  one-device accounting is ours.

* **Weight-pass cool-down** (:func:`w_tail_idle`; a cap, split backward, ``a_W > 0``, any modes,
  chunks and placement). Let S be the start of the last B on device d, of item j* on virtual
  stage k*, and E its end. Every other item of d has passed its B by S (one pass at a time), so
  at S it holds nothing or, if its W has not ended, ``a_W`` (B's end releases the rest, whatever
  the mode); j* holds all of ``a`` (a recomputed item re-materialises at B's start, an offloaded
  one has been reloaded). S is an event the cap checks after the releases at S, so at most
  ``y = floor((room - min a) / min a_W)`` W passes are pending at S, and after E the device runs
  only those and j*'s own: at most ``(y + 1) max T_W``. After E the data flow of j* still needs
  ``q``: the upstream B(k*-1, j*) ... with their lags, and the W after each (the least over the
  stages of d). So ``[E, C]`` holds at least ``q - (y + 1) max T_W`` of idle time on d, after
  every other idle window the bounds above count on d (those end at or before the last forward's
  B, which starts at S at the latest), and ``C >= head_d + load_d + idle`` and ``C >= (stage idle
  bound of d) + idle``. On the generator's recompute p = 6 seed 2 (device 5: head 6, load 96,
  ``q`` = 12, two W pending at most, ``T_W`` = 2) this is 6 + 96 + 6 = 108, where the rest give 102.

For the per-stage span objective the bound is the largest of the device loads, the memory fill
and the chain from a device's first forward to its last pass. O(n + edges) for n passes, plus
O(m K n_s) for the release times.
"""

from __future__ import annotations

import math
from typing import Any

from coopt.problems.pipeline.model import Instance, PassKey
from coopt.problems.pipeline.order import fifo_is_lossless, successors, topological_order

#: Times per pass (release times, tails), in seconds.
Times = dict[PassKey, float]


def _lag(instance: Instance, x: PassKey, y: PassKey) -> float:
    """The lag on edge x -> y (only data-flow edges between devices carry one)."""
    for q, lag in instance.predecessors(y):
        if q == x:
            return lag
    return 0.0


def _longest_paths(instance: Instance, sources: list[PassKey] | None = None) -> dict[PassKey, float]:
    """Earliest end of every pass in the precedence graph with the lossless edges (from time 0,
    or, with ``sources``, from the start of the first of them that reaches it; unreached passes
    are absent)."""
    succ = successors(instance)
    order = topological_order(succ)
    start: dict[PassKey, float] = {x: 0.0 for x in (sources if sources is not None else order)}
    end: dict[PassKey, float] = {}
    for x in order:
        if x not in start:
            continue
        end[x] = start[x] + instance.duration(x)
        for y in succ[x]:
            start[y] = max(start.get(y, 0.0), end[x] + _lag(instance, x, y))
    return end


def _head(instance: Instance, d: int) -> float:
    first = min(instance.stages_on(d))
    return sum(instance.t_f(k) + instance.lag(k, k + 1) for k in range(first))


def _tail(instance: Instance, d: int) -> float:
    """Time after device d's last pass: none when it may be a W; on a fused backward the last
    pass is some B(k, j) of d, after which B(k-1, j) ... B(0, j) follow."""
    if instance.split_backward:
        return 0.0
    first = min(instance.stages_on(d))
    return sum(instance.t_b(k) + instance.lag(k + 1, k) for k in range(first))


def _room(instance: Instance, s: int) -> int:
    """n_s = floor(cap_s / a_s): how many micro-batches' activations stage s holds at once."""
    return math.floor(instance.cap(s) / instance.a(s) * (1 + 1e-12))


def _fill(instance: Instance, s: int) -> float | None:
    """ceil(m / n_s) R_s, the memory fill of stage s (keep-only, one chunk; else None)."""
    if instance.allow_recompute or instance.allow_offload or instance.chunks != 1:
        return None
    cap = instance.cap(s)
    if math.isinf(cap):
        return None
    room = _room(instance, s)
    if room < 1:
        return math.inf  # not even one micro-batch fits: infeasible
    trip = sum(instance.t_f(k) + instance.t_b(k) for k in range(s, instance.stages))
    trip += 2 * (instance.stages - 1 - s) * instance.lag_s
    return math.ceil(instance.microbatches / room) * trip


def memory_rule_applies(instance: Instance) -> bool:
    """The memory rule of :func:`releases` holds: keep-only (FIFO lossless), one chunk per device."""
    return fifo_is_lossless(instance) and instance.chunks == 1 and instance.memory_cap_bytes is not None


def _memory_rule(instance: Instance, k: int, j: int, end: dict[PassKey, float]) -> float:
    """Earliest start of F(k, j) that its stage's cap allows, given lower bounds on the B and W
    ends of the micro-batches before j (module docstring); inf when not one micro-batch fits."""
    room = instance.cap_room(k)
    a, a_w = instance.a(k), instance.a_w(k)
    best = math.inf
    x = 0
    while x <= j and (x + 1) * a <= room:
        y = j if a_w == 0 else min(j, x + math.floor((room - (x + 1) * a) / a_w))
        t = end[("B", k, j - x - 1)] if j - x - 1 >= 0 else 0.0
        if a_w and j - y - 1 >= 0:
            t = max(t, end[("W", k, j - y - 1)])
        best = min(best, t)
        x += 1
    return best


def releases(instance: Instance, memory: bool = True) -> dict[PassKey, float]:
    """A lower bound on the start of every pass (module docstring): the earliest start in the
    precedence graph with the lossless edges, and with ``memory`` where
    :func:`memory_rule_applies`, with every forward also held back by its stage's cap."""
    if not (memory and memory_rule_applies(instance)):
        end = _longest_paths(instance)
        return {x: end[x] - instance.duration(x) for x in end}
    K, m = instance.virtual_stages, instance.microbatches
    start: dict[PassKey, float] = {}
    end: dict[PassKey, float] = {}

    def put(x: PassKey, preds: list[tuple[PassKey, float]], t: float = 0.0) -> None:
        kind, k, j = x
        if j > 0:
            preds = [*preds, ((kind, k, j - 1), 0.0)]  # FIFO per lane
        start[x] = max([t] + [end[q] + lag for q, lag in preds])
        end[x] = start[x] + instance.duration(x)

    for j in range(m):
        for k in range(K):
            put(("F", k, j), instance.predecessors(("F", k, j)), _memory_rule(instance, k, j, end))
        for k in reversed(range(K)):
            put(("B", k, j), instance.predecessors(("B", k, j)))
        if instance.split_backward:
            for k in range(K):
                put(("W", k, j), instance.predecessors(("W", k, j)))
    return start


def _tail_rules(instance: Instance, k: int, j: int, kind: str, tail: dict[PassKey, float]) -> float:
    """The mirror of :func:`_memory_rule`: a lower bound on the time from the end of B(k, j)
    or W(k, j) to the makespan that stage k's cap forces (module docstring), given the tails
    (from their starts) of the passes of micro-batches after j."""
    room = instance.cap_room(k)
    a, a_w, m = instance.a(k), instance.a_w(k), instance.microbatches

    def f_tail(i: int) -> float:
        return tail[("F", k, i)] if i < m else 0.0

    if kind == "B":
        # just before b_j the micro-batches after j whose F started hold a each
        n = math.floor(room / a)
        return f_tail(j + n) if n else math.inf  # no forward fits: no schedule, as in _memory_rule
    if not a_w:
        return 0.0
    best = math.inf
    u = 0
    while u <= m - 1 - j and a_w + u * a <= room:
        z = min(m - 1 - j, u + math.floor((room - a_w - u * a) / a_w))
        t = f_tail(j + z + 1)
        if u:
            b = ("B", k, j + z - u + 1)
            t = max(t, tail[b] - instance.duration(b))
        best = min(best, t)
        u += 1
    return best


def tails(instance: Instance, memory: bool = True) -> dict[PassKey, float]:
    """A lower bound on the time from the *start* of every pass to the makespan: the longest
    path from it to the end of a sink in the precedence graph with the lossless edges
    (keep-mode durations and lags), and with ``memory`` where :func:`memory_rule_applies`, with
    the mirror of the memory rule at the ends of B and W (module docstring)."""
    succ = successors(instance)
    tail: dict[PassKey, float] = {}
    rule = memory and memory_rule_applies(instance)
    if rule:
        K, m = instance.virtual_stages, instance.microbatches
        order = []
        for j in reversed(range(m)):
            if instance.split_backward:
                order += [("W", k, j) for k in reversed(range(K))]
            order += [("B", k, j) for k in range(K)]
            order += [("F", k, j) for k in reversed(range(K))]
    else:
        order = list(reversed(topological_order(succ)))
    for x in order:
        after = max((tail[y] + _lag(instance, x, y) for y in succ[x]), default=0.0)
        if x[0] != "F" and rule:
            after = max(after, _tail_rules(instance, x[1], x[2], x[0], tail))
        tail[x] = instance.duration(x) + after
    return tail


def round_trip(instance: Instance, k: int) -> float:
    """The least time from F(k, j)'s start to B(k, j)'s end: the data-flow path through the later
    virtual stages with keep-mode durations and lags (the same for every micro-batch)."""
    K = instance.virtual_stages
    trip = sum(instance.t_f(i) + instance.t_b(i) for i in range(k, K))
    return trip + 2 * sum(instance.lag(i, i + 1) for i in range(k, K - 1))


def _modes(instance: Instance, k: int) -> list[tuple[float, float, float]]:
    """Per memory mode an item of virtual stage ``k`` may take (keep, each recompute count, offload):
    what F allocates at its start, the least level held between F's start and B's start, and the
    least extra length of the hold ``[S_F, E_B)`` over the keep-mode round trip. Every mode holds
    all of ``a`` while its B runs."""
    a, trip = instance.a(k), round_trip(instance, k)
    modes = [(a, a, 0.0)]
    if instance.allow_recompute:
        L = instance.layers(k)
        share = (a - instance.a_c(k)) / L
        modes += [(a - r * share, a - r * share, r * instance.t_r(k) / L) for r in range(1, L + 1)]
    if instance.allow_offload:
        copies = instance.t_f(k) + instance.tau_d(k) + instance.tau_u(k) + instance.t_b(k)
        modes.append((a, a - instance.a_o(k), max(0.0, copies - trip)))
    return modes


def _hold_chain(instance: Instance, k: int, release: Times, tail: Times) -> float:
    """The hold chain of virtual stage ``k`` (module docstring); 0 where it does not apply."""
    d = instance.device(k)
    room, a, a_w, m = instance.cap_room(d), instance.a(k), instance.a_w(k), instance.microbatches
    modes = _modes(instance, k)
    if a + min(level for _, level, _ in modes) <= room:
        return 0.0  # two holds may overlap
    w = instance.t_w(k) if instance.split_backward else 0.0
    first = min(ext for _, _, ext in modes)
    step = min(ext + (w if alloc + a_w > room else 0.0) for alloc, _, ext in modes)
    head = min(release[("F", k, j)] for j in range(m))
    after = min(tail[("B", k, j)] - instance.t_b(k) for j in range(m))
    return head + m * round_trip(instance, k) + first + (m - 1) * step + after


def _big_pieces(instance: Instance, d: int, release: Times, tail: Times) -> float:
    """The big-piece energy of device ``d`` (module docstring); 0 where it does not apply."""
    room, m = instance.cap_room(d), instance.microbatches
    stages = instance.stages_on(d)
    a_ws = [instance.a_w(k) for k in stages]
    with_w = instance.split_backward and min(a_ws) > 0
    threshold = max(room / 2, room - min(a_ws)) if with_w else room / 2
    total = 0.0
    for k in stages:
        a, trip = instance.a(k), round_trip(instance, k)
        t_f, t_b = instance.t_f(k), instance.t_b(k)
        least = []
        for alloc, level, ext in _modes(instance, k):
            if level == alloc:  # keep or recompute: F allocates the level it holds until B
                piece = (trip - t_b if level > threshold else 0.0) + (t_b + ext if a > threshold else 0.0)
            else:  # offload: all of a until D2H ends and from H2D's start, the rest between
                piece = trip + ext if level > threshold else (
                    t_f + instance.tau_d(k) + instance.tau_u(k) + t_b if a > threshold else 0.0)
            least.append(piece)
        total += m * (min(least) + (instance.t_w(k) if with_w else 0.0))
    head = min(release[("F", k, j)] for k in stages for j in range(m))
    after = 0.0 if with_w else min(tail[("B", k, j)] - instance.t_b(k) for k in stages for j in range(m))
    if with_w and len(stages) == 1 and instance.a(stages[0]) > threshold:  # the last B
        k = stages[0]
        after = min(tail[("B", k, j)] - instance.t_b(k) for j in range(m)) - instance.t_w(k)
    return head + total + after


def _solid_union(instance: Instance, k: int, release: Times, tail: Times) -> float:
    """The solid-union bound of virtual stage ``k`` alone on its device (module docstring); 0 where
    it does not apply."""
    d, m = instance.device(k), instance.microbatches
    room, a, a_w = instance.cap_room(d), instance.a(k), instance.a_w(k)
    if instance.chunks != 1 or not instance.split_backward or not a_w or 2 * a <= room or a + a_w <= room:
        return 0.0
    trip, t_f, t_b, t_w = round_trip(instance, k), instance.t_f(k), instance.t_b(k), instance.t_w(k)
    terms = []  # (base, away) per mode
    for alloc, level, ext in _modes(instance, k):
        pieces = t_f + instance.tau_d(k) + instance.tau_u(k) + t_b if level != alloc else t_b + ext
        if a + level <= room:  # not solid: only the pieces at level a
            terms.append((pieces, 0.0))
        elif level + a_w > room:  # solid, and no W inside
            terms.append((trip + ext, 0.0))
        elif level != alloc:  # solid offload: W only between the copies
            terms.append((pieces, trip + ext - pieces))
        else:  # solid recompute: W only while the item is away
            terms.append((t_f + t_b + ext, trip - t_f - t_b))
    best = 0.0
    for step in range(101):
        lam = step / 100
        best = max(best, lam * (m - 1) * t_w + m * min(base + (1 - lam) * away for base, away in terms))
    after = min(tail[("B", k, j)] - t_b for j in range(m))
    return min(release[("F", k, j)] for j in range(m)) + best + after


def _single_machine(instance: Instance, release: Times, tail: Times) -> float:
    """max over devices d and releases t on d of t + (work released at t or later) + the least
    time after it (tail from the start minus the duration)."""
    best = 0.0
    for d in range(instance.stages):
        on = sorted((x for x in release if instance.device(x[1]) == d), key=release.__getitem__)
        work, least = 0.0, math.inf
        for x in reversed(on):
            work += instance.duration(x)
            least = min(least, tail[x] - instance.duration(x))
            best = max(best, release[x] + work + least)
    return best


def _device_load(instance: Instance, d: int) -> float:
    """Device ``d``'s work in keep mode: the durations of its passes (a mode only adds to them)."""
    return sum(instance.duration(x) for x in instance.passes() if instance.device(x[1]) == d)


def _first_backward(instance: Instance, k: int) -> float:
    """The earliest start of any B(k, j): F(0..K-1), then B(K-1..k+1), keep-mode durations and
    lags (the same for every micro-batch)."""
    K = instance.virtual_stages
    down = sum(instance.t_f(i) for i in range(K)) + sum(instance.lag(i, i + 1) for i in range(K - 1))
    return down + sum(instance.t_b(i) + instance.lag(i, i - 1) for i in range(k + 1, K))


def _stage_head(instance: Instance, k: int) -> float:
    """The earliest start of any F(k, j): F(0..k-1) with their lags."""
    return sum(instance.t_f(i) + instance.lag(i, i + 1) for i in range(k))


def _idle_applies(instance: Instance) -> bool:
    """The common conditions of :func:`warm_up` and :func:`stage_idle`: a cap, the makespan, no
    offload, recompute (if allowed) of whole items only."""
    return (instance.memory_cap_bytes is not None and instance.objective == "makespan"
            and not instance.allow_offload and not instance.partial_recompute)


def _kept_at_once(room: float, a: float) -> int:
    """The most items of activation ``a`` the checker accepts together in ``room``, rounded
    generously (a larger count only weakens the bounds that use it)."""
    return math.floor(room / a * (1 + 1e-12))


def warm_up(instance: Instance) -> float:
    """The device warm-up bound of the module docstring (0 where its conditions fail)."""
    if not _idle_applies(instance):
        return 0.0
    if instance.allow_recompute and any(instance.t_r(k) < instance.t_f(k)
                                        for k in range(instance.virtual_stages)):
        return 0.0
    best = 0.0
    for d in range(instance.stages):
        on = instance.stages_on(d)
        a = min(instance.a(k) for k in on)
        if a <= 0:
            continue
        first_b = min(_first_backward(instance, k) for k in on)
        head = min(_stage_head(instance, k) for k in on)
        load = _device_load(instance, d)
        n = min(_kept_at_once(instance.cap_room(d), a), instance.microbatches * len(on))
        best = max(best, first_b + load - min(first_b - head, n * max(instance.t_f(k) for k in on)))
    return best


def _cool_down_idle(room: float, alloc: float, others: int, gap: float, a: float, a_w: float,
                    fill_b: float, fill_w: float) -> float:
    """The least idle time of a device in the ``gap`` after its last forward ends (module
    docstring, *stage idle*): at that forward's start it allocates ``alloc`` and the ``others``
    items hold ``room - alloc`` at most, ``a`` per kept item whose B (and W, ``fill_b``) may
    still run, ``a_w`` per item whose W (``fill_w``) may; ``inf`` where ``alloc`` alone does not
    fit."""
    rest = room - alloc
    if rest < -1e-12 * room:
        return math.inf
    rest = max(rest, 0.0) * (1 + 1e-12) + 1e-12 * room  # rounded generously: more fits, less idle
    most = 0.0
    kept = 0
    while kept <= others and kept * a <= rest:
        left = others - kept
        w = left if a_w <= 0 else min(left, math.floor((rest - kept * a) / a_w))
        most = max(most, kept * fill_b + w * fill_w)
        if most >= gap:
            return 0.0
        kept += 1
    return gap - most


def stage_idle(instance: Instance) -> float:
    """The warm-up and cool-down bound of the module docstring (*stage idle*; 0 where its
    conditions fail)."""
    if not _idle_applies(instance):
        return 0.0
    best = 0.0
    for d in range(instance.stages):
        best = max(best, _device_idle(instance, d))
    return best


def _device_idle(instance: Instance, d: int) -> float:
    """C >= load + least (recompute cost + warm-up idle + cool-down idle) on device ``d``."""
    on = instance.stages_on(d)
    room, total = instance.cap_room(d), instance.microbatches * len(on)
    a, t_f = min(instance.a(k) for k in on), max(instance.t_f(k) for k in on)
    a_w = min(instance.a_w(k) for k in on)
    fill_b = max(instance.t_b(k) + instance.t_w(k) for k in on)
    fill_w = max(instance.t_w(k) for k in on)
    recompute = instance.allow_recompute
    a_c = min(instance.a_c(k) for k in on) if recompute else 0.0
    t_r = min(instance.t_r(k) for k in on) if recompute else math.inf
    fill_r = max(instance.t_b(k) + instance.t_r(k) + instance.t_w(k) for k in on) if recompute else 0.0
    if a <= 0:
        return 0.0
    load = _device_load(instance, d)
    first_b = min(_first_backward(instance, k) for k in on)
    head = min(_stage_head(instance, k) for k in on)
    # the least time F(k, j)'s end leaves B(k, j)'s start, over the stages of d
    gap = min(round_trip(instance, k) - instance.t_f(k) - instance.t_b(k) for k in on)

    # warm-up: n recomputed forwards before first_b (0 without recompute); whether all of the
    # device's forwards may lie before it
    warm: list[tuple[int, float, bool]] = []  # (n, time before the work after first_b, all before)
    n, settled = 0, False
    while n <= total and (n == 0 or (recompute and n * a_c <= room * (1 + 1e-12))):
        count = min(total, n + max(0, _kept_at_once(room - n * a_c, a)))
        before = first_b - min(first_b - head, count * t_f)
        if not settled or count >= total:
            warm.append((n, before, count >= total))
        if count >= total:
            break
        # once the forwards fill [head, first_b], a larger n only adds recompute time, except
        # where it lets every forward run before first_b (the first such n is kept)
        settled = settled or count * t_f >= first_b - head
        n += 1
    # cool-down: x recomputed items pending at the last forward's start, f = 1 if it recomputes
    cool: dict[tuple[int, int], float] = {}
    for f in (0, 1) if recompute else (0,):
        x = 0
        while x <= total - 1:
            alloc = (a_c if f else a) + x * a_c
            idle = _cool_down_idle(room, alloc, total - 1 - x, gap, a, a_w, fill_b, fill_w)
            idle = max(0.0, idle - x * fill_r) if math.isfinite(idle) else idle
            cool[f, x] = idle
            if idle <= 0 or not recompute or math.isinf(idle):
                break
            x += 1
    best = math.inf
    for n, before, all_before in warm:
        if all_before:
            best = min(best, (n * t_r if n else 0.0) + before)
            continue
        for (f, x), idle in cool.items():
            r = max(n, x) + f
            best = min(best, (r * t_r if r else 0.0) + before + idle)
    return load + best if math.isfinite(best) else math.inf


def _tail_after_backward(instance: Instance, k: int) -> float:
    """The longest data-flow path from the end of any B(k, j) to a sink's end, off k's own W: the
    upstream backwards with their lags, each followed by its W (keep-mode durations)."""
    best = acc = 0.0
    for i in range(k - 1, -1, -1):
        acc += instance.lag(i + 1, i) + instance.t_b(i)
        best = max(best, acc + (instance.t_w(i) if instance.split_backward else 0.0))
    return best


def w_tail_idle(instance: Instance, d: int) -> float:
    """The least idle time of device ``d`` after its last B ends (module docstring, *weight-pass
    cool-down*); 0 where its conditions fail (or not one item fits the cap: other bounds say so)."""
    if (instance.memory_cap_bytes is None or not instance.split_backward
            or instance.objective != "makespan"):
        return 0.0
    on = instance.stages_on(d)
    a_w = min(instance.a_w(k) for k in on)
    if a_w <= 0:
        return 0.0
    room, a = instance.cap_room(d), min(instance.a(k) for k in on)
    if a > room:
        return 0.0
    pending = math.floor((room - a) / a_w * (1 + 1e-12))  # rounded generously: less idle
    after = min(pending + 1, instance.microbatches * len(on)) * max(instance.t_w(k) for k in on)
    return max(0.0, min(_tail_after_backward(instance, k) for k in on) - after)


def lower_bound(instance: Instance, options: Any = None) -> float:
    """The dual bound (see the module docstring) in the instance's objective."""
    load = {d: _device_load(instance, d) for d in range(instance.stages)}
    fills = {d: _fill(instance, d) for d in range(instance.stages)}
    if instance.objective == "stage_span":
        best = max(load.values())
        for d in range(instance.stages):
            if fills[d] is not None:
                best = max(best, fills[d])
            on = [x for x in instance.passes() if instance.device(x[1]) == d]
            first = min(instance.stages_on(d))
            heads = [("F", first, j) for j in range(instance.microbatches)]
            if fifo_is_lossless(instance) or (first, d) == (0, 0):
                heads = heads[:1]  # FIFO (or the F(0) chain) makes F(first, 0) the first pass
            chain = min(max(_longest_paths(instance, [h]).get(x, 0.0) for x in on) for h in heads)
            best = max(best, chain)
        return best
    release = releases(instance)
    if any(math.isinf(t) for t in release.values()):
        return math.inf  # not even one micro-batch fits some stage: infeasible
    tail = tails(instance)
    if any(math.isinf(t) for t in tail.values()):
        return math.inf
    best = max(release[x] + tail[x] for x in release)
    best = max(best, _single_machine(instance, release, tail))
    for d in range(instance.stages):
        best = max(best, _head(instance, d) + load[d] + _tail(instance, d))
        if fills[d] is not None:
            best = max(best, _head(instance, d) + fills[d] + _tail(instance, d))
        if instance.memory_cap_bytes is not None:
            best = max(best, _big_pieces(instance, d, release, tail))
            idle = w_tail_idle(instance, d)
            if idle > 0:
                base = _head(instance, d) + load[d]
                if _idle_applies(instance):
                    base = max(base, _device_idle(instance, d))
                best = max(best, base + idle)
    if instance.memory_cap_bytes is not None:
        for k in range(instance.virtual_stages):
            best = max(best, _hold_chain(instance, k, release, tail),
                       _solid_union(instance, k, release, tail))
        best = max(best, warm_up(instance), stage_idle(instance))
    return best
