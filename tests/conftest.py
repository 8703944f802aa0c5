import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def knapsack_only(monkeypatch):
    """Make the registry hold only the test knapsack problem."""
    import knapsack

    from coopt import registry

    monkeypatch.setattr(registry, "_all", lambda: {"knapsack": knapsack.PROBLEM})
    return knapsack.PROBLEM
