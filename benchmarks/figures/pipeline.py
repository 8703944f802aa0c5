"""Pipeline schedules under memory caps: the figures of docs/pipeline.md beside the papers'.

A. Makespan vs activation-memory cap for every schedule and for the exact route (Model S keep-only,
   Model M keep + recompute) on research instance I1 (p = 4, m = 8, T_F = T_B = T_W = T_R = 1, a = 2,
   a_W = 1, a_c = 0.5 GB): the memory/time Pareto front, as a table and a PNG.
B. Largest trainable LLaMA-2-70B-architecture model (layers L, steps of 4) with PP8 x TP8, seq
   4096, micro-batch 1, m = 32, A100 timing, under the paper's reading: the device
   memory at which 1F1B tops out at 20 layers, then every schedule's largest L there, at any
   throughput and within 5% of uncapped 1F1B, with PipeOffload's copy size and with ours; the
   ratios beside ChronosPipe's 2.4x (48 / 20) and 1.5x (48 / 32); a sweep over device memory.
   Per-layer recompute rows: L = the virtual stage's layer count, layers / (8 v)
   rounded to an integer (recompute_layers), for Chronos-Recomp and for 1F1B with Megatron's block
   recompute; beside them the iteration time at the largest size and at equal sizes.
C. The closed form ``pipeline.largest_model_layers`` with each schedule's simulated peak.

Run: ``python benchmarks/figures/pipeline.py [--out DIR] [--time-limit S]``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from functools import cache
from pathlib import Path

from coopt.problem import NoSolution, SolveOptions
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.model import GB
from coopt.run import run

# (label, heuristic, chunks, placement)
ROWS = [
    ("GPipe", "gpipe", 1, "interleaved"),
    ("1F1B", "1f1b", 1, "interleaved"),
    ("1F1B, early send (1f1b_split)", "1f1b_split", 1, "interleaved"),
    ("interleaved 1F1B (v=2)", "interleaved_1f1b", 2, "interleaved"),
    ("ZB-H1", "zb_h1", 1, "interleaved"),
    ("ZB-H2", "zb_h2", 1, "interleaved"),
    ("ZB auto", "zb_auto", 1, "interleaved"),
    ("ZB-V (v=2)", "zb_v", 2, "vshape"),
    ("V-Half (v=2)", "v_half", 2, "vshape"),
    ("V-Min (v=2)", "v_min", 2, "vshape"),
    ("Chronos-Pipe (v=2, V)", "chronos_pipe", 2, "vshape"),
    ("1F1B + full recompute", "megatron_full", 1, "interleaved"),
    ("1F1B + selective recompute", "megatron_selective", 1, "interleaved"),
    ("Chronos-Recomp (v=2, V)", "chronos_recomp", 2, "vshape"),
    ("Chronos-Offload (v=2, V)", "chronos_offload", 2, "vshape"),
    ("PipeOffload (v=2, V)", "pipeoffload", 2, "vshape"),
    ("portfolio (v=1)", "portfolio", 1, "interleaved"),
    ("local search (v=1)", "local_search", 1, "interleaved"),
]


# --------------------------------------------------------------------------------------------
# A. Pareto front on I1
# --------------------------------------------------------------------------------------------
def toy(
    p: int,
    m: int,
    cap: float | None,
    v: int = 1,
    placement: str = "interleaved",
    recompute: bool = True,
    offload: bool = True,
) -> pm.Instance:
    return pm.Instance(
        stages=p,
        microbatches=m,
        chunks=v,
        placement=placement,
        forward_s=(1.0,) * p,
        backward_s=(1.0,) * p,
        weight_s=(1.0,) * p,
        activation_bytes=(2 * GB,) * p,
        weight_grad_bytes=(GB,) * p,
        memory_cap_bytes=None if cap is None else (cap * GB,) * p,
        allow_recompute=recompute,
        recompute_s=(1.0,) * p,
        checkpoint_bytes=(0.5 * GB,) * p,
        allow_offload=offload,
        offload_bytes=(2 * GB,) * p if offload else (),
        d2h_s=(1.0,) * p if offload else (),
        h2d_s=(1.0,) * p if offload else (),
    )


def pareto(out: Path, time_limit: float) -> None:
    p, m = 4, 8
    caps = [2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 16.0]
    table: dict[str, list[float | None]] = {}
    for label, name, v, placement in ROWS:
        row = []
        for cap in caps:
            try:
                row.append(schedules.HEURISTICS[name](toy(p, m, cap, v, placement))["objective"])
            except NoSolution:
                row.append(None)
        table[label] = row
    options = SolveOptions(time_limit=time_limit, gap=1e-6)
    timings = []
    for label, rec in (("exact keep-only (v=1)", False), ("exact keep + recompute (v=1)", True)):
        row = []
        for cap in caps:
            report = run(PROBLEM, toy(p, m, cap, recompute=rec, offload=False), "exact", options)
            row.append(report.objective)
            timings.append((label, cap, report.status, report.objective, report.bound, report.times))
        table[label] = row
    print(
        f"A. makespan vs per-device activation cap, p={p}, m={m}, T_F=T_B=T_W=T_R=1, a=2 GB, a_W=1, a_c=0.5"
    )
    print(f"{'schedule':30s}" + "".join(f"{c:>7g}" for c in caps))
    for label, row in table.items():
        print(f"{label:30s}" + "".join(f"{'-' if x is None else round(x, 2):>7}" for x in row))
    print("\nexact times (s): build / hand-off / solve, status, bound")
    for label, cap, status, obj, bound, times in timings:
        print(
            f"  {label:28s} cap {cap:>5g}: {times['build']:.2f} / {times['handoff']:.2f} / "
            f"{times['solve']:.2f}  {status:9s} obj {obj} bound {None if bound is None else round(bound, 3)}"
        )
    _plot(out / "pipeline_pareto.png", caps, table)


def _plot(path: Path, caps: list[float], table: dict[str, list[float | None]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    colors = plt.get_cmap("tab20").colors
    markers = "os^vD<>ph*X"
    for n, (label, row) in enumerate(table.items()):
        points = [(c, x) for c, x in zip(caps, row, strict=True) if x is not None]
        if not points:
            continue
        if label.startswith("exact"):
            style = {"color": "black", "linewidth": 2.5, "linestyle": ":" if "recompute" in label else "-"}
        else:
            style = {
                "color": colors[2 * n % 20],
                "marker": markers[n % len(markers)],
                "linestyle": "--",
                "linewidth": 1,
            }
        ax.plot(*zip(*points, strict=True), label=label, **style)
    ax.set_xlabel("activation-memory cap per device (GB; one micro-batch = 2 GB)")
    ax.set_ylabel("makespan (s)")
    ax.set_title("Pipeline schedules: makespan vs memory cap (p=4, m=8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


# --------------------------------------------------------------------------------------------
# B. Largest trainable model: the paper's reading (ChronosPipe 48 layers, 1F1B 20, + recompute 32)
# --------------------------------------------------------------------------------------------
P_LAYER = 855_654_400  # LLaMA-2-70B layer (h=8192, GQA 8 KV heads, SwiGLU 28672)
H, HEADS, SEQ, TP, PP, M = 8192, 64, 4096, 8, 8, 32
BETA, HBM, RESERVE = 18, 80.0, 5.0  # bytes/param (bf16 + fp32 Adam + main grads), GB, GB
FLOPS, PCIE = 220e12, 15e9  # A100 profiled training FLOP/s and D2H bytes/s (ZB repo figures)
#: Copy size per offloaded item: PipeOffload's (``megatron/core/zbpp_utils.py`` ``get_offload_time``,
#: lines 152-155: about 20 h bytes per token and layer, split over the TP ranks) or ours, the whole
#: activation of the item.
COPY_MODELS = ("pipeoffload", "full")
#: The schedules of Part B (label, method, chunks, placement).
LAYER_ROWS = [
    ("1F1B", "1f1b", 1, "interleaved"),
    ("1F1B + full recompute", "megatron_full", 1, "interleaved"),
    ("1F1B + selective recompute", "megatron_selective", 1, "interleaved"),
    ("ZB-H1", "zb_h1", 1, "interleaved"),
    ("ZB-V (v=2)", "zb_v", 2, "vshape"),
    ("V-Min (v=2)", "v_min", 2, "vshape"),
    ("PipeOffload (v=2, V)", "pipeoffload", 2, "vshape"),
    ("Chronos-Pipe (v=2, V)", "chronos_pipe", 2, "vshape"),
    ("Chronos-Recomp (v=2, V)", "chronos_recomp", 2, "vshape"),
    ("Chronos-Offload (v=2, V)", "chronos_offload", 2, "vshape"),
]
#: Per-layer recompute rows (recompute_layers = each virtual stage's layer count).
PER_LAYER_ROWS = [
    ("1F1B + block recompute, per layer", "megatron_block", 1, "interleaved"),
    ("Chronos-Recomp, per layer (v=2, V)", "chronos_recomp", 2, "vshape"),
]
LAYER_STEP = 4


def activation_per_layer() -> float:
    """Bytes one micro-batch keeps per layer on one device (Korthikanti et al. 2023, TP only,
    no fused attention): s h (10 + 24/t + 5 a s / (h t))."""
    return SEQ * H * (10 + 24 / TP + 5 * HEADS * SEQ / (H * TP))


def stage_layers(layers: int, v: int) -> int:
    """Layers of one virtual stage, the per-layer recompute granularity: layers / (PP v), rounded
    to the nearest integer where the split is uneven (the model's stages are all alike)."""
    return max(1, round(layers / (PP * v)))


def llama(layers: int, v: int, placement: str, hbm: float = HBM, copy: str = "pipeoffload",
          per_layer: bool = False) -> pm.Instance:
    """The LLaMA-2-70B-architecture instance; ``per_layer``: an item may recompute any of its
    virtual stage's :func:`stage_layers` layers (else whole items only)."""
    per = layers / PP
    t_f = per * 2 * P_LAYER * SEQ / TP / FLOPS
    a = per * activation_per_layer()
    a_c = per * 2 * SEQ * H / TP
    cap = (hbm - RESERVE) * GB - BETA * P_LAYER * per / TP
    moved = min(a, per * 20 * H * SEQ / TP) if copy == "pipeoffload" else a
    return pm.Instance(
        stages=PP,
        microbatches=M,
        chunks=v,
        placement=placement,
        forward_s=(t_f,) * PP,
        backward_s=(1.04 * t_f,) * PP,
        weight_s=(0.96 * t_f,) * PP,
        activation_bytes=(a,) * PP,
        weight_grad_bytes=(a * 32 / (34 + 5 * HEADS * SEQ / H),) * PP,
        memory_cap_bytes=(max(cap, 1e6),) * PP,
        lag_s=2e-4,
        allow_recompute=True,
        recompute_s=(t_f,) * PP,
        checkpoint_bytes=(a_c,) * PP,
        allow_offload=True,
        offload_bytes=(moved,) * PP,
        d2h_s=(moved / PCIE,) * PP,
        h2d_s=(moved / PCIE,) * PP,
        recompute_layers=(stage_layers(layers, v),) * PP if per_layer else (),
    )


def slowdown(method: str, layers: int, v: int, placement: str, hbm: float, copy: str = "pipeoffload",
             per_layer: bool = False) -> float | None:
    """Iteration time of ``method`` at ``layers`` layers in ``hbm`` GB over uncapped 1F1B's at the
    same size (None: it does not fit)."""
    try:
        value = schedules.HEURISTICS[method](llama(layers, v, placement, hbm, copy, per_layer))["objective"]
    except NoSolution:
        return None
    return value / uncapped_1f1b(layers, hbm)


@cache
def uncapped_1f1b(layers: int, hbm: float) -> float:
    """Iteration time of 1F1B without a memory cap at ``layers`` layers: the throughput reference."""
    uncapped = replace(llama(layers, 1, "interleaved", hbm), memory_cap_bytes=None)
    return schedules.one_f_one_b(uncapped)["objective"]


def fits(method: str, layers: int, v: int, placement: str, hbm: float, band: float | None,
         copy: str = "pipeoffload", per_layer: bool = False) -> bool:
    """Does ``method`` train ``layers`` layers in ``hbm`` GB, within ``band`` of uncapped 1F1B's
    iteration time at the same size (None: at any throughput)?"""
    if band is None:
        try:
            schedules.HEURISTICS[method](llama(layers, v, placement, hbm, copy, per_layer))
        except NoSolution:
            return False
        return True
    ratio = slowdown(method, layers, v, placement, hbm, copy, per_layer)
    return ratio is not None and ratio <= 1 + band


def max_layers(method: str, v: int, placement: str, hbm: float, band: float | None = None,
               copy: str = "pipeoffload", top: int = 400, per_layer: bool = False) -> int:
    """The largest multiple of LAYER_STEP that fits (0: none), by bisection (fitting is monotone
    in the layer count for a fixed schedule)."""
    lo, hi = 0, top // LAYER_STEP + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(method, mid * LAYER_STEP, v, placement, hbm, band, copy, per_layer):
            lo = mid
        else:
            hi = mid
    return lo * LAYER_STEP


def calibrated_hbm(target: int = 20) -> float:
    """The smallest device memory (GB, 0.5 GB steps) at which 1F1B trains ``target`` layers: the
    budget the paper's '1F1B tops out at 20 layers' implies under our footprint."""
    hbm = 20.0
    while max_layers("1f1b", 1, "interleaved", hbm, top=4 * target) < target:
        hbm += 0.5
    return hbm


def layer_table(hbm: float, band: float | None = None, copy: str = "pipeoffload") -> dict[str, int]:
    return {
        label: max_layers(name, v, placement, hbm, band, copy) for label, name, v, placement in LAYER_ROWS
    }


def largest() -> None:
    hbm = calibrated_hbm()
    static = BETA * P_LAYER / TP / PP
    print("\nB. largest trainable LLaMA-2-70B-architecture model (PP8 x TP8, seq 4096, b=1, m=32, A100),")
    print(f"   layers in steps of {LAYER_STEP}; the paper's reading: 1F1B tops out at 20 layers.")
    print(f"   That needs HBM = {hbm:g} GB per device with our footprint: "
          f"{activation_per_layer() / GB:.3f} GB of activations per layer and micro-batch, "
          f"{static * PP / GB:.3f} GB static per layer "
          f"({BETA} B/param over TP{TP}), {RESERVE:g} GB reserve.")
    for copy in COPY_MODELS:
        any_size, near = layer_table(hbm, None, copy), layer_table(hbm, 0.05, copy)
        print(f"\n   copy size: {copy}")
        print(f"{'schedule':30s}{'any throughput':>16s}{'<= 5% slower':>14s}")
        for label in any_size:
            print(f"{label:30s}{any_size[label]:>16d}{near[label]:>14d}")
        chronos = max(v for k, v in any_size.items() if k.startswith("Chronos"))
        base, recompute = any_size["1F1B"], any_size["1F1B + full recompute"]
        print(f"   best Chronos / 1F1B = {chronos}/{base} = {chronos / base:.2f}x (paper 48/20 = 2.4x); "
              f"/ 1F1B + recompute = {chronos}/{recompute} = {chronos / recompute:.2f}x "
              "(paper 48/32 = 1.5x)")
    per_layer(hbm)
    print("\n   sensitivity: largest layers at any throughput vs device memory (copy size pipeoffload)")
    sweep = [40.0, 48.0, 56.0, 64.0, 80.0]
    print(f"{'schedule':30s}" + "".join(f"{h:>8g}" for h in sweep))
    for label, name, v, placement in LAYER_ROWS:
        print(f"{label:30s}" + "".join(f"{max_layers(name, v, placement, h):>8d}" for h in sweep), flush=True)


def per_layer(hbm: float, sizes: tuple[int, ...] = (24, 32, 48, 64)) -> None:
    """Whole-item against per-layer recompute at the calibrated memory: largest layer count at any
    throughput and within 5 %, the iteration time at that size over uncapped 1F1B's, and the
    iteration time at equal sizes (PipeOffload's copy size; no offload is used by these rows)."""
    rows = [(label, name, v, placement, False) for label, name, v, placement in LAYER_ROWS
            if name in ("megatron_full", "megatron_selective", "chronos_recomp")]
    rows += [(label, name, v, placement, True) for label, name, v, placement in PER_LAYER_ROWS]
    print(f"\n   per-layer recompute at {hbm:g} GB (L = layers / (8 v) per virtual stage):")
    print(f"{'schedule':36s}{'any':>6s}{'time':>8s}{'<=5%':>6s}" + "".join(f"{f't@{n}':>9s}" for n in sizes))
    for label, name, v, placement, layered in rows:
        top = max_layers(name, v, placement, hbm, per_layer=layered)
        near = max_layers(name, v, placement, hbm, 0.05, per_layer=layered)
        at_top = slowdown(name, top, v, placement, hbm, per_layer=layered) if top else None
        equal = [slowdown(name, n, v, placement, hbm, per_layer=layered) for n in sizes]
        cells = "".join(f"{_ratio(x):>9s}" for x in equal)
        print(f"{label:36s}{top:>6d}{_ratio(at_top):>8s}{near:>6d}{cells}", flush=True)


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def closed_form() -> None:
    """L_max from the closed form with each schedule's measured peak n_X (uncapped simulation at
    L = 48: peaks scale with L, so n_X = peak / a does not depend on L), with and without
    offloading the fp32 optimizer state to the host (beta 18 -> 6 bytes/parameter on the device)."""
    from coopt.registry import closed_form as get

    bound = get("pipeline.largest_model_layers")
    a_dev = 48 / PP * SEQ * H * (10 + 24 / TP + 5 * HEADS * SEQ / (H * TP))  # bytes, one micro-batch
    cases = [
        ("1F1B", "1f1b", 1, "interleaved"),
        ("1F1B + full recompute", "megatron_full", 1, "interleaved"),
        ("ZB-V (v=2)", "zb_v", 2, "vshape"),
        ("V-Min (v=2)", "v_min", 2, "vshape"),
        ("Chronos-Pipe (v=2, V)", "chronos_pipe", 2, "vshape"),
    ]
    print("\nC. closed-form L_max (pipeline.largest_model_layers) with the simulated peak n_X")
    print(f"{'schedule':30s}{'n_X':>8s}{'makespan/1F1B':>15s}{'L_max beta=18':>15s}{'beta=6':>9s}")
    uncapped = replace(llama(48, 1, "interleaved"), memory_cap_bytes=None)
    reference = schedules.one_f_one_b(uncapped)["objective"]
    base = None
    rows = []
    for label, name, v, placement in cases:
        instance = replace(llama(48, v, placement), memory_cap_bytes=None)
        timed, _ = pm.parse(instance, schedules.HEURISTICS[name](instance))
        rows.append((label, instance, timed))
    instance = replace(llama(48, 2, "vshape"), memory_cap_bytes=None)
    rows.append(("Chronos-Pipe, minimal warm-up", instance, schedules._chronos_timed(instance, slack=0)))
    for label, instance, timed in rows:
        n_x = max(pm.peaks(instance, timed)) / instance.activation_bytes[0]
        per_layer = a_dev / (48 / PP)
        values = [
            float(
                bound.evaluate(
                    {
                        "p": PP,
                        "HBM": HBM * 1e9,
                        "R": RESERVE * 1e9,
                        "beta": beta,
                        "P_layer": P_LAYER,
                        "t": TP,
                        "n_X": n_x,
                        "A_dev": per_layer,
                    }
                )
            )
            for beta in (BETA, 6)
        ]
        base = base or values[0]
        ratio = timed.makespan(instance) / reference
        print(f"{label:30s}{n_x:8.2f}{ratio:15.3f}{values[0]:15.1f}{values[1]:9.1f}")
    print(f"  (ratios to 1F1B at beta=18 are L_max / {base:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/figures", help="directory for pipeline_pareto.png")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per exact solve")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    pareto(out, args.time_limit)
    largest()
    closed_form()
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
