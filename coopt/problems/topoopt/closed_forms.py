"""TopoOpt closed forms: stride rings, ring AllReduce time, power-stride diameter, port bound.

Source: Wang et al., TopoOpt, NSDI 2023 (arXiv 2202.00433); research notes section 1(d).

* The stride permutation ``R_p: i -> i + p (mod n)`` splits into ``gcd(p, n)`` cycles of length
  ``n / gcd(p, n)``, so it is one Hamiltonian ring iff ``gcd(p, n) = 1``; there are ``phi(n)`` such
  directed rings.
* A ring AllReduce of ``S`` bytes over ``k`` members, split evenly over ``r`` parallel rings of
  ``B`` byte/s ports with per-step latency ``a``, takes ``2 (k - 1)`` steps of ``S / (k r)`` bytes:
  ``T = 2 (k - 1) / k * S / (r B) + 2 (k - 1) a``.
* Power strides ``{1, a, ..., a^(d-1)}`` with ``a = ceil(n^(1/d))`` reach every offset ``m < n`` by
  writing ``m`` in base ``a`` (at most ``a - 1`` hops per digit, ``d`` digits):
  ``diam <= d (ceil(n^(1/d)) - 1)``.
* Fabric cost (research notes section 2(d), the MixNet calculator's formulas; unit prices from the
  instance's ``[prices]``, 2(e) by default): TopoOpt pays per port a transceiver, a patch-panel port
  and one fibre of ``L`` metres, and a NIC per ``p`` ports (``p = 1`` in the calculator),
  ``n (ceil(d/p) c_nic + d (c_tr + c_pp + L c_fib))``; the
  3-tier non-blocking fat-tree with one NIC per server has ``P = 6 n`` switch ports, ``P + n``
  transceivers and ``ceil((P + n) / 2)`` fibres, ``n c_nic + 7 n c_tr + 6 n c_eps + L c_fib
  ceil(7 n / 2)``. The similar-cost fat-tree rate equates the two (prices at the fat-tree's rate).
* Port bound on P1: server ``s`` must push its ``D_s = sum_t D_st`` bytes out of ``d`` ports of ``B``
  byte/s, so ``theta <= d B / max_s D_s`` (iterations per second).
"""

from __future__ import annotations

import sympy as sp

from coopt.closed_forms import Bound, Curve, Quantity

SOURCE = "Wang et al., TopoOpt, NSDI 2023 (arXiv 2202.00433); research notes section 1(d)"

servers = Quantity("n", "servers", "1", "positive_integer", default=128)
degree = Quantity("d", "optical ports per server", "1", "positive_integer", default=4)
group = Quantity("k", "AllReduce group size", "1", "positive_integer", default=128)
allreduce_bytes = Quantity("S", "bytes reduced per iteration", "B", default=4e8)
rings = Quantity("r", "parallel rings", "1", "positive_integer", default=4)
port_rate = Quantity("B", "port rate", "B/s", default=12.5e9)
step_latency = Quantity("a", "latency per ring step", "s", "nonnegative", default=1e-6)
nic_price = Quantity("c_nic", "price of one NIC port", "USD", "nonnegative", default=659)
transceiver_price = Quantity("c_tr", "price of one transceiver", "USD", "nonnegative", default=99)
patch_panel_price = Quantity("c_pp", "price of one patch-panel port", "USD", "nonnegative", default=100)
switch_port_price = Quantity("c_eps", "price of one packet-switch port", "USD", "nonnegative", default=187)
fibre_price = Quantity("c_fib", "fibre price per metre", "USD/m", "nonnegative", default=0.3)
fibre_length = Quantity("L", "length of one fibre", "m", "nonnegative", default=500)
busiest = Quantity("D_max", "bytes the busiest server sends per iteration", "B", default=1e9)
ports_per_nic = Quantity("p", "optical ports sharing one NIC", "1", "positive_integer", default=1)


def hamiltonian_stride_count(n: float) -> float:
    """``phi(n)``: strides ``p`` in ``1..n`` whose ring ``i -> i + p`` is one ``n``-cycle."""
    return float(sp.totient(int(n)))


BOUNDS = [
    Curve(
        name="topoopt.hamiltonian_rings",
        summary="directed stride rings that visit all n servers: phi(n) (gcd(p, n) = 1)",
        source=SOURCE,
        output=Quantity("R", "Hamiltonian stride rings", "1", "nonnegative_integer"),
        inputs=(servers,),
        compute=lambda n: hamiltonian_stride_count(n),
        method="Euler's totient (SymPy): R_p has gcd(p, n) cycles of length n / gcd(p, n)",
        assumptions=("one-directional rings i -> i + p mod n",),
        notes="Undirected: phi(n)/2 for n >= 3. A group of size k spaced n/k apart has phi(k) strides.",
    ),
    Bound(
        name="topoopt.ring_allreduce_time",
        summary="ring AllReduce time over r parallel rings: 2(k-1)/k S/(r B) + 2(k-1) a",
        source=SOURCE,
        output=Quantity("T_AR", "AllReduce time", "s"),
        inputs=(group, allreduce_bytes, rings, port_rate, step_latency),
        expr=2
        * (group.symbol - 1)
        / group.symbol
        * allreduce_bytes.symbol
        / (rings.symbol * port_rate.symbol)
        + 2 * (group.symbol - 1) * step_latency.symbol,
        assumptions=(
            "reduce-scatter then all-gather, 2 (k - 1) steps of S / (k r) bytes per ring",
            "the r rings are link-disjoint and share the data evenly",
        ),
    ),
    Bound(
        name="topoopt.power_stride_diameter",
        summary="diameter of the circulant C_n{1, a, ..., a^(d-1)}, a = ceil(n^(1/d)): <= d (a - 1)",
        source=SOURCE,
        output=Quantity("diam", "hop diameter bound", "1", "nonnegative"),
        inputs=(servers, degree),
        expr=degree.symbol * (sp.ceiling(servers.symbol ** (1 / degree.symbol)) - 1),
        assumptions=("one-directional stride rings", "digits of m in base a, each at most a - 1 hops"),
        notes="Brute-force checked for 3 <= n < 200, 1 <= d <= 4 in the tests.",
    ),
    Bound(
        name="topoopt.port_bound",
        summary="concurrent-flow rate of any degree-d topology: theta <= d B / D_max",
        source=SOURCE,
        output=Quantity("theta", "iterations per second of communication", "1/s"),
        inputs=(degree, port_rate, busiest),
        expr=degree.symbol * port_rate.symbol / busiest.symbol,
        assumptions=("every byte leaves its source through one of its d ports",),
        notes="Tight when all demand is one hop (e.g. AllReduce alone on d parallel rings).",
    ),
    Bound(
        name="topoopt.fabric_cost",
        summary="TopoOpt fabric cost: n (ceil(d/p) c_nic + d (c_tr + c_pp + L c_fib))",
        source=SOURCE + " and 2(d,e)",
        output=Quantity("C_topo", "network cost of the direct-connect fabric", "USD", "nonnegative"),
        inputs=(servers, degree, nic_price, transceiver_price, patch_panel_price, fibre_price, fibre_length,
                ports_per_nic),
        expr=servers.symbol
        * (
            sp.ceiling(degree.symbol / ports_per_nic.symbol) * nic_price.symbol
            + degree.symbol
            * (transceiver_price.symbol + patch_panel_price.symbol + fibre_length.symbol * fibre_price.symbol)
        ),
        assumptions=(
            "a transceiver, patch-panel port and fibre per optical port; p ports share one NIC",
        ),
        notes="Defaults: the 100 Gbit/s prices of the MixNet calculator (notes 2(e)), a NIC per port "
        "(p = 1); p = d is the prototype's reading, one NIC split into the server's ports.",
    ),
    Bound(
        name="topoopt.fattree_cost",
        summary="3-tier non-blocking fat-tree cost: n c_nic + 7 n c_tr + 6 n c_eps + L c_fib ceil(7n/2)",
        source=SOURCE + " and 2(d,e)",
        output=Quantity("C_ft", "network cost of the fat-tree", "USD", "nonnegative"),
        inputs=(servers, nic_price, transceiver_price, switch_port_price, fibre_price, fibre_length),
        expr=servers.symbol * (nic_price.symbol + 7 * transceiver_price.symbol + 6 * switch_port_price.symbol)
        + fibre_length.symbol * fibre_price.symbol * sp.ceiling(7 * servers.symbol / 2),
        assumptions=(
            "one NIC per server, oversubscription 1: P = 6 n switch ports, P + n transceivers",
            "one fibre per two transceivers",
        ),
        notes="Prices at the fat-tree's rate; the similar-cost rate makes this equal topoopt.fabric_cost.",
    ),
]
