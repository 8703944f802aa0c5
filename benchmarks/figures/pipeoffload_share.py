"""PipeOffload's question answered exactly: the largest share of activations that can be offloaded
at no slowdown on a given schedule, beside the share PipeOffload's rule reaches.

Instance: the shipped LLaMA timing (``instances/pipeline/2-llama70b-l64-pp8-m32-v2.toml``: p = 8,
m = 32, two chunks in a V, 64 layers) without a cap and without recompute, with PipeOffload's copy
size (20 h bytes per token and layer, :func:`pipeline.llama`) over 15 GB/s each way. Schedule: ZB-V
(the base PipeOffload offloads on). Three answers, as shares of the ``p v m`` activations:

* *rule*: PipeOffload's validity rule and copy slot train (``heuristics/offload.py``), pass times
  unchanged;
* *times fixed*: Model M (:mod:`coopt.problems.pipeline.cpmodes`) with every pass start fixed at
  ZB-V's, maximising the count of offloaded items: the most that the two copy engines of each
  device can serve in the gaps, whatever the slots;
* *order fixed*: Model M with each device's pass order fixed at ZB-V's and the makespan at most
  ZB-V's, passes free to move: the most that can be offloaded at no slowdown for that order.

The copy time of one item (22.37 ms) is not on the instance's microsecond grid, so each exact answer is
solved twice: with the copy time rounded up to the grid (every schedule found is one of the real
instance: copies only get longer) and rounded down (a relaxation: any real schedule, with each
start rounded down, is one of it). Where both are proven optimal and equal, the share is proven;
else the two give a bracket. Each schedule found is judged on the real instance by the checker
(with the real copy time; "slower" where it would lengthen ZB-V, as only the rounded-down
relaxation can).

    python benchmarks/figures/pipeoffload_share.py [--time-limit 120]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.pipeline import cpmodes
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline.model import Instance, Timed, check, parse
from coopt.shipped import instances_dir
from coopt.solvers import cpsat as cp_route

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import llama  # noqa: E402  (the LLaMA instance of the figures: its copy size and time)

UNIT = 1e-6  #: the shipped file's time grid (s)


def instance(copy_s: float | None = None) -> Instance:
    """The shipped v2 LLaMA timing with PipeOffload's copies (time ``copy_s`` if given)."""
    shipped = load(instances_dir() / "pipeline" / "2-llama70b-l64-pp8-m32-v2.toml").instance
    ref = llama(64, 2, "vshape", hbm=1e6)
    tau = ref.d2h_s if copy_s is None else (copy_s,) * shipped.stages
    # without a cap the sizes do not matter: whole GB keep Model M's memory grid coarse
    gb = tuple(float(round(x / 1e9)) * 1e9 for x in ref.offload_bytes)
    return replace(shipped, memory_cap_bytes=None, allow_recompute=False, recompute_s=(),
                   checkpoint_bytes=(), recompute_layers=(), allow_offload=True,
                   activation_bytes=tuple(2 * x for x in gb), weight_grad_bytes=gb,
                   offload_bytes=gb, d2h_s=tau, h2d_s=tau)


def exact_share(real: Instance, base: Timed, copy_s: float, fixed_times: bool, time_limit: float
                ) -> tuple[str, int, float, str]:
    """(status, offloaded count, bound on it, the checker's verdict on the real instance) of
    Model M on ``real`` with the copy of one item taking ``copy_s``, the ZB-V times
    (``fixed_times``) or order and makespan fixed."""
    per_device = (copy_s * real.chunks,) * real.stages  # the file's copy time is per device
    rounded = replace(real, d2h_s=per_device, h2d_s=per_device)
    makespan = base.makespan(real)
    built = cpmodes.build(rounded, makespan, windows=False, redundant=False)
    model, q = built.model, built.q
    units = {x: round(real.duration(x) / q) for x in real.passes()}
    on: dict[int, list] = {}
    for x in real.passes():
        on.setdefault(real.device(x[1]), []).append(x)
    for passes in on.values():
        passes.sort(key=lambda x: base.start[x])
        for x, y in zip(passes, passes[1:], strict=False):
            model.Add(built.start[y] >= built.start[x] + units[x])
    if fixed_times:
        for x, var in built.start.items():
            model.Add(var == round(base.start[x] / q))
    for x, var in built.start.items():
        model.AddHint(var, round(base.start[x] / q))
    model.Maximize(sum(built.off.values()))
    result = cp_route.solve(model, SolveOptions(time_limit=time_limit, threads=1))
    count = 0 if result.objective is None else round(result.objective)
    bound = math.nan if result.bound is None else result.bound
    checked = "-"
    if result.objective is not None:
        solution = cpmodes.extract(rounded, built, result.solver)
        timed, _ = parse(real, solution)
        late = timed.makespan(real) > makespan * (1 + 1e-9)
        checked = "slower" if late else ("accepted" if not check(real, solution) else "rejected")
    return result.termination.value, count, bound, checked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=120.0)
    args = parser.parse_args()
    real = instance()
    base, _ = parse(real, schedules.zb_v(real))
    items = [(k, j) for k in range(real.virtual_stages) for j in range(real.microbatches)]
    rule = len(schedules.slot_train(real, base, items).d2h)
    tau = real.tau_d(0)  # one item's copy (a chunk's share of the device's)
    print(f"ZB-V makespan {base.makespan(real):.6f} s, {len(items)} activations, copy {tau * 1e3:.6f} ms "
          "each way per item")
    print(f"rule (validity + slot train): {rule} = {rule / len(items):.1%}")
    for fixed in (True, False):
        for name, copy in (("copies rounded up", math.ceil(tau / UNIT) * UNIT),
                           ("copies rounded down", math.floor(tau / UNIT) * UNIT)):
            status, count, bound, checked = exact_share(real, base, copy, fixed, args.time_limit)
            what = "times fixed" if fixed else "order fixed"
            print(f"{what:12} {name:20} {status:10} {count} = {count / len(items):.1%} "
                  f"(bound {bound:g} = {bound / len(items):.1%}), on the real copy time: {checked}",
                  flush=True)


if __name__ == "__main__":
    main()
