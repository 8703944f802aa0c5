"""Solve routes: :mod:`coopt.solvers.exact` (Pyomo -> HiGHS and the shared report) and one
module of polynomial heuristics per problem."""
