"""The headline claims of Zhong et al., "On QoS-assured degraded provisioning in service-differentiated
multi-layer elastic optical networks" (GLOBECOM 2016, arXiv 1607.04695), beside our simulator's
figures: the rows of docs/fidelity.md for ``python benchmarks/fidelity/fidelity.py --only provisioning``.

Only the paper's abstract could be read (research notes, section 0): its claims are qualitative,
and so are the statuses below. Every figure is recomputed here, on NSFNET (100 slots, the
DeepRMSA lengths; ``instances/provisioning/2-nsfnet-static.toml``), by the discrete-event
simulator of :mod:`coopt.problems.provisioning.simulation` with common random numbers.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity import Claim, Ours  # noqa: E402

from coopt.commands.simulate import with_max_degradation  # noqa: E402
from coopt.instance import load  # noqa: E402
from coopt.problems.provisioning.simulation import RunControl, SimulationResult, Traffic, simulate  # noqa: E402

PAPER = "Degraded provisioning (GLOBECOM 2016)"
NETWORK = "provisioning/2-nsfnet-static"
ARRIVALS, WARMUP = 10_000, 1_000
#: The load at which the per-class claims are read (the baseline blocks about 2 %).
LOAD = 70.0
#: Loads of the capacity claim: the load carried at 1 % overall blocking is interpolated.
CAPACITY_LOADS = (40.0, 55.0, 70.0, 85.0, 100.0)
#: Class degradation bounds delta_p, highest class first: the reading under which the highest
#: class may be degraded most, and the reading of our instances (the highest class least).
GRADED, OURS = (0.75, 0.5, 0.25), (0.25, 0.5, 0.75)


def run(policy: str, load_erlang: float, bounds: tuple[float, ...] = OURS) -> SimulationResult:
    network = with_max_degradation(load(NETWORK).instance, bounds)
    return simulate(network, Traffic(load_erlang), policy, RunControl(arrivals=ARRIVALS, warmup=WARMUP))


def reduction(base: float, other: float) -> float:
    return (base - other) / base if base > 0 else math.nan


def fewer_failures() -> Ours:
    base, qos = run("ksp_first_fit", LOAD), run("qos_assured", LOAD)
    cut = reduction(base.blocking.mean, qos.blocking.mean)
    return Ours(f"overall failure ratio {base.blocking.mean:.4f} -> {qos.blocking.mean:.4f} "
                f"({cut:.0%} fewer) at {LOAD:g} Erl", "reproduced" if cut > 0.3 else "open",
                "degradation within each class's bound, immediate access, volume kept by prolongation; the "
                "size of the cut depends on the class bounds and traffic mix, which the abstract does not "
                "give")


def class_gains(bounds: tuple[float, ...]) -> list[float]:
    base, qos = run("ksp_first_fit", LOAD, bounds), run("qos_assured", LOAD, bounds)
    pairs = zip(base.classes, qos.classes, strict=True)
    return [reduction(b.blocked / b.arrivals, q.blocked / q.arrivals) for b, q in pairs]


def highest_class_gains_most() -> Ours:
    graded, ours = class_gains(GRADED), class_gains(OURS)

    def show(gains: list[float]) -> str:
        return "/".join(f"{g:.0%}" for g in gains)

    holds = graded == sorted(graded, reverse=True) and ours != sorted(ours, reverse=True)
    return Ours(f"gold/silver/bronze failures cut by {show(graded)} at {LOAD:g} Erl with delta = "
                f"0.75/0.5/0.25, {show(ours)} with delta = 0.25/0.5/0.75", "reproduced" if holds else "open",
                "who may be degraded how far (delta_p): the claim holds when the highest class may be "
                "degraded most, and flips when it may be degraded least")


def load_at(policy: str, target: float) -> float:
    """The offered load at which the overall failure ratio crosses ``target`` (log-linear)."""
    points = [(a, run(policy, a).blocking.mean) for a in CAPACITY_LOADS]
    for (a0, b0), (a1, b1) in zip(points, points[1:], strict=False):
        if b0 <= target <= b1 and b0 > 0:
            return a0 + (a1 - a0) * math.log(target / b0) / math.log(b1 / b0)
    return math.nan


def optical_capacity() -> Ours:
    base, qos = load_at("ksp_first_fit", 0.01), load_at("qos_assured", 0.01)
    gain = qos / base - 1
    return Ours(f"load carried at 1 % failures: {base:.0f} -> {qos:.0f} Erl ({gain:+.0%})",
                "reproduced" if gain > 0 else "open",
                "optical-layer degradation frees slots now at the price of longer holding (t / rho); the "
                "gain shrinks as the slot-time ratio of research notes d.4 grows")


def electrical_exchange() -> Ours:
    base, elec = run("grooming", 100.0), run("grooming_electrical", 100.0)
    cut = reduction(base.blocking.mean, elec.blocking.mean)
    stretch = max((c.max_prolongation for c in elec.classes if not math.isnan(c.max_prolongation)),
                  default=1.0)
    return Ours(f"groomed rate below b on existing lightpaths: {cut:.0%} fewer failures at 100 Erl, holding "
                f"times stretched continuously up to {stretch:.2f} x, volume kept",
                "reproduced" if cut > 0 else "open",
                "a continuous rate in [(1 - delta) b, b] on a lightpath's residual capacity: the exchange "
                "is as fine as the electrical layer allows")


CLAIMS = [
    Claim("provisioning", PAPER, "degraded provisioning cuts service failures", "significant reduction",
          f"coopt simulate {NETWORK} --loads {LOAD:g} --policies ksp_first_fit,qos_assured "
          f"--arrivals {ARRIVALS}",
          fewer_failures),
    Claim("provisioning", PAPER, "especially for requests of higher priority",
          "largest cut for the top class",
          f"coopt simulate {NETWORK} --loads {LOAD:g} --policies ksp_first_fit,qos_assured "
          f"--max-degradation 0.75,0.5,0.25 --arrivals {ARRIVALS}",
          highest_class_gains_most),
    Claim("provisioning", PAPER, "optical-layer degradation increases network capacity",
          "higher capacity",
          f"coopt simulate {NETWORK} --loads {','.join(f'{a:g}' for a in CAPACITY_LOADS)} "
          f"--policies ksp_first_fit,qos_assured --arrivals {ARRIVALS}",
          optical_capacity),
    Claim("provisioning", PAPER, "electrical-layer degradation gives a flexible time-bandwidth exchange",
          "flexible exchange",
          f"coopt simulate {NETWORK} --loads 100 --policies grooming,grooming_electrical "
          f"--arrivals {ARRIVALS}",
          electrical_exchange),
]
