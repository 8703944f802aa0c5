"""The contract suite (:mod:`coopt.testing`) over every registered problem, every method and every
small shipped instance (``instances/<problem>/0-*.toml``), plus what only the tree can check: each
problem ships a small instance, its showcase is one of them, and its schema's example validates.
Nothing here knows any problem by name."""

from __future__ import annotations

import pytest

from coopt import registry
from coopt.instance import load
from coopt.shipped import small_shipped
from coopt.testing import ContractError, check_problem, checks

CHECKS = [case for name in registry.names() for case in checks(registry.get(name))]


@pytest.mark.parametrize("check", [check for _, check in CHECKS], ids=[name for name, _ in CHECKS])
def test_contract(check):
    check()


def test_every_problem_ships_a_small_instance():
    assert registry.names(), "no problem is registered"
    for name in registry.names():
        assert small_shipped(name), f"{name} ships no small (0-*) instance"


@pytest.mark.parametrize("name", [n for n in registry.names() if registry.get(n).showcase], ids=str)
def test_showcase_file_is_a_small_shipped_instance(name):
    names = [p.name for p in small_shipped(name)]
    assert registry.get(name).showcase in names


@pytest.mark.parametrize("name", registry.names())
def test_schema_example_validates(name, tmp_path):
    from coopt.commands.schema import example

    path = tmp_path / "example.toml"
    path.write_text(example(registry.get(name)))
    load(path)


def test_a_problem_outside_the_tree_runs_the_suite(tmp_path):
    """check_problem on the test knapsack (tests/knapsack.py) with its own instance file passes; a
    copy with a heuristic that packs every item fails, and the error names that check."""
    import dataclasses

    import knapsack

    path = tmp_path / "0-tiny.toml"
    path.write_text('problem = "knapsack"\nschema_version = 1\nvalues = [6.0, 5.0, 8.0, 9.0]\n'
                    'weights = [2.0, 3.0, 6.0, 7.0]\ncapacity = 9.0\n')
    good = dataclasses.replace(knapsack.PROBLEM, objective_unit="value")
    check_problem(good, instances=[path])

    def overfull(instance, seed=0):
        return {"take": list(range(len(instance.values))), "objective": float(sum(instance.values))}

    broken = dataclasses.replace(good, heuristics={**good.heuristics, "overfull": overfull})
    with pytest.raises(ContractError, match="0-tiny-overfull-checker"):
        check_problem(broken, instances=[path])
