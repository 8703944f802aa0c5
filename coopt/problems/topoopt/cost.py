"""Cost of a TopoOpt fabric and of the similar-cost fat-tree (research notes section 2(d), the MixNet
cost calculator's formulas), priced with an instance's ``[prices]`` (section 2(e) by default)."""

from __future__ import annotations

import math

import numpy as np

from coopt.problems.topoopt.model import (
    DEFAULT_PRICES,
    Instance,
    Prices,
    PriceTier,
    fattree_price_per_server,
)


def tier_at(prices: Prices, gbps: float) -> PriceTier:
    """Component prices at a port rate: linear interpolation between the priced rates; below the
    lowest one, in proportion to the rate (from nothing at 0 Gbit/s: a 40 G port costs 40 % of a
    100 G one in the default table); above the highest, the highest tier's prices."""
    rates = [0.0] + [t.rate for t in prices.tiers]
    rate = gbps * 1e9

    def at(part: str) -> float:
        return float(np.interp(rate, rates, [0.0] + [getattr(t, part) for t in prices.tiers]))

    return PriceTier(rate, at("nic"), at("transceiver"), at("switch_port"), at("patch_panel_port"))


def nics_per_server(degree: int, prices: Prices) -> int:
    """``ceil(d / ports_per_nic)``: NICs a degree-``d`` server buys."""
    return math.ceil(degree / prices.ports_per_nic)


def topoopt_cost(servers: int, degree: int, gbps: float, prices: Prices = DEFAULT_PRICES) -> float:
    """``n (ceil(d / p) c_nic + d (c_tr + c_pp + L c_fib))``: NICs (``p = ports_per_nic`` ports share
    one), and per port a transceiver, a patch-panel port and one fibre. With ``p = 1`` this is the
    MixNet calculator's ``n d (c_nic + c_tr + c_pp + L c_fib)``."""
    p = tier_at(prices, gbps)
    fibre = prices.fibre_length * prices.fibre_per_m
    per_port = p.transceiver + p.patch_panel_port + fibre
    return servers * (nics_per_server(degree, prices) * p.nic + degree * per_port)


def fattree_cost(servers: int, gbps: float, prices: Prices = DEFAULT_PRICES) -> float:
    """3-tier non-blocking fat-tree, one NIC per server: switch ports ``P = 6 S``, transceivers
    ``P + S``, fibres ``ceil((P + S) / 2)``: ``S c_nic + (P + S) c_tr + P c_eps + L c_fib ceil(7 S / 2)``.
    Linear in the rate between priced rates (every price is)."""
    parts = servers * fattree_price_per_server(tier_at(prices, gbps))
    return parts + prices.fibre_length * prices.fibre_per_m * math.ceil(7 * servers / 2)


def similar_cost_fattree_gbps(
    servers: int, degree: int, gbps: float, prices: Prices = DEFAULT_PRICES
) -> float:
    """Per-server fat-tree rate of the same cost as a ``degree`` x ``gbps`` TopoOpt fabric: the
    fat-tree cost is piecewise linear and increasing in the rate (``load`` checks the tiers, and
    below the lowest tier every price falls in proportion to the rate), so this inverts it exactly up
    to the highest priced rate, where it is clamped."""
    budget = topoopt_cost(servers, degree, gbps, prices)
    rates = [0.0] + [t.rate / 1e9 for t in prices.tiers]
    return float(np.interp(budget, [fattree_cost(servers, r, prices) for r in rates], rates))


def similar_cost_fattree(instance: Instance) -> float:
    """:func:`similar_cost_fattree_gbps` of an instance, with its own prices."""
    n, d = instance.servers, instance.degree
    return similar_cost_fattree_gbps(n, d, instance.bandwidth / 1e9, instance.prices)
