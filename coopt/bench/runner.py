"""``coopt bench``: every (instance, method, seed) task of the chosen families, run in parallel,
one JSON line per finished task, then a report.

Built on the contract only (the registry, ``Problem.generate / sizes / methods``, the shipped
instance tiers and :func:`coopt.run.run`), so a newly registered problem is benchmarked
with no further code.

Families
    ``shipped-small``  the ``0-*.toml`` files of each problem;
    ``shipped``        every shipped file;
    ``generated``      ``Problem.generate(seed, size)`` for size in ``Problem.sizes`` (or ``--sizes``);
    ``scaling``        sizes grow (the problem's sizes, then doubling) while an exact method still
                       proves optimality within the time limit; the heuristics then run at 10x the
                       largest size proven optimal;
    ``large``          the papers' sizes: the ``2-*`` files and ``Problem.large_sizes``, with the
                       heuristics and the dual bound only (``bound``): the report gives each
                       heuristic's certified gap, (heuristic - bound) / |bound|.

Every family but ``large`` runs every method the problem has (``Problem.all_methods``: the exact
ones, the heuristics, and ``bound`` where there is one). A results folder holds one time limit:
rerunning it with another ``--time-limit`` is refused (the rows would not be comparable).

A task is identified by its key ``problem|instance|method|seed=N`` (with ``|solver=NAME`` when the
exact routes run on a MILP solver other than HiGHS, ``--solver``); a task whose key is already in
``OUT/results.jsonl`` is not run again, so a killed run resumes where it stopped. A results folder
holds one solver, as it holds one time limit: a rerun with another ``--solver`` is refused. Seeds: with
``--seeds N`` every task runs for seeds 0..N-1; the seed drives HiGHS and the heuristics and, for
generated instances, the generator too.

Parallelism: a local process pool (``--jobs``) or, with ``--scheduler``, a Dask distributed cluster
(imported only then), fed in chunks. Every solve gets one HiGHS thread.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import coopt
from coopt import registry
from coopt.bench.families import DEFAULT_FAMILIES, FAMILIES  # noqa: F401  (the runner's families)
from coopt.errors import UsageError
from coopt.output import dumps
from coopt.problem import Problem, SolveOptions, close
from coopt.solvers.pyomo_route import DEFAULT as DEFAULT_SOLVER

RESULTS = "results.jsonl"

#: Scaling: the heuristics run at this multiple of the largest size an exact method proved optimal.
SCALE_UP = 10
#: Scaling: at most this many sizes are tried per problem (the last ones double each time).
MAX_SCALING_STEPS = 12
#: Dask: at most this many tasks are in flight at once (submitting 10^5 futures at once stalls the
#: scheduler for minutes, dask/distributed#2181).
DASK_CHUNK = 1000
#: Seconds to wait for a Dask scheduler to answer.
DASK_CONNECT_TIMEOUT = 10.0
#: Seconds added to twice the time limit before the watchdog stops an exact method (see wall_cap).
WATCHDOG_SLACK = 30.0


# -- tasks -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One method on one instance with one seed. ``path`` (a shipped file) or ``size`` (a generated
    instance, seeded by ``seed``) names the instance. ``module`` is where the problem object lives:
    a worker imports that module alone (so one broken problem module does not stop the others, and
    a problem registered at run time, as in the tests, is found too)."""

    problem: str
    module: str
    family: str
    method: str
    seed: int
    time_limit: float | None
    path: str | None = None
    size: int | None = None
    solver: str = DEFAULT_SOLVER

    @property
    def instance(self) -> str:
        return f"file:{Path(self.path).name}" if self.path is not None else f"generated:size={self.size}"

    @property
    def key(self) -> str:
        """``problem|instance|method|seed=N``, and ``|solver=NAME`` for a MILP solver other than
        HiGHS: a run with another solver never takes a finished row of this one for its own."""
        key = f"{self.problem}|{self.instance}|{self.method}|seed={self.seed}"
        return key if self.solver == DEFAULT_SOLVER else f"{key}|solver={self.solver}"


def _module_of(problem: Problem) -> str:
    """The module holding ``problem`` as a global (where a worker can find it again), or ""."""
    guess = getattr(problem.check, "__module__", "")
    for name in [guess, *sorted(sys.modules)]:
        module = sys.modules.get(name)
        if module is not None and any(value is problem for value in list(vars(module).values())):
            return name
    return ""


def _tasks(
    problem: Problem,
    family: str,
    seeds: int,
    time_limit: float | None,
    methods: Sequence[str],
    *,
    path: Path | None = None,
    size: int | None = None,
    solver: str = DEFAULT_SOLVER,
) -> list[Task]:
    module = _module_of(problem)
    return [
        Task(
            problem.name,
            module,
            family,
            method,
            seed,
            time_limit,
            path=None if path is None else str(path),
            size=size,
            solver=solver,
        )
        for seed in range(seeds)
        for method in methods
    ]


def plan(
    problems: Sequence[Problem],
    families: Sequence[str],
    *,
    seeds: int = 1,
    sizes: Sequence[int] | None = None,
    time_limit: float | None = None,
    shipped: Callable[[str], list[Path]] | None = None,
    small_shipped: Callable[[str], list[Path]] | None = None,
    solver: str = DEFAULT_SOLVER,
) -> list[Task]:
    """The tasks of the static families (``scaling`` is planned round by round, see
    :class:`Climb`), without duplicates, in a stable order; every exact route runs on ``solver``."""
    from coopt import shipped as files_of

    shipped = shipped or files_of.shipped
    small_shipped = small_shipped or files_of.small_shipped
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown family {unknown[0]!r}; known: {', '.join(FAMILIES)}")
    tasks: dict[str, Task] = {}
    for problem in problems:
        for family in families:
            if family in ("shipped-small", "shipped"):
                files = small_shipped(problem.name) if family == "shipped-small" else shipped(problem.name)
                for path in files:
                    for task in _tasks(problem, family, seeds, time_limit, problem.all_methods, path=path,
                                       solver=solver):
                        tasks.setdefault(task.key, task)
            elif family == "generated":
                for size in sizes or problem.sizes:
                    for task in _tasks(problem, family, seeds, time_limit, problem.all_methods, size=size,
                                       solver=solver):
                        tasks.setdefault(task.key, task)
            elif family == "large":
                methods = sorted(problem.heuristics) + (["bound"] if problem.bound is not None else [])
                for path in [p for p in shipped(problem.name) if p.name.startswith("2-")]:
                    for task in _tasks(problem, family, seeds, time_limit, methods, path=path, solver=solver):
                        tasks.setdefault(task.key, task)
                for size in problem.large_sizes:
                    for task in _tasks(problem, family, seeds, time_limit, methods, size=size, solver=solver):
                        tasks.setdefault(task.key, task)
    return list(tasks.values())


# -- one task, in a worker -------------------------------------------------------------------


@cache
def git_revision() -> str:
    """``git rev-parse HEAD`` of the checkout coopt is imported from, or "unknown"."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(coopt.__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


@cache
def _highs_version() -> str:
    from coopt.solvers.highs import highs_version

    return highs_version()


@cache
def solver_version(name: str) -> str:
    """The version of MILP solver ``name`` (HiGHS or a :mod:`coopt.solvers.pyomo_route` one), or
    "unknown" where it cannot run here (the task's row says why)."""
    from coopt.solvers import pyomo_route

    try:
        return _highs_version() if name == DEFAULT_SOLVER else pyomo_route.version(name)
    except Exception:
        return "unknown"


def resolve(name: str, module: str = "") -> Problem:
    """The problem called ``name``: the ``Problem`` of that name in ``module`` (importing only that
    module, so that one broken problem module does not stop the others), else from the registry."""
    if module:
        found = importlib.import_module(module)
        for value in vars(found).values():
            if isinstance(value, Problem) and value.name == name:
                return value
    return registry.get(name)


def _count_numbers(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return 1
    if isinstance(value, dict):
        return sum(_count_numbers(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_count_numbers(v) for v in value)
    return 0


def verdict(row: dict[str, Any]) -> str:
    """``ok`` (checked solution, claimed objective = recomputed), ``none`` (no solution, e.g. a
    time limit), ``error`` (the method crashed) or ``failed`` (the checker rejects the solution or
    recomputes a different objective)."""
    if row.get("status") == "error":
        return "error"
    if row.get("solution") is None:
        return "none"
    check = row.get("check") or {}
    if not check.get("feasible"):
        return "failed"
    claimed = (row.get("solution") or {}).get("objective", row.get("objective"))
    recomputed = check.get("objective_recomputed")
    if claimed is None or recomputed is None or not close(float(claimed), float(recomputed)):
        return "failed"
    return "ok"


class Overrun(BaseException):
    """Raised by the watchdog in a task that ran past its wall-clock cap. A BaseException, so that
    the solve route's own error handling does not turn it into an ordinary error row."""


@contextmanager
def watchdog(seconds: float | None) -> Iterator[None]:
    """Raise :class:`Overrun` in this thread after ``seconds`` of wall time (SIGALRM; only in the
    main thread of a process, as in the local workers; elsewhere, as in Dask worker threads, the
    methods' own time limits are all there is)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Overrun(f"stopped by the bench watchdog after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def wall_cap(task: Task, kind: str) -> float | None:
    """A heuristic gets the time limit as its wall-clock cap; an exact method, which honours the limit
    itself, gets a backstop of twice the limit plus :data:`WATCHDOG_SLACK` (building a large model
    is not covered by HiGHS' limit), and so does making the instance (loading or generating)."""
    if task.time_limit is None:
        return None
    return task.time_limit if kind == "heuristic" else 2 * task.time_limit + WATCHDOG_SLACK


def _failed_row(task: Task, status: str, why: str, seconds: float) -> dict[str, Any]:
    return {
        "problem": task.problem,
        "instance": task.instance,
        "instance_sha256": "",
        "method": task.method,
        "status": status,
        "sense": None,
        "objective": None,
        "bound": None,
        "gap": None,
        "times": {"warm_start": 0.0, "build": 0.0, "handoff": 0.0, "solve": 0.0, "total": seconds},
        "solver": {},
        "seed": task.seed,
        "threads": 1,
        "solution": None,
        "check": {"feasible": False, "violations": [why], "objective_recomputed": None},
    }


def _milp_extras(
    trace: Sequence[tuple[float, float | None, float | None]], size: dict[str, int], nodes: int | None
) -> dict[str, Any]:
    """The MILP route's incumbent history (``[t, primal, dual]`` lists, HiGHS' seconds, problem
    units), model size and node count as row keys; None for the other methods."""
    return {
        "trace": [list(point) for point in trace] or None,
        "model_size": dict(size) or None,
        "nodes": nodes,
    }


def method_kind(method: str, heuristics) -> str:
    """``bound`` (a dual bound, no solution), ``heuristic`` or ``exact``."""
    if method == "bound":
        return "bound"
    return "heuristic" if method in heuristics else "exact"


def run_task(task: Task) -> dict[str, Any]:
    """Run one task and return its result row; never raises (a failure is a row saying why)."""
    from coopt.instance import load, to_toml
    from coopt.run import run

    started = time.perf_counter()
    row: dict[str, Any]
    numbers = sense = None
    kind = method_kind(task.method, ())
    try:
        problem = resolve(task.problem, task.module)
        kind = method_kind(task.method, problem.heuristics)
        sense = problem.sense
        with watchdog(wall_cap(task, "exact")):  # making the instance: only the backstop
            if task.path is not None:
                loaded = load(
                    task.path, registry_get=lambda n: problem if n == problem.name else registry.get(n)
                )
                instance, sha = loaded.instance, loaded.sha256
            else:
                instance = problem.generate(task.seed, task.size)
                sha = hashlib.sha256(to_toml(problem, instance).encode()).hexdigest()
            numbers = _count_numbers(problem.dump(instance))
        options = SolveOptions(time_limit=task.time_limit, threads=1, seed=task.seed, solver=task.solver)
        started = time.perf_counter()  # from here on the method's own time (and the cap) counts
        with watchdog(wall_cap(task, kind)):
            report = run(problem, instance, task.method, options, path=task.instance, sha256=sha)
        row = report.to_json()
        row.update(_milp_extras(report.trace, report.model_size, report.nodes))
    except Overrun as exc:  # too slow: no solution within the cap, like a time limit
        row = _failed_row(task, "time_limit", str(exc), time.perf_counter() - started)
    except Exception as exc:  # loading or generating failed: the row says so, loudly
        row = _failed_row(task, "error", f"{type(exc).__name__}: {exc}", time.perf_counter() - started)
    row["sense"] = row.get("sense") or sense
    row.setdefault("trace", None)
    row.setdefault("model_size", None)
    row.setdefault("nodes", None)
    row.update(
        key=task.key,
        family=task.family,
        path=task.path,
        size=task.size,
        instance_numbers=numbers,
        time_limit=task.time_limit,
        git_revision=git_revision(),
        highs_version=_highs_version(),
        milp_solver=task.solver,
        milp_solver_version=solver_version(task.solver),
        coopt_version=coopt.__version__,
        python=platform.python_version(),
        host=platform.node(),
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    row["kind"] = kind
    row["verdict"] = verdict(row)
    return row


# -- results file ----------------------------------------------------------------------------


def read_results(path: Path) -> list[dict[str, Any]]:
    """Rows of a results file. A half-written last line (the run was killed while writing it) is
    cut off the file, so that appending starts on a fresh line."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    complete = raw[: raw.rfind(b"\n") + 1]
    if len(complete) != len(raw):
        with path.open("r+b") as fh:
            fh.truncate(len(complete))
    rows = []
    for number, line in enumerate(complete.decode("utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number} is not JSON ({exc})") from None
    return rows


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, set | frozenset | tuple):
        return sorted(value) if isinstance(value, set | frozenset) else list(value)
    return str(value)


class ResultsWriter:
    """Appends one row per line and syncs it, so a kill loses at most the line being written."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(dumps(row, default=_json_default, sort_keys=True) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


# -- executors -------------------------------------------------------------------------------

#: Called with each finished row; returns the tasks that row makes ready (the next scaling size).
OnRow = Callable[[dict[str, Any]], list[Task]]


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (see LocalExecutor.__exit__)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class LocalExecutor:
    """Tasks in a pool of ``jobs`` spawned worker processes (``jobs == 1``: in this process).
    Spawned workers inherit nothing from the parent but what each task carries."""

    def __init__(self, jobs: int):
        self.jobs = max(1, jobs)
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalExecutor:
        if self.jobs > 1:
            import multiprocessing

            self._pool = ProcessPoolExecutor(
                self.jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_interrupts
            )
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if self._pool is None:
            return
        if kind is not None:  # interrupted or failed: stop the running tasks now, not when they end
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def drive(self, tasks: Iterable[Task], on_row: OnRow) -> None:
        """Run ``tasks`` and every task ``on_row`` makes ready, until none is left."""
        queue = deque(tasks)
        if self._pool is None:
            while queue:
                queue.extend(on_row(run_task(queue.popleft())))
            return
        # A window of one task per worker beyond the running ones: tasks made ready by a result
        # start soon, and an interrupted run leaves little queued behind.
        pending: set = set()
        while queue or pending:
            while queue and len(pending) < 2 * self.jobs:
                pending.add(self._pool.submit(run_task, queue.popleft()))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                queue.extend(on_row(future.result()))


class DaskExecutor:
    """Tasks on a Dask distributed cluster at ``address`` (or through an existing ``client``),
    submitted in chunks: at most :data:`DASK_CHUNK` in flight."""

    def __init__(self, address: str | None = None, client: Any = None, chunk: int | None = None):
        self.address, self.chunk = address, chunk or DASK_CHUNK
        self._client, self._own = client, client is None

    def __enter__(self) -> DaskExecutor:
        if self._client is None:
            try:
                from dask.distributed import Client
            except ImportError:
                raise UsageError("--scheduler needs dask.distributed: pip install 'coopt[dist]'") from None
            try:
                self._client = Client(self.address, timeout=DASK_CONNECT_TIMEOUT)
            except OSError as exc:
                raise UsageError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._own and self._client is not None:
            self._client.close()

    def drive(self, tasks: Iterable[Task], on_row: OnRow) -> None:
        """Run ``tasks`` and every task ``on_row`` makes ready, until none is left."""
        from dask.distributed import as_completed

        queue = deque(tasks)
        stream = as_completed()
        in_flight = 0

        def top_up() -> None:
            nonlocal in_flight
            while queue and in_flight < self.chunk:
                task = queue.popleft()
                # pure=False: equal tasks are still separate runs (their times are what we measure).
                key = f"coopt-bench-{task.key}-{time.time_ns()}"
                stream.add(self._client.submit(run_task, task, pure=False, key=key))
                in_flight += 1

        top_up()
        for future in stream:
            in_flight -= 1
            queue.extend(on_row(future.result()))
            top_up()


# -- the run ---------------------------------------------------------------------------------


@dataclass
class BenchConfig:
    problems: list[str] = field(default_factory=list)  # empty: every registered problem
    families: tuple[str, ...] = DEFAULT_FAMILIES
    sizes: tuple[int, ...] | None = None
    seeds: int = 1
    time_limit: float | None = 60.0
    jobs: int = 2
    scheduler: str | None = None
    out: Path = Path("bench-out")
    solver: str = DEFAULT_SOLVER  # the MILP solver of every exact route


@dataclass
class BenchRun:
    """What a run did: every row of the results file (old and new) and how many it ran now."""

    rows: list[dict[str, Any]]
    ran: int
    skipped: int


class Progress:
    """Counts finished tasks; the CLI swaps in a rich progress bar with an ETA."""

    def add(self, total: int) -> None:
        """``total`` more tasks are planned."""

    def advance(self, row: dict[str, Any]) -> None:
        """One task finished with ``row``."""


def selected_problems(config: BenchConfig) -> list[Problem]:
    names = config.problems or registry.names()
    found = []
    for name in names:
        try:
            found.append(registry.get(name))
        except KeyError:
            raise KeyError(f"unknown problem {name!r}; known: {', '.join(registry.names())}") from None
    return found


def run_bench(
    config: BenchConfig,
    *,
    progress: Progress | None = None,
    client: Any = None,
    problems: Sequence[Problem] | None = None,
) -> BenchRun:
    """Run every task of ``config`` not yet in ``config.out/results.jsonl``; return all rows.

    ``client`` (a ``dask.distributed.Client``) overrides ``config.scheduler``; ``problems``
    overrides the registry lookup of ``config.problems``.
    """
    progress = progress or Progress()
    selected = list(problems) if problems is not None else selected_problems(config)
    results = Path(config.out) / RESULTS
    rows = {row["key"]: row for row in read_results(results)}
    limits = sorted({str(row.get("time_limit")) for row in rows.values()} - {str(config.time_limit)})
    if limits:
        raise UsageError(f"{results} holds results run with --time-limit {', '.join(limits)}; rerun with "
                         f"that limit to resume, or give another --out for {config.time_limit:g} s")
    solvers = sorted({str(row.get("milp_solver") or DEFAULT_SOLVER) for row in rows.values()}
                     - {config.solver})
    if solvers:
        raise UsageError(f"{results} holds results run with --solver {', '.join(solvers)}; rerun with that "
                         f"solver to resume, or give another --out for --solver {config.solver}")
    here = git_revision()
    revisions = sorted({str(row.get("git_revision")) for row in rows.values()} - {here, "unknown", "None"})
    if revisions and here != "unknown":
        others = ", ".join(r[:12] for r in revisions)
        raise UsageError(f"{results} holds results of revision {others}, not of this checkout "
                         f"({here[:12]}); resuming would mix the two: give another --out")
    static = plan(
        selected,
        [f for f in config.families if f != "scaling"],
        seeds=config.seeds,
        sizes=config.sizes,
        time_limit=config.time_limit,
        solver=config.solver,
    )
    claimed = {t.key for t in static}
    first = [t for t in static if t.key not in rows]
    skipped = len(static) - len(first)
    climbs = []
    if "scaling" in config.families:
        for problem in selected:
            climb = Climb(problem, config)
            first += climb.advance(rows, claimed)
            climbs.append(climb)
    progress.add(len(first))
    ran = 0

    def on_row(row: dict[str, Any]) -> list[Task]:
        nonlocal ran
        writer.write(row)
        rows[row["key"]] = row
        ran += 1
        progress.advance(row)
        ready = [t for climb in climbs for t in climb.advance(rows, claimed)]
        progress.add(len(ready))
        return ready

    if client is not None or config.scheduler:
        executor: Any = DaskExecutor(config.scheduler, client)
    else:
        executor = LocalExecutor(config.jobs)
    writer = ResultsWriter(results)
    try:
        with executor:
            executor.drive(first, on_row)
    finally:
        writer.close()
    return BenchRun(rows=list(rows.values()), ran=ran, skipped=skipped + sum(c.skipped for c in climbs))


# -- the scaling family ----------------------------------------------------------------------


def scaling_sizes(start: Sequence[int]) -> list[int]:
    """The sizes tried: ``start`` (sorted, distinct), then doubling, :data:`MAX_SCALING_STEPS` in all."""
    sizes = sorted(set(start)) or [1]
    while len(sizes) < MAX_SCALING_STEPS:
        sizes.append(2 * sizes[-1])
    return sizes[:MAX_SCALING_STEPS]


class Climb:
    """One problem's walk up the sizes of the ``scaling`` family.

    At each size every exact method still climbing and every heuristic runs on every seed. An
    exact method drops out at the first size where some seed is not proved optimal within the time
    limit (:func:`proved_within_limit`). When none is left (or the sizes run out) the heuristics
    run once more, at :data:`SCALE_UP` times the largest size proved, and the climb is over.
    Climbs of different problems advance independently, each as soon as its own results are in.
    """

    def __init__(self, problem: Problem, config: BenchConfig):
        self.problem, self.config = problem, config
        limit = problem.max_size
        self.sizes = [n for n in scaling_sizes(config.sizes or problem.sizes) if limit is None or n <= limit]
        self.step = 0
        self.alive = list(problem.exact_methods)
        self.largest: dict[str, int] = {}
        self.waiting: list[Task] = []  # the current round
        self.finale = False
        self.done = False
        self.skipped = 0  # tasks found already finished in the results file

    def _round(self) -> list[Task]:
        methods = (
            sorted(self.problem.heuristics) if self.finale else self.alive + sorted(self.problem.heuristics)
        )
        if self.finale:  # 10x the largest size proved, within what the generator can make
            size = SCALE_UP * max(self.largest.values())
            size = size if self.problem.max_size is None else min(size, self.problem.max_size)
        else:
            size = self.sizes[self.step]
        return _tasks(self.problem, "scaling", self.config.seeds, self.config.time_limit, methods, size=size,
                      solver=self.config.solver)

    def _close_round(self, rows: dict[str, dict[str, Any]]) -> None:
        if self.finale:
            self.done = True
            return
        for method in list(self.alive):
            if all(proved_within_limit(rows[t.key]) for t in self.waiting if t.method == method):
                self.largest[method] = self.sizes[self.step]
            else:
                self.alive.remove(method)
        self.step += 1
        if not self.alive or self.step == len(self.sizes):
            self.finale = True
            self.done = not (self.largest and self.problem.heuristics)

    def advance(self, rows: dict[str, dict[str, Any]], claimed: set[str]) -> list[Task]:
        """The tasks to start now: none while the current round is still running; else the next
        round's tasks that are neither finished nor already claimed (by a static family)."""
        ready: list[Task] = []
        while not self.done:
            if not self.waiting:
                self.waiting = self._round()
                fresh = [t for t in self.waiting if t.key not in rows]
                self.skipped += len(self.waiting) - len(fresh)
                ready += [t for t in fresh if t.key not in claimed]
                claimed.update(t.key for t in fresh)
            if any(t.key not in rows for t in self.waiting):
                break
            self._close_round(rows)
            self.waiting = []
        return ready


def proved_within_limit(row: dict[str, Any]) -> bool:
    """A checked, proved optimum whose whole run (build and hand-off included) took no longer than
    the row's time limit: what "the exact route proves optimality within the limit" means here."""
    limit = row.get("time_limit")
    in_time = limit is None or row["times"]["total"] <= limit
    return row.get("status") == "optimal" and row.get("verdict") == "ok" and in_time
