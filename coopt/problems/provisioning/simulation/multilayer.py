"""The multi-layer (grooming) architecture of Model C, online.

Arrivals are decided by :meth:`coopt.problems.provisioning.grooming_heuristics.GroomingState.decide`: the
least-weight virtual route of at most H lightpaths that carries the full rate (existing
lightpath 1, new lightpath 10 + width), else, with a degradation switch on, the route offering
the highest rate of at least (1 - delta_p) b. The electrical switch lets an existing lightpath
carry a request with less residual than b (continuous rate); the optical switch lets a new
lightpath be narrower than the full rate needs. A degraded request is held t b / rate. When the
last connection on a lightpath leaves, the lightpath is torn down and frees its slots and
transponders. Traffic, statistics and output analysis are those of
:class:`~coopt.problems.provisioning.simulation.engine.ProvisioningSimulator`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from coopt.problem import Violation
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.grooming_heuristics import GroomingState
from coopt.problems.provisioning.simulation.engine import Policy, ProvisioningSimulator, RunControl, Traffic

#: Transponders per node when the instance sets no limit (0).
UNLIMITED = 1 << 30


@dataclass(frozen=True)
class GroomedChoice:
    hops: list
    rate_bps: float
    retained: float  # rate / b


@dataclass
class GroomedConnection:
    request: P.Request
    hops: list[int]
    retained: float
    end_s: float
    token: int
    measured: bool
    segments: list[tuple[float, float]] = field(default_factory=list)


class MultiLayerSimulator(ProvisioningSimulator):
    """One run of the grooming architecture (see the module docstring)."""

    def __init__(self, instance: P.Instance, traffic: Traffic, policy: Policy, control: RunControl):
        if policy.degrade_in_service:
            raise ValueError("in-service degradation is single-layer only")
        super().__init__(instance, traffic, policy, control)
        self.layered = G.Instance(
            instance.nodes, instance.links, instance.num_slots, instance.slot_width_hz, instance.guard_band,
            instance.k_paths, instance.modulations, instance.classes, tuple(sorted(policy.lightpath_widths)),
            policy.max_virtual_hops, instance.transponders_per_node or UNLIMITED, True, (),
        )
        self.grooming = GroomingState(self.layered, widest_first=True)
        self.state = self.grooming.spectrum

    def _decide(self, request: P.Request, now: float) -> GroomedChoice | None:
        decision = self.grooming.decide(request, optical=self.policy.degrade_arrivals,
                                        electrical=self.policy.degrade_electrical)
        if decision is None:
            return None
        hops, rate = decision
        return GroomedChoice(hops, rate, rate / request.bandwidth_bps)

    def _admit(self, cid: int, request: P.Request, choice: GroomedChoice, measured: bool) -> None:
        self.used_slots += sum(h.width * len(h.route.links) for h in choice.hops if h.existing is None)
        ids = self.grooming.commit(choice.hops, choice.rate_bps)
        conn = GroomedConnection(request, ids, choice.retained, P.end_time(request, choice.retained), -1,
                                 measured, [(request.arrival_s, choice.rate_bps)])
        self.active[cid] = conn
        self._schedule(cid, conn)

    def _release(self, cid: int, conn: GroomedConnection) -> None:
        for index in conn.hops:
            if self.grooming.users[index] == 1:  # the last user: this lightpath is torn down
                lp = self.grooming.lightpaths[index]
                self.used_slots -= lp.width * len(lp.route.links)
        self.grooming.release(conn.hops, conn.retained * conn.request.bandwidth_bps)

    def snapshot(self, now: float) -> tuple[G.Instance, dict]:
        """The state as a Model C instance of remaining work plus its solution, for G.check."""
        alive = {i: lp for i, lp in enumerate(self.grooming.lightpaths) if lp is not None}
        renumber = {i: j for j, i in enumerate(sorted(alive))}
        lightpaths = [G.lightpath_record(self.layered, lp.ends, lp.route, lp.width, lp.first_slot)
                      for _, lp in sorted(alive.items())]
        requests, connections = [], []
        for i, (_, conn) in enumerate(sorted(self.active.items())):
            req = conn.request
            rate = conn.retained * req.bandwidth_bps
            remaining = rate * (conn.end_s - now)
            holding = remaining / req.bandwidth_bps
            requests.append(P.Request(req.source, req.target, req.bandwidth_bps, holding, 0.0, req.priority))
            connections.append({"request": i, "hops": [renumber[h] for h in conn.hops],
                                 "rate_gbit_per_s": rate / P.GBPS, "start_s": 0.0, "end_s": remaining / rate})
        instance = dataclasses.replace(self.layered, requests=tuple(requests))
        return instance, {"lightpaths": lightpaths, "connections": connections}

    def _check_state(self, now: float) -> None:
        masks = [0] * len(self.state.masks)
        carried: dict[int, float] = {}
        for conn in self.active.values():
            for h in conn.hops:
                carried[h] = carried.get(h, 0.0) + conn.retained * conn.request.bandwidth_bps
        for i, lp in enumerate(self.grooming.lightpaths):
            if lp is None:
                continue
            block = ((1 << lp.width) - 1) << lp.first_slot
            for e in lp.route.links:
                masks[e] |= block
            capacity = G.capacity_bps(self.layered, lp.route, lp.width)
            if abs(capacity - carried.get(i, 0.0) - lp.residual_bps) > 1e-3:
                self.violations.append(Violation("state", f"lightpath {i} residual disagrees with its load"))
            if i not in carried:
                self.violations.append(Violation("state", f"lightpath {i} carries nothing but is up"))
        if masks != self.state.masks:
            self.violations.append(Violation("state", f"link masks disagree with lightpaths at t = {now:g}"))
        instance, solution = self.snapshot(now)
        self.violations.extend(G.check(instance, solution))
