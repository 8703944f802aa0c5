"""Optical and electrical component prices, the one table two problems read: TopoOpt's similar-cost
fat-tree baseline and MixNet's cost closed forms both price a fabric with the MixNet cost
calculator's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PriceTier:
    """Unit prices (US$) of the components of one port rate (bit/s)."""

    rate: float
    nic: float  # one NIC
    transceiver: float  # one optical transceiver
    switch_port: float  # one electrical packet-switch port
    patch_panel_port: float  # one optical patch-panel port


@dataclass(frozen=True)
class Prices:
    """What the similar-cost fat-tree baseline is sized with: component prices per port rate (tiers
    sorted by rate; a rate between tiers is priced by linear interpolation, outside them by the
    nearest tier), the fibre price (US$/m), the length of one fibre (m), and how many of a
    server's optical ports share one NIC (1: a NIC per port, as the MixNet calculator prices
    TopoOpt; d: one NIC split into d ports, as the prototype's 4 x 25 G NIC)."""

    tiers: tuple[PriceTier, ...]
    fibre_per_m: float
    fibre_length: float
    ports_per_nic: int = 1


#: The MixNet cost calculator's defaults (research notes section 2(e), [code]:
#: mixnet-project/mixnet-project.github.io ``src/config/constants.js``): per item at 100/200/400/800
#: Gbit/s, fibre 0.3 US$/m; 500 m per fibre (section 2(d)).
DEFAULT_PRICES = Prices(
    tiers=(
        PriceTier(100e9, nic=659, transceiver=99, switch_port=187, patch_panel_port=100),
        PriceTier(200e9, nic=1079, transceiver=239, switch_port=374, patch_panel_port=100),
        PriceTier(400e9, nic=1499, transceiver=659, switch_port=1090, patch_panel_port=100),
        PriceTier(800e9, nic=2248, transceiver=1399, switch_port=1400, patch_panel_port=100),
    ),
    fibre_per_m=0.3,
    fibre_length=500.0,
)
