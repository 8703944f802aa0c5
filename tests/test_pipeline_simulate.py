"""The event-driven simulator (model.simulate) against the round-robin one it replaced: the same
times and copy starts on valid orders (with recompute, offload and extra waits), and the same
deadlock verdict on orders that cannot run."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm

INSTANCES = Path(__file__).resolve().parents[1] / "instances" / "pipeline"


def round_robin(instance: pm.Instance, orders, modes=None, waits=None):
    """The reference: sweep the devices in turn, each running down its order while its next
    pass's predecessors are timed, until nothing moves. (start, d2h, h2d), or 'deadlock'."""
    modes = dict(modes or {})
    start, end, d2h, h2d = {}, {}, {}, {}
    free = dict.fromkeys(orders, 0.0)
    copy_out = dict.fromkeys(orders, 0.0)
    copy_in = dict.fromkeys(orders, 0.0)
    at = dict.fromkeys(orders, 0)
    left = sum(len(o) for o in orders.values())
    while left:
        moved = False
        for d, order in orders.items():
            while at[d] < len(order):
                key = order[at[d]]
                preds = instance.predecessors(key) + (waits.get(key, []) if waits else [])
                if any(q not in end for q, _ in preds):
                    break
                kind, k, j = key
                mode = modes.get((k, j), pm.KEEP)
                t = max([free[d]] + [end[q] + lag for q, lag in preds])
                if kind == "B" and mode == pm.OFFLOAD:
                    before = start[order[at[d] - 1]] if at[d] else 0.0
                    h2d[(k, j)] = max(before, d2h[(k, j)] + instance.tau_d(k), copy_in[d])
                    copy_in[d] = h2d[(k, j)] + instance.tau_u(k)
                    t = max(t, copy_in[d])
                start[key], end[key] = t, t + instance.duration(key, mode)
                free[d] = end[key]
                if kind == "F" and mode == pm.OFFLOAD:
                    d2h[(k, j)] = max(end[key], copy_out[d])
                    copy_out[d] = d2h[(k, j)] + instance.tau_d(k)
                at[d] += 1
                left -= 1
                moved = True
        if not moved:
            return "deadlock"
    return start, d2h, h2d


def _verdict(instance, orders, modes=None, waits=None):
    try:
        timed = pm.simulate(instance, orders, modes, waits)
    except pm.Deadlock:
        return "deadlock"
    return timed.start, timed.d2h, timed.h2d


def _instances():
    for path in sorted(INSTANCES.glob("[01]-*.toml")):
        yield path.stem, load(path).instance
    for size in (2, 4, 6):
        yield f"generated-{size}", PROBLEM.generate(size, size)


CASES = list(_instances())


@pytest.mark.parametrize("name,instance", CASES, ids=[c[0] for c in CASES])
def test_event_driven_simulator_equals_round_robin(name, instance):
    rng = random.Random(7)
    start = schedules.portfolio(instance)
    timed, _ = pm.parse(instance, start)
    base: dict[int, list] = {d: [] for d in range(instance.stages)}
    for key in sorted(timed.start, key=lambda x: (timed.start[x], x)):
        base[instance.device(key[1])].append(key)
    items = sorted({x[1:] for x in timed.start})
    allowed = [pm.KEEP] + [pm.RECOMPUTE] * instance.allow_recompute + [pm.OFFLOAD] * instance.allow_offload
    ran = 0
    for trial in range(40):
        orders = {d: list(o) for d, o in base.items()}
        for _ in range(trial % 6):  # a few random shifts: some run, some deadlock
            d = rng.randrange(instance.stages)
            if len(orders[d]) > 1:
                q, r = rng.randrange(len(orders[d])), rng.randrange(len(orders[d]))
                orders[d].insert(r, orders[d].pop(q))
        modes = {it: rng.choice(allowed) for it in items if rng.random() < 0.3}
        # every fourth trial a fused-send runtime: B waits for the W of the stage after it
        waits = schedules.fused_waits(instance) if trial % 4 == 3 else None
        want = round_robin(instance, orders, modes, waits)
        assert _verdict(instance, orders, modes, waits) == want
        ran += want != "deadlock"
    assert ran >= 5
