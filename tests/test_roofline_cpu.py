"""The CPU roofline benchmark's arithmetic (benchmarks/figures/roofline_cpu.py): MAPE, the cache-aware
bandwidth curve and the prediction, on synthetic constants (no timing here)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "figures" / "roofline_cpu.py"
spec = importlib.util.spec_from_file_location("roofline_cpu", PATH)
roofline_cpu = importlib.util.module_from_spec(spec)
sys.modules.setdefault("roofline_cpu", roofline_cpu)  # dataclasses look their module up there
spec.loader.exec_module(roofline_cpu)

CONSTANTS = {"flops": 1e11, "bandwidth": 1e10, "launch": 1e-6,
             "curve": [(1e4, 1e11), (1e6, 1e11 / 4), (1e8, 1e10)]}


def kernel(flops: float, traffic: float) -> roofline_cpu.Kernel:
    return roofline_cpu.Kernel("k", "add", flops, traffic, lambda: None)


def test_mape_is_the_mean_relative_error() -> None:
    assert roofline_cpu.mape([(1.0, 1.0), (3.0, 2.0), (1.0, 2.0)]) == pytest.approx((0 + 0.5 + 0.5) / 3)


def test_one_level_roofline_is_the_formula() -> None:
    memory_bound = kernel(1e3, 1e7)
    assert roofline_cpu.predict(memory_bound, CONSTANTS) == pytest.approx(1e7 / 1e10 + 1e-6)
    compute_bound = kernel(1e10, 1e3)
    assert roofline_cpu.predict(compute_bound, CONSTANTS) == pytest.approx(1e10 / 1e11 + 1e-6)


def test_cache_aware_bandwidth_interpolates_and_clamps() -> None:
    at = roofline_cpu.bandwidth_of
    assert at(kernel(0, 1e3), CONSTANTS, True) == 1e11  # below the sweep: its first point
    assert at(kernel(0, 1e6), CONSTANTS, True) == pytest.approx(1e11 / 4)
    assert at(kernel(0, 1e5), CONSTANTS, True) == pytest.approx(math.sqrt(1e11 * 1e11 / 4))  # log-midpoint
    assert at(kernel(0, 1e9), CONSTANTS, True) == 1e10  # beyond: DRAM
    assert at(kernel(0, 1e5), CONSTANTS, False) == 1e10  # one level: DRAM everywhere


def test_held_out_kernels_are_not_the_calibration_kernels() -> None:
    names = [k.name for k in roofline_cpu.held_out()]
    assert len(names) == len(set(names)) == 50
    assert not {"gemm 512x512x512", "gemm 1536x1536x1536", "gemm 2048x2048x2048", "add 1"} & set(names)
