"""Solve routes: :mod:`coopt.solvers.highs` (Pyomo -> HiGHS and the shared report) and one
module of polynomial heuristics per problem."""
