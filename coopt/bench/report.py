"""From result rows to the benchmark report: per-problem tables, performance profiles, scaling
curves, the loud list of failed checks, and the README summary.

Everything here reads only the rows of ``results.jsonl`` (see :mod:`coopt.bench.runner`), so a
report can be rebuilt from a results file at any time.

Cases and references
    A *case* is one (problem, instance, seed). Its *optimum* is the objective of an exact method
    that proved optimality with a checked solution; its *best bound* is the tightest dual bound of
    the exact methods (max for a minimisation, min for a maximisation). A heuristic's gap is
    measured against the optimum when there is one, else against the best bound, and the two are
    reported in separate columns (a gap to a bound is an upper estimate of the true gap).

Primal and primal-dual integrals
    Both run over a common horizon per case (the longest run on that case, total time). MILP rows
    carry HiGHS' incumbent history (``trace``: [t, primal, dual] points, t on HiGHS' clock, which
    starts after build and hand-off, so each t is shifted by the row's build + hand-off time); for
    them the primal integral is Berthold's over the real incumbents, and the primal-dual integral
    is reported too (it needs no optimum). Rows without a trace (heuristics, DP exact methods,
    MILP rows written before traces existed) keep one incumbent per run: gap 1 until the method
    returns, its final primal gap afterwards. Each method's table row says which kind it used
    (``trace``, ``final``, or both). The primal integral is reported only where the optimum is
    known.
"""

from __future__ import annotations

import math
import re
import statistics
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopt.bench.metrics import (
    SGM_SHIFT,
    TIME_FLOOR,
    TIMER_RESOLUTION,
    fit_power_law,
    geomean_gap,
    performance_ratios,
    primal_dual_integral,
    primal_integral,
    profile,
    shifted_geometric_mean,
    trace_incumbents,
)
from coopt.bench.runner import SCALE_UP, proved_within_limit
from coopt.output import write_atomic
from coopt.problem import TOL, close, relative_gap

#: Unproved exact runs count at this multiple of their time limit in the penalised SGM.
PENALTY = 2.0
#: A heuristic's speed-up over the exact route is taken on the cases where the exact route took
#: at least this long (faster exact runs are their own fast method).
SPEEDUP_FLOOR = 0.5

README_BEGIN = "<!-- bench:begin -->"
README_END = "<!-- bench:end -->"

Row = dict[str, Any]
Case = tuple[str, str, int]  # problem, instance, seed


def _is_exact(row: Row, heuristics: set[str]) -> bool:
    return row["method"] not in heuristics


def _better(sense: str, a: float, b: float) -> bool:
    slack = TOL * max(1.0, abs(a), abs(b))
    return a < b - slack if sense == "min" else a > b + slack


# -- analysis --------------------------------------------------------------------------------


@dataclass
class Reference:
    """What is known about one case."""

    optimum: float | None = None
    bound: float | None = None
    best: float | None = None  # best checked objective of any method
    horizon: float = 0.0


@dataclass
class MethodSummary:
    problem: str
    method: str
    kind: str  # exact | heuristic | bound
    runs: int = 0
    optimal: int = 0  # exact: proved optimal; heuristic: reached the known optimum
    with_optimum: int = 0  # cases with a known optimum (a heuristic's denominator)
    failed: int = 0  # failed checks and errors
    no_solution: int = 0
    times: list[float] = field(default_factory=list)
    warm_start: list[float] = field(default_factory=list)
    build: list[float] = field(default_factory=list)
    handoff: list[float] = field(default_factory=list)
    solve: list[float] = field(default_factory=list)
    gaps_to_optimum: list[float] = field(default_factory=list)
    gaps_to_bound: list[float] = field(default_factory=list)
    primal_integrals: list[float] = field(default_factory=list)
    integral_kinds: set[str] = field(default_factory=set)  # trace (incumbent history) | final (one)
    primal_dual_integrals: list[float] = field(default_factory=list)  # rows with a trace only
    nodes: list[int] = field(default_factory=list)
    model_sizes: list[dict[str, int]] = field(default_factory=list)
    penalised_times: list[float] = field(default_factory=list)  # exact: unproved runs at 2x the limit
    speedups: list[float] = field(default_factory=list)  # heuristic: exact route time / own time
    bound_gaps: list[float] = field(default_factory=list)  # bound: |bound - optimum| / |optimum|
    exponent: float | None = None  # fitted t ~ n^k on the scaling family
    @property
    def sgm(self) -> float:
        return shifted_geometric_mean(self.times)

    @property
    def sgm_penalised(self) -> float:
        """SGM with every run that did not prove optimality charged at PENALTY x its time limit (the
        OET benchmark's penalised variant); exact methods with a time limit only, else NaN."""
        return shifted_geometric_mean(self.penalised_times) if self.kind == "exact" else math.nan


@dataclass
class ProblemResults:
    """One problem's share of the rows, with everything the report says about it."""

    name: str
    sense: str
    methods: list[str]
    heuristics: set[str]
    rows: list[Row]
    references: dict[Case, Reference]
    summaries: dict[str, MethodSummary]


@dataclass
class Analysis:
    problems: dict[str, ProblemResults]
    rows: list[Row]
    failures: list[Row]  # failed checks and errors: never silent
    conflicts: list[str]  # answers that contradict one another


def _case(row: Row) -> Case:
    return (row["problem"], row["instance"], int(row["seed"]))


def _heuristic_names(rows: Sequence[Row]) -> set[str]:
    return {row["method"] for row in rows if row.get("kind") == "heuristic"}


def _reference(sense: str, rows: Sequence[Row], heuristics: set[str], conflicts: list[str]) -> Reference:
    ref = Reference(horizon=max((r["times"]["total"] for r in rows), default=0.0))
    checked = [r for r in rows if r["verdict"] == "ok"]
    for r in checked:
        if ref.best is None or _better(sense, r["objective"], ref.best):
            ref.best = r["objective"]
    for r in rows:
        if not _is_exact(r, heuristics):
            continue
        if r["status"] == "optimal" and r["verdict"] == "ok":
            if ref.optimum is not None and not close(ref.optimum, r["objective"]):
                conflicts.append(
                    f"{r['problem']} {r['instance']} seed {r['seed']}: exact methods disagree "
                    f"on the optimum ({ref.optimum:.9g} vs {r['objective']:.9g} by {r['method']})"
                )
            ref.optimum = r["objective"] if ref.optimum is None else ref.optimum
        if r.get("bound") is not None:
            tighter = ref.bound is None or (
                r["bound"] > ref.bound if sense == "min" else r["bound"] < ref.bound
            )
            ref.bound = r["bound"] if tighter else ref.bound
    for r in checked:
        where = f"{r['problem']} {r['instance']} seed {r['seed']}: {r['method']}"
        if ref.optimum is not None and _better(sense, r["objective"], ref.optimum):
            conflicts.append(
                f"{where} reports {r['objective']:.9g}, better than the proven optimum {ref.optimum:.9g}"
            )
        elif ref.bound is not None and _better(sense, r["objective"], ref.bound):
            conflicts.append(f"{where} reports {r['objective']:.9g}, beyond the dual bound {ref.bound:.9g}")
    return ref


def analyse(rows: Iterable[Row]) -> Analysis:
    """Group the rows by problem and case, find references, and summarise every method."""
    rows = sorted(rows, key=lambda r: (r["problem"], r["instance"], int(r["seed"]), r["method"]))
    by_problem: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_problem[row["problem"]].append(row)
    failures = [r for r in rows if r.get("verdict") in ("failed", "error")]
    conflicts: list[str] = []
    problems = {}
    for name, prows in by_problem.items():
        sense = next((r["sense"] for r in prows if r.get("sense")), "min")
        heuristics = _heuristic_names(prows)
        methods = sorted({r["method"] for r in prows}, key=lambda m: (m in heuristics, m != "exact", m))
        cases: dict[Case, list[Row]] = defaultdict(list)
        for row in prows:
            cases[_case(row)].append(row)
        references = {c: _reference(sense, crows, heuristics, conflicts) for c, crows in cases.items()}
        summaries = {m: MethodSummary(name, m, _kind(m, heuristics)) for m in methods}
        for row in prows:
            _account(summaries[row["method"]], row, references[_case(row)])
        _speedups(summaries, cases, heuristics)
        result = ProblemResults(name, sense, methods, heuristics, prows, references, summaries)
        for curve in scaling_curves(result):
            if curve.fit is not None:
                summaries[curve.method].exponent = curve.fit[0]
        problems[name] = result
    return Analysis(problems, rows, failures, conflicts)


def _kind(method: str, heuristics: set[str]) -> str:
    if method in heuristics:
        return "heuristic"
    return "bound" if method == "bound" else "exact"


def _speedups(
    summaries: dict[str, MethodSummary], cases: dict[Case, list[Row]], heuristics: set[str]
) -> None:
    """Per heuristic: the exact route's time over its own, on every case where the registered
    exact method proved optimality in at least :data:`SPEEDUP_FLOOR` seconds."""
    for crows in cases.values():
        exact = next((r for r in crows if r["method"] == "exact" and r["status"] == "optimal"
                      and r["verdict"] == "ok"), None)
        if exact is None or exact["times"]["total"] < SPEEDUP_FLOOR:
            continue
        for r in crows:
            if r["method"] in heuristics and r["verdict"] == "ok":
                summaries[r["method"]].speedups.append(
                    exact["times"]["total"] / max(r["times"]["total"], TIME_FLOOR))


def _account(summary: MethodSummary, row: Row, ref: Reference) -> None:
    times = row["times"]
    summary.runs += 1
    summary.times.append(times["total"])
    proved = row["status"] == "optimal" and row["verdict"] == "ok"
    limit = row.get("time_limit")
    if summary.kind == "exact" and limit:
        summary.penalised_times.append(times["total"] if proved else PENALTY * limit)
    summary.warm_start.append(times.get("warm_start", 0.0))  # rows written before it was timed apart
    summary.build.append(times["build"])
    summary.handoff.append(times["handoff"])
    summary.solve.append(times["solve"])
    verdict = row["verdict"]
    summary.failed += verdict in ("failed", "error")
    summary.no_solution += verdict == "none"
    if ref.optimum is not None:
        summary.with_optimum += summary.kind == "heuristic"
    trace = row.get("trace")
    # HiGHS' clock starts after the warm start, the build and the hand-off
    start = times.get("warm_start", 0.0) + times["build"] + times["handoff"]
    if row.get("nodes") is not None:
        summary.nodes.append(int(row["nodes"]))
    if row.get("model_size"):
        summary.model_sizes.append(row["model_size"])
    if summary.kind == "bound" and row.get("bound") is not None and ref.optimum is not None:
        summary.bound_gaps.append(relative_gap(row["bound"], ref.optimum))
    if trace:
        trusted = verdict in ("ok", "none")  # a rejected solution's history counts as no progress
        summary.primal_dual_integrals.append(
            primal_dual_integral(trace, ref.horizon, start) if trusted else ref.horizon
        )
    if ref.optimum is not None:
        summary.integral_kinds.add("trace" if trace else "final")
    if verdict != "ok":
        if ref.optimum is not None:
            summary.primal_integrals.append(ref.horizon)
        return
    value = row["objective"]
    if summary.kind == "exact":
        summary.optimal += row["status"] == "optimal"
    elif ref.optimum is not None:
        summary.optimal += close(value, ref.optimum)
    if summary.kind == "heuristic" or row["status"] != "optimal":
        if ref.optimum is not None:
            summary.gaps_to_optimum.append(relative_gap(value, ref.optimum))
        elif ref.bound is not None:
            summary.gaps_to_bound.append(relative_gap(value, ref.bound))
    if ref.optimum is not None:
        incumbents = trace_incumbents(trace, start) if trace else [(times["total"], value)]
        summary.primal_integrals.append(primal_integral(incumbents, ref.optimum, ref.horizon))


# -- profiles and scaling --------------------------------------------------------------------


def profile_costs(problem: ProblemResults, kind: str) -> tuple[list[Case], dict[str, list[float | None]]]:
    """Per-case costs for the Dolan-More profiles over the cases every method ran on (every method
    but the dual bound ``bound``, which has no solution to profile).

    ``time``: total seconds (floored at :data:`TIME_FLOOR`) of a success, where success means a
    proved optimum for an exact method and a checked solution for a heuristic. ``quality``:
    1 + relative gap to the best checked objective of the case."""
    by_case: dict[Case, dict[str, Row]] = defaultdict(dict)
    for row in problem.rows:
        by_case[_case(row)][row["method"]] = row
    methods = _profiled(problem)
    cases = sorted(c for c, found in by_case.items() if set(methods) <= set(found))
    costs: dict[str, list[float | None]] = {m: [] for m in methods}
    for case in cases:
        best = problem.references[case].best
        for method in methods:
            row = by_case[case][method]
            ok = row["verdict"] == "ok"
            if kind == "time":
                success = ok and (method in problem.heuristics or row["status"] == "optimal")
                costs[method].append(max(row["times"]["total"], TIME_FLOOR) if success else None)
            else:
                costs[method].append(1.0 + relative_gap(row["objective"], best) if ok else None)
    return cases, costs


def _succeeded(row: Row, heuristics: set[str]) -> bool:
    """A checked solution for a heuristic; a proved optimum within the time limit for an exact method."""
    return row["verdict"] == "ok" if row["method"] in heuristics else proved_within_limit(row)


def _mean_time(rows: Iterable[Row]) -> float:
    return statistics.fmean(r["times"]["total"] for r in rows)


#: A time exponent is fitted only to sizes whose mean time is at least this (seconds): below it the
#: timer measures call overhead and noise, not the method's growth.
EXPONENT_FLOOR = 1e-3
#: ... and only when the fitted times span at least this ratio (a decade); a flatter curve gives an
#: exponent that is noise around zero.
EXPONENT_SPAN = 10.0
EXPONENT_NOTE = (f"time exponent '-': fewer than two sizes at or above {EXPONENT_FLOOR * 1e3:g} ms, or "
                 f"times spanning less than {EXPONENT_SPAN:g}x there (a fit would be timer noise)")


def resolved_fit(sizes: Sequence[int], times: Sequence[float]) -> tuple[float, float] | None:
    """The power-law fit (k, a) of t ~ a n^k over the sizes whose time is at least
    :data:`EXPONENT_FLOOR`, when at least two such sizes remain and their times span at least
    :data:`EXPONENT_SPAN`; else None (reported as "-")."""
    kept = [(n, t) for n, t in zip(sizes, times, strict=True) if t >= EXPONENT_FLOOR]
    if len({n for n, _ in kept}) < 2:
        return None
    fitted = [t for _, t in kept]
    if max(fitted) < EXPONENT_SPAN * min(fitted):
        return None
    return fit_power_law([n for n, _ in kept], fitted)


@dataclass
class Curve:
    method: str
    sizes: list[int]
    times: list[float]  # mean total time over the seeds of each size
    fit: tuple[float, float] | None
    stopped: list[tuple[int, float]]  # (size, mean time) where some seed did not succeed


def scaling_curves(problem: ProblemResults) -> list[Curve]:
    """Time against generator size per method. A size is on the curve (and in the fit) when every
    seed succeeded there: a proved optimum within the time limit for an exact method, a checked
    solution for a heuristic; the other sizes are listed as ``stopped``."""
    curves = []
    for method in problem.methods:
        per_size: dict[int, list[Row]] = defaultdict(list)
        for row in problem.rows:
            if row["method"] == method and row.get("size") is not None:
                per_size[int(row["size"])].append(row)
        sizes = sorted(
            s for s, rows in per_size.items() if all(_succeeded(r, problem.heuristics) for r in rows)
        )
        stopped = [(s, _mean_time(rows)) for s, rows in sorted(per_size.items()) if s not in sizes]
        times = [_mean_time(per_size[s]) for s in sizes]
        if per_size:
            curves.append(
                Curve(method, sizes, times, resolved_fit(sizes, times), stopped)
            )
    return curves


@dataclass
class HeuristicAtScale:
    time: float  # mean total time over the seeds
    outcome: str  # solved | found no solution | stopped at the time limit | CHECK FAILED


@dataclass
class Reach:
    """The scaling headline of one problem."""

    largest: dict[str, int]  # exact method -> largest size proved optimal on every seed
    time_at_largest: dict[str, float]
    limit: float | None
    heuristic_size: int | None  # SCALE_UP x the largest proved size (at most the generator's limit)
    heuristics: dict[str, HeuristicAtScale]  # how each heuristic fared at heuristic_size


def reach(problem: ProblemResults) -> Reach:
    """Largest size each exact method proved on every seed within the limit, and how the
    heuristics fared at SCALE_UP times the largest of those."""
    curves = {c.method: c for c in scaling_curves(problem)}
    largest = {m: c.sizes[-1] for m, c in curves.items() if m not in problem.heuristics and c.sizes}
    at_largest = {m: curves[m].times[-1] for m in largest}
    limits = [r["time_limit"] for r in problem.rows if r.get("size") is not None and r.get("time_limit")]
    # the climb's last round: SCALE_UP x the largest proved size, or less where the generator stops
    top = max(largest.values(), default=None)
    beyond = [] if top is None else [
        int(r["size"]) for r in problem.rows
        if r["method"] in problem.heuristics and r.get("size") is not None and int(r["size"]) > top]
    target = max(beyond) if beyond else (None if top is None else SCALE_UP * top)
    at_target: dict[str, list[Row]] = defaultdict(list)
    for row in problem.rows:
        if row["method"] in problem.heuristics and row.get("size") is not None and int(row["size"]) == target:
            at_target[row["method"]].append(row)
    heuristics = {
        m: HeuristicAtScale(_mean_time(rows), _outcome(rows)) for m, rows in sorted(at_target.items())
    }
    return Reach(largest, at_largest, max(limits) if limits else None, target, heuristics)


def _outcome(rows: Sequence[Row]) -> str:
    """How a heuristic's runs at one size ended, in words (the worst seed decides)."""
    if any(r["verdict"] in ("failed", "error") for r in rows):
        return "CHECK FAILED"
    if any(r["status"] == "time_limit" for r in rows):
        return "stopped at the time limit"
    if any(r["verdict"] == "none" for r in rows):
        return "found no solution"
    return "solved"


#: A method's look: one of 20 colours, 10 markers and 4 dashes. The look is keyed by the method's
#: name alone, so a method has the same look in every plot of every problem (see method_styles).
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">")
DASHES = ("-", "--", "-.", ":")
COLOURS = 20
SLOTS = COLOURS * len(MARKERS)


def _slot_look(slot: int) -> dict[str, Any]:
    import matplotlib

    colours = matplotlib.colormaps["tab20"].colors
    group = slot // COLOURS
    return {"color": colours[slot % COLOURS], "marker": MARKERS[group % len(MARKERS)],
            "linestyle": DASHES[group % len(DASHES)]}


def _assign_slots(names: Iterable[str], peers: dict[str, set[str]], slots: dict[str, int]) -> None:
    """Give each of ``names`` a slot not yet in ``slots``: the first free one from the hash of its
    name on, preferring a colour none of its ``peers`` (the methods that share a plot with it) has
    yet. Names with the most peers go first (greedy colouring in the Welsh-Powell order, ties by
    name): a method shared by several problems then picks its colour before its many peers have
    used them up."""
    for name in sorted(set(names) - set(slots), key=lambda m: (-len(peers.get(m, ())), m)):
        start = zlib.crc32(name.encode()) % SLOTS
        taken = set(slots.values())
        free = [k for k in ((start + j) % SLOTS for j in range(SLOTS)) if k not in taken]
        used = {slots[p] % COLOURS for p in peers.get(name, ()) if p in slots}
        slots[name] = next((k for k in free if k % COLOURS not in used), free[0] if free else start)


def _registry_slots() -> dict[str, int]:
    """A slot per method name of every registered problem: the methods of one problem get
    different colours where 20 colours suffice, and always different looks."""
    from coopt import registry

    peers: dict[str, set[str]] = defaultdict(set)
    for name in registry.names():
        methods = set(registry.get(name).all_methods)
        for method in methods:
            peers[method] |= methods - {method}
    slots: dict[str, int] = {}
    _assign_slots(peers, peers, slots)
    return slots


def method_styles(methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A (colour, marker, line style) per method, keyed by the method's name over the registry's
    full method list, so that ``local_search`` looks the same in chase's and in pipeline's plots.
    A name no registered problem has gets a look no registered name has, distinct from the other
    ``methods``."""
    slots = _registry_slots()
    mine = set(methods)
    _assign_slots(mine, {m: mine - {m} for m in mine}, slots)
    return {m: _slot_look(slots[m]) for m in methods}


def _profiled(problem: ProblemResults) -> list[str]:
    """The methods a performance profile compares: every one but the dual bound (a number, not a
    solution: it has neither a success time nor a quality)."""
    return [m for m in problem.methods if problem.summaries[m].kind != "bound"]


def profiles_figure(problem: ProblemResults) -> Any | None:
    """The time and quality profiles of ``problem`` on a new matplotlib ``Figure`` (None when there
    is no case to profile). One legend for both panels, to the right of them, off the data."""
    from matplotlib.figure import Figure

    styles = method_styles(problem.methods)
    fig = Figure(figsize=(11, 4), layout="constrained")
    drawn = False
    for ax, kind, title in zip(
        fig.subplots(1, 2),
        ("time", "quality"),
        ("time (success: proved optimum / checked heuristic)", "quality (1 + gap to best checked objective)"),
        strict=True,
    ):
        cases, costs = profile_costs(problem, kind)
        if not cases:
            ax.set_axis_off()
            continue
        ratios = performance_ratios(costs)
        finite = sorted({r for rs in ratios.values() for r in rs if math.isfinite(r)} | {1.0})
        top = finite[-1] * (2.0 if kind == "time" else 1.05) if finite[-1] > 1 else 2.0
        taus = [*finite, top]
        for method, rs in ratios.items():
            # markers on the steps' corners; a small alpha keeps curves that coincide visible
            ax.step(taus, profile(rs, taus), where="post", label=method, alpha=0.85, markevery=1,
                    markersize=4, linewidth=1.4, **styles[method])
        if kind == "time":
            ax.set_xscale("log", base=2)
        ax.set_xlim(1.0, top)
        ax.set_ylim(0.0, 1.02)
        ax.set_xlabel("tau (ratio to the best method)")
        ax.set_ylabel("fraction of cases with ratio <= tau")
        ax.set_title(f"{title}, {len(cases)} cases", fontsize=9)
        if not drawn:
            handles, labels = ax.get_legend_handles_labels()
            fig.legend(handles, labels, loc="outside right upper", fontsize=7,
                       ncols=2 if len(labels) > 12 else 1)
        drawn = True
    fig.suptitle(f"{problem.name}: Dolan-More performance profiles")
    return fig if drawn else None


def _plot_profiles(problem: ProblemResults, path: Path) -> bool:
    fig = profiles_figure(problem)
    if fig is not None:
        fig.savefig(path, dpi=110)
    return fig is not None


def scaling_figure(problem: ProblemResults, curves: Sequence[Curve], limit: float | None) -> Any | None:
    """Time against size per method on a new matplotlib ``Figure`` (None without curves); the legend
    to the right of the axes, off the data. A method's label carries its exponent only where
    :func:`resolved_fit` gives one."""
    from matplotlib.figure import Figure

    if not curves:
        return None
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
    styles = method_styles(problem.methods)
    sizes = set()
    for curve in curves:
        label = curve.method if curve.fit is None else f"{curve.method} (k = {curve.fit[0]:.2f})"
        (line,) = ax.plot(
            curve.sizes, [max(t, TIMER_RESOLUTION) for t in curve.times], label=label, **styles[curve.method]
        )
        if curve.stopped:
            ax.plot(
                [s for s, _ in curve.stopped],
                [max(t, TIMER_RESOLUTION) for _, t in curve.stopped],
                linestyle="none",
                marker="x",
                markersize=9,
                color=line.get_color(),
            )
        sizes |= set(curve.sizes) | {s for s, _ in curve.stopped}
    if limit is not None:
        ax.axhline(limit, color="grey", linestyle=":", label=f"time limit {limit:g} s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sorted(sizes), [str(s) for s in sorted(sizes)], fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel("instance size (generator scale)")
    ax.set_ylabel("mean total time [s]")
    ax.set_title(f"{problem.name}: scaling, fitted t ~ size^k (x: not solved / not proved)", fontsize=10)
    fig.legend(loc="outside right upper", fontsize=8)
    return fig


def _plot_scaling(problem: ProblemResults, curves: Sequence[Curve], limit: float | None, path: Path) -> bool:
    fig = scaling_figure(problem, curves, limit)
    if fig is not None:
        fig.savefig(path, dpi=110)
    return fig is not None


# -- certified gaps at the papers' scale -----------------------------------------------------


def in_large_tier(row: Row) -> bool:
    """A row of the ``large`` tier: run by that family, or on a shipped ``2-*`` (paper-scale) file."""
    return row.get("family") == "large" or str(row.get("instance", "")).startswith("file:2-")


@dataclass
class CertifiedCase:
    """One large-tier case: the best checked heuristic, the best dual bound (a proven optimum where
    one is known: the tightest bound there is) and the certified gap |heuristic - bound| / |bound|."""

    case: Case
    size: float  # the instance's size measure (see certified_gaps)
    heuristic: str
    objective: float
    bound: float
    gap: float
    #: the bound is the optimum: an exact method proved it, or the problem's ``bound`` says so (its
    #: row's ``solver.bound``: an exact method inside the bound finished), so the gap is the true one
    against_optimum: bool = False


def certified_gaps(problem: ProblemResults) -> list[CertifiedCase]:
    """The certified gap of every large-tier case of ``problem`` that has both a checked heuristic
    solution and a dual bound, in the order of their size. Size is the count of numbers in the
    instance (``instance_numbers``, the one size measure every problem's rows carry), else the
    generator size, else the case's place in file order."""
    by_case: dict[Case, list[Row]] = defaultdict(list)
    for row in problem.rows:
        if in_large_tier(row):
            by_case[_case(row)].append(row)
    found = []
    for order, (case, rows) in enumerate(sorted(by_case.items())):
        ref = problem.references[case]
        bound = ref.optimum if ref.optimum is not None else ref.bound
        checked = [r for r in rows if r["method"] in problem.heuristics and r["verdict"] == "ok"]
        if bound is None or not checked:
            continue
        best = checked[0]
        for r in checked[1:]:
            if _better(problem.sense, r["objective"], best["objective"]):
                best = r
        gap = abs(best["objective"] - bound) / abs(bound) if bound else (0.0 if best["objective"] == 0
                                                                          else math.inf)
        size = next((float(r[k]) for k in ("instance_numbers", "size") for r in rows
                     if r.get(k) is not None), float(order))
        optimum = ref.optimum is not None or any(
            r["method"] == "bound" and (r.get("solver") or {}).get("bound") and r.get("bound") is not None
            and close(r["bound"], bound) for r in rows)
        found.append(CertifiedCase(case, size, best["method"], best["objective"], bound, gap, optimum))
    return sorted(found, key=lambda c: (c.size, c.case))


#: The certified gap the papers' scale is held to: within 2 % of the best possible.
CERTIFIED_TARGET = 0.02
CERTIFIED_NOTE = ("certified gap = |best checked heuristic - best dual bound| / |bound| per large-tier case "
                  "(the bound is a proven optimum where one is known); worst case and median per problem; "
                  "'to the optimum': the bound is the optimum (an exact method proved it, or the problem's "
                  "bound ran one to its end), so the gap is the true one")


def certified_table(analysis: Analysis, problems: Sequence[str] | None = None) -> str:
    """Per problem (all, or ``problems``), over the large tier: the worst certified gap and its case,
    and the median."""
    body = []
    for name, problem in analysis.problems.items():
        if problems is not None and name not in problems:
            continue
        gaps = certified_gaps(problem)
        if not gaps:
            body.append([problem.name, "-", "- (no large-tier case with a heuristic and a bound)", "-", "-"])
            continue
        worst = max(gaps, key=lambda c: c.gap)
        body.append([
            problem.name,
            f"{100 * worst.gap:.2f} %" + (" (to the optimum)" if worst.against_optimum else ""),
            f"{worst.case[1].removeprefix('file:')} seed {worst.case[2]} ({worst.heuristic})",
            f"{100 * statistics.median(c.gap for c in gaps):.2f} % (n={len(gaps)})",
            f"{sum(c.against_optimum for c in gaps)}/{len(gaps)}",
        ])
    return _table(["problem", "worst certified gap (large tier)", "on", "median over the tier",
                   "cases whose bound is the optimum"], body)


def certified_figure(analysis: Analysis) -> Any | None:
    """A panel per problem with large-tier cases: certified gap (percent) against instance size,
    the worst case ringed and named in the panel's title, the cases whose bound is the optimum in a
    square, the 2 % target dashed; None when no problem has such a case."""
    from matplotlib.figure import Figure

    panels = [(p, gaps) for p in analysis.problems.values() if (gaps := certified_gaps(p))]
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = -(-len(panels) // cols)
    fig = Figure(figsize=(4.2 * cols, 3.3 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, (problem, gaps) in zip(axes.flat, panels, strict=False):
        ax.plot([c.size for c in gaps], [100 * c.gap for c in gaps], linestyle="none", marker="o",
                gid="certified-gap")
        exact = [c for c in gaps if c.against_optimum]
        if exact:  # the gap to the optimum itself: a square around the point
            ax.plot([c.size for c in exact], [100 * c.gap for c in exact], linestyle="none", marker="s",
                    markersize=9, fillstyle="none", color="tab:green", gid="against-optimum")
        worst = max(gaps, key=lambda c: c.gap)
        ax.plot([worst.size], [100 * worst.gap], linestyle="none", marker="o", markersize=11,
                fillstyle="none", color="tab:red", gid="worst-case")
        ax.axhline(100 * CERTIFIED_TARGET, color="grey", linestyle="--", linewidth=1)
        if min(c.size for c in gaps) > 0 and max(c.size for c in gaps) > 10 * min(c.size for c in gaps):
            ax.set_xscale("log")
        ax.set_ylim(bottom=0.0)
        ax.set_title(f"{problem.name} ({len(gaps)} cases)\nworst (ringed): "
                     f"{worst.case[1].removeprefix('file:')}", fontsize=8)
        ax.set_xlabel("instance size (numbers in the instance)", fontsize=8)
        ax.set_ylabel("certified gap [%]", fontsize=8)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    fig.suptitle(f"certified gap of the best heuristic to the best dual bound, large tier "
                 f"(dashed: {100 * CERTIFIED_TARGET:g} %; square: the bound is the optimum)", fontsize=10)
    return fig


# -- markdown --------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}"


def _pct(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{100 * statistics.fmean(values):.2f} / {100 * max(values):.2f} % (n={len(values)})"


def _table(headers: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def _integral(values: Sequence[float], kinds: set[str]) -> str:
    """Mean integral with the kind of incumbent history it rests on."""
    if not values:
        return "-"
    return f"{_fmt(statistics.fmean(values))} ({'+'.join(sorted(kinds, reverse=True))})"


def _milp_size(sizes: Sequence[dict[str, int]]) -> str:
    """The largest MILP (by nonzeros) of a method's rows: rows x columns, nonzeros."""
    if not sizes:
        return "-"
    big = max(sizes, key=lambda z: (z.get("nonzeros", 0), z.get("rows", 0)))
    return f"{big.get('rows', '?')} x {big.get('columns', '?')}, {big.get('nonzeros', '?')} nz"


def method_table(problem: ProblemResults) -> str:
    body = []
    for s in problem.summaries.values():
        solved = f"{s.optimal}/{s.runs}" if s.kind == "exact" else f"{s.optimal}/{s.with_optimum}"
        body.append(
            [
                s.method,
                s.kind,
                str(s.runs),
                solved,
                f"**{s.failed}**" if s.failed else "0",
                str(s.no_solution),
                _fmt(s.sgm),
                _fmt(s.sgm_penalised),
                _fmt(statistics.fmean(s.warm_start)),
                _fmt(statistics.fmean(s.build)),
                _fmt(statistics.fmean(s.handoff)),
                _fmt(statistics.fmean(s.solve)),
                _pct(s.gaps_to_optimum),
                _pct(s.gaps_to_bound),
                _integral(s.primal_integrals, s.integral_kinds),
                _fmt(statistics.fmean(s.primal_dual_integrals)) if s.primal_dual_integrals else "-",
                f"{_fmt(statistics.fmean(s.nodes))} / {max(s.nodes)}" if s.nodes else "-",
                _milp_size(s.model_sizes),
            ]
        )
    return _table(
        [
            "method",
            "kind",
            "runs",
            "optimal",
            "failed checks",
            "no solution",
            f"SGM time [s] (shift {SGM_SHIFT:g})",
            f"SGM, unproved at {PENALTY:g}x limit [s]",
            "warm start [s]",
            "build [s]",
            "hand-off [s]",
            "solve [s]",
            "gap to optimum mean / worst",
            "gap to dual bound mean / worst",
            "primal integral [s] (history)",
            "primal-dual integral [s]",
            "B&B nodes mean / max",
            "largest MILP (rows x cols, nonzeros)",
        ],
        body,
    )


def reach_table(analysis: Analysis) -> str:
    body = []
    for problem in analysis.problems.values():
        r = reach(problem)
        exact = (
            "; ".join(f"{m}: {s} ({_fmt(r.time_at_largest[m])} s)" for m, s in sorted(r.largest.items()))
            or "-"
        )
        heur = (
            "; ".join(
                f"{m}: {_fmt(h.time)} s"
                if h.outcome == "solved"
                else f"{m}: **{h.outcome}** ({_fmt(h.time)} s)"
                for m, h in r.heuristics.items()
            )
            or "- (not run)"
        )
        body.append(
            [
                problem.name,
                _fmt(r.limit),
                exact,
                "-" if r.heuristic_size is None else str(r.heuristic_size),
                heur,
            ]
        )
    return _table(
        [
            "problem",
            "time limit [s]",
            "largest size proved optimal (time there)",
            f"{SCALE_UP}x size",
            "heuristic time at that size",
        ],
        body,
    )


def _geo(values: Sequence[float]) -> str:
    """Geometric-mean and worst gap, in percent."""
    if not values:
        return "-"
    return f"{100 * geomean_gap(values):.2f} / {100 * max(values):.2f} % (n={len(values)})"


def _speedup(values: Sequence[float]) -> str:
    if not values:
        return "-"
    return f"{_fmt(statistics.median(values))}x (n={len(values)})"


def summary_table(analysis: Analysis) -> str:
    """The compact problem x method table for the README: for a heuristic the geometric-mean and
    worst gap to the proven optimum, the certified gap to the best dual bound where no optimum is
    known (the large tier), its median speed-up over the exact route and its fitted time exponent;
    for a bound, how far it lies from the optimum."""
    body = []
    for problem in analysis.problems.values():
        for s in problem.summaries.values():
            solved = f"{s.optimal}/{s.runs}" if s.kind != "heuristic" else f"{s.optimal}/{s.with_optimum}"
            if s.kind == "bound":
                solved = "-"
            gap = _geo(s.bound_gaps if s.kind == "bound" else s.gaps_to_optimum)
            body.append(
                [
                    problem.name,
                    s.method,
                    s.kind,
                    solved,
                    _fmt(s.sgm),
                    gap,
                    _geo(s.gaps_to_bound),
                    _speedup(s.speedups),
                    "-" if s.exponent is None else f"{s.exponent:.2f}",
                    f"**{s.failed}**" if s.failed else "0",
                ]
            )
    return _table(
        ["problem", "method", "kind", "optimal", "SGM time [s]", "gap to optimum geomean / worst",
         "certified gap to bound geomean / worst", "speed-up over exact (median)", "time exponent",
         "failed checks"],
        body,
    )


def _header(analysis: Analysis) -> list[str]:
    rows = analysis.rows

    def values(key: str) -> str:
        return ", ".join(sorted({str(r.get(key)) for r in rows})) or "-"

    def solver(row: Row) -> str:  # rows written before --solver existed ran on HiGHS
        version = row.get("milp_solver_version") or row.get("highs_version")
        return f"{row.get('milp_solver') or 'highs'} {version}"

    solvers = ", ".join(sorted({solver(r) for r in rows})) or "-"
    return [
        "# coopt bench report",
        "",
        f"- tasks: {len(rows)} over {len(analysis.problems)} problems "
        f"({', '.join(analysis.problems) or 'none'})",
        f"- families: {values('family')}; seeds: {values('seed')}; time limit [s]: {values('time_limit')}",
        f"- MILP solver of the exact routes: {solvers}",
        f"- git revision: {values('git_revision')}; coopt {values('coopt_version')}; "
        f"HiGHS {values('highs_version')}; Python {values('python')}; hosts: {values('host')}",
        "- one solver thread per task (the MILP solver's, or CP-SAT's one worker); times are wall seconds: "
        "build (Python "
        "model), hand-off (to the solver), "
        "solve (the solver or the heuristic), total (the whole call including the check)",
        "",
    ]


def _verdict_section(analysis: Analysis) -> list[str]:
    lines = ["## Verdict", ""]
    if not analysis.failures and not analysis.conflicts:
        checked = sum(1 for r in analysis.rows if r["verdict"] == "ok")
        return [
            *lines,
            f"All {checked} solutions passed their problem's checker; no answer contradicts "
            "a proven optimum or a dual bound.",
            "",
        ]
    if analysis.failures:
        lines += [
            f"**CHECK FAILED: {len(analysis.failures)} task(s) produced a solution the checker rejects "
            "or crashed. These numbers must not be trusted until fixed.**",
            "",
        ]
        for r in analysis.failures:
            why = "; ".join((r.get("check") or {}).get("violations") or ["objective claimed != recomputed"])
            lines.append(f"- `{r['key']}` ({r['verdict']}, status {r['status']}): {why[:300]}")
        lines.append("")
    if analysis.conflicts:
        lines += [f"**CONFLICT: {len(analysis.conflicts)} answer(s) contradict one another.**", ""]
        lines += [f"- {c}" for c in analysis.conflicts]
        lines.append("")
    return lines


def write_report(rows: Iterable[Row], out: Path) -> Analysis:
    """Write ``out/report.md`` with its PNG plots; return the analysis it is made of."""
    out.mkdir(parents=True, exist_ok=True)
    analysis = analyse(rows)
    lines = _header(analysis) + _verdict_section(analysis)
    lines += [
        "## Summary",
        "",
        summary_table(analysis),
        "",
        f"_{EXPONENT_NOTE}._",
        "",
        "## Certified gaps at the papers' scale (large tier)",
        "",
        certified_table(analysis),
        "",
        f"_{CERTIFIED_NOTE}._",
        "",
    ]
    gap_figure = certified_figure(analysis)
    if gap_figure is not None:
        gap_figure.savefig(out / "certified-gaps.png", dpi=110)
        lines += ["![certified gap against instance size](certified-gaps.png)", ""]
    lines += [
        "## Scaling",
        "",
        "Largest generator size at which each exact method proved every seed optimal within the "
        f"time limit, and the heuristics' mean time at {SCALE_UP}x that size (run by the `scaling` "
        "family).",
        "",
        reach_table(analysis),
        "",
    ]
    for problem in analysis.problems.values():
        lines += [f"## {problem.name} ({problem.sense})", "", method_table(problem), ""]
        if _plot_profiles(problem, out / f"profiles-{problem.name}.png"):
            lines += [f"![performance profiles of {problem.name}](profiles-{problem.name}.png)", ""]
        curves = scaling_curves(problem)
        if _plot_scaling(problem, curves, reach(problem).limit, out / f"scaling-{problem.name}.png"):
            fits = "; ".join(f"{c.method}: k = {'-' if c.fit is None else f'{c.fit[0]:.2f}'}"
                             for c in curves)
            lines += [
                f"![scaling of {problem.name}](scaling-{problem.name}.png)",
                "",
                f"Fitted exponents (t ~ size^k over the sizes each method solved): {fits or '-'}. "
                f"_{EXPONENT_NOTE}._",
                "",
            ]
    lines += [
        "## Definitions",
        "",
        "- *optimal*: exact methods, runs that proved optimality; heuristics, cases where they reached "
        "the proven optimum (out of the cases with one).",
        f"- *SGM time*: shifted geometric mean of total time, shift {SGM_SHIFT:g} s; a run stopped by the "
        "time limit counts with the time it ran. The penalised variant (exact methods) charges every run "
        f"that did not prove optimality at {PENALTY:g}x its time limit.",
        "- *gap*: |objective - reference| / |reference|, to the proven optimum, or (separate column) to "
        "the best dual bound where no optimum is known; for exact methods only runs that stopped short of "
        "optimality.",
        "- *primal integral*: Berthold's integral of the primal gap over a per-case common horizon (the "
        "longest run); only cases with a known optimum. *(trace)*: over HiGHS' real incumbent history "
        "(MILP rows; HiGHS' clock shifted by build + hand-off); *(final)*: one incumbent per run, gap 1 "
        "until the method returns, its final gap after (heuristics, DP exact methods).",
        "- *primal-dual integral*: the integral of |primal - dual| / max(|primal|, |dual|) (1 while "
        "either is unknown) over the same horizon, from HiGHS' trace; MILP rows only, no optimum needed.",
        "- *B&B nodes*, *largest MILP*: HiGHS' node count (CP-SAT's branches for a constraint program) and "
        "the model HiGHS was handed (MILP rows only).",
        "- *performance profiles*: Dolan-More; cases every method ran on; a failure has ratio infinity.",
        "",
    ]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    return analysis


def _marked_span(text: str, readme: Path, begin_mark: str = README_BEGIN,
                 end_mark: str = README_END) -> tuple[int, int]:
    begin, end = text.find(begin_mark), text.find(end_mark)
    if begin < 0 or end < begin:
        raise ValueError(f"{readme}: needs the markers {begin_mark} and {end_mark} (in that order)")
    return begin + len(begin_mark), end


def check_readme(readme: Path) -> None:
    """ValueError (or OSError) now if :func:`update_readme` would fail on ``readme`` later."""
    _marked_span(readme.read_text(encoding="utf-8"), readme)


#: What a revision note calls the rows it does not name.
OTHER_ROWS = "the other rows"


def _table_rows(span: str) -> tuple[str | None, list[str], dict[str, str]]:
    """(header line, body lines, revision of each problem named in the note, with
    :data:`OTHER_ROWS` for the rest) of the table between the markers. Reads the notes
    :func:`_revision_note` writes and the older ``at revision R (a, b; the other rows at
    revision S)`` form."""
    lines = [line.strip() for line in span.splitlines() if line.strip().startswith("|")]
    if len(lines) < 2:
        return None, [], {}
    note = re.search(r"_Generated by `coopt bench`(.*?)\._", span, re.S)
    text = " ".join(note.group(1).split()) if note else ""
    revisions: dict[str, str] = {}
    older = re.fullmatch(r"\s*at revision ([^\s(]+?)\.?\s*"
                         r"(?:\((.*); the other rows at revision ([^)\s]+)\))?\.?", text)
    if older:
        names = older.group(2)
        for name in (names or "").split(","):
            if name.strip():
                revisions[name.strip()] = older.group(1)
        revisions[OTHER_ROWS] = older.group(3) if names else older.group(1)
        return lines[0], lines[2:], revisions
    for names, revision in re.findall(r"([^:;]+?) at revision ([^\s;.]+)", text):
        for name in names.split(","):
            revisions[name.strip()] = revision
    return lines[0], lines[2:], revisions


def _revision_note(order: Sequence[str], revision_of: dict[str, str]) -> str:
    """`` at revision R`` when every problem's rows share one, else ``: a, b at revision R; c at
    revision S`` (problems in table order, grouped by revision): what follows "Generated by"."""
    groups: dict[str, list[str]] = {}
    for name in order:
        groups.setdefault(revision_of.get(name, "unknown"), []).append(name)
    if len(groups) == 1:
        return f" at revision {next(iter(groups))}"
    return ": " + "; ".join(f"{', '.join(names)} at revision {rev}" for rev, names in groups.items())


def _problem_of(row: str) -> str:
    return row.strip("|").split("|")[0].strip()


def _merged_block(readme: Path, span: str, table: str, analysis: Analysis, footnotes: Sequence[str],
                  benched: Sequence[str]) -> str:
    """The new text between one pair of markers: ``table``'s rows for the ``benched`` problems, the
    old rows of every other problem kept in their place (ValueError where the columns changed)."""
    new_header, rule, *new_rows = table.splitlines()
    old_header, old_rows, old_revisions = _table_rows(span)
    kept = [row for row in old_rows if _problem_of(row) not in benched]
    if kept and old_header != new_header:
        raise ValueError(f"{readme}: its summary table has other columns than today's, and the rows of "
                         f"{', '.join(dict.fromkeys(_problem_of(r) for r in kept))} would be lost; bench "
                         "every problem to rewrite it")
    by_problem: dict[str, list[str]] = {}
    for row in new_rows:
        by_problem.setdefault(_problem_of(row), []).append(row)
    body: list[str] = []
    for row in old_rows:  # the table's order stays; a problem benched now takes its old place
        name = _problem_of(row)
        body.extend(by_problem.pop(name, []) if name in benched else [row])
    body.extend(row for rows in by_problem.values() for row in rows)
    revisions = ", ".join(sorted({str(r.get("git_revision"))[:12] for r in analysis.rows}))
    order = list(dict.fromkeys(_problem_of(row) for row in body))
    revision_of = {name: revisions if name in benched
                   else old_revisions.get(name, old_revisions.get(OTHER_ROWS, "unknown")) for name in order}
    note = _revision_note(order, revision_of)
    notes = "".join(f"\n_{text}._\n" for text in footnotes)
    return "\n" + "\n".join([new_header, rule, *body]) + f"\n\n_Generated by `coopt bench`{note}._\n{notes}"


#: The certified-gap table's markers in the README (optional: a README without them gets the summary
#: table alone).
GAPS_BEGIN = "<!-- bench-gaps:begin -->"
GAPS_END = "<!-- bench-gaps:end -->"


def update_readme(readme: Path, analysis: Analysis) -> None:
    """Replace the summary table between :data:`README_BEGIN` and :data:`README_END` in ``readme``
    (from the rows outside the large tier; a run of the large tier alone leaves it as it is), and
    the large tier's certified-gap table between :data:`GAPS_BEGIN` and :data:`GAPS_END` where
    the README has those markers (for the problems with large-tier rows only): the rows of the
    problems benched now are replaced, the rows of every other problem are kept as they were (in
    their place). ValueError if the summary's markers are missing, or if rows would have to be kept
    under a table whose columns changed (bench every problem to rewrite it)."""
    text = readme.read_text(encoding="utf-8")
    small_rows = [row for row in analysis.rows if not in_large_tier(row)]
    if small_rows:  # the summary is the small families' table: a large-tier run leaves it alone
        small = analysis if len(small_rows) == len(analysis.rows) else analyse(small_rows)
        begin, end = _marked_span(text, readme)
        summary = _merged_block(readme, text[begin:end], summary_table(small), small, [EXPONENT_NOTE],
                                list(small.problems))
        text = text[:begin] + summary + text[end:]
    large = [name for name, problem in analysis.problems.items() if any(map(in_large_tier, problem.rows))]
    if GAPS_BEGIN in text and large:
        begin, end = _marked_span(text, readme, GAPS_BEGIN, GAPS_END)
        gaps = _merged_block(readme, text[begin:end], certified_table(analysis, large), analysis,
                             [CERTIFIED_NOTE], large)
        text = text[:begin] + gaps + text[end:]
    write_atomic(readme, text)
