"""The benchmark's instance families, by name (the runner is :mod:`coopt.analysis.bench`)."""

FAMILIES = ("shipped-small", "shipped", "generated", "scaling", "large")
DEFAULT_FAMILIES = ("shipped-small", "generated")
