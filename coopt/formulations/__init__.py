"""One module per problem: data model, exact formulation, extraction and checker.

Each module defines ``PROBLEM`` (a :class:`coopt.problem.Problem`); see that class for the
contract."""
