"""Expensive chase results several test files need, each computed once per test session.

The MILP's proven optimum on a generator instance and the exact route's report on a small shipped
file are checked against several claims in test_chase_energetic and test_chase_cpsat; solving
them once and sharing the report tests exactly what solving them again would (the solvers run
single-threaded to a 1e-9 gap, deterministically). The tests only read the reports.
"""

from __future__ import annotations

import functools

from coopt.instance import load
from coopt.problem import SolveOptions
from coopt.problems.chase import PROBLEM
from coopt.run import run

#: The options both files solve with.
OPTIONS = SolveOptions(time_limit=30, gap=1e-9, threads=1)


@functools.cache
def generated_report(seed: int, size: int, method: str):
    """``run(PROBLEM, PROBLEM.generate(seed, size), method, OPTIONS)``."""
    return run(PROBLEM, PROBLEM.generate(seed, size), method, OPTIONS)


@functools.cache
def shipped_report(name: str, method: str):
    """``run(PROBLEM, load(f"chase/{name}").instance, method, OPTIONS)``."""
    return run(PROBLEM, load(f"chase/{name}").instance, method, OPTIONS)
