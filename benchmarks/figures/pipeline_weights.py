"""ChronosPipe's hierarchical offloading of weights and optimizer state, on the paper's
reading of its headline (largest trainable layer count; benchmarks/figures/pipeline.py Part B).

Part B charges every device a static ``BETA = 18`` bytes per parameter for the whole iteration:
bf16 weights (2), fp32 main gradients (4), fp32 master weights and Adam's two moments (12). The
paper's Chronos-Offload moves what has the longest reuse distance to the host (its abstract:
"hierarchical offloading of weights and activations"; research notes c.9 [R]): the optimizer
state, touched once per iteration, and the weights of chunks while they are idle. This script
keeps the schedules and their activation offload as they are and makes the static memory follow
a time line, per device and chunk ``q`` (its virtual stage's passes span ``[s_q, e_q]``):

* bf16 weights (2 B/param) are prefetched to arrive by ``s_q`` (host-to-device at the copy
  bandwidth; resident from ``s_q - 2 P_q / BW``, from the start when that is before it), and stay
  until the chunk's optimizer step ends;
* fp32 gradients (4 B/param) exist from the chunk's first weight-gradient pass (W; B when the
  backward is fused) until the step ends;
* the optimizer state (12 B/param) comes in after ``e_q`` on the device's host-to-device engine
  (after the schedule's last activation prefetch there, one chunk after another), the step runs
  (its compute is neglected: an elementwise pass over the chunk), and the state goes back on the
  device-to-host engine; the chunk's memory is released when that copy ends. The iteration ends
  when the last step does, so the exposed copies are charged to the iteration time.

A schedule is planned with a constant activation cap (the schedulers take one) and accepted when
the true time line (activations of :func:`coopt.problems.pipeline.model.memory_events` plus the
static events above) stays within HBM - reserve on every device. Two caps are tried: HBM - reserve
minus the weights and gradients of all chunks (safe by construction except at the steps), and
minus those of all but one chunk (what idle chunks' weights could add while they are away).

    python benchmarks/figures/pipeline_weights.py        # the table (a few minutes)
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from pipeline import (
    BETA,
    LAYER_ROWS,
    LAYER_STEP,
    P_LAYER,
    PCIE,
    PP,
    RESERVE,
    TP,
    calibrated_hbm,
    llama,
    max_layers,
    uncapped_1f1b,
)

from coopt.problem import NoSolution
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.model import GB

WEIGHTS, GRADIENTS, OPTIMIZER = 2, 4, 12  # bytes per parameter; they add up to BETA
assert WEIGHTS + GRADIENTS + OPTIMIZER == BETA

#: (label, method, chunks, placement): the rows of Part B's table (LAYER_ROWS) measured here.
ROWS = [row for row in LAYER_ROWS if row[0] in (
    "1F1B", "1F1B + full recompute", "ZB-V (v=2)", "PipeOffload (v=2, V)", "Chronos-Pipe (v=2, V)",
    "Chronos-Recomp (v=2, V)", "Chronos-Offload (v=2, V)")]


def chunk_params(layers: int, chunks: int) -> float:
    """Parameters of one chunk on one device (per TP rank)."""
    return P_LAYER * layers / PP / chunks / TP


def static_events(instance: pm.Instance, timed: pm.Timed, layers: int) -> tuple[dict, float]:
    """Per device, the (time, delta bytes) events of weights, gradients and optimizer state under
    hierarchical offload, and the iteration's end (the last optimizer step's copy back)."""
    params = chunk_params(layers, instance.chunks)
    weights, gradients, optimizer = WEIGHTS * params, GRADIENTS * params, OPTIMIZER * params
    events: dict[int, list[tuple[float, float]]] = {d: [] for d in range(instance.stages)}
    h2d_free = {d: 0.0 for d in range(instance.stages)}
    for (k, _j), t in timed.h2d.items():
        d = instance.device(k)
        h2d_free[d] = max(h2d_free[d], t + instance.tau_u(k))
    d2h_free = {d: 0.0 for d in range(instance.stages)}
    for (k, _j), t in timed.d2h.items():
        d = instance.device(k)
        d2h_free[d] = max(d2h_free[d], t + instance.tau_d(k))
    windows = {}
    for (kind, k, j), t in timed.start.items():
        end = t + instance.duration((kind, k, j), timed.modes.get((k, j), pm.KEEP))
        first, last, first_grad = windows.get(k, (t, end, float("inf")))
        if kind == ("W" if instance.split_backward else "B"):
            first_grad = min(first_grad, t)
        windows[k] = (min(first, t), max(last, end), first_grad)
    finish = 0.0
    for k in sorted(windows, key=lambda k: windows[k][1]):  # steps in the order chunks finish
        first, last, first_grad = windows[k]
        d = instance.device(k)
        h2d = max(last, h2d_free[d])
        h2d_free[d] = h2d + optimizer / PCIE
        d2h = max(h2d_free[d], d2h_free[d])
        d2h_free[d] = released = d2h + optimizer / PCIE
        events[d] += [(max(0.0, first - weights / PCIE), weights), (first_grad, gradients), (h2d, optimizer),
                      (released, -(weights + gradients + optimizer))]
        finish = max(finish, released)
    return events, finish


@cache
def hierarchical(method: str, layers: int, chunks: int, placement: str, hbm: float) -> float | None:
    """Iteration time (s) of ``method`` at ``layers`` layers under hierarchical offload, or None
    when neither planning cap gives a schedule whose true time line fits ``hbm`` GB."""
    limit = (hbm - RESERVE) * GB
    resident = (WEIGHTS + GRADIENTS) * chunk_params(layers, chunks) * chunks
    base = llama(layers, chunks, placement, hbm)
    for spare in (0, 1):
        cap = limit - resident * (chunks - spare) / chunks
        if cap <= 0:
            continue
        instance = replace(base, memory_cap_bytes=(cap,) * PP)
        try:
            solution = schedules.HEURISTICS[method](instance)
        except NoSolution:
            continue
        timed, _ = pm.parse(instance, solution)
        statics, finish = static_events(instance, timed, layers)
        if max(pm.peaks(instance, timed, statics)) <= limit * (1 + 1e-9):
            return max(finish, timed.makespan(instance))
    return None


def max_hierarchical(method: str, chunks: int, placement: str, hbm: float, band: float | None = None,
                     top: int = 400) -> tuple[int, float]:
    """The largest multiple of LAYER_STEP trainable under hierarchical offload (within ``band`` of
    uncapped 1F1B's iteration time at the same size; None: at any throughput), and its iteration
    time. Bisection, as in Part B (fitting is monotone in the layer count for a fixed schedule)."""
    lo, hi, time_at = 0, top // LAYER_STEP + 1, 0.0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        value = hierarchical(method, mid * LAYER_STEP, chunks, placement, hbm)
        if value is not None and (band is None or value <= (1 + band) * uncapped_1f1b(mid * LAYER_STEP, hbm)):
            lo, time_at = mid, value
        else:
            hi = mid
    return lo * LAYER_STEP, time_at


def table(hbm: float, rows: list[tuple[str, str, int, str]] = ROWS) -> dict[str, dict[str, int]]:
    """Per schedule, its largest layer count with static memory and with hierarchical offload, at
    any throughput and within 5 % of uncapped 1F1B."""
    out = {}
    for label, method, chunks, placement in rows:
        out[label] = {
            "static": max_layers(method, chunks, placement, hbm),
            "static_5": max_layers(method, chunks, placement, hbm, 0.05),
            "offload": max_hierarchical(method, chunks, placement, hbm)[0],
            "offload_5": max_hierarchical(method, chunks, placement, hbm, 0.05)[0],
        }
        print(f"{label:28s}" + "".join(f"{out[label][key]:>14d}" for key in COLUMNS), flush=True)
    return out


COLUMNS = ("static", "static_5", "offload", "offload_5")


def main() -> None:
    hbm = calibrated_hbm()
    print(f"Largest trainable layers at {hbm:g} GB per device (where 1F1B tops out at 20 with static "
          f"memory), PP{PP} x TP{TP}, copies at {PCIE / 1e9:g} GB/s")
    print(f"{'schedule':28s}" + "".join(f"{h:>14s}" for h in ("static, any", "static, 5%", "offload, any",
                                                          "offload, 5%")))
    rows = table(hbm)
    base = rows["1F1B"]["static"]
    for key in COLUMNS:
        label = max((k for k in rows if k.startswith("Chronos")), key=lambda k: rows[k][key])
        print(f"best Chronos, {key}: {label} {rows[label][key]} layers = {rows[label][key] / base:.2f}x "
              f"1F1B's {base} (paper 48 / 20 = 2.4x)")


if __name__ == "__main__":
    main()
