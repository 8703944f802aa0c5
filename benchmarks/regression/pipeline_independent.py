"""Instance I1 (p = 4, m = 8, keep or recompute) at caps 4 / 5 / 6 GB re-proven by Model O, the
order-encoded time-indexed oracle that shares no constraint with the exact routes: for each cap,
"is there a schedule of makespan value - 1?" must be no and "of makespan value?" yes (the schedule
judged by the checker), where value is the optimum ``exact`` (Model M) proves.

    python benchmarks/regression/pipeline_independent.py
    python benchmarks/regression/pipeline_independent.py --caps 6 --no-symmetry --time-limit 1200

Prints one row per question (answer, CP-SAT branches, seconds, one worker); exit status 1 when an
answer disagrees with the recorded value, or a time limit leaves it open.
"""

from __future__ import annotations

import argparse

from coopt.instance import load
from coopt.problems.pipeline import model as pm
from coopt.problems.pipeline import oracle_ti
from coopt.shipped import instances_dir

#: The optima ``coopt solve instances/pipeline/1-i1-p4m8-capN.toml --method exact`` proves.
PROVEN = {4: 33.0, 5: 30.0, 6: 29.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", type=int, nargs="*", default=sorted(PROVEN), choices=sorted(PROVEN))
    parser.add_argument("--time-limit", type=float, default=1200.0, help="seconds per question")
    parser.add_argument("--no-symmetry", action="store_true",
                        help="without the row that orders the last stage's backward passes")
    args = parser.parse_args(argv)
    bad = 0
    print("| cap (GB) | makespan <= | answer | branches | seconds | checker |")
    print("|---|---|---|---|---|---|")
    for cap in args.caps:
        instance = load(instances_dir() / "pipeline" / f"1-i1-p4m8-cap{cap}.toml").instance
        for horizon, expected in ((PROVEN[cap] - 1, "infeasible"), (PROVEN[cap], "feasible")):
            answer = oracle_ti.feasible(instance, horizon, time_limit=args.time_limit,
                                        symmetry=not args.no_symmetry)
            violations = pm.check(instance, answer.solution) if answer.solution is not None else []
            verdict = "-" if answer.solution is None else ("accepted" if not violations else violations[0])
            bad += answer.status != expected or bool(violations)
            print(f"| {cap} | {horizon:g} | {answer.status} | {answer.branches} | {answer.seconds:.1f} | "
                  f"{verdict} |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
