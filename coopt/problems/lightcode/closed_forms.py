"""LightCode crossovers: when a photonic tensor unit (PTU) beats an electronic device.

Source: R. Tomich et al., LightCode, arXiv 2509.16443, and the repo's cost constants; the closed
forms are derived here (research notes, section 1(d)) from the cost model of
:mod:`coopt.problems.lightcode.graph`, not transcribed from the paper.

Latency. A compute-bound matrix product of ``MACs`` multiply-accumulates takes ``2 MACs / Phi`` on
the GPU and ``MACs / (m c f_PTU)`` on a PTU with ``m`` lanes per core and ``c`` cores (ceilings,
launch and conversion latencies ignored), so the PTU is faster iff ``m c > Phi / (2 f_PTU)``; the
speed-up is ``2 m c f_PTU / Phi``.

Energy, under the authors' ``sram_hop`` transfers (every hop through SRAM, a PTU input leg adds a
DAC, an output leg an ADC), for one operator whose producers and consumers stay electronic: the PTU
saves ``(e - e_PTU)`` per MAC and pays ``E_DAC`` per converted input or weight element and
``E_ADC`` per output element. Per shape, with sequence length ``L``:

* dense ``[L, K] x [K, N]`` with weights converted on every call:
  ``(e - e_PTU) L K N > E_DAC (L K + K N) + E_ADC L N``, i.e.
  ``L > L* = E_DAC K N / ((e - e_PTU) K N - E_DAC K - E_ADC N)``;
* attention scores ``Q K^T`` per head ``[L, d_h] x [d_h, L]``, both operands converted:
  ``L* = 2 E_DAC d_h / ((e - e_PTU) d_h - E_ADC)``;
* attention context ``A V`` per head ``[L, L] x [L, d_h]``:
  ``L* = (E_DAC + E_ADC) d_h / ((e - e_PTU) d_h - E_DAC)``.

A non-positive denominator means the PTU never pays off for that shape. The tests check each
``L*`` against the sequence-length scan of the solved model (first ``L`` whose energy optimum puts
the operator on the PTU is ``floor(L*) + 1``).
"""

from __future__ import annotations

from coopt.closed_forms import Bound, Quantity

SOURCE = "Tomich et al., LightCode, arXiv 2509.16443; constants from github.com/RyanTomich/LightCode"

peak = Quantity("Phi", "GPU tensor-core throughput", "FLOP/s", default=494.7e12, latex=r"\Phi")
clock = Quantity("f_PTU", "PTU clock", "Hz", default=9.7e9, latex=r"f_{\mathrm{PTU}}")
lanes = Quantity("m", "PTU lanes per core (wavelengths x spatial replicas)", "1", default=20.0)
cores = Quantity("c", "PTU cores", "1", "positive_integer", default=1.0)
e_mac = Quantity("e", "electronic energy per MAC", "J", default=0.07e-12)
e_ptu = Quantity(
    "e_PTU", "PTU energy per MAC", "J", "nonnegative", default=0.04e-12, latex=r"e_{\mathrm{PTU}}"
)
e_dac = Quantity(
    "E_DAC",
    "DAC energy per converted element",
    "J",
    "nonnegative",
    default=3.18e-12,
    latex=r"E_{\mathrm{DAC}}",
)
e_adc = Quantity(
    "E_ADC", "ADC energy per output element", "J", "nonnegative", default=1.6e-12, latex=r"E_{\mathrm{ADC}}"
)
inner = Quantity("K", "inner (reduction) length of the dense product", "1", "positive_integer", default=768.0)
outer = Quantity("N", "output features of the dense product", "1", "positive_integer", default=2304.0)
d_head = Quantity("d_h", "attention head dimension", "1", "positive_integer", default=64.0)

saving = e_mac.symbol - e_ptu.symbol

BOUNDS = [
    Bound(
        name="lightcode.latency_crossover_lanes",
        summary="PTU lanes x cores above which a compute-bound matmul runs faster than on the GPU",
        source=SOURCE,
        output=Quantity("mc_star", "crossover lanes x cores m c", "1", latex=r"(mc)^*"),
        inputs=(peak, clock),
        expr=peak.symbol / (2 * clock.symbol),
        assumptions=(
            "GPU at its tensor-core peak (compute bound)",
            "one MAC per lane per PTU cycle",
            "ceilings, launch and conversion latencies ignored",
        ),
        notes="With the repo's H100-like Phi = 494.7 TFLOP/s and f_PTU = 9.7 GHz: m c > 25,500.",
    ),
    Bound(
        name="lightcode.ptu_speedup",
        summary="Latency ratio GPU / PTU of a compute-bound matrix product",
        source=SOURCE,
        output=Quantity("S", "speed-up of the PTU over the GPU", "1"),
        inputs=(lanes, cores, clock, peak),
        expr=2 * lanes.symbol * cores.symbol * clock.symbol / peak.symbol,
        assumptions=("GPU at its tensor-core peak", "ceilings, launch and conversion latencies ignored"),
        notes="The repo's PHU (m = 20, c = 1) gives S = 1/1275: only a CPU is slow enough to lose to it.",
    ),
    Bound(
        name="lightcode.energy_crossover_dense",
        summary="Sequence length above which a dense [L,K]x[K,N] costs less energy on the PTU",
        source=SOURCE,
        output=Quantity("L_star", "crossover sequence length", "tokens", "real", latex=r"L^*"),
        inputs=(e_dac, e_adc, e_mac, e_ptu, inner, outer),
        expr=e_dac.symbol
        * inner.symbol
        * outer.symbol
        / (saving * inner.symbol * outer.symbol - e_dac.symbol * inner.symbol - e_adc.symbol * outer.symbol),
        assumptions=(
            "sram_hop transfers; neighbours electronic",
            "weights converted by the DAC on every call",
            "one consumer of the output",
        ),
        notes="GPT-2 QKV (768 x 2304) vs the GPU: L* = 119.8; vs a CPU (e = 0.1 pJ): 56.2.",
    ),
    Bound(
        name="lightcode.energy_crossover_scores",
        summary="Sequence length above which attention scores Q K^T cost less energy on the PTU",
        source=SOURCE,
        output=Quantity("L_star", "crossover sequence length", "tokens", "real", latex=r"L^*"),
        inputs=(e_dac, e_adc, e_mac, e_ptu, d_head),
        expr=2 * e_dac.symbol * d_head.symbol / (saving * d_head.symbol - e_adc.symbol),
        assumptions=("sram_hop transfers; neighbours electronic", "both operands converted"),
        notes="d_h = 64 vs the GPU: L* = 1272, beyond GPT-2's 1024 context; d_h = 128: 363.4.",
    ),
    Bound(
        name="lightcode.energy_crossover_context",
        summary="Sequence length above which attention context A V costs less energy on the PTU",
        source=SOURCE,
        output=Quantity("L_star", "crossover sequence length", "tokens", "real", latex=r"L^*"),
        inputs=(e_dac, e_adc, e_mac, e_ptu, d_head),
        expr=(e_dac.symbol + e_adc.symbol) * d_head.symbol / (saving * d_head.symbol - e_dac.symbol),
        assumptions=("sram_hop transfers; neighbours electronic", "both operands converted"),
        notes="Derived here. A negative L* (denominator <= 0) means never: d_h = 64 vs the GPU (-242.8).",
    ),
]

#: Which bound governs which operator role of the Stacked Graph.
ROLE_BOUND = {
    "qkv": "lightcode.energy_crossover_dense",
    "proj": "lightcode.energy_crossover_dense",
    "fc1": "lightcode.energy_crossover_dense",
    "fc2": "lightcode.energy_crossover_dense",
    "lm_head": "lightcode.energy_crossover_dense",
    "q": "lightcode.energy_crossover_dense",
    "k": "lightcode.energy_crossover_dense",
    "v": "lightcode.energy_crossover_dense",
    "o": "lightcode.energy_crossover_dense",
    "gate": "lightcode.energy_crossover_dense",
    "up": "lightcode.energy_crossover_dense",
    "down": "lightcode.energy_crossover_dense",
    "qk": "lightcode.energy_crossover_scores",
    "av": "lightcode.energy_crossover_context",
}
