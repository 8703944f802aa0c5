"""Name -> Problem. Problems are discovered, not listed: every module or package in
:mod:`coopt.formulations` that defines ``PROBLEM`` is registered under ``PROBLEM.name``; a package
that states two problems of one paper (provisioning) lists them in ``PROBLEMS``."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from coopt.problem import Problem


@cache
def _all() -> dict[str, Problem]:
    import coopt.formulations as pkg

    found: dict[str, Problem] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        declared = getattr(module, "PROBLEMS", None) or (getattr(module, "PROBLEM", None),)
        for problem in declared:
            if not isinstance(problem, Problem):
                continue
            if problem.name in found:
                raise RuntimeError(f"two problems registered as {problem.name!r}")
            found[problem.name] = problem
    return dict(sorted(found.items()))


def problems() -> dict[str, Problem]:
    return _all()


def names() -> list[str]:
    return list(_all())


def get(name: str) -> Problem:
    """The problem registered as ``name``; KeyError if there is none."""
    return _all()[name]
