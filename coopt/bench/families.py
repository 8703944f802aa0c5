"""The benchmark's instance families, by name (the runner is :mod:`coopt.bench.runner`)."""

FAMILIES = ("shipped-small", "shipped", "generated", "scaling", "large")
DEFAULT_FAMILIES = ("shipped-small", "generated")
