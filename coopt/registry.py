"""Name -> Problem, and name -> closed form: the one place that lists the problems.

It sits above every problem package and imports each by reference, so every arrow from here down is
a real import. Adding a problem adds its package to :data:`PACKAGES`.
"""

from __future__ import annotations

from functools import cache

from coopt.closed_forms import Entry
from coopt.errors import UsageError
from coopt.problem import Problem
from coopt.problems import (
    chase,
    configtuner,
    delocalized,
    hecaton,
    lightcode,
    mixnet,
    moesd,
    netcast,
    pipeline,
    provisioning,
    scope,
    topoopt,
)
from coopt.problems.chase import closed_forms as chase_forms
from coopt.problems.configtuner import closed_forms as configtuner_forms
from coopt.problems.delocalized import closed_forms as delocalized_forms
from coopt.problems.hecaton import closed_forms as hecaton_forms
from coopt.problems.lightcode import closed_forms as lightcode_forms
from coopt.problems.mixnet import closed_forms as mixnet_forms
from coopt.problems.moesd import closed_forms as moesd_forms
from coopt.problems.netcast import closed_forms as netcast_forms
from coopt.problems.pipeline import closed_forms as pipeline_forms
from coopt.problems.scope import closed_forms as scope_forms
from coopt.problems.topoopt import closed_forms as topoopt_forms

#: Every problem package; each defines ``PROBLEMS`` (a paper with two problems) or ``PROBLEM``.
PACKAGES = (chase, configtuner, hecaton, lightcode, mixnet, pipeline, provisioning, scope, topoopt)
#: Every module of closed forms; each defines ``BOUNDS`` (bounds and curves of one paper).
CLOSED_FORMS = (
    chase_forms, configtuner_forms, delocalized_forms, hecaton_forms, lightcode_forms, mixnet_forms,
    moesd_forms, netcast_forms, pipeline_forms, scope_forms, topoopt_forms,
)
# netcast, delocalized and moesd state closed forms only: no instance files, no Problem.
_ = (delocalized, moesd, netcast)


@cache
def _all() -> dict[str, Problem]:
    found: dict[str, Problem] = {}
    for package in PACKAGES:
        for problem in getattr(package, "PROBLEMS", None) or (package.PROBLEM,):
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


@cache
def closed_forms() -> dict[str, Entry]:
    """Every closed-form bound and curve, by name (``coopt bound list``)."""
    found: dict[str, Entry] = {}
    for module in CLOSED_FORMS:
        for entry in module.BOUNDS:
            if entry.name in found:
                raise RuntimeError(f"two closed forms named {entry.name!r}")
            found[entry.name] = entry
    return dict(sorted(found.items()))


def closed_form(name: str) -> Entry:
    """The closed form called ``name``; a UsageError naming ``coopt bound list`` if there is none."""
    try:
        return closed_forms()[name]
    except KeyError:
        raise UsageError(f"unknown bound {name!r}; `coopt bound list` shows them") from None
