"""ConfigTuner: the fastest parallel configuration of an LLM training job, from an analytic model
of its computation, communication and memory.

Source: Li, Liu, Li, Jin, Ren, Liao, Tian, Ren, Zhong, Liu, Zhang, Chen, "Analyzing Communication
Predictability in LLM Training", arXiv 2512.24750 (2025). Only the abstract was readable; the time
and memory model is reconstructed from Megatron-LM's accounting (Narayanan et al. SC21;
Korthikanti et al. 2022) as research notes section 3.b proposes, made precise in
:mod:`.analytic` (every constant an instance field with a default and a source).

The user has a model (dense or MoE), a cluster and a global batch, and asks which configuration
``(tp, pp, dp, ep, microbatch, interleave, recompute, sequence_parallel, zero)`` trains fastest,
where its time goes, and how it compares with Megatron-LM's rule of thumb. The objective is the
iteration time in seconds (minimise); each solution carries the breakdown (compute, TP, EP,
recompute, PP, bubble, exposed DP, optimizer), the worst stage's memory, MFU and HFU.

Exact methods (C1): ``exact`` prices every configuration of the space in one vectorised call of the
lambdified SymPy model; ``milp`` is one binary per memory-feasible configuration and
``sum z = 1`` (:mod:`.milp`); brute force over the checker's rules (:mod:`.brute`) is the oracle.
The dual bound is the enumeration's optimum (the space is polynomial in N; see
:func:`coopt.problems.configtuner.heuristics.bound`). Heuristics: ConfigTuner's pruned search, Megatron's rule
of thumb, a Calculon-style exhaustive search over Calculon's space, and our two-phase search.

C2, the non-uniform layer-to-stage partition of one pipelined configuration (the embedding and the
LM head cost their own), is a library: :mod:`.partition` (MILP) and
:func:`coopt.problems.configtuner.partition.partition_dp` (exact DP), tested against each other, brute force
and the uniform split. It refines a C1 answer rather than reading a file of its own, so it is not
a second registered problem.

Layout: the symbolic model in :mod:`.analytic`, fields, space and checker in :mod:`.model`.
"""

from __future__ import annotations

from coopt.problem import Oracle, Problem, exact_fields, model_fields
from coopt.problems.configtuner import brute, exact, heuristics, milp, model, plot

PROBLEM = Problem(
    name="configtuner",
    summary="Fastest hybrid-parallel configuration of an LLM training job (min iteration time)",
    source="Li et al., Analyzing Communication Predictability in LLM Training, arXiv 2512.24750 "
           "(2025); model after Narayanan et al. SC21 and Korthikanti et al. 2022 [R]",
    sense="min",
    **model_fields(model),
    **exact_fields(milp),
    heuristics=heuristics.HEURISTICS,
    exact=exact.exact,
    bound=exact.bound,
    oracle=Oracle(generate=model.generate_tiny, solve=brute.solve),
    objective_name="iteration time",
    objective_unit="s",
    sizes=(1, 2, 4),
    max_size=model.MAX_SIZE,
    size_doc="nodes of 8 A100-80GB (GPUs = 8 x size); the model shape grows with log2(size)",
    showcase="0-gpt1.3b-16xa100.toml",
    plot=plot.draw,
)
