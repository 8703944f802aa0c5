"""Heuristics of the two provisioning problems: :mod:`.rmsa` (single-layer routing, modulation and
spectrum assignment, first-fit and degraded) and :mod:`.grooming` (multi-layer, with grooming)."""
