"""coopt: exact models, heuristics and closed-form bounds for ML-systems, optical-network and
photonic/chiplet co-design problems.

The public entry points are the registry (:func:`coopt.registry.get`, :func:`coopt.registry.problems`),
instance loading (:func:`coopt.instance.load`) and the solve route (:func:`coopt.run.run`).
"""

__version__ = "0.1.0"
