"""A 0/1 knapsack registered only inside tests, so the CLI and error paths are tested without
depending on any real problem's schema. Its optimum is checked by brute force in test_cli.py."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pyomo.environ as pyo

from coopt.problem import Problem, Violation
from coopt.schema import Field, Schema


@dataclass(frozen=True)
class Instance:
    values: tuple[float, ...]
    weights: tuple[float, ...]
    capacity: float


SCHEMA = Schema(
    [
        Field("values", "floats", "value of each item", positive=True, min_length=1, example=[3.0, 4.0]),
        Field("weights", "floats", "weight of each item", unit="kg", positive=True, length="values",
              example=[2.0, 3.0]),
        Field("capacity", "float", "largest total weight", unit="kg", positive=True, example=4.0),
        Field("note", "str", "free text, to test optional fields", default=""),
    ]
)


def load(fields) -> Instance:
    v = SCHEMA.read(fields)
    if min(v.weights) > v.capacity:
        fields.fail("capacity", f"expected at least the lightest weight {min(v.weights)}, got {v.capacity}")
    return Instance(v.values, v.weights, v.capacity)


def dump(instance: Instance) -> dict:
    return {"values": list(instance.values), "weights": list(instance.weights), "capacity": instance.capacity}


def build(instance: Instance) -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.take = pyo.Var(range(len(instance.values)), domain=pyo.Binary)
    weight = sum(instance.weights[k] * m.take[k] for k in m.take)
    m.capacity = pyo.Constraint(expr=weight <= instance.capacity)
    m.value = pyo.Objective(expr=sum(instance.values[k] * m.take[k] for k in m.take), sense=pyo.maximize)
    return m


def extract(model, instance: Instance) -> dict:
    return {"take": [k for k in model.take if model.take[k].value > 0.5]}


def objective(instance: Instance, solution: dict) -> float:
    return float(sum(instance.values[k] for k in solution["take"]))


def check(instance: Instance, solution: dict) -> list[Violation]:
    take = solution.get("take")
    n = len(instance.values)
    if not isinstance(take, list) or any(not isinstance(k, int) or not 0 <= k < n for k in take):
        return [Violation("take", "expected a list of item indices")]
    weight = sum(instance.weights[k] for k in take)
    if weight > instance.capacity * (1 + 1e-9):
        return [Violation("capacity", f"weight {weight} > capacity {instance.capacity}")]
    return []


def greedy(instance: Instance, seed: int = 0) -> dict:
    order = sorted(range(len(instance.values)), key=lambda k: -instance.values[k] / instance.weights[k])
    take, weight = [], 0.0
    for k in order:
        if weight + instance.weights[k] <= instance.capacity:
            take.append(k)
            weight += instance.weights[k]
    return {"take": sorted(take), "objective": float(sum(instance.values[k] for k in take))}


def generate(seed: int, size: int) -> Instance:
    rng = random.Random(seed)
    n = 4 + 2 * size
    return Instance(
        tuple(float(rng.randint(1, 20)) for _ in range(n)),
        tuple(float(rng.randint(1, 20)) for _ in range(n)),
        float(15 * size + 10),
    )


PROBLEM = Problem(
    name="knapsack",
    summary="0/1 knapsack (test fixture)",
    source="textbook",
    sense="max",
    load=load,
    dump=dump,
    check=check,
    objective=objective,
    generate=generate,
    build=build,
    extract=extract,
    heuristics={"greedy": greedy},
    schema=SCHEMA,
    objective_name="packed value",
)
