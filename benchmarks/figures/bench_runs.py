"""The bench's own figures (docs/notes/bench.md), measured in one go over every registered problem.

1. ``coopt bench`` with the default families (shipped-small, generated) on a local process pool:
   wall time (the target is under 10 minutes on 2 cores), tasks, failed checks.
2. The same tasks on a two-worker Dask ``LocalCluster``: wall time and whether every objective is
   identical to the local run's.
3. Kill and resume: a ``coopt bench`` child process is killed once a third of its rows are written;
   the rerun must run exactly the missing tasks.
4. The ``scaling`` family with a 60 s limit: per problem the largest size the exact route proves
   optimal and the heuristics' time at 10x that size.

Usage: ``python benchmarks/figures/bench_runs.py [--out DIR] [--jobs N] [--skip-scaling] [--resume-scaling]``.
Reports and raw JSONL land in ``DIR/default``, ``DIR/dask``, ``DIR/killed`` and ``DIR/scaling``;
every run starts afresh except ``DIR/scaling`` with ``--resume-scaling``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from coopt.bench import runner as bench
from coopt.bench.report import analyse, reach, write_report


def timed_run(config: bench.BenchConfig, client=None) -> tuple[bench.BenchRun, float]:
    started = time.perf_counter()
    done = bench.run_bench(config, client=client)
    return done, time.perf_counter() - started


def describe(label: str, done: bench.BenchRun, seconds: float, out: Path) -> None:
    analysis = write_report(done.rows, out)
    split = {k: sum(r["times"][k] for r in done.rows) for k in ("build", "handoff", "solve", "total")}
    print(
        f"{label}: {done.ran} tasks run ({done.skipped} already done) in {seconds:.1f} s wall; "
        f"{len(analysis.failures)} failed checks/errors; {len(analysis.conflicts)} conflicts"
    )
    print("  summed task seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in split.items()))
    milp = [r for r in done.rows if r["times"]["handoff"] > 0]
    for problem in sorted({r["problem"] for r in milp}):
        mine = [r for r in milp if r["problem"] == problem]
        overhead = sum(r["times"]["build"] + r["times"]["handoff"] for r in mine)
        total = sum(r["times"]["total"] for r in mine)
        share = 100 * overhead / total
        print(f"  {problem}: MILP build + hand-off = {share:.0f} % of {total:.1f} s over {len(mine)} solves")
    for row in analysis.failures:
        print(f"  CHECK FAILED {row['key']}: {'; '.join(row['check']['violations'][:2])[:200]}")
    for conflict in analysis.conflicts:
        print(f"  CONFLICT {conflict}")


def objectives(rows: list[dict]) -> dict[str, float | None]:
    return {r["key"]: r["objective"] for r in rows}


def kill_and_resume(out: Path, jobs: int) -> None:
    """Kill a real ``coopt bench`` half-way, then rerun it."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "coopt", "bench", "--jobs", str(jobs), "--out", str(out)]
    total = len(
        bench.plan(
            bench.selected_problems(bench.BenchConfig()), bench.DEFAULT_FAMILIES, seeds=1, time_limit=60.0
        )
    )
    child = subprocess.Popen(command, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / bench.RESULTS
    while child.poll() is None:
        if results.exists() and len(results.read_bytes().splitlines()) >= total // 3:
            os.killpg(child.pid, signal.SIGKILL)
            break
        time.sleep(0.05)
    child.wait()
    before = len(bench.read_results(results))
    done, seconds = timed_run(bench.BenchConfig(jobs=jobs, out=out))
    print(
        f"kill and resume: killed with {before}/{total} rows written; the rerun ran {done.ran} tasks "
        f"(missing: {total - before}), skipped {done.skipped}, in {seconds:.1f} s; "
        f"rows now {len(bench.read_results(results))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--resume-scaling", action="store_true", help="keep DIR/scaling and resume it")
    args = parser.parse_args()

    for sub in ("default", "dask") if args.resume_scaling else ("default", "dask", "scaling"):
        shutil.rmtree(args.out / sub, ignore_errors=True)

    local, seconds = timed_run(bench.BenchConfig(jobs=args.jobs, out=args.out / "default"))
    describe("default families, local pool", local, seconds, args.out / "default")

    from dask.distributed import Client, LocalCluster

    started = time.perf_counter()
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        distributed, seconds = timed_run(bench.BenchConfig(out=args.out / "dask"), client=client)
    describe("default families, Dask LocalCluster (2 workers)", distributed, seconds, args.out / "dask")
    print(f"  cluster start-up and shut-down included: {time.perf_counter() - started:.1f} s")
    a, b = objectives(local.rows), objectives(distributed.rows)
    same = sum(1 for k in a if k in b and a[k] == b[k])
    print(f"  identical objectives local vs Dask: {same}/{len(a)}")
    status = {r["key"]: r["status"] for r in distributed.rows}
    for row in local.rows:
        if a[row["key"]] != b.get(row["key"]):
            print(
                f"    differs: {row['key']}: local {row['status']} {a[row['key']]}, "
                f"Dask {status.get(row['key'])} {b.get(row['key'])}"
            )

    kill_and_resume(args.out / "killed", args.jobs)

    if args.skip_scaling:
        return
    scaling, seconds = timed_run(
        bench.BenchConfig(families=("scaling",), jobs=args.jobs, time_limit=60.0, out=args.out / "scaling")
    )
    describe("scaling family (60 s limit)", scaling, seconds, args.out / "scaling")
    for name, problem in analyse(scaling.rows).problems.items():
        r = reach(problem)
        proved = ", ".join(f"{m} {s} ({r.time_at_largest[m]:.3g} s)" for m, s in sorted(r.largest.items()))
        heuristics = ", ".join(f"{m} {h.time:.3g} s ({h.outcome})" for m, h in r.heuristics.items())
        print(
            f"  {name}: largest size proved optimal: {proved or '-'}; "
            f"heuristics at size {r.heuristic_size}: {heuristics or '-'}"
        )


if __name__ == "__main__":
    main()
