"""Closed forms of CHASE's cost model (research notes 3.d): the roofline run time of a task,
the cut-through and store-and-forward time of a transfer over a route, the ring all-reduce of a
tensor-parallel group, the list-scheduling lower bound on the makespan, and the uplinks a rack
needs under an oversubscription ratio. Each is checked in tests/test_chase_bounds.py against
the model it stands for: :func:`coopt.problems.chase.workloads.roofline_time`, the routing
table of :mod:`coopt.problems.chase.hardware`, the discrete-event simulator (a ring
all-reduce DAG replayed on a ring of devices), the solved MILP, and
:func:`coopt.problems.chase.arch_model.rack_network`.
"""

from __future__ import annotations

import sympy as sp

from coopt.closed_forms import Bound, Quantity

SOURCE = "CHASE (2026), research notes 3.d [R]"

F = Quantity("F", "floating-point work of the task", "FLOP", "nonnegative", default=1e12)
Q = Quantity("Q", "bytes the task reads and writes", "B", "nonnegative", default=1e9)
P_peak = Quantity("P", "peak compute rate of the device", "FLOP/s", default=989e12)
BW = Quantity("BW", "peak memory bandwidth of the device", "B/s", default=3.35e12)
eta_c = Quantity("eta_c", "achieved share of the peak compute rate", domain="efficiency", default=0.7,
                 latex=r"\eta_c")
eta_m = Quantity("eta_m", "achieved share of the peak memory bandwidth", domain="efficiency", default=0.8,
                 latex=r"\eta_m")
t0 = Quantity("t_0", "launch time added to every task", "s", "nonnegative", default=5e-6)
t_run = Quantity("t", "run time of the task on the device", "s")

d = Quantity("d", "bytes moved", "B", "nonnegative", default=64e6)
h = Quantity("h", "links (hops) on the route", domain="positive_integer", default=2)
alpha = Quantity("alpha", "latency of one link", "s", "nonnegative", default=1e-6, latex=r"\alpha")
B = Quantity("B", "bandwidth of the route's links (the bottleneck)", "B/s", default=50e9)
t_xfer = Quantity("t_x", "time to move the data", "s")

m = Quantity("m", "devices in the all-reduce group", domain="positive_integer", default=4)
t_ar = Quantity("t_ar", "ring all-reduce time", "s")

cp = Quantity("CP", "critical path with each task on its fastest device and no transfers", "s", default=5e-3)
W = Quantity("W", "sum over tasks of the run time on the task's fastest device", "s", default=2e-2)
D = Quantity("D", "devices", domain="positive_integer", default=4)
C_lb = Quantity("C_lb", "lower bound on the makespan", "s")

ports = Quantity("k", "device NIC ports in the rack", domain="nonnegative_integer", default=32)
B_dev = Quantity("B_dev", "bandwidth of one NIC port", "B/s", default=50e9)
B_up = Quantity("B_up", "bandwidth of one uplink port", "B/s", default=50e9)
omega = Quantity("omega", "allowed oversubscription", domain="positive", default=2.0, latex=r"\omega")
uplinks = Quantity("u", "uplinks the rack needs", domain="nonnegative")

BOUNDS = [
    Bound(
        name="chase.roofline_time",
        summary="Run time of a task on a device: the slower of compute and memory, plus launch",
        source=SOURCE + "; Williams, Waterman, Patterson, CACM 2009 (roofline)",
        output=t_run,
        inputs=(F, Q, P_peak, BW, eta_c, eta_m, t0),
        expr=sp.Max(F.symbol / (eta_c.symbol * P_peak.symbol), Q.symbol / (eta_m.symbol * BW.symbol))
        + t0.symbol,
        assumptions=("compute and memory traffic overlap perfectly", "constant efficiencies"),
        notes="The MILP, the heuristics and the checker read exactly this time (workloads.roofline_time).",
    ),
    Bound(
        name="chase.transfer_cut_through",
        summary="Contention-free time of a transfer over h equal links, pipelined (cut-through)",
        source=SOURCE,
        output=t_xfer,
        inputs=(d, h, alpha, B),
        expr=h.symbol * alpha.symbol + d.symbol / B.symbol,
        assumptions=("the route's bottleneck bandwidth B", "no other flow on the route"),
        notes="The model's c(p, q, d) = l_pq + d / B_pq with l_pq the sum of the route's latencies.",
    ),
    Bound(
        name="chase.transfer_store_and_forward",
        summary="Time of a transfer over h equal links when each hop receives the whole message first",
        source=SOURCE,
        output=t_xfer,
        inputs=(d, h, alpha, B),
        expr=h.symbol * (alpha.symbol + d.symbol / B.symbol),
        assumptions=("equal links", "no other flow on the route"),
        notes="An upper bound on the cut-through time; the two agree for one hop.",
    ),
    Bound(
        name="chase.ring_allreduce",
        summary="Ring all-reduce of d bytes over m devices (reduce-scatter then all-gather)",
        source=SOURCE + "; Patarasuk and Yuan, JPDC 69(2), 2009",
        output=t_ar,
        inputs=(d, m, alpha, B),
        expr=2 * (m.symbol - 1) / m.symbol * d.symbol / B.symbol + 2 * (m.symbol - 1) * alpha.symbol,
        assumptions=("a ring of equal links, each used by one flow per step", "reduction time ignored"),
        notes="The simulator replays the 2 (m - 1) steps of the ring as a DAG and gives exactly this "
              "time (tests/test_chase_bounds.py).",
    ),
    Bound(
        name="chase.list_bound",
        summary="Makespan lower bound: the critical path, or the work shared perfectly over the devices",
        source=SOURCE + "; Graham, SIAM J. Appl. Math. 17(2), 1969",
        output=C_lb,
        inputs=(cp, W, D),
        expr=sp.Max(cp.symbol, W.symbol / D.symbol),
        assumptions=("each task on its fastest device", "no transfer costs counted"),
        notes="The MILP's head/tail and load rows make its LP at least this; the dual bound of coopt "
              "solve --method bound is at least the LP.",
    ),
    Bound(
        name="chase.rack_uplinks",
        summary="Uplinks a rack needs so its NICs are oversubscribed at most omega : 1",
        source=SOURCE + " (oversubscription row)",
        output=uplinks,
        inputs=(ports, B_dev, B_up, omega),
        expr=sp.ceiling(ports.symbol * B_dev.symbol / (omega.symbol * B_up.symbol)),
        assumptions=("one NIC bandwidth for every port of the rack",),
        notes="The minimal network of chase_arch also gives every ToR at least one uplink.",
    ),
]
