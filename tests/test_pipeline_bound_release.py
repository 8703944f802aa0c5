"""The memory-aware release times and the dual bound they give (issue 20), against schedules the
checker accepts and optima found without them."""

from __future__ import annotations

import random

import pytest

from coopt.problem import NoSolution, SolveOptions
from coopt.problems.pipeline import PROBLEM, brute, milp
from coopt.problems.pipeline import heuristics as schedules
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline.bound import lower_bound, memory_rule_applies, releases, tails
from coopt.problems.pipeline.model import GB
from coopt.problems.pipeline.order import fifo_relabel
from coopt.run import run
from tests import _pipeline_shared

OPTIONS = SolveOptions(gap=1e-9, time_limit=60, threads=1)


def keep_only(seed: int, p: int, m: int, *, split: bool = True) -> pm.Instance:
    """A seeded keep-only instance with tight caps (one to three micro-batches) and lags."""
    rng = random.Random(seed)

    def ints(lo: int, hi: int) -> tuple[float, ...]:
        return tuple(float(rng.randint(lo, hi)) for _ in range(p))

    a = tuple(x * GB for x in ints(1, 4))
    return pm.Instance(
        stages=p, microbatches=m, split_backward=split,
        forward_s=ints(1, 3), backward_s=ints(1, 3), weight_s=ints(1, 2) if split else (0.0,) * p,
        activation_bytes=a,
        weight_grad_bytes=tuple(x * rng.choice((0.0, 0.5)) for x in a) if split else (0.0,) * p,
        memory_cap_bytes=tuple(x * rng.choice((1.0, 1.5, 2.0, 2.5, 3.0)) for x in a),
        lag_s=float(rng.choice((0, 0, 1))),
    )


def starts(solution) -> dict:
    return {(x["kind"], x["stage"], x["microbatch"]): x["start"] for x in solution["passes"]}


def test_a_weight_gradient_held_until_w_by_hand():
    """p = 2, m = 4, unit times, a = 2 GB, a_W = 1 GB, cap 2 GB: no forward may start while any
    earlier micro-batch holds anything, so micro-batch j starts after W(0, j-1) ends; the round
    trip F0 F1 B1 B0 W0 is 5 s and the four micro-batches take 20 s (the optimum the oracle
    finds), where the memory fill, which counts F -> B only, gives 4 x 4 = 16."""
    instance = pm.Instance(
        stages=2, microbatches=4, forward_s=(1.0, 1.0), backward_s=(1.0, 1.0), weight_s=(1.0, 1.0),
        activation_bytes=(2 * GB,) * 2, weight_grad_bytes=(GB,) * 2, memory_cap_bytes=(2 * GB,) * 2,
    )
    release = releases(instance)
    assert [release[("F", 0, j)] for j in range(4)] == [0.0, 5.0, 10.0, 15.0]
    assert lower_bound(instance) == pytest.approx(20.0)


def test_a_stage_that_holds_no_forward_gives_infinite_tails_not_an_error():
    """Stage 1's cap (1 GB) is below one activation (2 GB): no schedule exists. The tails of its
    backwards are infinite, like the release times of its forwards, and the bound is inf; before,
    ``tails`` read a forward's tail it had not computed yet (KeyError)."""
    instance = pm.Instance(
        stages=2, microbatches=3, forward_s=(1.0, 1.0), backward_s=(1.0, 1.0), weight_s=(1.0, 1.0),
        activation_bytes=(2 * GB,) * 2, weight_grad_bytes=(GB,) * 2, memory_cap_bytes=(4 * GB, GB),
    )
    tail = tails(instance)
    assert all(tail[("B", 1, j)] == float("inf") for j in range(3))
    assert tail[("B", 0, 2)] < float("inf")  # stage 0 holds two: its last backward is finite
    assert releases(instance)[("F", 1, 0)] == float("inf")
    assert lower_bound(instance) == float("inf")


@pytest.mark.parametrize("seed", range(40))
def test_release_times_never_exceed_a_checked_fifo_schedule(seed):
    """Every pass of a schedule the checker accepts, relabelled FIFO, starts no earlier than
    its release time: the per-pass claim that Model P uses as variable bounds."""
    rng = random.Random(seed)
    instance = keep_only(seed, rng.randint(2, 5), rng.randint(2, 10), split=rng.random() < 0.8)
    release = releases(instance)
    tried = 0
    for name in ("zb_h2", "chronos_pipe", "local_search", "1f1b_split", "zb_h1"):
        try:
            solution = schedules.HEURISTICS[name](instance)
        except NoSolution:
            continue
        if pm.check(instance, solution):
            continue
        relabelled = fifo_relabel(instance, solution)
        assert not pm.check(instance, relabelled)
        for x, t in starts(relabelled).items():
            assert t >= release[x] - 1e-9, (name, x, t, release[x])
        tried += 1
    assert tried or lower_bound(instance) == float("inf")


#: The oracle's seeds (of the first 120) whose instance the memory rule applies to.
RULE_SEEDS = [seed for seed in range(120) if memory_rule_applies(brute.tiny(seed))]


def test_the_oracle_gives_the_memory_rule_enough_instances():
    assert len(RULE_SEEDS) >= 30


@pytest.mark.parametrize("seed", RULE_SEEDS)
def test_bound_never_above_the_enumerated_optimum(seed):
    """On the oracle's keep-only instances with one chunk (where the memory rule applies) the
    bound is at most the optimum of the enumeration, which lets micro-batches overtake."""
    instance = brute.tiny(seed)
    best = _pipeline_shared.enumerate_optimum(instance)
    bound = lower_bound(instance)
    if best is None:
        assert bound == float("inf") or bound > 0
        return
    assert bound <= best + 1e-9


#: (p, m, split backward) small enough to enumerate every order (at most 8,100 combinations).
SHAPES = ((2, 2, True), (3, 2, True), (2, 3, False), (1, 3, True), (3, 2, False))


@pytest.mark.parametrize("seed", range(40))
def test_bound_never_above_the_enumerated_optimum_under_tight_caps(seed):
    """The same against the enumeration on keep-only instances whose caps hold one to three
    micro-batches and whose a_W is 0 or half of a (so every (x, y) case of the rule occurs)."""
    p, m, split = SHAPES[seed % len(SHAPES)]
    instance = keep_only(seed, p, m, split=split)
    best = _pipeline_shared.enumerate_optimum(instance)
    assert best is not None  # every cap holds one micro-batch
    assert lower_bound(instance) <= best + 1e-9


def test_the_bound_closes_the_generator_seeds_model_p_proves():
    """Sizes 8 seeds 0 and 2 and 16 seeds 1 and 2: the bound equals the optimum Model P proves
    (512, 528, 805, 533 in the exact family), so the root closes; size 16 seed 0 gets 661, up
    from the memory fill's 631."""
    for seed, size, optimum in ((0, 8, 512.0), (2, 8, 528.0), (1, 16, 805.0), (2, 16, 533.0)):
        assert lower_bound(PROBLEM.generate(seed, size)) == pytest.approx(optimum)
    assert lower_bound(PROBLEM.generate(0, 16)) > 631.0


def test_oracle_seed_64_is_exactly_its_optimum():
    """An offload instance of the oracle where HiGHS' order binary at 1 - 1e-6 let a forward start
    3 microseconds early (17.999997 against the enumeration's 18): the extracted schedule is
    re-timed in exact arithmetic, so the makespan is the optimum to 1e-9."""
    instance = brute.tiny(64)
    report = run(PROBLEM, instance, "exact", OPTIONS)
    assert report.status == "optimal" and report.check["feasible"]
    assert report.objective == pytest.approx(_pipeline_shared.optimum(instance), rel=1e-9)


def test_polish_removes_a_tolerance_overlap():
    """A checked schedule with one pass moved 1e-7 s into its predecessor (the checker's
    tolerance accepts it) comes back from the re-timing with exact starts and no overlap."""
    instance = keep_only(3, 3, 6)
    solution = schedules.zb_h2(instance)
    timed, _ = pm.parse(instance, solution)
    x = max(timed.start, key=timed.start.get)  # the last pass to start
    timed.start[x] -= 1e-7
    assert not pm.check(instance, pm.to_solution(instance, timed))
    polished = milp._polish(instance, timed)
    assert polished is not None
    assert polished.start[x] == pytest.approx(timed.start[x] + 1e-7, abs=1e-12)
    assert polished.makespan(instance) == pytest.approx(solution["objective"], abs=1e-12)
    assert not pm.check(instance, pm.to_solution(instance, polished))
