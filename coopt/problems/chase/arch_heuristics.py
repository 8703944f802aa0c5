"""Heuristics of the ``chase_arch`` feasibility problem (maximise the capability proxy of a
design under power, space, radix, oversubscription, cabling, budget and memory rows).

A design is handled as its device counts per rack; its network is always the minimal one
(:func:`coopt.problems.chase.arch_model.minimal_network`), feasible whenever any network is for
those counts (more switches, uplinks or spines only add power, space and cost). :class:`Racks`
keeps the per-rack sums, so the rows after adding or removing one device are known in O(1).
"""

from __future__ import annotations

import itertools
import math

import highspy
import numpy as np
from pyomo.common.tee import capture_output

from coopt.problem import NoSolution, Solution
from coopt.problems.chase.arch_model import ArchInstance, Design, design_solution, rack_network, violations


class Racks:
    """Device counts with the sums the rows need, per rack and in total, so that the rows after
    adding or removing one device are known in O(1)."""

    def __init__(self, inst: ArchInstance):
        self.inst = inst
        R, T = inst.racks, len(inst.types)
        self.counts = [[0] * T for _ in range(R)]
        self.power = [0.0] * R
        self.space = [0.0] * R
        self.ports = [0] * R
        self.demand = [0.0] * R
        self.network = [(0, 0)] * R  # (ToRs, uplinks) per rack
        self.totals = [0] * T
        self.device_cost = 0.0
        self.memory = 0.0
        self.all_ports = self.all_tors = self.all_uplinks = 0

    def _cost(self, device_cost: float, ports: int, tors: int, uplinks: int) -> float:
        inst = self.inst
        spines = math.ceil(uplinks / inst.switch_radix) if uplinks else 0
        return (device_cost + inst.switch_cost * (tors + spines) + inst.copper_cost * ports
                + inst.optical_cost * uplinks)

    def cost(self) -> float:
        return self._cost(self.device_cost, self.all_ports, self.all_tors, self.all_uplinks)

    def change(self, r: int, i: int, delta: int) -> bool:
        """Add (``delta = 1``) or remove (``-1``) one device of type ``i`` in rack ``r`` if every
        row except memory still holds afterwards; returns whether it did."""
        inst, t = self.inst, self.inst.types[i]
        if self.counts[r][i] + delta < 0 or self.totals[i] + delta > t.max_count:
            return False
        ports = self.ports[r] + delta * t.nic_ports
        demand = self.demand[r] + delta * t.nic_ports * t.nic_bandwidth
        tors, ups = rack_network(inst, ports, demand)
        power = self.power[r] + delta * t.device.power
        space = self.space[r] + delta * t.device.rack_units
        slack = 1 + 1e-12
        if power + inst.switch_power * tors > inst.rack_power * slack:
            return False
        if space + inst.switch_units * tors > inst.rack_units * slack:
            return False
        old_tors, old_ups = self.network[r]
        all_tors = self.all_tors + tors - old_tors
        all_uplinks = self.all_uplinks + ups - old_ups
        all_ports = self.all_ports + delta * t.nic_ports
        spines = math.ceil(all_uplinks / inst.switch_radix) if all_uplinks else 0
        if (inst.switch_power * spines > inst.rack_power * slack
                or inst.switch_units * spines > inst.rack_units * slack):
            return False
        device_cost = self.device_cost + delta * t.device.cost
        if self._cost(device_cost, all_ports, all_tors, all_uplinks) > inst.budget * slack:
            return False
        self.counts[r][i] += delta
        self.totals[i] += delta
        self.power[r], self.space[r], self.demand[r], self.ports[r] = power, space, demand, ports
        self.network[r] = (tors, ups)
        self.all_ports, self.all_tors, self.all_uplinks = all_ports, all_tors, all_uplinks
        self.device_cost = device_cost
        self.memory += delta * t.device.memory
        return True

    def copy(self) -> Racks:
        twin = Racks.__new__(Racks)
        twin.__dict__.update(self.__dict__)
        twin.counts = [list(row) for row in self.counts]
        twin.power, twin.space, twin.ports = list(self.power), list(self.space), list(self.ports)
        twin.demand, twin.network, twin.totals = list(self.demand), list(self.network), list(self.totals)
        return twin

    def capability(self) -> float:
        return sum(t.capability * n for t, n in zip(self.inst.types, self.totals, strict=True))

    def design(self) -> Design:
        inst = self.inst
        ups = self.all_uplinks
        return Design(tuple(tuple(row) for row in self.counts), tuple(t for t, _ in self.network),
                      tuple(u for _, u in self.network), math.ceil(ups / inst.switch_radix) if ups else 0)


def _fill(racks: Racks, memory_first: bool = True) -> None:
    """Add devices while one fits: while the memory row fails (``memory_first``), the type with
    the most memory per added dollar, then the one with the most capability per added dollar
    (Dantzig's ratio rule), each into the first rack that takes it (first fit; ties: lower type).
    A rack that refuses a type keeps refusing it, since adding devices only uses up power, space,
    ports and budget, so each type keeps a pointer to its first possible rack and a trial costs
    O(1)."""
    inst = racks.inst
    first = [0] * len(inst.types)
    while True:
        short = memory_first and racks.memory < inst.memory_required / (1 + 1e-12)
        base = racks.cost()
        best = None
        for i, t in enumerate(inst.types):
            gain = t.device.memory if short else t.capability
            if gain <= 0:
                continue
            while first[i] < inst.racks and not racks.change(first[i], i, +1):
                first[i] += 1
            if first[i] == inst.racks:
                continue
            ratio = gain / max(racks.cost() - base, 1e-9)
            racks.change(first[i], i, -1)
            if best is None or ratio > best[0]:
                best = (ratio, i)
        if best is None:
            return
        racks.change(first[best[1]], best[1], +1)


def _solution(inst: ArchInstance, racks: Racks) -> Solution:
    design = racks.design()
    if violations(inst, design):
        raise NoSolution("no design the greedy reaches meets every row (memory, budget, power)")
    return design_solution(inst, design)


def greedy_density(inst: ArchInstance, seed: int = 0) -> Solution:
    """Greedy by density: from an empty design, add the device (type and rack) with the most
    memory per added dollar until the memory row holds, then the one with the most capability per
    added dollar (the minimal network re-derived each time), until nothing more fits.

    Guarantee: a feasible design when it returns (NoSolution if the greedy cannot meet the memory
    row within the budget). Running time O(D T + R T) for D devices placed (each trial O(1) with
    :class:`Racks`'s sums, first fit with a pointer per type). Source: Dantzig's ratio rule for the
    knapsack (Operations Research 5(2), 1957). ``seed`` is unused."""
    racks = Racks(inst)
    _fill(racks)
    return _solution(inst, racks)


def _lp_counts(inst: ArchInstance) -> np.ndarray | None:
    """Device counts of the LP relaxation (rack x type), or None when the LP is infeasible."""
    R, T = inst.racks, len(inst.types)
    types = inst.types
    columns = R * T + 2 * R + 1  # n[r, i], t[r], u[r], s
    def n(r: int, i: int) -> int:
        return r * T + i

    def tor(r: int) -> int:
        return R * T + r

    def up(r: int) -> int:
        return R * T + R + r

    spine = R * T + 2 * R
    rows: list[tuple[dict[int, float], float, float]] = []
    for r in range(R):
        rows.append(({**{n(r, i): types[i].device.power for i in range(T)}, tor(r): inst.switch_power},
                     -math.inf, inst.rack_power))
        rows.append(({**{n(r, i): types[i].device.rack_units for i in range(T)}, tor(r): inst.switch_units},
                     -math.inf, inst.rack_units))
        ports = {n(r, i): float(types[i].nic_ports) for i in range(T)}
        rows.append(({**ports, up(r): 1.0, tor(r): -inst.switch_radix}, -math.inf, 0.0))
        rows.append(({up(r): 1.0, tor(r): -1.0}, 0.0, math.inf))
        capacity = inst.oversubscription * inst.uplink_bandwidth / 1e9
        rows.append(({up(r): capacity, **{n(r, i): -types[i].nic_ports * types[i].nic_bandwidth / 1e9
                                          for i in range(T)}}, 0.0, math.inf))
    rows.append(({**{up(r): 1.0 for r in range(R)}, spine: -inst.switch_radix}, -math.inf, 0.0))
    budget = {n(r, i): types[i].device.cost + inst.copper_cost * types[i].nic_ports
              for r in range(R) for i in range(T)}
    budget.update({tor(r): inst.switch_cost for r in range(R)})
    budget.update({up(r): inst.optical_cost for r in range(R)})
    budget[spine] = inst.switch_cost
    rows.append((budget, -math.inf, inst.budget))
    rows.append(({n(r, i): types[i].device.memory / 1e9 for r in range(R) for i in range(T)},
                 inst.memory_required / 1e9, math.inf))
    for i in range(T):
        rows.append(({n(r, i): 1.0 for r in range(R)}, -math.inf, types[i].max_count))
    spine_cap = min(inst.rack_power / inst.switch_power if inst.switch_power else math.inf,
                    inst.rack_units / inst.switch_units if inst.switch_units else math.inf)
    with capture_output(capture_fd=True):  # the constructor prints a banner
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    cost = np.zeros(columns)
    for r in range(R):
        for i in range(T):
            cost[n(r, i)] = -types[i].capability
    lower = np.zeros(columns)
    upper = np.full(columns, highspy.kHighsInf)
    upper[spine] = spine_cap
    h.addVars(columns, lower, upper)
    h.changeColsCost(columns, np.arange(columns, dtype=np.int32), cost)
    inf = highspy.kHighsInf
    for coefficients, lo, hi in rows:
        index = np.array(list(coefficients), dtype=np.int32)
        value = np.array(list(coefficients.values()), dtype=np.float64)
        h.addRow(-inf if lo == -math.inf else lo, inf if hi == math.inf else hi, len(index), index, value)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    values = np.array(h.getSolution().col_value)
    return values[: R * T].reshape(R, T)


#: Exchanges :func:`_exchange` may try in all (each a copy and a refill).
EXCHANGE_TRIALS = 400


def _exchange(racks: Racks) -> Racks:
    """First-improvement exchanges: remove one or two devices of a type from a rack, add one of
    another type (or the same, elsewhere) where it first fits, refill with the density greedy;
    keep the result when its capability is higher; until none improves or ``EXCHANGE_TRIALS``
    exchanges are spent. Racks with the same contents are one rack to this search (the racks are
    identical), so it tries one of each."""
    inst = racks.inst
    T = range(len(inst.types))
    trials = 0
    improved = True
    while improved and trials < EXCHANGE_TRIALS:
        improved = False
        distinct = list({tuple(row): r for r, row in reversed(list(enumerate(racks.counts)))}.values())
        for r, i, j, removed in itertools.product(sorted(distinct), T, T, (1, 2)):
            if trials >= EXCHANGE_TRIALS:
                break
            trial = racks.copy()
            if not all(trial.change(r, i, -1) for _ in range(removed)):
                continue
            if not any(trial.change(s, j, +1) for s in range(inst.racks) if (s, j) != (r, i)):
                continue
            trials += 1
            _fill(trial)
            if trial.capability() > racks.capability() * (1 + 1e-12) and not violations(inst, trial.design()):
                racks, improved = trial, True
                break
    return racks


def lp_rounding(inst: ArchInstance, seed: int = 0) -> Solution:
    """LP rounding with repair: solve the LP relaxation of the MILP (highspy, no model layer);
    round it two ways, every rack's counts down to integers, and every type's total down to an
    integer placed rack by rack (first fit, best capability per dollar first); fill each with the
    density greedy (memory first, or capability only), keep the fills that meet every row, improve
    them by exchanges (remove one or two devices of a type, add one of any
    type, refill) and keep the best.

    Guarantee: feasible when it returns, never below the density greedy from the rounded counts.
    Running time: one LP with ``R (T + 2) + 1`` columns and ``5 R + T + 3`` rows, O(D T + R T)
    per fill for D devices, and at most ``EXCHANGE_TRIALS`` exchanges (each a refill).
    Source: ours (LP rounding with greedy repair for multi-dimensional knapsacks, after Frieze and
    Clarke, EJOR 15(1), 1984). ``seed`` is unused."""
    fractional = _lp_counts(inst)
    if fractional is None:
        raise NoSolution("the LP relaxation is infeasible: no design meets every row")
    ratio = sorted(range(len(inst.types)),
                   key=lambda i: (inst.types[i].capability / max(inst.types[i].device.cost, 1e-9), -i),
                   reverse=True)
    per_rack = Racks(inst)
    for r in range(inst.racks):
        for i in ratio:
            for _ in range(int(math.floor(fractional[r][i] + 1e-9))):
                if not per_rack.change(r, i, +1):
                    break
    per_type = Racks(inst)
    for i in ratio:
        for _ in range(int(math.floor(fractional[:, i].sum() + 1e-9))):
            if not any(per_type.change(r, i, +1) for r in range(inst.racks)):
                break
    results = []
    for start in (per_rack, per_type):
        for memory_first in (False, True):
            racks = start.copy()
            _fill(racks, memory_first)
            if violations(inst, racks.design()):
                continue
            results.append(_exchange(racks))
    if not results:
        raise NoSolution("no rounding of the LP meets every row (memory, budget, power)")
    return _solution(inst, max(results, key=lambda rk: (rk.capability(), -rk.cost())))


HEURISTICS = {
    "greedy_density": greedy_density,
    "lp_rounding": lp_rounding,
}
