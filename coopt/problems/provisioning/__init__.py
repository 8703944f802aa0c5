"""Degraded provisioning in service-differentiated multi-layer elastic optical networks
(Zhong et al., GLOBECOM 2016, arXiv 1607.04695): two registered problems, one package.

* ``provisioning``: single-layer degraded routing, modulation and spectrum assignment (RMSA) with
  priorities, static (Model A) or time-expanded (Model B). Data model, K-shortest routes, the
  candidate set and the checker are in :mod:`.model`, the channel MILP in :mod:`.milp`, the
  heuristics in :mod:`coopt.problems.provisioning.rmsa`, :mod:`.packing` and :mod:`.layout`.
* ``provisioning_grooming``: the multi-layer architecture with traffic grooming and electrical
  degradation (Model C). Its data model and checker are in :mod:`.grooming_model`, its MILP in
  :mod:`.grooming_milp`, its heuristics in :mod:`coopt.problems.provisioning.grooming_heuristics`
  and :mod:`.grooming_layout`, its dual bound in :mod:`.grooming_bound`.

The exact method of both (``exact``) is the lexicographic two-stage solve of
:mod:`coopt.problems.provisioning.exact`: served weight first, then the tie-break. ``milp`` is the
same rows with the one-number objective, solved once: it proves the served weight, and its
tie-break is resolved only as far as HiGHS' relative gap reaches (docs/provisioning.md). The warm
start of both (``warm_start``) is the best fixed-for-life heuristic's plan; the runner runs it and
hands it to ``exact`` (its stage-1 cutoff) and to ``build`` (which does not pass it to HiGHS).
The ``bound`` of ``provisioning`` takes a plan too (``incumbent``, channels that seed its column
generation) and, without one, starts from an empty master.

They share one package because they are one paper's two layers: Model C reads the same network,
modulation formats, priority classes and K-shortest routes as Models A and B (it imports
:mod:`.model`), and the discrete-event simulator (:mod:`coopt.problems.provisioning.simulation`) runs both.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, grid_of, model_fields
from coopt.problems.provisioning import (
    bound,
    brute,
    exact,
    grooming_bound,
    grooming_heuristics,
    grooming_layout,
    grooming_milp,
    layout,
    milp,
    model,
    packing,
    plot,
    rmsa,
)
from coopt.problems.provisioning import grooming_model as grooming

OBJECTIVE = "served priority weight minus degradation penalty"

PROBLEM = Problem(
    name="provisioning",
    summary="QoS-assured degraded RMSA with priorities (static Model A / time-expanded Model B)",
    source="Zhong et al., GLOBECOM 2016, arXiv 1607.04695; channel RSA: Velasco et al., PNC 2012",
    sense="max",
    **model_fields(model),
    **exact_fields(milp),
    heuristics={**rmsa.HEURISTICS, "capacity_guided_first_fit": packing.capacity_guided_first_fit,
                "capacity_guided_cpsat": layout.capacity_guided_cpsat},
    exact=exact.provisioning_exact,
    warm_start=rmsa.best_heuristic_solution,
    bound=bound.provisioning_bound,
    sizes=(1, 2, 3),
    max_size=model.MAX_SIZE,
    size_doc="requests / 8",
    objective_name=OBJECTIVE,
    objective_unit="weight",
    oracle=Oracle(generate=brute.tiny_provisioning, solve=brute.provisioning_optimum),
    showcase="0-six-node-static.toml",
    # where no request can be degraded the value is the served weight, a sum of integer class weights
    objective_grid=lambda instance: (
        grid_of(c.weight for c in instance.classes)
        if all(model.retained_levels(instance, r) == (1.0,) for r in instance.requests) else None),
    plot=plot.draw,
)

GROOMING = Problem(
    name="provisioning_grooming",
    summary="Multi-layer degraded provisioning with grooming over <= 2 lightpaths (Model C)",
    source="Zhong et al., GLOBECOM 2016, arXiv 1607.04695; grooming ILP after Zhu & Mukherjee, JSAC 2002",
    sense="max",
    **model_fields(grooming),
    **exact_fields(grooming_milp),
    heuristics={**grooming_heuristics.HEURISTICS,
                "plan_layout_grooming": grooming_layout.plan_layout_grooming},
    exact=exact.grooming_exact,
    warm_start=grooming_heuristics.best_heuristic_solution,
    bound=grooming_bound.grooming_bound,
    sizes=(1, 2, 3),
    max_size=grooming.MAX_SIZE,
    size_doc="requests / 4",
    objective_name=OBJECTIVE + " and lightpath count",
    objective_unit="weight",
    oracle=Oracle(generate=brute.tiny_grooming, solve=brute.grooming_optimum),
    plot=plot.draw_grooming,
)

PROBLEMS = (PROBLEM, GROOMING)
