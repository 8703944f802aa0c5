"""Faults that lose nothing: every field that sizes a loop or an allocation has a declared maximum
and one past it is one clean error; generators, input files, nesting, simulation and bench options
are bounded; every output path (a folder, a FIFO, a full disk, a closed or broken pipe) answers with
one line and no traceback, and no run replaces a file with less than it held."""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import tomli_w
from test_usability import one_error_line, rest_of_stderr, run, start_coopt

from coopt import registry
from coopt.cli import main
from coopt.errors import InstanceError
from coopt.instance import load
from coopt.schema import Field
from coopt.shipped import instances_dir, shipped

SMALL = "topoopt/0-exact-n6-d2"


def coopt(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coopt", *args], capture_output=True, text=True,
                          timeout=timeout, **kwargs)




# -- 1: declared maxima ---------------------------------------------------------------------------


def sized_fields(fields, path=()):
    """(path of keys, field) of every integer field, tables and arrays of tables included."""
    for f in fields:
        if f.kind in ("int", "ints"):
            yield (*path, f.name), f
        if f.fields:
            yield from sized_fields(f.fields, (*path, (f.name, f.kind)))


def with_value(data: dict, path: tuple, field: Field, value: int) -> dict | None:
    """A copy of ``data`` with the field at ``path`` set to ``value`` (None: no such table there)."""
    data = copy.deepcopy(data)
    table = data
    for name, kind in path[:-1]:
        table = table.get(name)
        if kind == "tables":
            table = table[0] if isinstance(table, list) and table else None
        if not isinstance(table, dict):
            return None
    if field.kind == "ints":  # every entry, so a declared length still holds
        given = table.get(path[-1])
        table[path[-1]] = [value] * (len(given) if isinstance(given, list) and given else 1)
    else:
        table[path[-1]] = value
    return data


def sized_cases():
    for name, problem in registry.problems().items():
        if problem.schema is None:
            continue
        for path, field in sized_fields(problem.schema.fields):
            yield pytest.param(name, path, field, id=f"{name}:{'.'.join(p if isinstance(p, str) else p[0] for p in path)}")


@pytest.mark.parametrize(("name", "path", "field"), list(sized_cases()))
def test_every_integer_field_has_a_maximum_and_one_past_it_is_one_clean_error(name, path, field, tmp_path):
    assert field.max is not None, f"{name}: field {path[-1]} sizes work and declares no maximum"
    dotted = path[-1]
    for file in shipped(name):
        data = with_value(tomllib.loads(file.read_text()), path, field, int(field.max) + 1)
        if data is not None:
            break
    else:
        pytest.skip(f"no shipped {name} file holds the table of {dotted}")
    bad = tmp_path / "bad.toml"
    bad.write_text(tomli_w.dumps(data))
    with pytest.raises(InstanceError) as caught:
        load(bad)
    said = [e for e in caught.value.errors if f"<= {field.max}" in e.expected]
    assert said, caught.value
    assert said[0].field.endswith((dotted, f"{dotted}[0]")), caught.value


def test_a_huge_mixnet_region_is_refused_at_once(tmp_path, capsys):
    data = tomllib.loads(shipped("mixnet")[0].read_text())
    data["traffic"][0]["region"] = 2**70
    bad = tmp_path / "huge.toml"
    bad.write_text(tomli_w.dumps(data))
    code, _, stderr = run(capsys, "validate", bad)
    assert code == 2 and "region" in one_error_line(stderr)


# -- 2: generator sizes ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", registry.names())
def test_every_generator_declares_its_largest_size_and_refuses_more_at_once(name, capsys):
    problem = registry.get(name)
    assert problem.max_size is not None, f"{name} has no max_size"
    code, stdout, stderr = run(capsys, "generate", name, "--size", max(1_000_000, problem.max_size + 1))
    assert code == 2 and stdout == ""
    line = one_error_line(stderr)
    assert "--size" in line and str(problem.max_size) in line, line


# -- 3, 4, 18: what an input file may be ----------------------------------------------------------


def test_a_fifo_or_a_device_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        done = coopt("solve", str(path), timeout=30)  # blocked or reading forever: the timeout fails it
        assert done.returncode == 2 and "is not a regular file" in one_error_line(done.stderr)
    done = coopt("check", SMALL, str(fifo), timeout=30)
    assert done.returncode == 2 and "is not a regular file" in one_error_line(done.stderr)


def test_an_instance_file_larger_than_the_cap_is_refused_before_parsing(tmp_path, capsys, monkeypatch):
    from coopt import instance

    big = tmp_path / "big.toml"
    big.write_text(Path(shipped("topoopt")[0]).read_text() + "# padding\n" * 20)
    monkeypatch.setattr(instance, "MAX_FILE_BYTES", big.stat().st_size - 1)
    code, _, stderr = run(capsys, "validate", big)
    assert code == 2 and f"at most {big.stat().st_size - 1} bytes" in one_error_line(stderr)


def nested(depth: int, kind: str) -> str:
    if kind == "toml":
        return 'problem = "topoopt"\nschema_version = 1\nx = ' + "[" * depth + "]" * depth + "\n"
    return "[" * depth + "]" * depth


def test_deep_nesting_is_one_clean_line_for_validate_and_check(tmp_path, capsys):
    for depth in (40, 5000):
        deep = tmp_path / "deep.toml"
        deep.write_text(nested(depth, "toml"))
        code, _, stderr = run(capsys, "validate", deep)
        assert code == 2 and "deep" in one_error_line(stderr), stderr
        solution = tmp_path / "deep.json"
        solution.write_text(nested(depth, "json"))
        code, _, stderr = run(capsys, "check", SMALL, solution)
        assert code == 2 and "deep" in one_error_line(stderr), stderr


def test_a_long_expression_on_the_command_line_is_one_clean_line(capsys):
    code, _, stderr = run(capsys, "bound", "netcast.max_channels", "--set", "epsilon=" + "-" * 3000 + "1")
    assert code == 2 and "epsilon" in one_error_line(stderr)


def test_a_byte_order_mark_is_named(tmp_path, capsys):
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + Path(shipped("topoopt")[0]).read_bytes())
    code, _, stderr = run(capsys, "validate", bom)
    assert code == 2 and "BOM" in one_error_line(stderr)


# -- 5, 17: simulate --------------------------------------------------------------------------------

SIX = "provisioning/0-six-node-static"


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--arrivals", "1000000000000", "--arrivals must be in 1.."),
    ("--warmup", "1000000000000", "--warmup must be in 0.."),
    ("--seeds", "1000000000", "--seeds must be in 1.."),
    ("--holding", "inf", "--holding must be a finite number"),
    ("--holding", "nan", "--holding must be a finite number"),
    ("--slots", "100000", "--slots must be in 1.."),
])
def test_simulate_refuses_unbounded_options_at_once(option, value, says, capsys):
    code, stdout, stderr = run(capsys, "simulate", SIX, "--loads", "10", option, value)
    assert code == 2 and stdout == "" and says in one_error_line(stderr)


def test_simulate_keeps_two_networks_with_the_same_file_stem(tmp_path, capsys):
    paths = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "0-six-node-static.toml")
        paths[-1].write_bytes(shipped("provisioning")[0].with_name("0-six-node-static.toml").read_bytes())
    out = tmp_path / "points.json"
    code, _, _ = run(capsys, "simulate", *paths, "--loads", "10", "--arrivals", "200", "--warmup", "20",
                     "--policies", "ksp_first_fit", "--quiet", "--json", out)
    assert code == 0
    assert len({row["network"] for row in json.loads(out.read_text())}) == 2


# -- 9: bench options, checked before any work ------------------------------------------------------


def test_bench_out_is_checked_before_any_work(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    cases = [(a_file, "is a file"), (a_file / "sub", "is a file, not a folder"),
             ("/dev/null", "FIFO, device or socket")]
    if os.geteuid() != 0:  # root writes anywhere
        cases.append((locked / "bench-out", "cannot be written"))
    for out, says in cases:
        code, stdout, stderr = run(capsys, "bench", "topoopt", "--family", "shipped-small", "--out", out)
        assert code == 2 and stdout == "" and says in one_error_line(stderr), stderr
    assert a_file.read_text() == "keep" and list(locked.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_bench_time_limit_must_be_finite_and_positive(value, tmp_path, capsys):
    out = tmp_path / "never"
    code, _, stderr = run(capsys, "bench", "topoopt", "--time-limit", value, "--out", out)
    assert code == 2 and "--time-limit" in one_error_line(stderr) and not out.exists()


def test_bench_scheduler_without_dask_creates_nothing(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] in ("distributed", "dask") else real(name, *a))
    out = tmp_path / "never"
    code, _, stderr = run(capsys, "bench", "topoopt", "--scheduler", "tcp://127.0.0.1:1", "--out", out)
    assert code == 2 and "dask.distributed" in one_error_line(stderr) and not out.exists()


# -- 10: standard output that cannot be written ---------------------------------------------------


@pytest.mark.parametrize("argv", [["list"], ["generate", "pipeline"], ["solve", SMALL, "--json", "-"]])
def test_a_full_disk_on_standard_output_is_one_line(argv):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "coopt", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == \
        "coopt: error: cannot write standard output (No space left on device)"
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_a_closed_standard_output_is_one_line():
    done = subprocess.run([sys.executable, "-m", "coopt", "list"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=60,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 2
    assert "cannot write standard output (it is closed)" in one_error_line(done.stderr)


def test_a_reader_that_leaves_ends_the_command_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "coopt", "schema", "pipeline", "--markdown"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader left before the first line
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141 and stderr == ""


# -- 11, 12: output paths of solve and export -----------------------------------------------------


def test_json_to_a_path_ending_in_a_slash_is_refused(tmp_path, capsys):
    code, stdout, stderr = run(capsys, "solve", SMALL, "--method", "bound", "--json", f"{tmp_path}/newdir/")
    assert code == 2 and stdout == "" and "ends in '/'" in one_error_line(stderr)
    assert list(tmp_path.iterdir()) == []


def test_export_names_what_is_wrong_with_its_output(tmp_path, capsys):
    fifo = tmp_path / "m.fifo"
    os.mkfifo(fifo)
    for target, says in ((tmp_path, "is a folder"), (fifo, "is not a regular file"),
                         ("/dev/full", "is not a regular file"), ("-", "not standard output"),
                         (tmp_path / "m.txt", "ending in .lp or .mps")):
        code, _, stderr = run(capsys, "export", SMALL, "-o", target)
        assert code == 2 and says in one_error_line(stderr), stderr
    code, _, stderr = run(capsys, "export", SMALL, "--format", "lp", "-o", tmp_path / "m.mps")
    assert code == 2 and "--format is lp" in one_error_line(stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.fifo"]
    code, _, _ = run(capsys, "export", SMALL, "--format", "mps", "-o", tmp_path / "m.mps")
    assert code == 0 and (tmp_path / "m.mps").read_text().lstrip().split()[0] in ("*", "NAME")


# -- 13: the README's bench table -----------------------------------------------------------------


def test_update_readme_keeps_the_rows_of_problems_not_benched(tmp_path):
    from coopt.bench.report import README_BEGIN, README_END, analyse, summary_table, update_readme

    rows = [{"key": f"k{i}", "problem": "topoopt", "method": m, "kind": k, "instance": "file:a.toml",
             "family": "shipped", "seed": 0, "status": "optimal", "objective": 10.0 + i, "bound": 10.0,
             "verdict": "ok", "time_limit": 60.0,
             "times": {"total": 0.1, "build": 0.0, "handoff": 0.0, "solve": 0.1}, "check": {"feasible": True, "violations": []},
             "git_revision": "abc"} for i, (m, k) in enumerate((("exact", "exact"), ("greedy", "heuristic")))]
    analysis = analyse(rows)
    header = summary_table(analysis).splitlines()[:2]
    others = ["| aaa | exact | exact | 1/1 | 1 | - | - | - | - | 0 |",
              "| zzz | greedy | heuristic | 0/1 | 1 | - | - | - | - | 0 |"]
    old = "| topoopt | exact | exact | 0/9 | 9 | - | - | - | - | 0 |"
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_BEGIN}\n" + "\n".join([*header, others[0], old, others[1]])
                      + f"\n\n_Generated by `coopt bench` at revision old1._\n{README_END}\nend\n")
    update_readme(readme, analysis)
    table = [line for line in readme.read_text().splitlines() if line.startswith("| ")]
    assert table[1] == others[0] and table[-1] == others[1] and old not in table
    assert [line.split("|")[1].strip() for line in table[2:-1]] == ["topoopt"] * (len(table) - 3)
    assert "old1" in readme.read_text()


# -- 15: checkers judge malformed solutions -------------------------------------------------------


def solved(name: str, method: str, file: str | None = None) -> tuple:
    from coopt.problem import SolveOptions
    from coopt.run import run as run_method

    item = load(file or shipped(name)[0])
    report = run_method(item.problem, item.instance, method, SolveOptions(time_limit=60))
    assert report.check["feasible"]
    return item, report.solution


def test_a_chase_assignment_to_a_list_is_a_violation():
    item, solution = solved("chase", "heft")
    task = next(iter(solution["assignment"]))
    bad = {**solution, "assignment": {**solution["assignment"], task: [solution["assignment"][task]]}}
    violations = item.problem.check(item.instance, bad)
    assert any(task in str(v) for v in violations)


def test_a_pipeline_solution_without_its_recompute_list_is_a_violation():
    item, solution = solved("pipeline", "megatron_full", "pipeline/0-p3m4-recompute")
    assert solution["recompute"]
    gone = {k: v for k, v in solution.items() if k != "recompute"}
    assert any("recompute" in str(v) for v in item.problem.check(item.instance, gone))


# -- 18: a wrong flag, a method named twice -------------------------------------------------------


def test_a_boolean_given_a_string_is_one_line_about_that_field(tmp_path, capsys):
    data = tomllib.loads(Path(shipped("pipeline")[0]).with_name("0-p3m4-recompute.toml").read_text())
    assert data.get("allow_recompute") is True
    data["allow_recompute"] = "yes"
    bad = tmp_path / "flag.toml"
    bad.write_text(tomli_w.dumps(data))
    code, _, stderr = run(capsys, "validate", bad)
    line = one_error_line(stderr)
    assert code == 2 and "'allow_recompute'" in line and "expected true or false" in line


def test_a_method_named_twice_runs_once(tmp_path, capsys):
    out = tmp_path / "r.json"
    code, _, _ = run(capsys, "solve", SMALL, "--method", "bound,bound", "--json", out)
    assert code == 0 and [r["method"] for r in json.loads(out.read_text())] == ["bound"]


# -- 19: what the README says ---------------------------------------------------------------------

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_counts_closed_expressions_and_curves_truly():
    import re

    from coopt.errors import UsageError

    said = re.search(r"(\d+) entries .*?: (\d+) closed expressions, printable as LaTeX.*?and (\d+) curves",
                     README.read_text())
    assert said, "the README no longer says how many closed expressions and curves there are"
    entries = registry.closed_forms()
    printable = 0
    for entry in entries.values():
        try:
            entry.latex()
            printable += 1
        except UsageError:
            pass
    assert [int(n) for n in said.groups()] == [len(entries), printable, len(entries) - printable]


def test_every_coopt_command_in_the_readme_names_files_that_work_outside_a_checkout():
    commands = re.findall(r"^coopt (?:solve|simulate|validate|check) (\S+)", README.read_text(), re.M)
    assert commands
    for argument in commands:
        assert not argument.startswith(("instances/", "./instances", "coopt/instances")), argument


# -- 6, 7: a stop from outside keeps what finished, and never replaces a file with less ------------


@pytest.mark.slow
@pytest.mark.parametrize("signals", [(signal.SIGTERM,), (signal.SIGINT, signal.SIGINT)],
                         ids=["sigterm", "two-ctrl-c"])  # SIGHUP: the same handler as SIGTERM
def test_a_stop_from_outside_keeps_what_finished_and_an_existing_file(signals, tmp_path):
    hard = tmp_path / "hard.toml"
    # size 14 runs past a minute (see test_usability): the signal lands during the MILP
    assert main(["generate", "topoopt", "--size", "14", "--seed", "1", "-o", str(hard)]) == 0
    out = tmp_path / "r.json"
    out.write_text("[\"a good earlier result\"]\n")
    proc = start_coopt("solve", SMALL, str(hard), "--json", str(out))
    said = []
    for line in proc.stderr:
        said.append(line)
        if "on hard.toml" in line and re.search(r"incumbent \d", line):
            break
    assert proc.poll() is None, "".join(said)
    for sig in signals:
        proc.send_signal(sig)
        time.sleep(0.3)
    stderr = "".join(said) + rest_of_stderr(proc)
    assert proc.wait(timeout=30) == 130, stderr
    assert out.read_text() == "[\"a good earlier result\"]\n"
    reports = json.loads((tmp_path / "r.interrupted.json").read_text())
    assert reports[0]["status"] == "optimal" and "Traceback" not in stderr, stderr
    # a second Ctrl-C abandons HiGHS at once and still keeps the incumbent of the run it stopped
    assert [r["status"] for r in reports] == ["optimal", "interrupted"], stderr
    assert reports[1]["check"]["feasible"]


@pytest.mark.slow
def test_two_ctrl_c_during_a_cp_sat_solve_keep_its_incumbent(tmp_path):
    hard = tmp_path / "hard.toml"
    # chase's exact route is CP-SAT; size 10 finds its first incumbent within seconds (size 40 took
    # about 35 s) and still runs to its time limit (a gap of about 20 % after 40 s), so the two
    # Ctrl-C land in the search with an incumbent in hand
    assert main(["generate", "chase", "--size", "10", "--seed", "1", "-o", str(hard)]) == 0
    out = tmp_path / "r.json"
    proc = start_coopt("solve", str(hard), "--method", "exact", "--time-limit", "60", "--json", str(out))
    said = []
    for line in proc.stderr:
        said.append(line)
        if re.search(r"incumbent \d", line):
            break
    assert proc.poll() is None, "".join(said)
    for _ in range(2):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    stderr = "".join(said) + rest_of_stderr(proc)
    assert proc.wait(timeout=30) == 130, stderr
    [report] = json.loads(out.read_text())
    assert report["status"] == "interrupted" and report["check"]["feasible"], stderr
    assert "Traceback" not in stderr, stderr


# -- 8: simulate keeps the points that finished ---------------------------------------------------


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_simulate_writes_the_finished_points_beside_an_existing_file(presses, tmp_path):
    out = tmp_path / "points.json"
    out.write_text("[]\n")
    # 50,000 arrivals (was 100,000): a point still takes over a second, so the signal, sent as soon
    # as the second run reports, lands before the last three points are done
    proc = start_coopt("simulate", SIX, "--loads", "8,9,10,11,12", "--policies", "ksp_first_fit",
                       "--arrivals", "50000", "--json", str(out))
    said = []
    for line in proc.stderr:
        said.append(line)
        if line.startswith("[2/5]"):  # the first point is complete once the second run reports
            break
    for _ in range(presses):  # a second Ctrl-C lands while the first one's points are written
        proc.send_signal(signal.SIGINT)
        time.sleep(0.1)
    stderr = "".join(said) + rest_of_stderr(proc)
    assert proc.wait(timeout=60) == 130, stderr
    assert out.read_text() == "[]\n" and "Traceback" not in stderr
    kept = json.loads((tmp_path / "points.interrupted.json").read_text())
    assert 1 <= len(kept) < 5 and kept[0]["load_erlang"] == 8


@pytest.mark.slow
@pytest.mark.parametrize("jobs, then", [("2", 0.0), ("1", 4.0)])
def test_ctrl_c_during_bench_writes_the_report_of_the_finished_tasks(jobs, then, tmp_path):
    out = tmp_path / "bench"
    proc = start_coopt("bench", "topoopt", "--family", "shipped", "--jobs", jobs, "--out", str(out))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60

    while not (results.exists() and results.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(then)  # with --jobs 1 the tasks run in this process: by then HiGHS solves its MILPs
    proc.send_signal(signal.SIGINT)
    stderr = rest_of_stderr(proc)
    assert proc.wait(timeout=60) == 130, stderr
    finished = len(results.read_text().splitlines())
    assert f"({finished} rows, interrupted)" in stderr and (out / "report.md").exists()
    assert "Traceback" not in stderr and "leaked semaphore" not in stderr


# -- 14: an infeasible or empty instance is an answer on every route, never an error ---------------


def _edited(name: str, tmp_path: Path, pattern: str, replacement: str) -> Path:
    text = (instances_dir() / f"{name}.toml").read_text()
    edited, count = re.subn(pattern, replacement, text, flags=re.M)
    assert count, pattern
    path = tmp_path / f"{name.split('/')[0]}.toml"
    path.write_text(edited)
    return path


@pytest.mark.parametrize("name, pattern, replacement, answers", [
    # no layer fits 1 byte of SRAM: the bound's relaxation is +inf
    ("scope/0-chain6-m6", r"^sram_kib = .*$", "sram_kib = 0.001", {"exact", "milp", "bound"}),
    # no design holds 1e9 GB: the bound's LP relaxation is infeasible
    ("chase_arch/0-one-rack-four-types", r"^memory_required_gb = .*$", "memory_required_gb = 1e9",
     {"exact", "bound"}),
], ids=["scope-sram", "chase_arch-memory"])
def test_an_infeasible_instance_is_infeasible_on_every_route(name, pattern, replacement, answers,
                                                             tmp_path, capsys):
    path = _edited(name, tmp_path, pattern, replacement)
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "solve", str(path), "--method", "all", "--json", str(out))
    reports = json.loads(out.read_text())
    assert code == 0 and "ERROR" not in err, err
    assert {r["method"] for r in reports if r["status"] == "infeasible"} == answers, reports
    assert {r["status"] for r in reports} <= {"infeasible", "no_solution"}, reports


def test_an_instance_where_no_request_can_be_served_is_optimal_zero_on_every_exact_route(tmp_path, capsys):
    path = _edited("provisioning/0-six-node-static", tmp_path, r"reach_km = [0-9.]+", "reach_km = 1.0")
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "solve", str(path), "--method", "exact,milp,bound", "--json", str(out))
    reports = {r["method"]: r for r in json.loads(out.read_text())}
    assert code == 0 and "ERROR" not in err, err
    for method in ("exact", "milp"):
        assert reports[method]["status"] == "optimal" and reports[method]["objective"] == 0, reports[method]
        assert reports[method]["check"]["feasible"]
    assert reports["bound"]["bound"] == 0


# -- 16: the time limit bounds the whole run --------------------------------------------------------


@pytest.mark.parametrize("name, limit", [
    ("scope/2-resnet152-m64", "0.05"),  # the DP runs for seconds
    ("configtuner/2-mixtral-8x7b-256xh100", "0.05"),  # the enumeration, made slow below
])
def test_an_exact_method_that_is_not_a_solver_stops_at_the_time_limit(name, limit, tmp_path, capsys,
                                                                       monkeypatch):
    import time as clock

    from coopt.problems.configtuner import exact as configtuner_exact

    # the vectorised enumeration can finish within 0.05 s on a quiet machine: give it a second's
    # work, so the test asks whether the limit stops it, not how fast the machine is
    priced = configtuner_exact.best_of

    def slow_best_of(*args, **kwargs):
        clock.sleep(1.0)
        return priced(*args, **kwargs)

    monkeypatch.setattr(configtuner_exact, "best_of", slow_best_of)
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "solve", name, "--method", "exact", "--time-limit", limit, "--json", str(out))
    [report] = json.loads(out.read_text())
    assert code == 0 and report["status"] == "time_limit" and report["solution"] is None, err


def test_hecaton_exact_past_the_time_limit_keeps_its_warm_start(tmp_path, capsys):
    hard = tmp_path / "hard.toml"
    # the warm start alone takes longer than the limit; the DP then has no time left
    # (size 8192: about a second of CPU, twenty times the limit; size 32768 took four)
    assert run(capsys, "generate", "hecaton", "--size", "8192", "--seed", "1", "-o", str(hard))[0] == 0
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "solve", str(hard), "--method", "exact", "--time-limit", "0.05",
                       "--json", str(out))
    [report] = json.loads(out.read_text())
    assert code == 0 and report["status"] == "feasible" and report["check"]["feasible"], err


def test_highs_gets_what_the_model_building_left_of_the_time_limit(monkeypatch):
    import dataclasses

    import coopt.run as runner
    from coopt.problem import SolveOptions

    problem = registry.get("provisioning")
    loaded = load(instances_dir() / "provisioning" / "0-six-node-static.toml")
    build = problem.build

    def slow_build(*args, **kwargs):
        time.sleep(0.5)
        return build(*args, **kwargs)

    handed = []

    def solve_model(model, options, watch=None):
        handed.append(options.time_limit)
        return real(model, options, watch)

    real = runner.solve_model
    monkeypatch.setattr(runner, "solve_model", solve_model)
    slow = dataclasses.replace(problem, build=slow_build)
    report = runner.run(slow, loaded.instance, "milp", SolveOptions(time_limit=5.0))
    assert report.status == "optimal" and handed and handed[0] <= 4.5, handed
