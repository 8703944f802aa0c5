"""coopt: exact models, heuristics and closed-form bounds for ML-systems, optical-network and
photonic/chiplet co-design problems.

The public Python API is :mod:`coopt.api` (docs/api.md); its names are also reachable here
(``coopt.load``, ``coopt.from_dict``, ``coopt.solve``, ...). They are imported on first use, so
``import coopt`` alone does not load the problems, Pyomo or SymPy. Names outside ``__all__`` are
internal and may change.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: The public names: ``__version__`` and every name of :data:`coopt.api.__all__`.
__all__ = [
    "CooptError",
    "InstanceError",
    "Loaded",
    "SolveOptions",
    "SolveReport",
    "UsageError",
    "__version__",
    "closed_form",
    "closed_form_names",
    "from_dict",
    "generate",
    "load",
    "methods",
    "problem_names",
    "read",
    "save",
    "solve",
    "to_dict",
]


def __getattr__(name: str) -> Any:
    # The API module sits above the registry and the runner, which read ``__version__`` from here:
    # it is imported by name on first use (PEP 562), never while this package initialises.
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("coopt.api"), name)
    raise AttributeError(f"module 'coopt' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
