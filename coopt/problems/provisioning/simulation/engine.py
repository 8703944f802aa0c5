"""Discrete-event simulation of online degraded provisioning in an elastic optical network.

Traffic (research notes section e.2): Poisson arrivals at rate lambda = A / E[t] for an offered
load of A Erlangs network-wide, exponential holding times, source-destination pairs uniform over
ordered pairs, bandwidths uniform over a list, priority classes drawn with given shares. The
request stream depends only on the seed, never on the decisions, so every policy sees exactly
the same requests at a given (load, seed): common random numbers.

Policies (single layer; :mod:`coopt.problems.provisioning` holds the decision rules) are two
switches; the instance file's own ``degradation`` flag is ignored, its class menus are used.

``qos_assured`` is the paper's policy as its abstract states it (Zhong et al., arXiv 1607.04695):
"degraded provisioning ... to reduce blocking for differentiated demands when network congestion
occurs", "QoS is assured by service-holding-time prolongation and immediate access as soon as the
service arrives without set-up delay", "degraded routing and degraded resource allocation
stages". Rule by rule, each checked by a test in tests/test_provisioning_simulation.py:

1. only under congestion: a request that fits at full rate on one of its K paths is served at
   full rate (degradation is the answer to a block, never a choice);
2. immediate access: a request is served at its arrival or blocked; nothing waits;
3. holding-time prolongation: a request served at rho holds its channel for t / rho, so the data
   volume is exactly b t;
4. service differentiation: class p may be degraded to rho >= 1 - delta_p of the menu;
5. two stages: degraded routing (each path offers the largest fraction with a first-fit block)
   then degraded resource allocation (the path offering the largest rate; ties: K order),
   :func:`~coopt.problems.provisioning.rmsa.degraded_choice`.

Who may be degraded by how much is rule 4, the classes' delta_p, instance data that the abstract
does not give; it decides the claim "especially for requests with higher priorities"
(docs/provisioning.md, and ``coopt simulate --max-degradation``).

In-service degradation (the introduction's "delay-insensitive traffic ... can be preempted by
more important traffic"): when the arriving request does not fit, in-service connections of
strictly lower priority on a candidate path are degraded one width step at a time (lowest class
and largest retained fraction first) by releasing slots from the top edge of their block, so
continuity and contiguity hold without retuning; each victim's departure moves to now +
(remaining volume) / (new rate), so rules 2-4 hold for it too. If the request still does not fit,
every shrink on that path is rolled back.

``ksp_first_fit`` has neither switch (baseline B0), ``qos_assured`` the first,
``qos_assured_preemptive`` both, ``preemptive_only`` the second (arrivals are served at full rate
or not at all, so only a class with lower classes below it can gain).

Output analysis: the first ``warmup`` arrivals are discarded; the measured arrivals are split into
consecutive batches and per-class blocking is reported as a batch-means 95% t-interval.
A request is a *service failure* only when it is blocked; a degraded request is served.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from coopt.problem import Violation
from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.rmsa import Choice, SpectrumState, degraded_choice, ksp_first_fit_choice
from coopt.problems.provisioning.simulation.statistics import Estimate, batch_means


@dataclass(frozen=True)
class Traffic:
    load_erlang: float
    mean_holding_s: float = 1.0
    bandwidths_gbit_per_s: tuple[float, ...] = (25.0, 50.0, 75.0, 100.0)
    class_shares: tuple[float, ...] = ()  # empty: equiprobable classes


@dataclass(frozen=True)
class Policy:
    """``degrade_arrivals``: optical-layer degradation of the arriving request (a narrower
    channel or lightpath); ``degrade_electrical``: a groomed rate below b on an existing
    lightpath (multi-layer only); ``degrade_in_service``: shrink lower-priority connections
    (single layer only). ``multilayer`` runs the grooming architecture of Model C online, with
    new lightpaths from ``lightpath_widths`` (slots, guard band included) and virtual routes of at
    most ``max_virtual_hops``, set up as wide as the spectrum allows (room to groom later
    requests); a lightpath is torn down when its last connection leaves."""

    name: str
    degrade_arrivals: bool
    degrade_in_service: bool = False
    multilayer: bool = False
    degrade_electrical: bool = False
    lightpath_widths: tuple[int, ...] = (5, 9, 13)
    max_virtual_hops: int = 2


POLICIES = {p.name: p for p in (
    Policy("ksp_first_fit", degrade_arrivals=False),
    Policy("qos_assured", degrade_arrivals=True),
    Policy("qos_assured_preemptive", degrade_arrivals=True, degrade_in_service=True),
    Policy("preemptive_only", degrade_arrivals=False, degrade_in_service=True),
    Policy("grooming", degrade_arrivals=False, multilayer=True),
    Policy("grooming_optical", degrade_arrivals=True, multilayer=True),
    Policy("grooming_electrical", degrade_arrivals=False, multilayer=True, degrade_electrical=True),
    Policy("grooming_degraded", degrade_arrivals=True, multilayer=True, degrade_electrical=True),
)}
SINGLE_LAYER = [name for name, p in POLICIES.items() if not p.multilayer]


@dataclass(frozen=True)
class RunControl:
    arrivals: int = 100_000  # measured arrivals, after the warm-up
    warmup: int = 10_000
    batches: int = 10
    seed: int = 0
    validate: bool = False  # check the whole state after every event (slow; for tests)


@dataclass
class Connection:
    request: P.Request
    route: P.Route
    first_slot: int
    slots: int
    retained: float
    end_s: float
    token: int
    measured: bool
    segments: list[tuple[float, float]] = field(default_factory=list)  # (from time, rate in bit/s)


@dataclass(frozen=True)
class ClassResult:
    name: str
    arrivals: int
    blocked: int
    degraded: int
    blocking: Estimate
    mean_prolongation: float  # mean (end - start) / t over measured requests that departed
    max_prolongation: float


@dataclass(frozen=True)
class SimulationResult:
    policy: str
    load_erlang: float
    seed: int
    arrivals: int
    classes: tuple[ClassResult, ...]
    blocking: Estimate
    bandwidth_blocking: float
    utilization: float  # time-averaged fraction of link slots in use
    fragmentation: float  # mean external fragmentation 1 - largest free block / free slots
    mean_active: float  # time-averaged number of connections in service
    arrival_rate: float
    in_service_degradations: int
    wall_s: float


class ProvisioningSimulator:
    """One run: an instance's network, one traffic pattern, one policy, one seed."""

    def __init__(self, instance: P.Instance, traffic: Traffic, policy: Policy, control: RunControl):
        if traffic.load_erlang <= 0 or traffic.mean_holding_s <= 0:
            raise ValueError("load and mean holding time must be > 0")
        shares = traffic.class_shares or tuple(1.0 for _ in instance.classes)
        if len(shares) != len(instance.classes) or min(shares) < 0 or sum(shares) <= 0:
            raise ValueError(f"expected {len(instance.classes)} non-negative class shares, got {shares}")
        # view: the menus of connections (victims may be degraded); arrivals: the arriving request's
        self.view = dataclasses.replace(instance, degradation=True, model="time_expanded",
                                        requests=(), background=(), transponders_per_node=0)
        self.arrivals = dataclasses.replace(self.view, degradation=policy.degrade_arrivals)
        self.traffic, self.policy, self.control = traffic, policy, control
        self.shares = shares
        self.pairs = [(s, d) for s in instance.nodes for d in instance.nodes if s != d]
        self.routes = {pair: P.routes(self.view, *pair) for pair in self.pairs}
        self.state = SpectrumState(len(instance.links), instance.num_slots)
        self.on_link: list[set[int]] = [set() for _ in instance.links]
        self.active: dict[int, Connection] = {}
        self.departures: list[tuple[float, int, int]] = []  # (time, token, connection id)
        self.tokens = itertools.count()
        self.used_slots = 0
        self.clock = 0.0
        self.measuring = False
        self.slot_time = self.active_time = 0.0
        self.prolongations: dict[int, list[float]] = {p: [] for p in range(1, len(instance.classes) + 1)}
        self.in_service_degradations = 0
        self.violations: list[Violation] = []

    # -- time and state ---------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        if self.measuring:
            dt = now - self.clock
            self.slot_time += self.used_slots * dt
            self.active_time += len(self.active) * dt
        self.clock = now

    def _schedule(self, cid: int, conn: Connection) -> None:
        conn.token = next(self.tokens)
        heapq.heappush(self.departures, (conn.end_s, conn.token, cid))

    def _depart_until(self, now: float) -> None:
        while self.departures and self.departures[0][0] <= now:
            when, token, cid = heapq.heappop(self.departures)
            conn = self.active.get(cid)
            if conn is None or conn.token != token:
                continue  # rescheduled since: a stale entry
            self._advance(when)
            self._release(cid, conn)
            del self.active[cid]
            req = conn.request
            if conn.measured:
                self.prolongations[req.priority].append((when - req.arrival_s) / req.holding_s)
            if self.control.validate:
                self._check_volume(cid, conn, when)

    def _release(self, cid: int, conn: Connection) -> None:
        self.state.release(conn.route.links, conn.first_slot, conn.slots)
        self.used_slots -= conn.slots * len(conn.route.links)
        for e in conn.route.links:
            self.on_link[e].discard(cid)

    def _decide(self, request: P.Request, now: float) -> Choice | None:
        routes = self.routes[(request.source, request.target)]
        rule = degraded_choice if self.policy.degrade_arrivals else ksp_first_fit_choice
        choice = rule(self.arrivals, self.state, request, routes)
        if choice is None and self.policy.degrade_in_service:
            choice = self._make_room(request, routes, now)
        return choice

    def _admit(self, cid: int, request: P.Request, choice: Choice, measured: bool) -> None:
        self.state.allocate(choice.route.links, choice.first_slot, choice.slots)
        self.used_slots += choice.slots * len(choice.route.links)
        conn = Connection(request, choice.route, choice.first_slot, choice.slots, choice.retained,
                          P.end_time(request, choice.retained), -1, measured,
                          [(request.arrival_s, choice.retained * request.bandwidth_bps)])
        self.active[cid] = conn
        for e in choice.route.links:
            self.on_link[e].add(cid)
        self._schedule(cid, conn)

    # -- in-service degradation -------------------------------------------------------------------
    def _shrink(self, cid: int, now: float) -> tuple | None:
        """Degrade connection ``cid`` to the next narrower width of its class menu; None if it
        cannot get narrower. Returns what :meth:`_undo` needs."""
        conn = self.active[cid]
        req = conn.request
        narrower = [(rho, n) for rho in P.retained_levels(self.view, req)
                    if (n := P.slots_needed(rho * req.bandwidth_bps, conn.route.modulation,
                                            self.view.guard_band)) < conn.slots]
        if not narrower:
            return None
        rho, width = narrower[0]
        undo = (cid, conn.slots, conn.retained, conn.end_s)
        remaining = conn.retained * req.bandwidth_bps * (conn.end_s - now)
        self.state.release(conn.route.links, conn.first_slot + width, conn.slots - width)
        self.used_slots -= (conn.slots - width) * len(conn.route.links)
        conn.slots, conn.retained = width, rho
        conn.end_s = now + remaining / (rho * req.bandwidth_bps)
        conn.segments.append((now, rho * req.bandwidth_bps))
        self._schedule(cid, conn)
        return undo

    def _undo(self, undo: tuple) -> None:
        cid, slots, retained, end_s = undo
        conn = self.active[cid]
        self.state.allocate(conn.route.links, conn.first_slot + conn.slots, slots - conn.slots)
        self.used_slots += (slots - conn.slots) * len(conn.route.links)
        conn.slots, conn.retained, conn.end_s = slots, retained, end_s
        conn.segments.pop()
        self._schedule(cid, conn)

    def _make_room(self, request: P.Request, routes: tuple[P.Route, ...], now: float) -> Choice | None:
        for route in routes:
            if route.modulation is None:
                continue
            victims = sorted(
                {cid for e in route.links for cid in self.on_link[e]
                 if self.active[cid].request.priority > request.priority},
                key=lambda cid: (-self.active[cid].request.priority, -self.active[cid].retained, cid),
            )
            done = []
            progressed = True
            while progressed:  # one width step per victim per pass, until the request fits
                progressed = False
                for cid in victims:
                    undo = self._shrink(cid, now)
                    if undo is None:
                        continue
                    done.append(undo)
                    progressed = True
                    choice = degraded_choice(self.arrivals, self.state, request, (route,))
                    if choice is not None:
                        self.in_service_degradations += len(done)
                        return choice
            for undo in reversed(done):
                self._undo(undo)
        return None

    # -- the run ----------------------------------------------------------------------------------
    def run(self, progress: Callable[[int, int], None] | None = None) -> SimulationResult:
        started = time.perf_counter()
        control, traffic = self.control, self.traffic
        rng = random.Random(control.seed)
        rate = traffic.load_erlang / traffic.mean_holding_s
        classes = range(1, len(self.view.classes) + 1)
        total = control.warmup + control.arrivals
        batches = max(1, min(control.batches, control.arrivals))
        offered = {p: [0] * batches for p in classes}
        blocked = {p: [0] * batches for p in classes}
        degraded = dict.fromkeys(classes, 0)
        offered_bps = blocked_bps = 0.0
        fragmentation: list[float] = []
        start_clock = 0.0
        now = 0.0
        for index in range(total):
            now += rng.expovariate(rate)
            source, target = self.pairs[rng.randrange(len(self.pairs))]
            bandwidth = rng.choice(traffic.bandwidths_gbit_per_s) * P.GBPS
            priority = rng.choices(classes, weights=self.shares)[0]
            holding = rng.expovariate(1.0 / traffic.mean_holding_s)
            self._depart_until(now)
            if index == control.warmup:
                self._advance(now)
                self.measuring, start_clock = True, now
            self._advance(now)
            request = P.Request(source, target, bandwidth, holding, now, priority)
            choice = self._decide(request, now)
            measured = index >= control.warmup
            if choice is not None:
                self._admit(index, request, choice, measured)
            if measured:
                batch = (index - control.warmup) * batches // control.arrivals
                offered[priority][batch] += 1
                offered_bps += bandwidth
                if choice is None:
                    blocked[priority][batch] += 1
                    blocked_bps += bandwidth
                elif choice.retained < 1.0:
                    degraded[priority] += 1
                if (index - control.warmup) % 16 == 0:
                    fragmentation.append(self._fragmentation())
            if control.validate:
                self._check_state(now)
            if progress is not None and (index + 1) % 5000 == 0:
                progress(index + 1, total)
        span = max(now - start_clock, 1e-300)
        results = []
        for p in classes:
            ratios = [b / o for b, o in zip(blocked[p], offered[p], strict=True) if o]
            pro = self.prolongations[p]
            results.append(ClassResult(
                self.view.classes[p - 1].name, sum(offered[p]), sum(blocked[p]), degraded[p],
                batch_means(ratios), sum(pro) / len(pro) if pro else math.nan, max(pro, default=math.nan)))
        overall = [sum(blocked[p][b] for p in classes) / max(1, sum(offered[p][b] for p in classes))
                   for b in range(batches)]
        slots_total = len(self.view.links) * self.view.num_slots
        return SimulationResult(
            policy=self.policy.name, load_erlang=traffic.load_erlang, seed=control.seed,
            arrivals=control.arrivals, classes=tuple(results), blocking=batch_means(overall),
            bandwidth_blocking=blocked_bps / offered_bps if offered_bps else math.nan,
            utilization=self.slot_time / (span * slots_total),
            fragmentation=sum(fragmentation) / len(fragmentation) if fragmentation else math.nan,
            mean_active=self.active_time / span, arrival_rate=rate,
            in_service_degradations=self.in_service_degradations, wall_s=time.perf_counter() - started,
        )

    def _fragmentation(self) -> float:
        values = []
        for mask in self.state.masks:
            free = ~mask & self.state.full
            count = free.bit_count()
            if count:
                values.append(1.0 - _largest_block(free) / count)
        return sum(values) / len(values) if values else 0.0

    # -- invariants (validate mode) ---------------------------------------------------------------
    def snapshot(self, now: float) -> tuple[P.Instance, dict]:
        """The state at ``now`` as a static provisioning instance of the remaining work (each
        connection a request holding its remaining volume) plus its solution, so the problem's
        own checker judges continuity, contiguity, non-overlap with guard bands, reach, width,
        class bound and volume."""
        requests, connections = [], []
        for i, (_, conn) in enumerate(sorted(self.active.items())):
            req = conn.request
            remaining = conn.retained * req.bandwidth_bps * (conn.end_s - now)
            holding = remaining / req.bandwidth_bps
            requests.append(P.Request(req.source, req.target, req.bandwidth_bps, holding, 0.0, req.priority))
            connections.append({
                "request": i, "path": list(conn.route.nodes), "modulation": conn.route.modulation.name,
                "retained": conn.retained, "rate_gbit_per_s": conn.retained * req.bandwidth_bps / P.GBPS,
                "first_slot": conn.first_slot, "slots": conn.slots,
                "start_s": 0.0, "end_s": remaining / (conn.retained * req.bandwidth_bps),
            })
        instance = dataclasses.replace(self.view, model="static", requests=tuple(requests))
        return instance, {"connections": connections}

    def _check_state(self, now: float) -> None:
        masks = [0] * len(self.state.masks)
        for conn in self.active.values():
            block = ((1 << conn.slots) - 1) << conn.first_slot
            for e in conn.route.links:
                masks[e] |= block
        if masks != self.state.masks:
            self.violations.append(Violation("state", f"link masks disagree with connections at t = {now:g}"))
        instance, solution = self.snapshot(now)
        self.violations.extend(P.check(instance, solution))

    def _check_volume(self, cid: int, conn: Connection, when: float) -> None:
        req = conn.request
        bounds = [t for t, _ in conn.segments[1:]] + [when]
        volume = sum(r * (t1 - t0) for (t0, r), t1 in zip(conn.segments, bounds, strict=True))
        expected = req.bandwidth_bps * req.holding_s
        if not math.isclose(volume, expected, rel_tol=1e-9):
            detail = f"connection {cid} moved {volume:g} bits, expected {expected:g}"
            self.violations.append(Violation("data_volume", detail))
        if conn.segments[0][0] != req.arrival_s:
            self.violations.append(Violation("immediate_access", f"connection {cid} started late"))


def _largest_block(free: int) -> int:
    """Length of the longest run of set bits."""
    length = 0
    while free:
        free &= free >> 1
        length += 1
    return length
