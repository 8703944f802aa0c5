"""The heap-driven list schedule (ZB-H2's and Chronos-Pipe's dispatcher) against the plain one it
replaced: every device choosing again at every dispatch gives the same start times, or the same
deadlock."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from coopt.instance import load
from coopt.problem import NoSolution
from coopt.problems.pipeline import PROBLEM
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.heuristics import list_schedule, timing

INSTANCES = Path(__file__).resolve().parents[1] / "instances" / "pipeline"


def plain_dispatch(instance: pm.Instance, window, priority, budget=None) -> dict:
    """The reference: at every dispatch every device lists its ready lane heads (memory and
    in-flight window permitting), and the (earliest start, lowest device) pass of best priority
    among those ready by then starts. O(n p v); the start times, or the string 'deadlock'."""
    p, m, kinds = instance.stages, instance.microbatches, instance.kinds
    on = [instance.stages_on(d) for d in range(p)]
    first = [min(ks) for ks in on]
    later = {k: sum(instance.a(q) for q in on[instance.device(k)] if q > k)
             for k in range(instance.virtual_stages)}
    limit = [min(instance.cap(d), budget(d) if budget else float("inf")) * (1 + 1e-9) for d in range(p)]
    nxt = {(x, k): 0 for x in kinds for k in range(instance.virtual_stages)}
    start, end = {}, {}
    free, level, reserved = [0.0] * p, [0.0] * p, [0.0] * p
    inflight = [0] * instance.virtual_stages
    while len(start) < len(nxt) * m:
        options = []
        for d in range(p):
            ready = []
            for k in on[d]:
                for kind in kinds:
                    j = nxt[(kind, k)]
                    if j >= m:
                        continue
                    key = (kind, k, j)
                    preds = instance.predecessors(key)
                    if any(q not in end for q, _ in preds):
                        continue
                    if kind == "F" and k == first[d] and not (
                        inflight[k] < window(k)
                        and level[d] + reserved[d] + instance.a(k) + later[k] <= limit[d]
                    ):
                        continue
                    ready.append((max([free[d]] + [end[q] + lag for q, lag in preds]), key))
            if ready:
                t = min(r for r, _ in ready)
                key = min((x for r, x in ready if r <= t), key=lambda x: priority(x, start))
                options.append((t, d, key))
        if not options:
            return "deadlock"
        t, d, key = min(options, key=lambda o: o[:2])
        kind, k, _ = key
        start[key], end[key] = t, t + instance.duration(key)
        free[d] = end[key]
        if kind == "F":
            level[d] += instance.a(k)
            reserved[d] += later[k] if k == first[d] else -instance.a(k)
            inflight[k] += 1
        elif kind == "B":
            level[d] -= instance.a(k) - instance.a_w(k)
            inflight[k] -= 1
        else:
            level[d] -= instance.a_w(k)
        nxt[(kind, k)] += 1
    return start


def _cases():
    for path in sorted(INSTANCES.glob("[01]-*.toml")):
        yield path.stem, load(path).instance
    for size in (1, 2, 3, 5, 8):
        for seed in range(3):
            yield f"generated-{size}-{seed}", PROBLEM.generate(seed, size)


CASES = list(_cases())


@pytest.mark.parametrize("name,instance", CASES, ids=[c[0] for c in CASES])
def test_heap_dispatch_equals_the_plain_dispatch(name, instance):
    p = instance.stages
    rank = {"B": 0, "F": 1, "W": 2}
    variants = [(list_schedule._chronos_window(instance), list_schedule._chronos_priority, None)]
    variants.append((lambda k, w=variants[0][0]: w(k) + 2, list_schedule._chronos_priority, None))
    if instance.chunks == 1 and instance.split_backward:
        variants.append((lambda k: 2 * (p - k) - 1, lambda x, _: (rank[x[0]], x[2]),
                         lambda d: 2 * p * instance.activation_bytes[d]))
    compared = 0
    for target in (instance, replace(instance, memory_cap_bytes=None)):
        for window, priority, budget in variants:
            want = plain_dispatch(target, window, priority, budget)
            try:
                got = list_schedule._list_schedule(target, window, priority, "test", budget=budget).start
            except NoSolution as error:
                if want != "deadlock":  # a finished schedule _fits rejects: so must it the reference's
                    assert "deadlock" not in str(error)
                    with pytest.raises(NoSolution):
                        timing._fits(target, pm.Timed(start=want, modes={}, d2h={}, h2d={}), "reference")
                    continue
                got = "deadlock"
            assert got == want
            compared += want != "deadlock"
    assert compared >= 1
