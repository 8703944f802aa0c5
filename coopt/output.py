"""What coopt writes: strict JSON (no Infinity, no NaN) for every report, result line and bound."""

from __future__ import annotations

import json
import math
from typing import Any


def non_finite(value: Any, where: str = "solution") -> list[str]:
    """Where a JSON-like value holds inf or NaN (a checker's first question: decisions and
    objectives are finite numbers, and strict JSON has no word for the others)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f"{where} = {value!r}"]
    if isinstance(value, dict):
        return [bad for k, v in value.items() for bad in non_finite(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [bad for i, v in enumerate(value) for bad in non_finite(v, f"{where}[{i}]")]
    return []


def dumps(data: Any, **kwargs: Any) -> str:
    """Strict JSON text (no Infinity, no NaN), the one writer of every report and result line."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs)
    except ValueError as exc:
        found = non_finite(data, "report")
        raise ValueError(f"refusing to write non-finite numbers as JSON: {', '.join(found[:3])}") from exc
