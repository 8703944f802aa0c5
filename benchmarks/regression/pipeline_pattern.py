"""Benchmark assertions on the pipeline's pattern schedules (:mod:`coopt.problems.pipeline.pattern`),
the part of the warm start that searches beyond the heuristics: their values on the generator's
size 16 seed 0 and size 12 seed 1, the instances docs/pipeline.md quotes. A research heuristic's
numbers on generated instances, not a contract: a change to the generator, the heuristics or the
pattern search may move them; this script says so.

    .venv/bin/python benchmarks/regression/pipeline_pattern.py

Checks (exit status 1 on the first mismatch, with what differs):

* size 16 seed 0, stage 2: no admitted pattern at period 59; (6, 23, 31) admitted at 60, and its
  greedy schedule is 684 (below every heuristic's 692-694);
* the pair table's least-sum crossing orders for the pattern (16, 16, 28) with trips (58, 58, 58):
  F(t, k) before B(t, i) on the stages t < sigma with sigma 12, 9, 8, 5 at offsets 16, 28, 32, 44
  (those of Model P's 682 schedule with F(2, j) fixed to the pattern);
* that pattern's list schedule with entries anchored at 3 is 682 (greedy crossings: above 700);
* ``pattern_incumbent`` below 692 returns 682;
* size 12 seed 1: the warm start is 568 (the heuristics give 576).
"""

from __future__ import annotations

import sys

from coopt.problems.pipeline import PROBLEM, pattern
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import releases
from coopt.problems.pipeline.warm import incumbent


class Mismatch(AssertionError):
    pass


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


def entries_of(instance: pm.Instance, s: int, d: tuple[int, ...]) -> list[float]:
    """F(s, j)'s entries: the release of F(s, 0), then the pattern's offsets repeated."""
    first = releases(instance)[("F", s, 0)]
    out = [first]
    for j in range(instance.microbatches - 1):
        out.append(out[-1] + d[j % len(d)])
    return out


def size_16_seed_0() -> None:
    instance = PROBLEM.generate(0, 16)
    expect(next(pattern.periodic_patterns(instance, 2, 59), None) is None, "a pattern at period 59")
    expect((6, 23, 31) in set(pattern.periodic_patterns(instance, 2, 60)), "(6, 23, 31) not admitted at 60")
    timed = pattern.entry_schedule(instance, 2, entries_of(instance, 2, (6, 23, 31)))
    greedy = pm.to_solution(instance, timed)
    value = pm.objective(instance, greedy)
    expect(not pm.check(instance, greedy), "the (6, 23, 31) schedule is rejected by the checker")
    expect(value == 684, f"(6, 23, 31) gives {value}, not 684")

    d, tau = next((d, tau) for d, tau in pattern.admitted(instance, 2, 60) if d == (16, 16, 28))
    expect(tau == (58, 58, 58), f"trips of (16, 16, 28): {tau}")
    order = pattern.crossing_orders(instance, 2, d, tau)
    pinned = {(0, 1): 12, (1, 2): 12, (2, 3): 9, (0, 2): 8, (1, 3): 5, (2, 4): 5}
    expect({k: order[k] for k in pinned} == pinned, f"crossing orders {[order.get(k) for k in pinned]}")
    expect(order[(30, 31)] == 12 and (0, 3) not in order and len(order) == 31 + 30, "crossing orders' shape")

    entries = pattern.pattern_entries(instance, d, 3.0, 4.0)
    expect(entries[:5] == [4.0, 19.0, 35.0, 63.0, 79.0], f"entries {entries[:5]}")
    ordered = pm.to_solution(instance, pattern.entry_schedule(instance, 2, entries,
                                                              pattern.crossing_orders(instance, 2, d, tau)))
    expect(not pm.check(instance, ordered), "the ordered (16, 16, 28) schedule is rejected")
    value = pm.objective(instance, ordered)
    expect(value == 682, f"ordered (16, 16, 28) gives {value}")
    greedy = pm.to_solution(instance, pattern.entry_schedule(instance, 2, entries))
    value = pm.objective(instance, greedy)
    expect(value > 700, f"greedy (16, 16, 28) gives {value}")

    value, solution = pattern.pattern_incumbent(instance, 692.0)
    checked = solution is not None and not pm.check(instance, solution)
    expect(checked, "pattern_incumbent: no checked schedule")
    expect(value == pm.objective(instance, solution) == 682, f"pattern_incumbent gives {value}, not 682")


def size_12_seed_1() -> None:
    instance = PROBLEM.generate(1, 12)
    value, solution = incumbent(instance)
    expect(solution is not None and not pm.check(instance, solution), "size 12 seed 1: no checked warm start")
    expect(value == 568, f"size 12 seed 1: the warm start is {value}, not 568")


def main() -> int:
    for check in (size_16_seed_0, size_12_seed_1):
        try:
            check()
        except Mismatch as exc:
            print(f"MISMATCH {check.__name__}: {exc}")
            return 1
        print(f"ok {check.__name__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
