"""Expensive pipeline results that several tests/test_pipeline*.py files need for the same
instance: the oracle's optimum (order enumeration, Model T or Model O), the warm start and Model
S's optimum. Each is a pure function of the (frozen, hashable) instance, so one pytest process
computes it once and every test that asks gets the same value; the tests still assert everything
about it that they did when they solved it themselves. Callers must not mutate what they get."""

from __future__ import annotations

from functools import cache

from coopt.problem import SolveOptions
from coopt.problems.pipeline import brute, cpsat, warm
from coopt.problems.pipeline import model as pm

OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)


@cache
def enumerate_optimum(instance: pm.Instance) -> float | None:
    """:func:`brute.enumerate_optimum` (raises on offload instances, as it does)."""
    return brute.enumerate_optimum(instance)


@cache
def optimum(instance: pm.Instance) -> float | None:
    """:func:`brute.optimum`; without offload that is the enumeration, shared with
    :func:`enumerate_optimum`."""
    if not instance.allow_offload:
        return enumerate_optimum(instance)
    return brute.optimum(instance)


@cache
def incumbent(instance: pm.Instance) -> tuple[float, dict | None]:
    """:func:`warm.incumbent`: the exact routes' warm start and its value."""
    return warm.incumbent(instance)


@cache
def model_s(instance: pm.Instance):
    """Model S (:func:`cpsat.solve`) from the warm start, as the ``exact`` route runs it."""
    return cpsat.solve(instance, OPTIONS, incumbent=incumbent(instance)[1])
