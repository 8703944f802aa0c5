"""Expensive TopoOpt results several test files need, each computed once per test session.

The brute-force optimum of a tiny seed, the registered dual bound of a tiny seed and P1's proven
optimum on a small shipped file are each checked against several claims in several files
(test_topoopt, test_topoopt_bounds, test_topoopt_capacity_bound, test_topoopt_scale,
test_topoopt_heuristics); solving them once and sharing the value tests exactly what solving them
again would, since every solver here is deterministic. Only immutable values (floats, or a report
the tests only read) are cached; each test still builds its own instance.
"""

from __future__ import annotations

import functools
from pathlib import Path

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems import topoopt
from coopt.problems.topoopt import bound, brute
from coopt.run import run

INSTANCES = Path(__file__).resolve().parent.parent / "instances" / "topoopt"


@functools.cache
def tiny_optimum(seed: int) -> float | None:
    """``brute.solve(brute.tiny(seed))``: the optimum over every topology, None if none routes."""
    return brute.solve(brute.tiny(seed))


@functools.cache
def tiny_dual_bound(seed: int) -> float:
    """``bound.dual_bound(brute.tiny(seed))``, the registered bound (its capacity-aware bisection
    costs about a second and a half on the symmetric seeds)."""
    return bound.dual_bound(brute.tiny(seed))


@functools.cache
def exact_report(stem: str):
    """P1 solved to a 1e-9 gap on ``instances/topoopt/<stem>.toml`` (a :class:`coopt.run` report)."""
    instance = load(INSTANCES / f"{stem}.toml").instance
    return run(topoopt.PROBLEM, instance, "exact", SolveOptions(gap=1e-9))
