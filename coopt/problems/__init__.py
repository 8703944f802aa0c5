"""One package per problem, each holding everything that problem owns: its data model and declared
fields, checker and generator (``model``), its exact models, its heuristics, its dual bound, its
brute-force oracle and its closed forms. A problem package imports the contract and the shared
routes (:mod:`coopt.problem`, :mod:`coopt.solvers`), never another problem, the runner or the CLI;
:mod:`coopt.registry` lists the packages by reference."""
