"""Discrete-event simulation of online provisioning (Poisson arrivals, exponential holding times,
priority classes), with warm-up, batch-means confidence intervals and state checks."""

from coopt.simulation.engine import (
    POLICIES,
    SINGLE_LAYER,
    ClassResult,
    Policy,
    ProvisioningSimulator,
    RunControl,
    SimulationResult,
    Traffic,
    simulate,
)
from coopt.simulation.statistics import Estimate, batch_means, erlang_b, kaufman_roberts

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
