"""Discrete-event simulation of online provisioning (Poisson arrivals, exponential holding times,
priority classes), with warm-up, batch-means confidence intervals and state checks.

:mod:`.engine` is the single-layer simulator, :mod:`.multilayer` the grooming architecture built
on it; :func:`simulate` picks one by the policy.
"""

from __future__ import annotations

from collections.abc import Callable

from coopt.problems.provisioning import model as P
from coopt.problems.provisioning.simulation.engine import (
    POLICIES,
    SINGLE_LAYER,
    ClassResult,
    Policy,
    ProvisioningSimulator,
    RunControl,
    SimulationResult,
    Traffic,
)
from coopt.problems.provisioning.simulation.multilayer import MultiLayerSimulator
from coopt.problems.provisioning.simulation.statistics import (
    Estimate,
    batch_means,
    erlang_b,
    kaufman_roberts,
)


def simulate(
    instance: P.Instance,
    traffic: Traffic,
    policy: Policy | str,
    control: RunControl | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SimulationResult:
    """Run one simulation and return its statistics. A validated run records invariant
    breaks in ``ProvisioningSimulator.violations``; build the simulator directly to read them."""
    policy = POLICIES[policy] if isinstance(policy, str) else policy
    if policy.multilayer:
        return MultiLayerSimulator(instance, traffic, policy, control or RunControl()).run(progress)
    return ProvisioningSimulator(instance, traffic, policy, control or RunControl()).run(progress)


__all__ = [
    "POLICIES",
    "SINGLE_LAYER",
    "ClassResult",
    "Estimate",
    "Policy",
    "ProvisioningSimulator",
    "RunControl",
    "SimulationResult",
    "Traffic",
    "batch_means",
    "erlang_b",
    "kaufman_roberts",
    "simulate",
]
