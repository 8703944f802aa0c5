"""Named, sourced constant sets for LightCode instances (``[constants] preset = "..."``).

A preset fills every device and memory constant an instance file leaves out, and the
``photonic_legs`` reading of the SRAM hops. Values are in file units (the field names say the
unit). Every value carries its source: a file and commit of the authors' repository
``github.com/RyanTomich/LightCode`` (cited as ``hardware.py@a424e5e:516``: file, short commit, line,
or the constant's name where only a later snapshot of the file was readable), a public
specification, or "coopt" where the number is our assumption.

* ``coopt``: the constants of coopt's shipped instances (an H100-like GPU roofline, the repo's CPU
  fits, the repo's October 2024 memory and conversion energies, an NVLink-C2C class link), with
  every operand of a photonic operator paying its SRAM-to-PTU leg.
* ``authors-2024-10``: the repository at ``a424e5e`` (7 Oct 2024), the snapshot the research notes
  read: 32-bit numbers, DRAM 160 / HBM 40 / SRAM 12 pJ per number, DAC 3.18 / ADC 1.6 pJ on the
  PTU's legs, and the split node's ``output_shapes[0]``: only a photonic operator's first operand
  pays the SRAM-to-PTU leg (``stacked_graph.py@a424e5e:214-223``, ``_bit_transfer``; the split
  node of ``graph_transformations.py@a424e5e:657-674`` lists every sub-product's inputs, its first
  entry is the first operand). That snapshot's GPU registers no algorithm
  (``hardware.py@a424e5e:454-458``); its GPU here is the later class (``237609f``) with this
  snapshot's energies.
* ``authors-paper-sweep``: the code state of the result files the paper's plots load
  (``optical_transformer_unit_test/*.json`` and ``comparison.py`` at ``237609f``): 8-bit numbers,
  DRAM 8 / HBM 0 / SRAM 2.4 / local 1 pJ per number, the SRAM-PTU connections carrying no energy
  ("to prevent double counting after expansion step", ``hardware.py@237609f``,
  ``initilize_hardware``), so DAC and ADC energies are never charged, the GPU on its tensor cores
  at 494.7e12 dot-product steps per second and its elementwise operators at one element per cycle
  of one SM. The GPU MAC energy is 0.1 pJ: the sweep's all-GPU energies (``llama_prefill_time_
  CPU-False_PHU-True_GPU-True.json``) exceed those of the same run with 0.07 pJ (``..._1_20_...``)
  by exactly 0.03 pJ times the MAC count (0.8926 J at L = 3900), though the file at that commit
  says ``GPU_MAC = 0.07``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

REPO = "github.com/RyanTomich/LightCode"
OCT = "a424e5e"  # 2024-10-07, the snapshot the research notes read
SWEEP = "237609f"  # the commit of optical_transformer_unit_test/ (the paper's result files)
NAMES = ("coopt", "authors-2024-10", "authors-paper-sweep")
LEGS = ("every_operand", "first_operand", "free")


@dataclass(frozen=True)
class Constant:
    value: Any
    source: str


def _c(value: Any, source: str) -> Constant:
    return Constant(value, source)


# -- the GPU --------------------------------------------------------------------------------------
_H100 = {
    "peak_tflops": _c(494.7, "repo docs: H100 dense TF32 tensor-core rate (research notes 1(d))"),
    "elementwise_tops": _c(36.5, "coopt: 144 SM x 128 lanes x 1.98 GHz"),
    "memory_bandwidth_tbyte_per_s": _c(3.35, "NVIDIA H100 SXM datasheet (HBM3)"),
    "launch_latency_us": _c(2.0, "coopt: assumption, kernel launch + sync"),
    "mac_energy_pj": _c(0.07, f"hardware.py@{SWEEP}: GPU_MAC = 0.07 pJ"),
    "op_energy_pj": _c(0.1, "coopt: assumption, elementwise op energy"),
    "local_energy_pj": _c(24.0, "coopt (realistic transfers): SRAM write + read, 2 x 12 pJ"),
}


def _authors_gpu(mac_pj: float, mac_source: str, sram_pj: float) -> dict[str, Constant]:
    """The later GPU class (hardware.py@237609f, ``GPU``): matrix products on 8 x 9 x 2 SMs x 4
    tensor cores, each doing ceil(K / 433.8) cycles per dot product at 1.98 GHz, i.e. 494.7e12
    dot-product steps (MACs) per second (the code feeds the 494.7 "TFLOPS" in as steps, so 2
    FLOP per MAC makes 989.4 TFLOP/s here; the per-product ceilings are not modelled); every
    elementwise operator runs on one SM at one element per cycle (``TuringComplete``
    algorithms, ``clock_period`` of 1.98 GHz); no memory-bound term, no launch latency."""
    return {
        "peak_tflops": _c(989.4, f"hardware.py@{SWEEP}: GPU._gpu_matmul_cycles, 494.7e12 MAC/s"),
        "elementwise_tops": _c(0.00198, f"hardware.py@{SWEEP}: TuringComplete, 1 cycle/element at 1.98 GHz"),
        "memory_bandwidth_tbyte_per_s": _c(0.0, f"hardware.py@{SWEEP}: no memory term in GPU costs"),
        "launch_latency_us": _c(0.0, f"hardware.py@{SWEEP}: no launch term"),
        "mac_energy_pj": _c(mac_pj, mac_source),
        "op_energy_pj": _c(1.0, f"hardware.py@{OCT}:514: JOULE_PER_CYCLE = 1 pJ"),
        "local_energy_pj": _c(2 * sram_pj, "coopt (realistic transfers only): 2 x this preset's SRAM energy"),
    }


# -- the CPU --------------------------------------------------------------------------------------
def _cpu(authors: bool, sram_pj: float) -> dict[str, Constant]:
    """The repo's CPU (one core at 3.208 GHz, main.py@a424e5e:117): the dense fit
    6.8457e-11 s/MAC + 0.8258 us as a roofline with 2 / slope FLOP/s and the intercept as launch
    latency; elementwise operators at one element per cycle; 1 pJ per cycle. The authors' presets
    add their fit for dense operators with an input dimension above 50,000 (the GPT-2 lm_head)
    and, like their fits, no memory-bound term."""
    fit = f"hardware.py@{OCT}:440-441"
    return {
        "peak_tflops": _c(0.029215, f"{fit}: 2 FLOP / 6.845684637179875e-11 s"),
        "elementwise_tops": _c(0.003208, f"main.py@{OCT}:117: 3.208 GHz, one element per cycle"),
        "memory_bandwidth_tbyte_per_s": _c(0.0 if authors else 0.1,
                                           f"{fit}: fitted times, no memory term" if authors
                                           else "coopt: assumption, DDR5 server socket"),
        "launch_latency_us": _c(0.8258, f"{fit}: intercept 8.258292187675319e-07 s"),
        "mac_energy_pj": _c(0.1, f"hardware.py@{OCT}:525: CPU_MAC = 0.1 pJ"),
        "op_energy_pj": _c(1.0, f"hardware.py@{OCT}:514: JOULE_PER_CYCLE = 1 pJ"),
        "local_energy_pj": _c(2 * sram_pj, "coopt (realistic transfers only): 2 x this preset's SRAM energy"),
        "large_dense_min_dim": _c(50000 if authors else 0,
                                  f"hardware.py@{OCT}:434: any input dimension > 50000 (the GPT-2 lm_head)"
                                  if authors else "coopt: off (0)"),
        "large_dense_s_per_mac": _c(3.554631597170242e-10, f"hardware.py@{OCT}:436"),
        "large_dense_intercept_ms": _c(-7.057115703999989, f"hardware.py@{OCT}:437: -0.007057 s"),
    }


# -- the PTU --------------------------------------------------------------------------------------
def _ptu(dac_pj: float, adc_pj: float, source: str, sram_pj: float) -> dict[str, Constant]:
    return {
        "clock_ghz": _c(9.7, f"main.py@{OCT}:118: PHU_MIN_CLOCK = 9.7 GHz"),
        "cores": _c(1, f"main.py@{OCT}:124: PHU(PHU_MIN_CLOCK, 1, 20)"),
        "wavelengths": _c(20, f"main.py@{OCT}:124: multiplex factor 20"),
        "spatial": _c(1, "coopt: no spatial replicas in the repo's PHU"),
        "fan_in": _c(1, f"hardware.py@{OCT}:296-302: K cycles per dot product"),
        "mac_energy_pj": _c(0.04, f"hardware.py@{OCT}:524: PHU_MAC = 0.04 pJ"),
        "dac_energy_pj": _c(dac_pj, source),
        "adc_energy_pj": _c(adc_pj, source),
        "conversion_latency_ns": _c(10.0, f"hardware.py@{OCT}:507: DAC_ADC_DELAY = 10 ns"),
        "laser_power_w": _c(0.0, "repo: lumped into the MAC energy"),
        "local_energy_pj": _c(2 * sram_pj, "coopt (realistic transfers only): 2 x this preset's SRAM energy"),
        "weight_capacity_mb": _c(0.0, "coopt: unlimited"),
    }


# -- memory and link ------------------------------------------------------------------------------
_LINK = {
    "link_energy_pj_per_bit": _c(1.3, "coopt: NVLink-C2C class chip-to-chip link (NVIDIA: 1.3 pJ/bit)"),
    "link_bandwidth_gbyte_per_s": _c(900.0, "coopt: NVLink-C2C class, 900 GB/s"),
    "link_latency_ns": _c(500.0, "coopt: assumption"),
}
_MEMORY_OCT = {
    "clock_ghz": _c(6.0, f"hardware.py@{OCT}:510: MEMORY_CLOCK = 6 GHz"),
    "sram_energy_pj": _c(12.0, f"hardware.py@{OCT}:520-521: SRAM_READ = SRAM_WRITE = 12 pJ"),
    "hbm_energy_pj": _c(40.0, f"hardware.py@{OCT}:518-519: HBM_READ = HBM_WRITE = 40 pJ"),
    "dram_energy_pj": _c(160.0, f"hardware.py@{OCT}:516: DRAM_READ = 160 pJ"),
    "port_energy_pj": _c(2.0, f"hardware.py@{OCT}:522-523: LOCAL_READ + LOCAL_WRITE = 1 + 1 pJ"),
    "bytes_per_element": _c(4, f"hardware.py@{OCT}:509: BITS_PER_NUM = 32"),
    **_LINK,
}
_MEMORY_SWEEP = {
    "clock_ghz": _c(6.0, f"hardware.py@{SWEEP}: MEMORY_CLOCK = 6 GHz"),
    "sram_energy_pj": _c(2.4, f"hardware.py@{SWEEP}: SRAM_READ = 0.3 pJ x BITS_PER_NUM (8)"),
    "hbm_energy_pj": _c(0.0, f"hardware.py@{SWEEP}: HBM_READ = HBM_WRITE = 0"),
    "dram_energy_pj": _c(8.0, f"hardware.py@{SWEEP}: DRAM_READ = 1 pJ x BITS_PER_NUM (8)"),
    "port_energy_pj": _c(2.0, f"hardware.py@{SWEEP}: LOCAL_READ + LOCAL_WRITE = 1 + 1 pJ"),
    "bytes_per_element": _c(1, f"hardware.py@{SWEEP}: BITS_PER_NUM = 8"),
    **_LINK,
}

_OCT_DAC = f"hardware.py@{OCT}:528-529: DAC_POWER = 3.18 pJ, ADC_POWER = 1.6 pJ"
_SWEEP_DAC = (f"hardware.py@{SWEEP}: DAC_POWER = 10 pJ, ADC_POWER = 3.17 pJ (never charged: the "
              "SRAM-PTU connections carry no energy)")
_FIRST = f"stacked_graph.py@{OCT}:214-223: _bit_transfer counts the split node's output_shapes[0]"

PRESETS: MappingProxyType = MappingProxyType({
    "coopt": {
        "gpu": _H100,
        "cpu": _cpu(False, 12.0),
        "ptu": _ptu(3.18, 1.6, _OCT_DAC, 12.0),
        "memory": _MEMORY_OCT,
        "photonic_legs": _c("every_operand", "coopt: every operand crosses SRAM -> PTU"),
    },
    "authors-2024-10": {
        "gpu": _authors_gpu(0.1, f"hardware.py@{OCT}:526: GPU_MAC = 0.1 pJ", 12.0),
        "cpu": _cpu(True, 12.0),
        "ptu": _ptu(3.18, 1.6, _OCT_DAC, 12.0),
        "memory": _MEMORY_OCT,
        "photonic_legs": _c("first_operand", _FIRST),
    },
    "authors-paper-sweep": {
        "gpu": _authors_gpu(0.1, "llama_prefill_time_CPU-False_PHU-True_GPU-True.json@237609f: "
                                 "all-GPU energies minus the 0.07 pJ run = 0.03 pJ x MACs", 2.4),
        "cpu": _cpu(True, 2.4),
        "ptu": _ptu(10.0, 3.17, _SWEEP_DAC, 2.4),
        "memory": _MEMORY_SWEEP,
        "photonic_legs": _c("free", f"hardware.py@{SWEEP}: initilize_hardware, (SRAM, PHU) and "
                                    "(PHU, SRAM) connections with energy 0"),
    },
})


def value(preset: str, table: str, field: str) -> Any:
    """The preset's value of ``field`` in ``table`` (``gpu``, ``cpu``, ``ptu``, ``memory``), file units."""
    return PRESETS[preset][table][field].value


def source(preset: str, table: str, field: str) -> str:
    return PRESETS[preset][table][field].source
