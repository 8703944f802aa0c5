"""``coopt simulate``: blocking (service failure) ratio vs load per priority class, by simulation.

    coopt simulate INSTANCE... --loads 40,60,80 [--policies ksp_first_fit,degraded,...]
                   [--arrivals N] [--warmup N] [--batches N] [--seeds N] [--seed S]
                   [--bandwidths 25,50,75,100] [--shares 1,1,1] [--max-degradation D1,D2,..]
                   [--slots N]
                   [--plot OUT.png] [--json OUT.json] [--quiet]

Each INSTANCE is a provisioning instance file; only its network is used (topology, spectrum,
guard band, K, modulation table, classes and retained-fraction menu); the requests come from the
traffic options. Every policy sees the same requests at each (load, seed). With one seed the
intervals are batch means; with several, they come from the independent replications.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coopt.errors import UsageError

if TYPE_CHECKING:  # the simulator loads Pyomo; the command imports it when it runs, not at --help
    from coopt.problems.provisioning import model as P
    from coopt.problems.provisioning.simulation import RunControl, SimulationResult, Traffic
    from coopt.problems.provisioning.simulation.statistics import Estimate

#: The most measured (or warm-up) arrivals one run may simulate (some minutes of one core).
MAX_ARRIVALS = 10**7
#: The most batches of a batch-means interval, and the most replications per point.
MAX_BATCHES = 10_000
MAX_SEEDS = 10_000
#: The most slots per link (the loader's limit on num_slots).
MAX_SLOTS = 4096


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulate online provisioning: blocking vs load per class and policy")
    p.add_argument("instances", nargs="+", metavar="INSTANCE", help="provisioning instance files (network)")
    p.add_argument("--loads", required=True, help="offered loads in Erlangs, comma-separated")
    p.add_argument("--policies", default=None,
                   help="comma-separated policy names (docs/provisioning.md lists them); the first is the "
                        "baseline (default: the single-layer ones)")
    p.add_argument("--arrivals", type=int, default=20_000, help="measured arrivals per run (after warm-up)")
    p.add_argument("--warmup", type=int, default=2_000, help="arrivals discarded at the start of each run")
    p.add_argument("--batches", type=int, default=10, help="batches for the batch-means interval")
    p.add_argument("--seeds", type=int, default=1, help="independent replications per point")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--bandwidths", default="25,50,75,100", help="request bandwidths in Gb/s, drawn uniformly")
    p.add_argument("--shares", default="", help="class shares, comma-separated (default: equal)")
    p.add_argument("--max-degradation", default="",
                   help="each class's largest withheld fraction delta_p, highest class first, "
                        "comma-separated (default: the instance's classes)")
    p.add_argument("--holding", type=float, default=1.0, help="mean holding time in seconds")
    p.add_argument("--slots", type=int, default=None, help="override the number of slots per link")
    p.add_argument("--plot", metavar="OUT.png", help="write blocking vs load per class (PNG)")
    p.add_argument("--json", metavar="OUT.json", help="write every run's statistics as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_simulate)


def _network_name(path: str, taken: dict[str, Any]) -> str:
    """The name a network is reported under: its file's stem, or the path as given where another
    file has that stem (and a count where the same path is given twice)."""
    name = Path(path).stem
    if name not in taken:
        return name
    name, n = str(path), 2
    while name in taken:
        name, n = f"{path} ({n})", n + 1
    return name


def _numbers(text: str, what: str, positive: bool = True) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--{what}: expected comma-separated numbers, got {text!r}") from None
    if not values or (positive and min(values) <= 0) or not all(math.isfinite(v) for v in values):
        raise UsageError(f"--{what}: expected positive numbers, got {text!r}")
    return values


@dataclasses.dataclass(frozen=True)
class Point:
    """One (network, load, policy) point over all seeds, per class and overall."""

    network: str
    load_erlang: float
    policy: str
    classes: tuple[str, ...]
    blocking: tuple[Estimate, ...]  # per class
    overall: Estimate
    degraded_share: tuple[float, ...]  # degraded / served, per class
    prolongation: tuple[float, ...]
    utilization: float
    fragmentation: float
    runs: tuple[SimulationResult, ...]


def _combine(network: str, runs: list[SimulationResult]) -> Point:
    from coopt.problems.provisioning.simulation import batch_means

    first = runs[0]
    names = tuple(c.name for c in first.classes)
    if len(runs) == 1:
        blocking = tuple(c.blocking for c in first.classes)
        overall = first.blocking
    else:
        blocking = tuple(batch_means([r.classes[i].blocked / max(1, r.classes[i].arrivals) for r in runs])
                         for i in range(len(names)))
        overall = batch_means([r.blocking.mean for r in runs])
    degraded, prolongation = [], []
    for i in range(len(names)):
        served = sum(r.classes[i].arrivals - r.classes[i].blocked for r in runs)
        degraded.append(sum(r.classes[i].degraded for r in runs) / served if served else math.nan)
        values = [v for v in (r.classes[i].mean_prolongation for r in runs) if not math.isnan(v)]
        prolongation.append(sum(values) / len(values) if values else math.nan)
    return Point(network, first.load_erlang, first.policy, names, blocking, overall, tuple(degraded),
                 tuple(prolongation), sum(r.utilization for r in runs) / len(runs),
                 sum(r.fragmentation for r in runs) / len(runs), tuple(runs))


def sweep(
    networks: dict[str, P.Instance],
    loads: tuple[float, ...],
    policies: list[str],
    traffic: Traffic,
    control: RunControl,
    seeds: int,
    report=None,
) -> list[Point]:
    """Every (network, load, policy) point; ``report(text)`` gets one line per finished run. A
    Ctrl-C raises :class:`Interrupted` with the points finished so far."""
    points: list[Point] = []
    try:
        _sweep_into(points, networks, loads, policies, traffic, control, seeds, report)
    except KeyboardInterrupt:
        raise Interrupted(points) from None
    return points


class Interrupted(Exception):
    """A sweep stopped by Ctrl-C (or SIGTERM, SIGHUP); ``points`` holds the points it finished."""

    def __init__(self, points: list[Point]):
        super().__init__(f"interrupted after {len(points)} point(s)")
        self.points = points


def _sweep_into(points: list[Point], networks, loads, policies, traffic, control, seeds, report) -> None:
    from coopt.problems.provisioning.simulation import simulate

    total = len(networks) * len(loads) * len(policies) * seeds
    done = 0
    for name, instance in networks.items():
        for load_erlang in loads:
            for policy in policies:
                runs = []
                for s in range(seeds):
                    run_control = dataclasses.replace(control, seed=control.seed + s)
                    result = simulate(instance, dataclasses.replace(traffic, load_erlang=load_erlang), policy,
                                      run_control)
                    runs.append(result)
                    done += 1
                    if report is not None:
                        report(f"[{done}/{total}] {name} {load_erlang:g} Erl {policy} "
                               f"seed {run_control.seed}: blocking {result.blocking.mean:.4f}, "
                               f"{result.wall_s:.1f} s")
                points.append(_combine(name, runs))


def claims(points: list[Point], baseline: str) -> list[tuple[str, bool]]:
    """The paper's qualitative claims, checked point by point against ``baseline``."""
    out_claims = []
    base = {(p.network, p.load_erlang): p for p in points if p.policy == baseline}
    for p in points:
        if p.policy == baseline or (p.network, p.load_erlang) not in base:
            continue
        b = base[(p.network, p.load_erlang)]
        fewer = p.overall.mean < b.overall.mean
        out_claims.append((f"{p.network} {p.load_erlang:g} Erl {p.policy}: fewer failures overall "
                           f"({p.overall.mean:.4f} vs {b.overall.mean:.4f})", fewer))
        gains = [relative_reduction(b.blocking[i].mean, p.blocking[i].mean) for i in range(len(p.classes))]
        if not any(math.isnan(g) for g in gains):
            first = all(gains[0] > g for g in gains[1:])  # strictly: a tie is not a largest gain
            out_claims.append((f"{p.network} {p.load_erlang:g} Erl {p.policy}: largest relative gain for "
                               f"{p.classes[0]} (gains {', '.join(f'{g:+.0%}' for g in gains)})", first))
    return out_claims


def relative_reduction(base: float, other: float) -> float:
    """(BP_base - BP) / BP_base; NaN when the baseline never blocks."""
    return (base - other) / base if base > 0 else math.nan


#: Note on every panel with a measured blocking of zero (a log axis has no place for it).
ZERO_NOTE = "open marker on the axis: measured 0"


def figure(points: list[Point]) -> Any:
    """Blocking against load, a panel per (network, class), a line per policy, on a new matplotlib
    ``Figure``. The axis is logarithmic; a measured blocking of zero has no place on it and is
    drawn as an open marker on the x axis, with a "0" at the axis' foot, never as a small number.
    The legend sits outside the panels."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    networks = list(dict.fromkeys(p.network for p in points))
    policies = list(dict.fromkeys(p.policy for p in points))
    classes = points[0].classes
    fig = Figure(figsize=(4.2 * len(classes) + 1.6, 3.4 * len(networks)), layout="constrained")
    axes = fig.subplots(len(networks), len(classes), squeeze=False, sharey="row")
    for row, network in enumerate(networks):
        for col, cls in enumerate(classes):
            ax = axes[row][col]
            zeros = False
            for index, policy in enumerate(policies):
                mine = [p for p in points if p.network == network and p.policy == policy]
                colour = f"C{index % 10}"
                measured = [p for p in mine if p.blocking[col].mean > 0]
                ax.errorbar([p.load_erlang for p in measured], [p.blocking[col].mean for p in measured],
                            yerr=[_finite(p.blocking[col].half_width) or 0.0 for p in measured],
                            marker="o", capsize=3, label=policy, color=colour)
                zero = [p.load_erlang for p in mine if p.blocking[col].mean == 0]
                if zero:
                    zeros = True
                    # rings of decreasing size: policies that all measured 0 at a load stay visible
                    ax.plot(zero, [0.0] * len(zero), transform=ax.get_xaxis_transform(), linestyle="none",
                            marker="o", fillstyle="none", markersize=max(4.0, 11.0 - 2.0 * index),
                            color=colour, clip_on=False, gid="measured-zero")
            if any(p.network == network and p.blocking[col].mean > 0 for p in points):
                ax.set_yscale("log")
            else:
                ax.set_ylim(0.0, 1.0)
            if zeros:
                ax.text(-0.02, 0.0, "0", transform=ax.transAxes, ha="right", va="center", fontsize=9)
            ax.set_title(f"{network}: class {cls}")
            ax.set_xlabel("offered load (Erlang)" + (f"\n{ZERO_NOTE}" if zeros else ""))
            if col == 0:
                ax.set_ylabel("service failure ratio")
            ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    return fig


def plot(points: list[Point], path: str) -> None:
    figure(points).savefig(path, dpi=120)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def points_json(points: list[Point]) -> list[dict[str, Any]]:
    rows = []
    for p in points:
        rows.append({
            "network": p.network, "load_erlang": p.load_erlang, "policy": p.policy,
            "classes": [
                {"class": c, "blocking": b.mean, "half_width": _finite(b.half_width),
                 "degraded_share": _finite(d), "mean_prolongation": _finite(t)}
                for c, b, d, t in zip(p.classes, p.blocking, p.degraded_share, p.prolongation, strict=True)
            ],
            "blocking": p.overall.mean, "utilization": p.utilization, "fragmentation": p.fragmentation,
            "seeds": [r.seed for r in p.runs], "wall_s": sum(r.wall_s for r in p.runs),
        })
    return rows


def with_max_degradation(instance: P.Instance, bounds: tuple[float, ...]) -> P.Instance:
    """The instance with class p's delta_p set to ``bounds[p - 1]``."""
    classes = tuple(dataclasses.replace(c, max_degradation=d)
                    for c, d in zip(instance.classes, bounds, strict=True))
    return dataclasses.replace(instance, classes=classes)


def cmd_simulate(args: argparse.Namespace) -> int:
    from coopt.console import out
    from coopt.instance import load
    from coopt.output import beside_if_interrupted, dumps, output_path, write_atomic
    from coopt.problems.provisioning.simulation import POLICIES, SINGLE_LAYER, RunControl, Traffic

    json_target = output_path(args.json, "--json") if args.json else None
    if args.plot:
        output_path(args.plot, "--plot", (".png", ".pdf", ".svg"))
    loads = _numbers(args.loads, "loads")
    bandwidths = _numbers(args.bandwidths, "bandwidths")
    policies = [p for p in (args.policies or ",".join(SINGLE_LAYER)).split(",") if p]
    for policy in policies:
        if policy not in POLICIES:
            raise UsageError(f"--policies: unknown policy {policy!r}; expected some of {', '.join(POLICIES)}")
    for flag, value, low, high in (("arrivals", args.arrivals, 1, MAX_ARRIVALS),
                                   ("warmup", args.warmup, 0, MAX_ARRIVALS),
                                   ("batches", args.batches, 2, MAX_BATCHES),
                                   ("seeds", args.seeds, 1, MAX_SEEDS),
                                   ("seed", args.seed, 0, 2**32 - 1)):
        if not low <= value <= high:
            raise UsageError(f"--{flag} must be in {low}..{high}, got {value}")
    if not (math.isfinite(args.holding) and args.holding > 0):
        raise UsageError(f"--holding must be a finite number of seconds > 0, got {args.holding}")
    if args.slots is not None and not 1 <= args.slots <= MAX_SLOTS:
        raise UsageError(f"--slots must be in 1..{MAX_SLOTS}, got {args.slots}")
    networks: dict[str, P.Instance] = {}
    for path in args.instances:
        loaded = load(path)
        if loaded.problem.name != "provisioning":
            raise UsageError(f"{path}: expected a provisioning instance, got problem {loaded.problem.name!r}")
        instance = loaded.instance
        if args.slots is not None:
            instance = dataclasses.replace(instance, num_slots=args.slots)
        networks[_network_name(path, networks)] = instance
    shares = _numbers(args.shares, "shares") if args.shares else ()
    bounds = _numbers(args.max_degradation, "max-degradation", positive=False) if args.max_degradation else ()
    if any(not 0.0 <= d <= 0.999 for d in bounds):
        raise UsageError(f"--max-degradation: expected fractions in [0, 0.999], got {args.max_degradation!r}")
    for name, instance in networks.items():
        if shares and len(shares) != len(instance.classes):
            raise UsageError(f"--shares: {name} has {len(instance.classes)} classes, "
                             f"got {len(shares)} shares")
        if bounds:
            if len(bounds) != len(instance.classes):
                raise UsageError(f"--max-degradation: {name} has {len(instance.classes)} classes, "
                                 f"got {len(bounds)} values")
            networks[name] = with_max_degradation(instance, bounds)
    traffic = Traffic(loads[0], args.holding, bandwidths, shares)
    control = RunControl(arrivals=args.arrivals, warmup=args.warmup, batches=args.batches, seed=args.seed)

    def report(text: str) -> None:
        if not args.quiet:
            print(text, file=sys.stderr, flush=True)

    interrupted = False
    main_thread = threading.current_thread() is threading.main_thread()  # only it may set handlers
    term = {sig: signal.signal(sig, signal.default_int_handler)
            for sig in (signal.SIGTERM, signal.SIGHUP) if main_thread}
    try:
        points = sweep(networks, loads, policies, traffic, control, args.seeds, report)
    except Interrupted as stop:
        points, interrupted = stop.points, True
        if main_thread:  # a further Ctrl-C must not cut short the writing of what finished
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    finally:
        for sig, old in term.items():
            signal.signal(sig, old)
    if points:
        print_points(points, policies[0])
    if args.json and (points or not interrupted):
        target = beside_if_interrupted(json_target, interrupted)
        write_atomic(target, dumps(points_json(points), indent=1) + "\n")
        if target is not None:
            out.print(f"wrote {target if target != json_target else args.json}")
    if args.plot and points:
        plot(points, args.plot)
        out.print(f"wrote {args.plot}")
    if interrupted:
        print(f"coopt: interrupted after {len(points)} finished point(s)", file=sys.stderr)
        return 130
    return 0


def print_points(points: list[Point], baseline: str) -> None:
    from rich.table import Table

    from coopt.console import out

    for network in dict.fromkeys(p.network for p in points):
        mine = [p for p in points if p.network == network]
        table = Table(title=f"{network}: service failure ratio (95% CI) per class", title_justify="left")
        table.add_column("load (Erl)", justify="right")
        table.add_column("policy")
        for cls in mine[0].classes:
            table.add_column(cls, justify="right")
        for col in ("all", "degraded", "t'/t", "util."):
            table.add_column(col, justify="right")
        base = {p.load_erlang: p for p in mine if p.policy == baseline}
        for p in mine:
            cells = []
            for i, b in enumerate(p.blocking):
                text = f"{b.mean:.4f}±{b.half_width:.4f}" if math.isfinite(b.half_width) else f"{b.mean:.4f}"
                ref = base.get(p.load_erlang)
                if ref is not None and p.policy != baseline:
                    gain = relative_reduction(ref.blocking[i].mean, b.mean)
                    text += "" if math.isnan(gain) else f" ({gain:+.0%})"
                cells.append(text)
            degraded = sum(d for d in p.degraded_share if not math.isnan(d)) / len(p.degraded_share)
            stretch = [t for t in p.prolongation if not math.isnan(t)]
            table.add_row(f"{p.load_erlang:g}", p.policy, *cells, f"{p.overall.mean:.4f}", f"{degraded:.1%}",
                          f"{max(stretch):.2f}" if stretch else "-", f"{p.utilization:.1%}")
        out.print(table)
    verdicts = claims(points, baseline)
    if verdicts:
        out.print(f"paper's claims vs {baseline} (gain = relative reduction of the failure ratio):")
        for text, ok in verdicts:
            out.print(f"  {'yes' if ok else 'NO '}  {text}")
