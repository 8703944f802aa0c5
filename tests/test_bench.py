"""``coopt bench``: the metrics against hand computations, the runner (local, process pool, Dask),
resume after a kill, loud check failures, the scaling family, the report and the README table.

The runs use variants of the test knapsack (tests/knapsack.py) defined here at module level, so
that spawned workers can import them again; the registry is monkeypatched to hold them.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from itertools import product
from pathlib import Path

import knapsack
import pytest

import coopt.shipped
from coopt import cli, registry
from coopt.bench import runner as bench
from coopt.bench.metrics import (
    fit_power_law,
    performance_ratios,
    primal_dual_gap,
    primal_dual_integral,
    primal_gap,
    primal_integral,
    profile,
    shifted_geometric_mean,
    trace_incumbents,
)
from coopt.bench.report import (
    README_BEGIN,
    README_END,
    analyse,
    method_table,
    profile_costs,
    reach,
    scaling_curves,
    update_readme,
    write_report,
)
from coopt.errors import UsageError
from coopt.problem import ExactOutcome, SolveOptions

# -- toy problems ----------------------------------------------------------------------------


def knapsack_dp(instance: knapsack.Instance, options: SolveOptions) -> ExactOutcome:
    """Exact 0/1 knapsack by dynamic programming over integer capacities."""
    capacity = int(instance.capacity)
    best = [(0.0, ())] * (capacity + 1)
    for k, (value, weight) in enumerate(zip(instance.values, instance.weights, strict=True)):
        w = int(weight)
        for c in range(capacity, w - 1, -1):
            candidate = best[c - w][0] + value
            if candidate > best[c][0]:
                best[c] = (candidate, (*best[c - w][1], k))
    value, take = max(best)
    return ExactOutcome({"take": sorted(take), "objective": value}, "optimal", value)


def by_index(instance: knapsack.Instance, seed: int = 0) -> dict:
    """First fit in index order (a deliberately weaker heuristic)."""
    take, weight = [], 0.0
    for k, w in enumerate(instance.weights):
        if weight + w <= instance.capacity:
            take.append(k)
            weight += w
    return {"take": take, "objective": float(sum(instance.values[k] for k in take))}


def take_all(instance: knapsack.Instance, seed: int = 0) -> dict:
    """Wrong on purpose: ignores the capacity."""
    take = list(range(len(instance.values)))
    return {"take": take, "objective": float(sum(instance.values))}


def dp_up_to_size_two(instance: knapsack.Instance, options: SolveOptions) -> ExactOutcome:
    """The DP, pretending to run out of time above 8 items (generator size 2)."""
    if len(instance.values) > 8:
        return ExactOutcome(None, "time_limit", None)
    return knapsack_dp(instance, options)


def slow_greedy(instance: knapsack.Instance, seed: int = 0) -> dict:
    time.sleep(0.1)
    return knapsack.greedy(instance, seed)


def sleepy(instance: knapsack.Instance, seed: int = 0) -> dict:
    time.sleep(30)
    return knapsack.greedy(instance, seed)


TOY = replace(
    knapsack.PROBLEM,
    name="toy",
    exact=knapsack_dp,
    sizes=(1, 2),
    heuristics={"greedy": knapsack.greedy, "by_index": by_index},
)
CHEAT = replace(TOY, name="cheat", heuristics={"take_all": take_all})
CLIMB = replace(
    TOY,
    name="climb",
    exact=dp_up_to_size_two,
    build=None,
    extract=None,
    heuristics={"greedy": knapsack.greedy},
)
SLOW = replace(TOY, name="slow", build=None, extract=None, heuristics={"greedy": slow_greedy})
SLEEPY = replace(TOY, name="sleepy", build=None, extract=None, heuristics={"sleepy": sleepy})


@pytest.fixture
def toys(monkeypatch, tmp_path):
    """The registry holds the toy problems; shipped instances live in a temporary directory."""
    problems = {p.name: p for p in (TOY, CHEAT, CLIMB, SLOW, SLEEPY)}
    monkeypatch.setattr(registry, "_all", lambda: dict(sorted(problems.items())))
    shipped = tmp_path / "instances"
    for name, seed in product(("toy",), (1, 2)):
        instance = knapsack.generate(seed, 1)
        (shipped / name).mkdir(parents=True, exist_ok=True)
        from coopt.instance import to_toml

        (shipped / name / f"0-seed{seed}.toml").write_text(to_toml(TOY, instance))
    (shipped / "toy" / "1-larger.toml").write_text(to_toml(TOY, knapsack.generate(3, 3)))
    monkeypatch.setattr(coopt.shipped, "instances_dir", lambda: shipped)
    return problems


def brute_force(instance: knapsack.Instance) -> float:
    n = len(instance.values)
    return max(
        sum(v for v, x in zip(instance.values, pick, strict=True) if x)
        for pick in product((0, 1), repeat=n)
        if sum(w for w, x in zip(instance.weights, pick, strict=True) if x) <= instance.capacity
    )


class Counting(bench.Progress):
    def __init__(self) -> None:
        self.total = 0
        self.keys: list[str] = []

    def add(self, total: int) -> None:
        self.total += total

    def advance(self, row: dict) -> None:
        self.keys.append(row["key"])


def objectives(rows: list[dict]) -> dict[str, float | None]:
    return {r["key"]: r["objective"] for r in rows}


# -- metrics against hand computations -------------------------------------------------------


def test_shifted_geometric_mean_by_hand():
    assert shifted_geometric_mean([0.0, 10.0]) == pytest.approx(math.sqrt(10 * 20) - 10)
    assert shifted_geometric_mean([5.0, 5.0, 5.0]) == pytest.approx(5.0)
    # shift 0 and times below 1 s: every term is clamped to ln 1 = 0
    assert shifted_geometric_mean([0.2, 0.5], shift=0.0) == pytest.approx(1.0)
    assert shifted_geometric_mean([1.0, 4.0], shift=0.0) == pytest.approx(2.0)
    assert math.isnan(shifted_geometric_mean([]))


def test_performance_ratios_and_profile_by_hand():
    ratios = performance_ratios({"a": [1.0, 2.0, None, None], "b": [2.0, 2.0, 3.0, None]})
    assert ratios["a"] == [1.0, 1.0, math.inf, math.inf]
    assert ratios["b"] == [2.0, 1.0, 1.0, math.inf]
    assert profile(ratios["a"], [1.0, 2.0, 100.0]) == [0.5, 0.5, 0.5]
    assert profile(ratios["b"], [1.0, 1.5, 2.0]) == [0.5, 0.5, 0.75]
    with pytest.raises(ValueError):
        performance_ratios({"a": [1.0], "b": [1.0, 2.0]})


def test_primal_gap_and_integral_by_hand():
    assert primal_gap(9.0, 10.0) == pytest.approx(0.1)
    assert primal_gap(10.0, 9.0) == pytest.approx(0.1)
    assert primal_gap(-1.0, 1.0) == 1.0
    assert primal_gap(0.0, 0.0) == 0.0
    assert primal_gap(None, 3.0) == 1.0
    # gap 1 on [0, 2), 0.1 on [2, 5)
    assert primal_integral([(2.0, 9.0)], 10.0, 5.0) == pytest.approx(2.3)
    # gap 1 on [0, 1), 0.5 on [1, 3), 0 on [3, 4); the incumbent at 6 is past the horizon
    assert primal_integral([(3.0, 10.0), (1.0, 5.0), (6.0, 1.0)], 10.0, 4.0) == pytest.approx(2.0)
    assert primal_integral([], 10.0, 4.0) == pytest.approx(4.0)


# A minimisation MILP's trace on HiGHS' clock, which starts 1 s into the run (build + hand-off):
# no incumbent until 1.0 (dual 20 known from 0.5), then 14, 11 and the optimum 10 at 3.0.
TRACE = [[0.5, None, 20.0], [1.0, 14.0, 20.0], [2.0, 11.0, 10.5], [3.0, 10.0, 10.0]]


def test_primal_and_primal_dual_integral_of_a_trace_by_hand():
    assert primal_dual_gap(14.0, 20.0) == pytest.approx(0.3)
    assert primal_dual_gap(14.0, None) == primal_dual_gap(None, 20.0) == 1.0
    incumbents = trace_incumbents(TRACE, start=1.0)
    assert incumbents == [(2.0, 14.0), (3.0, 11.0), (4.0, 10.0)]
    # horizon 5: gap 1 on [0, 2), 4/14 on [2, 3), 1/11 on [3, 4), 0 on [4, 5)
    assert primal_integral(incumbents, 10.0, 5.0) == pytest.approx(2 + 4 / 14 + 1 / 11)
    # gap 1 on [0, 2) (no incumbent before 2, though a bound from 1.5), 6/20 on [2, 3),
    # 0.5/11 on [3, 4), 0 on [4, 5)
    assert primal_dual_integral(TRACE, 5.0, start=1.0) == pytest.approx(2 + 0.3 + 0.5 / 11)
    # a horizon inside the run cuts the trace off
    assert primal_dual_integral(TRACE, 2.5, start=1.0) == pytest.approx(2 + 0.5 * 0.3)


def test_power_law_fit_recovers_the_exponent():
    sizes = [2, 4, 8, 16]
    k, a = fit_power_law(sizes, [3.0 * n**2.5 for n in sizes])
    assert k == pytest.approx(2.5)
    assert a == pytest.approx(3.0)
    assert fit_power_law([4, 4], [1.0, 2.0]) is None


# -- the report's analysis on hand-made rows -------------------------------------------------


def _row(
    method,
    objective,
    status="feasible",
    bound=None,
    kind="heuristic",
    verdict="ok",
    seed=0,
    instance="i",
    total=1.0,
):
    return {
        "key": f"p|{instance}|{method}|seed={seed}",
        "problem": "p",
        "instance": instance,
        "method": method,
        "seed": seed,
        "status": status,
        "sense": "min",
        "objective": objective,
        "bound": bound,
        "kind": kind,
        "verdict": verdict,
        "size": None,
        "time_limit": 60.0,
        "family": "generated",
        "times": {"build": 0.0, "handoff": 0.0, "solve": total, "total": total},
        "check": {"feasible": verdict == "ok", "violations": [] if verdict == "ok" else ["capacity: over"]},
    }


def test_analysis_gaps_counts_and_conflicts():
    rows = [
        _row("exact", 10.0, "optimal", 10.0, "exact", instance="a", total=4.0),
        _row("h", 11.0, instance="a", total=1.0),
        _row("exact", 20.0, "feasible", 16.0, "exact", instance="b", total=60.0),
        _row("h", 18.0, instance="b"),
        _row("exact", 5.0, "optimal", 5.0, "exact", instance="c"),
        _row("h", 5.0, instance="c"),
    ]
    analysis = analyse(rows)
    p = analysis.problems["p"]
    h, exact = p.summaries["h"], p.summaries["exact"]
    assert (exact.optimal, exact.runs) == (2, 3)
    # b did not prove optimality: it counts at 2 x 60 s in the penalised SGM
    assert exact.sgm_penalised == pytest.approx(((4 + 10) * (120 + 10) * (1 + 10)) ** (1 / 3) - 10)
    assert math.isnan(h.sgm_penalised)
    assert (h.optimal, h.with_optimum) == (1, 2)
    assert h.gaps_to_optimum == pytest.approx([0.1, 0.0])
    assert h.gaps_to_bound == pytest.approx([2 / 16])  # no optimum on b: labelled as a gap to the bound
    assert exact.gaps_to_bound == pytest.approx([4 / 16])
    # case a, horizon 4 s: h has gap 1 for 1 s, then 1/11 for 3 s
    assert h.primal_integrals[0] == pytest.approx(1.0 + 3.0 / 11.0)
    assert not analysis.failures and not analysis.conflicts

    cases, time_costs = profile_costs(p, "time")
    assert [c[1] for c in cases] == ["a", "b", "c"]
    assert time_costs == {"exact": [4.0, None, 1.0], "h": [1.0, 1.0, 1.0]}  # b: exact did not prove
    _, quality = profile_costs(p, "quality")
    assert quality["exact"] == pytest.approx([1.0, 1 + 2 / 18, 1.0])  # b: best checked is h's 18
    assert quality["h"] == pytest.approx([1.1, 1.0, 1.0])

    beating = [*rows, _row("h2", 9.0, instance="a")]
    assert any("better than the proven optimum" in c for c in analyse(beating).conflicts)
    broken = [*rows, _row("h2", 12.0, instance="a", verdict="failed")]
    assert [r["method"] for r in analyse(broken).failures] == ["h2"]


def test_milp_rows_use_their_trace_and_heuristics_one_incumbent_labelled():
    milp = _row("milp", 10.0, "optimal", 10.0, "exact", total=4.0)
    milp["times"] = {"build": 0.6, "handoff": 0.4, "solve": 3.0, "total": 4.0}
    milp.update(trace=TRACE, nodes=7, model_size={"rows": 3, "columns": 5, "nonzeros": 12})
    rows = [milp, _row("h", 11.0, total=5.0)]  # the horizon is h's 5 s
    p = analyse(rows).problems["p"]
    m, h = p.summaries["milp"], p.summaries["h"]
    assert m.primal_integrals == pytest.approx([2 + 4 / 14 + 1 / 11])
    assert m.primal_dual_integrals == pytest.approx([2 + 0.3 + 0.5 / 11])
    assert (m.integral_kinds, h.integral_kinds) == ({"trace"}, {"final"})
    assert h.primal_integrals == pytest.approx([5.0]) and h.primal_dual_integrals == []
    table = {line.split(" | ")[0].strip("| "): line for line in method_table(p).splitlines()}
    assert "(trace)" in table["milp"] and "(final)" in table["h"]
    assert "3 x 5, 12 nz" in table["milp"] and "7 / 7" in table["milp"]
    # without its trace (an older row) the same MILP falls back to one incumbent at 4 s
    del milp["trace"]
    old = analyse(rows).problems["p"].summaries["milp"]
    assert old.integral_kinds == {"final"} and old.primal_integrals == pytest.approx([4.0])


def test_a_proof_past_the_time_limit_does_not_count_for_scaling():
    rows = []
    for size, total in ((1, 0.5), (2, 5.0), (4, 90.0)):  # the last one proved, but after 90 s
        for method, kind, status in (("exact", "exact", "optimal"), ("h", "heuristic", "feasible")):
            row = _row(method, 10.0, status, 10.0, kind, instance=f"generated:size={size}", total=total)
            rows.append({**row, "size": size})
    assert not bench.proved_within_limit(rows[-2]) and bench.proved_within_limit(rows[0])
    curves = {c.method: c for c in scaling_curves(analyse(rows).problems["p"])}
    assert curves["exact"].sizes == [1, 2] and curves["exact"].stopped == [(4, 90.0)]
    assert curves["h"].sizes == [1, 2, 4]
    assert reach(analyse(rows).problems["p"]).largest == {"exact": 2}


# -- the runner ------------------------------------------------------------------------------


def _config(tmp_path, name="out", **kwargs):
    base = {
        "problems": ["toy"],
        "families": ("shipped-small", "generated"),
        "seeds": 2,
        "jobs": 1,
        "out": tmp_path / name,
        "time_limit": 30.0,
    }
    return bench.BenchConfig(**{**base, **kwargs})


def test_local_run_covers_every_task_and_checks_every_solution(toys, tmp_path):
    progress = Counting()
    done = bench.run_bench(_config(tmp_path), progress=progress)
    # 2 small files x 2 seeds + 2 sizes x 2 seeds = 8 cases, 4 methods each
    assert done.ran == progress.total == len(done.rows) == 8 * 4
    assert len(set(progress.keys)) == len(progress.keys)
    rows = done.rows
    assert {r["verdict"] for r in rows} == {"ok"}
    for row in rows:
        assert row["git_revision"] and row["highs_version"] and row["solver"]["version"]
        assert row["kind"] == ("heuristic" if row["method"] in TOY.heuristics else "exact")
    by_case: dict = {}
    for row in rows:
        by_case.setdefault((row["instance"], row["seed"]), {})[row["method"]] = row
    for (instance, seed), methods in by_case.items():
        if instance.startswith("generated:size="):
            items = knapsack.generate(seed, int(instance.removeprefix("generated:size=")))
        else:  # file:0-seed<N>.toml holds knapsack.generate(N, 1)
            items = knapsack.generate(int(instance.removeprefix("file:0-seed")[0]), 1)
        truth = brute_force(items)
        assert methods["exact"]["objective"] == pytest.approx(truth)
        assert methods["milp"]["objective"] == pytest.approx(truth)
        trace = methods["milp"]["trace"]  # HiGHS' incumbent history, ending on the answer
        assert trace and trace[-1][1] == methods["milp"]["objective"]
        assert methods["milp"]["model_size"]["columns"] == len(items.values)
        assert all(methods[m]["trace"] is None for m in ("exact", *TOY.heuristics))
        for h in TOY.heuristics:
            assert methods[h]["objective"] <= truth + 1e-9
    lines = (tmp_path / "out" / bench.RESULTS).read_text().splitlines()
    assert len(lines) == len(rows)

    analysis = write_report(rows, tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "All 32 solutions passed" in report and "CHECK FAILED" not in report
    assert (tmp_path / "out" / "profiles-toy.png").stat().st_size > 1000
    assert (tmp_path / "out" / "scaling-toy.png").stat().st_size > 1000
    assert analysis.problems["toy"].summaries["exact"].optimal == 8


def test_process_pool_and_dask_give_the_local_objectives(toys, tmp_path, monkeypatch):
    from dask.distributed import Client, LocalCluster

    monkeypatch.setattr(bench, "DASK_CHUNK", 3)  # 16 tasks: the chunked submission is exercised

    local = bench.run_bench(_config(tmp_path, "local", seeds=1))
    pool = bench.run_bench(_config(tmp_path, "pool", seeds=1, jobs=2))
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        distributed = bench.run_bench(_config(tmp_path, "dask", seeds=1), client=client)
        cli_out = tmp_path / "dask-cli"
        args = [
            "bench",
            "toy",
            "--seeds",
            "1",
            "--scheduler",
            cluster.scheduler_address,
            "--out",
            str(cli_out),
        ]
        assert cli.main(args) == 0
    assert objectives(local.rows) == objectives(pool.rows) == objectives(distributed.rows)
    assert objectives(bench.read_results(cli_out / bench.RESULTS)) == objectives(local.rows)
    assert {r["verdict"] for r in distributed.rows} == {"ok"}


def test_rerun_after_partial_results_runs_only_the_missing_tasks(toys, tmp_path):
    config = _config(tmp_path)
    first = bench.run_bench(config)
    results = tmp_path / "out" / bench.RESULTS
    lines = results.read_text().splitlines(keepends=True)
    kept = lines[:11]
    results.write_text("".join(kept) + lines[11][:25])  # as if killed while writing line 12
    progress = Counting()
    again = bench.run_bench(config, progress=progress)
    assert again.skipped == 11 and again.ran == len(lines) - 11
    assert set(progress.keys) == {json.loads(line)["key"] for line in lines[11:]}
    after = results.read_text().splitlines(keepends=True)
    assert after[:11] == kept and len(after) == len(lines)
    assert objectives(again.rows) == objectives(first.rows)
    assert bench.run_bench(config).ran == 0


def test_killed_run_resumes_with_only_the_missing_tasks(tmp_path, monkeypatch):
    """A real kill: a child process runs the slow toy; it is killed once some rows are written."""
    out = tmp_path / "killed"
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import test_bench\n"
        "from coopt import registry\n"
        "registry._all = lambda: {'slow': test_bench.SLOW}\n"
        "from coopt.bench import runner as bench\n"
        "bench.run_bench(bench.BenchConfig(problems=['slow'], families=('generated',), sizes=(1, 2, 3), seeds=4,"
        f" jobs=1, out=__import__('pathlib').Path({str(out)!r})))\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    results = out / bench.RESULTS
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if results.exists() and len(results.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    before = bench.read_results(results)
    total = 3 * 4 * len(SLOW.methods)
    assert 4 <= len(before) < total
    monkeypatch.setattr(registry, "_all", lambda: {"slow": SLOW})
    progress = Counting()
    again = bench.run_bench(
        bench.BenchConfig(
            problems=["slow"], families=("generated",), sizes=(1, 2, 3), seeds=4, jobs=1, out=out
        ),
        progress=progress,
    )
    assert again.ran == total - len(before) == len(progress.keys)
    assert not {r["key"] for r in before} & set(progress.keys)
    assert len(bench.read_results(results)) == total


def test_failed_check_is_loud(toys, tmp_path, capsys):
    status = cli.main(
        [
            "bench",
            "cheat",
            "--family",
            "generated",
            "--sizes",
            "1",
            "--jobs",
            "1",
            "--out",
            str(tmp_path / "cheat"),
        ]
    )
    assert status == 1
    assert "CHECK FAILED" in capsys.readouterr().err
    report = (tmp_path / "cheat" / "report.md").read_text()
    assert "CHECK FAILED: 1 task(s)" in report and "cheat|generated:size=1|take_all|seed=0" in report


def test_watchdog_stops_a_heuristic_past_the_time_limit(toys, tmp_path):
    config = _config(
        tmp_path, problems=["sleepy"], families=("generated",), sizes=(1,), seeds=1, time_limit=0.5
    )
    started = time.perf_counter()
    rows = {r["method"]: r for r in bench.run_bench(config).rows}
    assert time.perf_counter() - started < 20
    assert rows["sleepy"]["status"] == "time_limit" and rows["sleepy"]["verdict"] == "none"
    assert "watchdog" in rows["sleepy"]["check"]["violations"][0]
    assert rows["exact"]["verdict"] == "ok"


def test_scaling_climbs_until_the_exact_route_fails_then_runs_heuristics_at_ten_times(toys, tmp_path):
    done = bench.run_bench(_config(tmp_path, problems=["climb"], families=("scaling",), seeds=1))
    sizes = sorted({(r["method"], r["size"]) for r in done.rows})
    # sizes 1, 2 (the problem's own), then doubling: exact proves 1 and 2 (<= 8 items) and fails at 4;
    # the heuristic also runs at 10 x 2 = 20
    assert [s for m, s in sizes if m == "exact"] == [1, 2, 4]
    assert [s for m, s in sizes if m == "greedy"] == [1, 2, 4, 20]
    result = reach(analyse(done.rows).problems["climb"])
    assert result.largest == {"exact": 2}
    assert result.heuristic_size == 20 and list(result.heuristics) == ["greedy"]
    assert result.heuristics["greedy"].outcome == "solved"
    write_report(done.rows, tmp_path / "out")
    assert "exact: 2" in (tmp_path / "out" / "report.md").read_text()


def test_the_ten_times_round_stays_within_the_generator_s_limit(toys, tmp_path, monkeypatch):
    capped = replace(CLIMB, max_size=12)
    toys["climb"] = capped
    done = bench.run_bench(_config(tmp_path, problems=["climb"], families=("scaling",), seeds=1))
    assert sorted({r["size"] for r in done.rows if r["method"] == "greedy"}) == [1, 2, 4, 12]
    # past 12 the generator would refuse: no row errs (the exact DP declines size 4, verdict none)
    assert {r["verdict"] for r in done.rows} <= {"ok", "none"}, [r["check"] for r in done.rows]


def test_the_climb_itself_stops_at_the_generator_s_limit(toys, tmp_path):
    toys["climb"] = replace(CLIMB, max_size=3)
    done = bench.run_bench(_config(tmp_path, problems=["climb"], families=("scaling",), seeds=1))
    # sizes 1 and 2 are proved, 4 is past the limit: the last round runs at 3, not 20
    assert sorted({r["size"] for r in done.rows if r["method"] == "greedy"}) == [1, 2, 3]
    assert sorted({r["size"] for r in done.rows if r["method"] == "exact"}) == [1, 2]


def test_every_generator_refuses_past_its_declared_max_size():
    for name in registry.names():
        problem = registry.get(name)
        if problem.max_size is not None:
            with pytest.raises(UsageError):
                problem.generate(0, problem.max_size + 1)


def test_cli_writes_report_and_updates_the_readme(toys, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n{README_BEGIN}\nold table\n{README_END}\nafter\n")
    out = tmp_path / "cli"
    args = [
        "bench",
        "toy",
        "--family",
        "shipped",
        "--jobs",
        "1",
        "--out",
        str(out),
        "--update-readme",
        str(readme),
    ]
    assert cli.main(args) == 0
    text = readme.read_text()
    assert text.startswith("# title\n\nbefore\n") and text.endswith(f"{README_END}\nafter\n")
    assert "old table" not in text and "| toy | greedy | heuristic |" in text
    rows = bench.read_results(out / bench.RESULTS)
    assert {r["instance"] for r in rows} == {"file:0-seed1.toml", "file:0-seed2.toml", "file:1-larger.toml"}
    assert cli.main(["bench", "--report-only", "--out", str(out)]) == 0
    unmarked = tmp_path / "UNMARKED.md"
    unmarked.write_text("# no markers\n")
    with pytest.raises(ValueError, match="bench:begin"):
        update_readme(unmarked, analyse(rows))
    assert unmarked.read_text() == "# no markers\n"


def test_progress_lines_off_a_terminal_carry_counts_and_eta(capsys):
    from coopt.bench.progress import LineProgress


    row = {"key": "k", "verdict": "ok"}
    with LineProgress(period=0.0) as progress:
        progress.add(4)
        progress.advance(row)
        progress.advance(row)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("bench: 1/4 tasks") and lines[1].startswith("bench: 2/4 tasks")
    assert all("ETA" in line for line in lines) and lines[-1].startswith("bench: 2/4 tasks")


def test_cli_rejects_bad_arguments(toys, tmp_path, capsys, monkeypatch):
    assert cli.main(["bench", "nosuch", "--out", str(tmp_path)]) == 2
    assert "unknown problem 'nosuch'" in capsys.readouterr().err
    assert cli.main(["bench", "toy", "--seeds", "0", "--out", str(tmp_path)]) == 2
    with pytest.raises(SystemExit):
        cli.main(["bench", "--family", "nosuch"])
    unmarked = tmp_path / "README.md"
    unmarked.write_text("# no markers\n")
    assert cli.main(["bench", "toy", "--out", str(tmp_path / "o"), "--update-readme", str(unmarked)]) == 2
    assert (
        "bench:begin" in capsys.readouterr().err and not (tmp_path / "o").exists()
    )  # refused before running
    monkeypatch.setattr(bench, "DASK_CONNECT_TIMEOUT", 1.0)
    assert cli.main(["bench", "toy", "--out", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err


# -- whatever real problems are registered ---------------------------------------------------


@pytest.mark.parametrize("name", registry.names())
def test_real_problem_heuristics_pass_through_the_bench(name, tmp_path):
    """Every registered problem plans tasks for every method (its dual bound included); its
    heuristics on the small shipped instances come back as checked rows."""
    problem = registry.get(name)
    tasks = bench.plan([problem], ["shipped-small"], seeds=1, time_limit=30.0)
    files = coopt.shipped.small_shipped(name)
    assert len(tasks) == len(files) * len(problem.all_methods)
    for task in tasks:
        if task.method in problem.heuristics:
            row = bench.run_task(task)
            assert row["verdict"] in ("ok", "none"), row["check"]


def test_every_method_of_a_plot_has_its_own_style():
    from coopt.bench.report import method_styles

    methods = [f"m{i}" for i in range(14)]
    styles = method_styles(methods)
    looks = {(s["color"], s["marker"], s["linestyle"]) for s in styles.values()}
    assert len(looks) == len(methods)
    assert len({s["color"] for s in styles.values()}) == 14  # more than matplotlib's 10 default colours


def test_report_only_on_an_empty_folder_and_another_time_limit_are_refused(toys, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["bench", "--report-only", "--out", str(empty)]) == 2
    assert "holds no results" in capsys.readouterr().err
    out = tmp_path / "o"
    assert cli.main(["bench", "toy", "--family", "shipped-small", "--jobs", "1", "--time-limit", "30",
                     "--out", str(out)]) == 0
    rows = (out / "results.jsonl").read_text()
    assert cli.main(["bench", "toy", "--family", "shipped-small", "--jobs", "1", "--time-limit", "5",
                     "--out", str(out)]) == 2
    assert "--time-limit 30" in capsys.readouterr().err
    assert (out / "results.jsonl").read_text() == rows


def test_resuming_results_of_another_revision_is_refused(toys, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["bench", "toy", "--family", "shipped-small", "--jobs", "1", "--out", str(out)]) == 0
    results = out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    for row in rows:
        row["git_revision"] = "0123456789abcdef0123456789abcdef01234567"
    stale = "".join(json.dumps(row) + "\n" for row in rows)
    results.write_text(stale)
    code = cli.main(["bench", "toy", "--family", "shipped-small", "--jobs", "1", "--out", str(out)])
    if bench.git_revision() == "unknown":  # no git checkout: nothing to compare against
        assert code == 0
        return
    assert code == 2
    assert "revision 0123456789ab" in capsys.readouterr().err
    assert results.read_text() == stale


# -- readable numbers: what the report's figures and tables show -----------------------------


def synthetic(problem: str, instance: str, method: str, kind: str, objective: float | None, *,
              bound: float | None = None, status: str = "optimal", total: float = 0.1, family: str = "shipped",
              size: int | None = None, numbers: int | None = None, seed: int = 0, sense: str = "min") -> dict:
    """One results.jsonl row as the runner writes it, with only what the report reads."""
    return {"key": f"{problem}|{instance}|{method}|seed={seed}", "problem": problem, "instance": instance,
            "method": method, "kind": kind, "sense": sense, "seed": seed, "status": status,
            "objective": objective, "bound": bound, "verdict": "ok" if objective is not None else "none",
            "family": family, "size": size, "instance_numbers": numbers, "time_limit": 60.0,
            "git_revision": "abc", "times": {"total": total, "build": 0.0, "handoff": 0.0, "solve": total},
            "check": {"feasible": objective is not None, "violations": []}}


def small_case_rows(problem: str, methods: tuple[str, ...], instance: str = "file:0-a.toml") -> list[dict]:
    rows = [synthetic(problem, instance, "exact", "exact", 10.0, bound=10.0),
            synthetic(problem, instance, "bound", "bound", None, bound=9.0, status="optimal")]
    rows += [synthetic(problem, instance, m, "heuristic", 11.0 + i, total=0.01) for i, m in enumerate(methods)]
    return rows


def line_labels(fig) -> set[str]:
    return {line.get_label() for ax in fig.axes for line in ax.get_lines()
            if not line.get_label().startswith("_")}


def test_performance_profiles_do_not_draw_the_bound():
    """The old profiles compared every method, the dual bound too: a flat line at 0 (no solution)."""
    from coopt.bench.report import profiles_figure

    analysis = analyse(small_case_rows("p", ("greedy",)) + small_case_rows("p", ("greedy",), "file:0-b.toml"))
    fig = profiles_figure(analysis.problems["p"])
    assert line_labels(fig) == {"exact", "greedy"}
    cases, costs = profile_costs(analysis.problems["p"], "quality")
    assert len(cases) == 2 and set(costs) == {"exact", "greedy"}


def test_a_method_has_one_look_in_every_problem_and_every_plot():
    """``local_search`` is the 3rd method of one problem and the 2nd of the other; the old styles
    were numbered by place in each problem's sorted list, so its colour changed between them."""
    from coopt.bench.report import method_styles, profiles_figure

    analysis = analyse(small_case_rows("one", ("greedy", "local_search")) + small_case_rows("two", ("local_search",)))
    colours = []
    for name in ("one", "two"):
        fig = profiles_figure(analysis.problems[name])
        colours.append({tuple(line.get_color()) for ax in fig.axes for line in ax.get_lines()
                        if line.get_label() == "local_search"})
    assert len(colours[0]) == 1 and colours[0] == colours[1]
    chase, pipeline = (registry.get(n).all_methods for n in ("chase", "pipeline"))
    assert method_styles(chase)["local_search"] == method_styles(pipeline)["local_search"]
    for name in registry.names():  # within one problem: different looks, different colours where 20 suffice
        methods = registry.get(name).all_methods
        looks = [tuple(map(str, s.values())) for s in method_styles(methods).values()]
        assert len(set(looks)) == len(methods), name
        if len(methods) <= 20:
            assert len({str(s["color"]) for s in method_styles(methods).values()}) == len(methods), name


def legends_clear_of_axes(fig) -> bool:
    fig.draw_without_rendering()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]
    boxes = [ax.get_window_extent() for ax in fig.axes if ax.axison]
    assert legends and boxes
    return not any(legend.get_window_extent().overlaps(box) for legend in legends for box in boxes)


def scaling_rows(times: dict[str, list[float]], sizes=(4, 8, 16, 32)) -> list[dict]:
    return [synthetic("s", f"generated:size={n}", m, "exact" if m == "exact" else "heuristic", 10.0,
                      bound=10.0, total=t, family="scaling", size=n)
            for m, ts in times.items() for n, t in zip(sizes, ts, strict=True)]


def test_legends_sit_off_the_data():
    """The old profiles put their legend at "lower right" inside each panel, the scaling plot at
    "best" inside the axes: over the curves."""
    from coopt.bench.report import profiles_figure, scaling_figure

    analysis = analyse(small_case_rows("p", ("greedy", "local_search")))
    assert legends_clear_of_axes(profiles_figure(analysis.problems["p"]))
    problem = analyse(scaling_rows({"exact": [0.01, 0.1, 1.0, 10.0], "greedy": [0.002, 0.004, 0.008, 0.016]}))
    figure = scaling_figure(problem.problems["s"], scaling_curves(problem.problems["s"]), 60.0)
    assert legends_clear_of_axes(figure)


def test_time_exponents_only_above_timer_resolution_and_over_a_decade():
    """The old fit took any times: sub-millisecond noise gave exponents such as -0.41."""
    from coopt.bench.report import EXPONENT_NOTE, resolved_fit, summary_table

    assert resolved_fit([4, 8, 16, 32], [2e-4, 1e-4, 9e-5, 8e-5]) is None  # below 1 ms
    assert resolved_fit([4, 8, 16, 32], [0.5, 0.6, 0.7, 0.8]) is None  # less than a decade
    assert resolved_fit([4, 8, 16, 32], [5e-4, 0.002, 0.004, 0.0095]) is None  # 4.75x over the kept three
    k, _ = resolved_fit([4, 8, 16, 32], [1e-4, 0.01, 0.04, 0.16])  # the sub-ms point is left out
    assert k == pytest.approx(2.0)
    analysis = analyse(scaling_rows({"exact": [0.01, 0.1, 1.0, 10.0], "noise": [3e-4, 1e-4, 2e-4, 1e-4]}))
    cells = {line.split("|")[2].strip(): line.split("|")[9].strip()
             for line in summary_table(analysis).splitlines()[2:]}
    assert cells["noise"] == "-" and cells["exact"] == f"{math.log2(10):.2f}"  # ten times per doubling
    assert "1 ms" in EXPONENT_NOTE and "10x" in EXPONENT_NOTE


def test_certified_gaps_of_the_large_tier_from_a_results_file(tmp_path):
    """A results file with two problems' large tiers: per case the best checked heuristic against
    the best dual bound; per problem the worst (and its case) and the median, and how many cases'
    bound is the optimum (a bound row whose ``solver.bound`` says so); the figure's points are
    (instance size, gap in percent); the README's gap table gets the rows."""
    from coopt.bench.report import GAPS_BEGIN, GAPS_END, certified_figure, certified_gaps

    rows = []
    for name, (numbers, bound, heuristics) in {
        "2-a.toml": (300, 100.0, {"greedy": 104.0, "search": 101.0}),  # 1 %
        "2-b.toml": (100, 50.0, {"greedy": 55.0, "search": 56.0}),  # 10 %, greedy the better
        "2-c.toml": (200, 80.0, {"greedy": 82.0}),  # 2.5 %
    }.items():
        rows.append(synthetic("mini", f"file:{name}", "bound", "bound", None, bound=bound, family="large",
                              numbers=numbers))
        rows += [synthetic("mini", f"file:{name}", m, "heuristic", v, family="large", numbers=numbers)
                 for m, v in heuristics.items()]
    proved = synthetic("maxi", "generated:size=64", "bound", "bound", None, bound=200.0, family="large",
                       size=64, numbers=900, sense="max")
    proved["solver"] = {"name": "coopt.maxi.bound", "version": "0", "bound": "the optimum (DP): an exact method finished"}
    rows.append(proved)
    rows.append(synthetic("maxi", "generated:size=64", "greedy", "heuristic", 190.0, family="large",
                          size=64, numbers=900, sense="max"))
    rows += small_case_rows("maxi", ("greedy",))  # not in the tier: no gap
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    analysis = write_report(bench.read_results(results), tmp_path / "out")
    gaps = certified_gaps(analysis.problems["mini"])
    assert [(c.size, c.heuristic, round(c.gap, 9), c.against_optimum) for c in gaps] == [
        (100, "greedy", 0.1, False), (200, "greedy", 0.025, False), (300, "search", 0.01, False)]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| mini | 10.00 % | 2-b.toml seed 0 (greedy) | 2.50 % (n=3) | 0/3 |" in report
    assert "| maxi | 5.00 % (to the optimum) | generated:size=64 seed 0 (greedy) | 5.00 % (n=1) | 1/1 |" in report
    assert (tmp_path / "out" / "certified-gaps.png").stat().st_size > 1000
    fig = certified_figure(analysis)
    points = {ax.get_title().split()[0]: [tuple(xy) for line in ax.get_lines() if line.get_gid() == "certified-gap"
                                          for xy in line.get_xydata()] for ax in fig.axes if ax.axison}
    assert points == {"maxi": [(900.0, pytest.approx(5.0))],
                      "mini": [(100.0, pytest.approx(10.0)), (200.0, pytest.approx(2.5)), (300.0, pytest.approx(1.0))]}
    squared = {ax.get_title().split()[0] for ax in fig.axes for line in ax.get_lines()
               if line.get_gid() == "against-optimum"}
    assert squared == {"maxi"}
    readme = tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\n{README_END}\n\n{GAPS_BEGIN}\n| problem | old |\n|---|---|\n"
                      f"| mini | 1 |\n{GAPS_END}\nend\n")
    with pytest.raises(ValueError, match="other columns"):  # an old gap table with other columns is kept
        update_readme(readme, analyse([r for r in rows if r["problem"] == "maxi"]))
    readme.write_text(f"{README_BEGIN}\n{README_END}\n\n{GAPS_BEGIN}\n{GAPS_END}\nend\n")
    update_readme(readme, analysis)
    text = readme.read_text()
    assert "| mini | 10.00 % | 2-b.toml seed 0 (greedy) | 2.50 % (n=3) | 0/3 |" in text.split(GAPS_BEGIN)[1]
    assert text.endswith(f"{GAPS_END}\nend\n")
    gaps = text.split(GAPS_BEGIN)[1]
    update_readme(readme, analyse(small_case_rows("mini", ("greedy",))))  # no large tier: the gaps stay
    assert readme.read_text().split(GAPS_BEGIN)[1] == gaps


def test_a_large_tier_run_leaves_the_readme_summary_alone(tmp_path):
    """``coopt bench --family large --update-readme`` fills the certified-gap block only: the
    summary table (the small families' exact optima, gaps and speed-ups) keeps its rows, where it
    used to take the large tier's rows, which have no optimum to measure against."""
    from coopt.bench.report import GAPS_BEGIN, GAPS_END

    readme = tmp_path / "README.md"
    readme.write_text(f"{README_BEGIN}\n{README_END}\n\n{GAPS_BEGIN}\n{GAPS_END}\nend\n")
    update_readme(readme, analyse(small_case_rows("mini", ("greedy",))))
    summary = readme.read_text().split(GAPS_BEGIN)[0]
    assert "| mini | greedy |" in summary
    large = [synthetic("mini", "file:2-a.toml", "bound", "bound", None, bound=100.0, family="large"),
             synthetic("mini", "file:2-a.toml", "greedy", "heuristic", 104.0, family="large")]
    update_readme(readme, analyse(large))
    text = readme.read_text()
    assert text.split(GAPS_BEGIN)[0] == summary
    assert "| mini | 4.00 % | 2-a.toml seed 0 (greedy) |" in text.split(GAPS_BEGIN)[1]


def test_bench_solver_runs_the_milp_on_that_solver_and_never_mixes_solvers(toys, tmp_path, capsys):
    """``--solver scip``: the MILP rows say scip (the report header too) with the optimum HiGHS finds;
    the keys name the solver, so a folder of HiGHS rows is not taken for scip's (the rerun is refused
    and the file is left as it was); an unknown solver is one line before any work."""
    pytest.importorskip("pyscipopt")
    runs = {}
    for solver in ("highs", "scip"):
        out = tmp_path / solver
        assert cli.main(["bench", "toy", "--family", "shipped-small", "--jobs", "1", "--solver", solver,
                         "--out", str(out)]) == 0
        runs[solver] = {r["key"]: r for r in bench.read_results(out / bench.RESULTS)}
        assert {r["milp_solver"] for r in runs[solver].values()} == {solver}
        milp = [r for r in runs[solver].values() if r["method"] == "milp"]
        assert len(milp) == 2 and all(r["solver"]["name"] == solver and r["status"] == "optimal" for r in milp)
        assert f"MILP solver of the exact routes: {solver} " in (out / "report.md").read_text()
    assert all(key.endswith("|solver=scip") for key in runs["scip"])
    assert not set(runs["scip"]) & set(runs["highs"])
    optimum = {(r["instance"], r["method"]): r["objective"] for r in runs["highs"].values()}
    assert all(r["objective"] == pytest.approx(optimum[r["instance"], r["method"]], rel=1e-9)
               for r in runs["scip"].values())
    capsys.readouterr()
    before = (tmp_path / "highs" / bench.RESULTS).read_text()
    assert cli.main(["bench", "toy", "--family", "shipped-small", "--jobs", "1", "--solver", "scip",
                     "--out", str(tmp_path / "highs")]) == 2
    assert "--solver highs" in capsys.readouterr().err
    assert (tmp_path / "highs" / bench.RESULTS).read_text() == before
    assert cli.main(["bench", "toy", "--solver", "nosuch", "--out", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "unknown solver 'nosuch'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "none").exists()


def test_the_readme_note_keeps_each_problems_revision_over_several_partial_runs(tmp_path):
    """Three runs, each of some problems: the note names every problem's own revision, read back
    from the note the run before wrote (the older single-revision form too)."""
    from coopt.bench.report import README_BEGIN, README_END, analyse, summary_table, update_readme

    def rows(problem: str, revision: str) -> list[dict]:
        return [{"key": f"{problem}{i}", "problem": problem, "method": m, "kind": k, "instance": "file:a.toml",
                 "family": "shipped", "seed": 0, "status": "optimal", "objective": 10.0 + i, "bound": 10.0,
                 "verdict": "ok", "time_limit": 60.0,
                 "times": {"total": 0.1, "build": 0.0, "handoff": 0.0, "solve": 0.1},
                 "check": {"feasible": True, "violations": []}, "git_revision": revision}
                for i, (m, k) in enumerate((("exact", "exact"), ("greedy", "heuristic")))]

    first = analyse(rows("aaa", "r0") + rows("m_mm", "r0") + rows("zzz", "r0"))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_BEGIN}\n{README_END}\nend\n")
    update_readme(readme, first)
    assert "at revision r0._" in readme.read_text()
    update_readme(readme, analyse(rows("m_mm", "r1")))
    update_readme(readme, analyse(rows("zzz", "r2")))
    text = readme.read_text()
    assert "_Generated by `coopt bench`: aaa at revision r0; m_mm at revision r1; zzz at revision r2._" in text
    assert len([line for line in text.splitlines() if line.startswith("| ")]) == 1 + 3 * 2
    # the note of earlier versions: one revision for the named problems, one for the rest
    old = text.replace("_Generated by `coopt bench`: aaa at revision r0; m_mm at revision r1; zzz at revision r2._",
                       "_Generated by `coopt bench` at revision r1 (m_mm; the other rows at revision r0)._")
    readme.write_text(old)
    update_readme(readme, analyse(rows("aaa", "r3")))
    assert "_Generated by `coopt bench`: aaa at revision r3; m_mm at revision r1; zzz at revision r0._" in readme.read_text()
    assert summary_table(first)  # the table the rows come from
