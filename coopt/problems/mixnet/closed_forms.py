"""MixNet closed forms: fabric cost of four fabrics as the authors' calculator computes it, performance
per dollar, the all-to-all lower bound, the electrical-only time and the exposed reconfiguration.

Source: Liao et al., MixNet, SIGCOMM 2025 (arXiv 2501.03905); the cost calculator of
mixnet-project/mixnet-project.github.io (``assets/index-BhJHecqu.js`` at commit 60a7636d, functions
``OI`` fat-tree, ``lj`` rail-optimized = fat-tree, ``cj`` rail-only, ``uj`` TopoOpt, ``fj``
MixNet, ``$_`` fibre, ``AGe`` perf per dollar); research notes section 2(d).

Fabric costs (``S`` servers of ``N`` NICs, one NIC per GPU; oversubscription ``o``; ``L`` metres per
fibre; unit prices ``c_nic c_tr c_eps c_ocs c_pp c_fib``):

* fat-tree (3 tiers): switch ports ``P = S N (1 + 5 o)`` (ToR down ``SN``, ToR up ``SN o``,
  aggregation ``2 SN o``, core ``2 SN o``), transceivers ``P + SN``, fibres ``ceil((P + SN) / 2)``:
  ``C = SN c_nic + (P + SN) c_tr + P c_eps + L c_fib ceil((P + SN) / 2)``. The calculator prices
  the rail-optimized fabric with this same function;
* rail-only (no spine): ``P = S N (1 + 3 o)``, otherwise as the fat-tree;
* TopoOpt (every NIC to a patch panel): ``SN (c_nic + c_tr + c_pp + L c_fib)``;
* MixNet: ``E = S (N - alpha)`` electrical NICs into a non-blocking 3-tier fat-tree of ``6 E``
  ports, ``6 E + SN`` transceivers, ``ceil(6E / 2) + S alpha`` fibres, and ``S q`` OCS ports.
  The calculator departs from that count twice, and both are symbols here with the calculator's
  choice as default: it charges ``q = N`` OCS ports per server although only ``alpha`` NICs reach
  the OCS (research notes: "looks like a bug"; physical: ``q = alpha``), and it charges none of
  the ``6 E`` electrical switch ports it counts (``k = 0``; physical: ``k = 1``).

Unit prices: the calculator's defaults (its ``CostTable``, "from the paper"), which coopt keeps
in :data:`coopt.prices.DEFAULT_PRICES`; the OCS port price, absent there, is
:data:`coopt.problems.mixnet.iteration.OCS_PORT_USD`.
"""

from __future__ import annotations

import sympy as sp

from coopt.closed_forms import Bound, Quantity
from coopt.prices import DEFAULT_PRICES
from coopt.problems.mixnet.iteration import OCS_PORT_USD

SOURCE = ("Liao et al., MixNet, SIGCOMM 2025 (arXiv 2501.03905); calculator "
          "mixnet-project/mixnet-project.github.io assets/index-BhJHecqu.js (60a7636d)")
PRICES_100G = DEFAULT_PRICES.tiers[0]

servers = Quantity("S", "servers", "1", "positive_integer", default=128)
nics = Quantity("N", "NICs per server (one per GPU)", "1", "positive_integer", default=8)
alpha = Quantity("alpha", "NICs per server on the optical circuit switch", "1", "nonnegative_integer",
                 default=6, latex=r"\alpha")
oversubscription = Quantity("o", "electrical oversubscription", "1", "positive", default=1)
ocs_charged = Quantity("q", "OCS ports charged per server (calculator: N; physical: alpha)", "1",
                       "nonnegative_integer", default=8)
nic_price = Quantity("c_nic", "price of one NIC", "USD", "nonnegative", default=PRICES_100G.nic)
transceiver_price = Quantity("c_tr", "price of one transceiver", "USD", "nonnegative",
                             default=PRICES_100G.transceiver)
switch_port_price = Quantity("c_eps", "price of one electrical switch port", "USD", "nonnegative",
                             default=PRICES_100G.switch_port)
ocs_port_price = Quantity("c_ocs", "price of one optical circuit switch port", "USD", "nonnegative",
                          default=OCS_PORT_USD)
patch_panel_price = Quantity("c_pp", "price of one patch-panel port", "USD", "nonnegative",
                             default=PRICES_100G.patch_panel_port)
fibre_price = Quantity("c_fib", "fibre price per metre", "USD/m", "nonnegative",
                       default=DEFAULT_PRICES.fibre_per_m)
fibre_length = Quantity("L", "length of one fibre", "m", "nonnegative", default=DEFAULT_PRICES.fibre_length)
eps_charged = Quantity("k", "charge MixNet's 6E electrical switch ports (1) or not (0, the calculator)", "1",
                       "unit", default=0)
cost = Quantity("C", "network cost", "USD", "positive", default=1.691136e6)
normalized_time = Quantity("t", "normalized iteration time (1 = the best fabric)", "1", "positive",
                           default=1.0)
busiest_bytes = Quantity("D_max", "bytes the busiest server sends or receives in one all-to-all", "B",
                         default=4e8)
nic_rate = Quantity("B", "rate of one NIC (and of one circuit, each way)", "bit/s", default=100e9)
delay = Quantity("delta", "reconfiguration delay", "s", "nonnegative", default=25e-3, latex=r"\delta")
overlap = Quantity("w", "compute before the all-to-all that hides the reconfiguration", "s", "nonnegative",
                   default=5.9e-3)

S, N, A, O = servers.symbol, nics.symbol, alpha.symbol, oversubscription.symbol
Q = ocs_charged.symbol
NIC, TR, EPS, OCS, PP = (nic_price.symbol, transceiver_price.symbol, switch_port_price.symbol,
                          ocs_port_price.symbol, patch_panel_price.symbol)
FIB, LEN = fibre_price.symbol, fibre_length.symbol


def _tree_cost(ports: sp.Expr) -> sp.Expr:
    """NICs, transceivers (ports + NICs), ports and fibres (one per two transceivers) of a tree."""
    ends = ports + S * N
    return S * N * NIC + ends * TR + ports * EPS + LEN * FIB * sp.ceiling(ends / 2)


ELECTRICAL_NICS = S * (N - A)
PRICE_INPUTS = (servers, nics, oversubscription, nic_price, transceiver_price, switch_port_price, fibre_price,
                fibre_length)

BOUNDS = [
    Bound(
        name="mixnet.fattree_cost",
        summary="3-tier fat-tree (also the rail-optimized, as priced): P = SN(1+5o) ports, P+SN transceivers",
        source=SOURCE + " (function OI; lj = OI)",
        output=Quantity("C_ft", "network cost of the fat-tree", "USD", "positive"),
        inputs=PRICE_INPUTS,
        expr=_tree_cost(S * N * (1 + 5 * O)),
        assumptions=("one NIC per GPU, N per server",
                     "ToR up-links = o x down-links; aggregation and core 2x that",
                     "one fibre per two transceivers"),
        notes="128 servers at 100 Gbit/s: 3.071 M$ (research notes 2(f)); rail-optimized is priced the same.",
    ),
    Bound(
        name="mixnet.rail_only_cost",
        summary="rail-only fabric (no spine): P = SN(1+3o) ports, P+SN transceivers",
        source=SOURCE + " (function cj)",
        output=Quantity("C_ro", "network cost of the rail-only fabric", "USD", "positive"),
        inputs=PRICE_INPUTS,
        expr=_tree_cost(S * N * (1 + 3 * O)),
        assumptions=("as the fat-tree without the core tier",),
    ),
    Bound(
        name="mixnet.topoopt_cost",
        summary="TopoOpt: transceiver, patch-panel port, fibre per NIC: SN(c_nic + c_tr + c_pp + L c_fib)",
        source=SOURCE + " (function uj)",
        output=Quantity("C_to", "network cost of TopoOpt", "USD", "positive"),
        inputs=(servers, nics, nic_price, transceiver_price, patch_panel_price, fibre_price, fibre_length),
        expr=S * N * (NIC + TR + PP + LEN * FIB),
        assumptions=("one fibre per NIC to the patch panel",),
    ),
    Bound(
        name="mixnet.mixnet_cost",
        summary="MixNet: 6E-port fat-tree for E = S(N-alpha) NICs (ports charged k), 6E+SN transceivers, "
                "S q OCS ports",
        source=SOURCE + " (function fj)",
        output=Quantity("C_mx", "network cost of MixNet", "USD", "positive"),
        inputs=(servers, nics, alpha, ocs_charged, eps_charged, nic_price, transceiver_price,
                switch_port_price, ocs_port_price, fibre_price, fibre_length),
        expr=S * N * NIC + (6 * ELECTRICAL_NICS + S * N) * TR + eps_charged.symbol * 6 * ELECTRICAL_NICS * EPS
        + S * Q * OCS + LEN * FIB * (sp.ceiling(6 * ELECTRICAL_NICS / 2) + S * A),
        assumptions=("the electrical part is a non-blocking 3-tier fat-tree over the N - alpha NICs",
                     "each of the S alpha optical NICs has one fibre to the OCS"),
        notes="The calculator (q = N, k = 0): 1.691 M$ at 128 servers, 100 Gbit/s; the ports that exist "
              "(q = alpha, k = 1): 1.845 M$.",
        relations=(sp.Le(A, N),),
    ),
    Bound(
        name="mixnet.perf_per_dollar",
        summary="performance per million dollars: (1 / t) / (C / 10^6)",
        source=SOURCE + " (function AGe)",
        output=Quantity("ppd", "normalized performance per million dollars", "1/USD", "positive"),
        inputs=(normalized_time, cost),
        expr=(1 / normalized_time.symbol) / (cost.symbol / 10**6),
        notes="The calculator reports it relative to the fat-tree's at the same rate and model.",
    ),
    Bound(
        name="mixnet.all_to_all_lower_bound",
        summary="all-to-all time on any circuits: 8 D_max / (alpha B + (N - alpha) B / o)",
        source=SOURCE + "; research notes 2(d)",
        output=Quantity("T_a2a", "all-to-all time", "s"),
        inputs=(busiest_bytes, alpha, nics, nic_rate, oversubscription),
        expr=8 * busiest_bytes.symbol / (A * nic_rate.symbol + (N - A) * nic_rate.symbol / O),
        assumptions=("every bit of the busiest server leaves (or arrives) through its alpha circuits or its "
                     "EPS share", "no relaying through other servers"),
        notes="1 / the M1 port bound; tight when the busiest server's circuits all carry its traffic.",
        relations=(sp.Le(A, N - 1),),
    ),
    Bound(
        name="mixnet.electrical_only_time",
        summary="all-to-all time with no circuits: 8 D_max / ((N - alpha) B / o)",
        source=SOURCE + "; research notes 2(d)",
        output=Quantity("T_eps", "all-to-all time on the electrical fabric alone", "s"),
        inputs=(busiest_bytes, alpha, nics, nic_rate, oversubscription),
        expr=8 * busiest_bytes.symbol * O / ((N - A) * nic_rate.symbol),
        assumptions=("hose model: a server sends and receives at most (N - alpha) B / o",),
        notes="alpha = 0, o = 1 is the non-blocking fat-tree's all-to-all time (all N NICs electrical).",
        relations=(sp.Le(A, N - 1),),
    ),
    Bound(
        name="mixnet.exposed_reconfiguration",
        summary="time a reconfiguration adds: max(0, delta - w)",
        source=SOURCE + "; ours (the cross-layer plan)",
        output=Quantity("e", "exposed reconfiguration time", "s", "nonnegative"),
        inputs=(delay, overlap),
        expr=sp.Max(0, delay.symbol - overlap.symbol),
        assumptions=("the circuits are idle during the compute w before the all-to-all",),
    ),
]
