"""Closed forms of the Scope merged-pipeline model (research notes section 2.d, [R]): the segment
time of a k-stage pipeline over a batch, its bubble fraction, and the merging lemma (merging two
compute-bound clusters on their pooled chiplets never lengthens the bottleneck under linear
scaling). Each is checked in tests/test_scope_bounds.py against the cost model of
:mod:`coopt.problems.scope.model` and an event-level pipeline simulation.
"""

from __future__ import annotations

import sympy as sp

from coopt.closed_forms import Bound, Quantity

b = Quantity("b", "samples in the batch", domain="positive_integer", default=64)
k = Quantity("k", "clusters (pipeline stages) in the segment", domain="positive_integer", default=4)
tau = Quantity("tau", "bottleneck stage time per sample", "s", default=1e-4, latex=r"\tau")
W = Quantity("W", "weight bytes of the segment", "B", "nonnegative", default=4e6)
X = Quantity("X", "boundary activation bytes per sample (in plus out)", "B", "nonnegative", default=4e5)
B_D = Quantity("B_D", "DRAM bandwidth of the package", "B/s", default=64e9)
a1 = Quantity("a_1", "chiplets of the first cluster", domain="positive_integer", default=2)
a2 = Quantity("a_2", "chiplets of the second cluster", domain="positive_integer", default=6)
t1 = Quantity("t_1", "compute time per sample of the first cluster on its chiplets", "s", default=3e-4)
t2 = Quantity("t_2", "compute time per sample of the second cluster on its chiplets", "s", default=1e-4)

T_seg = Quantity("T_seg", "segment time for the batch", "s")
bubble = Quantity("bubble", "share of the pipeline time lost to fill and drain", domain="unit")
gain = Quantity("gain", "bottleneck reduction from merging the two clusters", "s", "nonnegative")

BOUNDS = [
    Bound(
        name="scope.segment_time",
        summary="Time of one segment: k-stage pipeline over b samples plus weight load and spill",
        source="Scope, arXiv 2602.14393 (reconstructed cost model, research notes 2.b)",
        output=T_seg,
        inputs=(b, k, tau, W, X, B_D),
        expr=(b.symbol + k.symbol - 1) * tau.symbol + (W.symbol + b.symbol * X.symbol) / B_D.symbol,
        assumptions=("stage times bounded by tau", "no overlap of DRAM traffic with compute"),
        notes="An upper bound on the event-level makespan, which lies in "
              "[sum tau_c + (b - 1) tau, (b + k - 1) tau] and equals it for equal stage times.",
    ),
    Bound(
        name="scope.bubble_fraction",
        summary="Share of a segment's pipeline time spent filling and draining",
        source="Scope, arXiv 2602.14393 (research notes 2.d); GPipe's bubble, Huang et al. 2019",
        output=bubble,
        inputs=(b, k),
        expr=(k.symbol - 1) / (b.symbol + k.symbol - 1),
        assumptions=("equal stage times",),
        notes="More clusters per segment cost more bubbles; more segments cost more DRAM spills.",
    ),
    Bound(
        name="scope.merge_gain",
        summary="Bottleneck saved by merging two compute-bound clusters onto their pooled chiplets",
        source="research notes 2.d, merging lemma [R]",
        output=gain,
        inputs=(a1, a2, t1, t2),
        expr=sp.Max(t1.symbol, t2.symbol)
        - (a1.symbol * t1.symbol + a2.symbol * t2.symbol) / (a1.symbol + a2.symbol),
        assumptions=("compute-bound (t_comp >= t_nop)", "work scales linearly with chiplets",
                     "the cut between the two clusters is removed as well (not counted here)"),
        notes="gain >= 0 since a weighted mean never exceeds the maximum; gain = 0 iff t_1 = t_2.",
    ),
]
