"""CHASE's compute model against kernels measured on a real device: this machine's CPU.

The paper reports a compute-model error of 4.4-7.5 % MAPE (abstract; the devices and kernels are
not public). Our compute model is the roofline of :func:`coopt.problems.chase.workloads.roofline_time`
with three constants per device type (research notes 3.d)::

    t = max(FLOP / (eta_c F), bytes / (eta_m BW)) + t_launch

This script measures it on the one device we have: one core of this machine, numpy float32
(OpenBLAS for the matrix products), single-threaded.

* **Calibration** (one constant each): eta_c F is the best rate of square GEMMs of 512, 1536 and 2048,
  eta_m BW that of an add over 1.5 GB (its three arrays together, far beyond any cache), t_launch
  the time of a one-element add (numpy's dispatch).
* **Held out**: 50 kernels of the kinds CHASE's workloads are made of: GEMMs of transformer layer
  shapes (tokens x hidden x 4 hidden), matrix-vector products, adds and dot products from 1e3 to
  5.3e6 elements. FLOPs and bytes are counted analytically (GEMM ``2MKN`` FLOPs and
  ``4(MK + KN + MN)`` bytes; add ``N`` and ``12N``; dot ``2N`` and ``8N``; GEMV ``2MK`` and
  ``4(MK + M + K)``).
* **Timing**: each kernel runs in batches of about 2 ms; the time is the least batch mean of
  fifteen (the least rejects other jobs' interference on a shared machine).

MAPE = mean |predicted - measured| / measured, over all held-out kernels and by class. The
sensitivity part varies the two assumptions that decide it on a CPU:

* *cache-aware*: the bandwidth an add reaches at the kernel's working set, from a sweep of adds
  over working sets of 16 KiB to 1.5 GB (the Empirical Roofline Toolkit's way of finding a
  machine's memory levels; the cache sizes a virtual machine reports need not be the share its
  core sees);
* *large kernels*: the MAPE over the kernels that run 1 ms or more, the regime of an accelerator's
  layer-sized kernels, where neither launch nor cache residency matters;
* *GEMM shape*: the GEMMs' MAPE by their smallest dimension; one compute efficiency for every
  shape is the other assumption (BLAS reaches its peak only on large, square-ish products).

    python benchmarks/figures/roofline_cpu.py           # table
    python benchmarks/figures/roofline_cpu.py --json    # the figures fidelity_chase.py reads
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: Kernels measured at or above this many seconds form the "large kernels" class.
LARGE_S = 1e-3
#: The calibration sweep's working sets (bytes of the add's three arrays): 2^14 .. 1.5e9.
SWEEP = tuple(2.0 ** k for k in range(14, 31)) + (1.5e9,)


@dataclass(frozen=True)
class Kernel:
    name: str
    kind: str  # gemm | gemv | add | dot
    flops: float
    traffic: float  # bytes
    run: Callable[[], object]


def _gemm(m: int, k: int, n: int) -> Kernel:
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    c = np.empty((m, n), dtype=np.float32)
    return Kernel(f"gemm {m}x{k}x{n}", "gemm", 2.0 * m * k * n, 4.0 * (m * k + k * n + m * n),
                  lambda: np.matmul(a, b, out=c))


def _gemv(m: int, k: int) -> Kernel:
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    x = rng.random(k, dtype=np.float32)
    y = np.empty(m, dtype=np.float32)
    return Kernel(f"gemv {m}x{k}", "gemv", 2.0 * m * k, 4.0 * (m * k + m + k), lambda: np.matmul(a, x, out=y))


def _add(n: int) -> Kernel:
    import numpy as np

    a = np.ones(n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    c = np.empty(n, dtype=np.float32)
    return Kernel(f"add {n}", "add", float(n), 12.0 * n, lambda: np.add(a, b, out=c))


def _dot(n: int) -> Kernel:
    import numpy as np

    a = np.ones(n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    return Kernel(f"dot {n}", "dot", 2.0 * n, 8.0 * n, lambda: np.dot(a, b))


def held_out() -> list[Kernel]:
    """The 50 test kernels (none of them is a calibration kernel)."""
    kernels = []
    for tokens in (64, 256, 1024):
        for hidden in (256, 512, 1024):
            kernels += [_gemm(tokens, hidden, hidden), _gemm(tokens, hidden, 4 * hidden),
                        _gemm(tokens, 4 * hidden, hidden)]
    kernels += [_gemv(h, h) for h in (256, 512, 1024, 2048, 4096)]
    sizes = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000, 4_000_000, 16_000_000 // 3)
    kernels += [_add(n) for n in sizes]
    kernels += [_dot(n) for n in sizes]
    return kernels


def measure(kernel: Kernel, batch_s: float = 2e-3, batches: int = 15) -> float:
    """Seconds per call: the least of ``batches`` batch means, each batch about ``batch_s`` long."""
    kernel.run()
    t0 = time.perf_counter()
    kernel.run()
    once = max(time.perf_counter() - t0, 1e-7)
    calls = max(1, int(batch_s / once))
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            kernel.run()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def _add_rate(working_set: float, launch: float) -> float:
    kernel = _add(max(1, int(working_set / 12)))
    return kernel.traffic / max(measure(kernel) - launch, 1e-9)


def calibrate() -> dict:
    """The roofline constants of this core: eta_c F (FLOP/s), eta_m BW (bytes/s of the largest
    working set: DRAM), launch (s), and the cache-aware variant's bandwidth curve, a list of
    (working set bytes, bytes/s) measured by adds (the Empirical Roofline Toolkit's method)."""
    launch = measure(_add(1))
    squares = (_gemm(n, n, n) for n in (512, 1536, 2048))
    flops = max(g.flops / measure(g, batch_s=0.05, batches=7) for g in squares)
    curve = [(ws, _add_rate(ws, launch)) for ws in SWEEP]
    return {"flops": flops, "bandwidth": curve[-1][1], "launch": launch, "curve": curve}


def bandwidth_of(kernel: Kernel, constants: dict, cache_aware: bool) -> float:
    """The bandwidth the roofline charges: DRAM's, or (cache-aware) the sweep's, interpolated
    log-linearly at the kernel's bytes (clamped to the sweep's ends)."""
    curve = constants["curve"]
    if not cache_aware or kernel.traffic >= curve[-1][0]:
        return constants["bandwidth"]
    if kernel.traffic <= curve[0][0]:
        return curve[0][1]
    for (w0, b0), (w1, b1) in zip(curve, curve[1:], strict=False):
        if w0 <= kernel.traffic <= w1:
            share = math.log(kernel.traffic / w0) / math.log(w1 / w0)
            return math.exp((1 - share) * math.log(b0) + share * math.log(b1))
    raise AssertionError("unreachable: the curve covers the traffic")


def predict(kernel: Kernel, constants: dict, cache_aware: bool = False) -> float:
    from coopt.problems.chase.hardware import DeviceType
    from coopt.problems.chase.workloads import Task, roofline_time

    core = DeviceType("cpu-core", peak_flops=constants["flops"], launch=constants["launch"],
                      memory_bandwidth=bandwidth_of(kernel, constants, cache_aware))
    return roofline_time(Task(kernel.name, flops=kernel.flops, traffic=kernel.traffic), core)


MODELS = ("roofline", "cache_aware")
COLUMNS = ("all", "large", "gemm", "gemv", "add", "dot")


def mape(pairs: list[tuple[float, float]]) -> float:
    """Mean absolute percentage error of (predicted, measured) pairs, as a fraction."""
    return sum(abs(p - m) / m for p, m in pairs) / len(pairs)


def run() -> dict:
    constants = calibrate()
    rows = []
    for kernel in held_out():
        measured = measure(kernel)
        rows.append({"name": kernel.name, "kind": kernel.kind, "measured": measured,
                     "roofline": predict(kernel, constants), "cache_aware": predict(kernel, constants, True)})
    out = {"constants": constants, "rows": rows}
    classes = {"all": lambda r: True, "large": lambda r: r["measured"] >= LARGE_S}
    classes.update({kind: (lambda r, kind=kind: r["kind"] == kind) for kind in COLUMNS[2:]})
    for model in MODELS:
        out[model] = {name: mape([(r[model], r["measured"]) for r in rows if keep(r)])
                      for name, keep in classes.items()}
    out["large_count"] = sum(r["measured"] >= LARGE_S for r in rows)
    out["gemm_by_least"] = {}
    for least in (64, 256, 1024):
        pairs = [(r["roofline"], r["measured"]) for r in rows
                 if r["kind"] == "gemm" and _least(r["name"]) == least]
        out["gemm_by_least"][str(least)] = mape(pairs)
    return out


def _least(name: str) -> int:
    """The smallest dimension of a GEMM named ``gemm MxKxN``."""
    return min(map(int, name.split()[1].split("x")))


def measured_in_subprocess() -> dict:
    """Run the measurement in a fresh interpreter with one BLAS thread (the thread count is fixed
    when numpy loads OpenBLAS, so it cannot be set from a process that imported numpy already)."""
    env = dict(os.environ, **{name: "1" for name in THREAD_VARIABLES})
    done = subprocess.run([sys.executable, __file__, "--json"], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if any(os.environ.get(name) != "1" for name in THREAD_VARIABLES) and not args.json:
        result = measured_in_subprocess()
    else:
        result = run()
    if args.json:
        print(json.dumps(result))
        return
    c = result["constants"]
    print(f"calibration (one core, float32): eta_c F = {c['flops'] / 1e9:.1f} GFLOP/s, "
          f"eta_m BW = {c['bandwidth'] / 1e9:.2f} GB/s (DRAM), launch = {c['launch'] * 1e6:.2f} us")
    print("bandwidth sweep (add): " + ", ".join(f"{w / 2**20:.3g} MiB {b / 1e9:.1f}" for w, b in c["curve"])
          + " GB/s")
    print(f"\n{'kernel':24s}{'measured [us]':>15s}{'roofline':>10s}{'err':>8s}"
          f"{'cache-aware':>12s}{'err':>8s}")
    for r in result["rows"]:
        m = r["measured"]
        print(f"{r['name']:24s}{m * 1e6:>15.2f}{r['roofline'] * 1e6:>10.2f}{abs(r['roofline'] / m - 1):>8.1%}"
              f"{r['cache_aware'] * 1e6:>12.2f}{abs(r['cache_aware'] / m - 1):>8.1%}")
    print(f"\n{'MAPE':24s}" + "".join(f"{k:>8s}" for k in COLUMNS)
          + f"   (large: the {result['large_count']} kernels of >= {LARGE_S * 1e3:g} ms)")
    for model in MODELS:
        print(f"{model:24s}" + "".join(f"{result[model][k]:>8.1%}" for k in COLUMNS))
    print("\nGEMMs by their smallest dimension (one compute efficiency for every shape):")
    for least, error in result["gemm_by_least"].items():
        count = sum(r["kind"] == "gemm" and _least(r["name"]) == int(least) for r in result["rows"])
        print(f"   min(M, K, N) = {int(least):4d}: MAPE {error:.1%} over {count} GEMMs")


if __name__ == "__main__":
    main()
