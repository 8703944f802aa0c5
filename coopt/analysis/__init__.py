"""Closed-form bounds (:mod:`coopt.analysis.bounds`) and the benchmark."""
