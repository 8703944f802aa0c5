"""What a new user meets (issue 14): long runs that stop on Ctrl-C and keep what finished, output
paths checked before any work, one line instead of a traceback, and the small things (version,
names of shipped instances, markup in file names)."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coopt.cli import main

SMALL = "topoopt/0-exact-n6-d2"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("coopt: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# -- Ctrl-C ---------------------------------------------------------------------------------------


def _sigint_as_from_a_terminal() -> None:
    """In the child, before it runs: SIGINT at its default, so that its Python turns SIGINT into
    KeyboardInterrupt as under a terminal, also where this suite itself runs as a script's
    background job (which starts with SIGINT ignored, and a child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_coopt(*args: str) -> subprocess.Popen:
    """``coopt ARGS`` in a child whose stderr the test reads line by line, SIGINT at its default."""
    return subprocess.Popen([sys.executable, "-m", "coopt", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_as_from_a_terminal)


def rest_of_stderr(proc: subprocess.Popen, timeout: float = 120) -> str:
    """What the child still writes to stderr until it exits; a child still running after ``timeout``
    seconds is killed and the test fails with what it said, rather than waiting for ever."""
    try:
        return proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"coopt still ran {timeout:g} s after the signal; it said:\n{proc.communicate()[1]}")


def interrupt_at_the_first_incumbent(args: list[str], on: str = "") -> tuple[int, str, float]:
    """Run ``coopt solve ARGS``, send SIGINT once the progress line (every 5 s) shows an incumbent
    (on a line that contains ``on``); return the exit status, stderr and seconds from the signal."""
    proc = start_coopt("solve", *args)
    said = []
    for line in proc.stderr:
        said.append(line)
        if on in line and re.search(r"incumbent \d", line):
            break
    assert proc.poll() is None, "".join(said)
    proc.send_signal(signal.SIGINT)
    sent = time.perf_counter()
    stderr = "".join(said) + rest_of_stderr(proc)
    proc.wait(timeout=30)
    return proc.returncode, stderr, time.perf_counter() - sent


@pytest.mark.slow
def test_sigint_during_a_two_file_solve_exits_130_fast_with_the_finished_rows_and_the_incumbent(tmp_path):
    hard = tmp_path / "hard.toml"
    # size 12 is proven in about 20 s since P1 is warm-started; sizes 14 and 16 run past a minute
    # (size 14 stalls at a 24 % gap), and 14 builds faster, so its first incumbent shows sooner
    assert main(["generate", "topoopt", "--size", "14", "--seed", "1", "-o", str(hard)]) == 0
    out = tmp_path / "r.json"
    code, stderr, seconds = interrupt_at_the_first_incumbent([SMALL, str(hard), "--json", str(out)],
                                                             on="on hard.toml")
    assert seconds < 2.0
    assert code == 130, stderr
    reports = json.loads(out.read_text())
    assert [r["status"] for r in reports] == ["optimal", "interrupted"], stderr
    assert reports[1]["objective"] is not None and reports[1]["check"]["feasible"]
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_sigint_during_a_cp_sat_solve_keeps_its_incumbent_and_exits_130_fast(tmp_path):
    """Pipeline's exact method on keep-only files is CP-SAT (Model S), which runs outside HiGHS'
    callbacks: the progress line still shows its incumbent, and a Ctrl-C still ends the search
    with it (status interrupted, checked) instead of waiting out the time limit."""
    hard = tmp_path / "hard.toml"
    # size 16 seed 0 takes CP-SAT about 12 s after a 2 s warm start; size 12 warm-starts several
    # times faster and CP-SAT still runs past a minute (a gap of about 4 %), incumbent in hand
    assert main(["generate", "pipeline", "--size", "12", "--seed", "0", "-o", str(hard)]) == 0
    out = tmp_path / "r.json"
    code, stderr, seconds = interrupt_at_the_first_incumbent([str(hard), "--method", "exact", "--json", str(out)])
    assert seconds < 2.0
    assert code == 130, stderr
    [report] = json.loads(out.read_text())
    assert report["status"] == "interrupted" and report["solver"]["name"] == "cp-sat", stderr
    assert report["check"]["feasible"] and report["bound"] <= report["objective"]
    assert "Traceback" not in stderr


# -- output paths -----------------------------------------------------------------------------------


def test_json_to_a_folder_a_fifo_or_a_device_is_refused_before_solving(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target, says in ((tmp_path, "is a folder"), (fifo, "is not a regular file"),
                         ("/dev/null", "is not a regular file"), (tmp_path / "f.txt" / "x.json", "is a file")):
        if target == tmp_path / "f.txt" / "x.json":
            (tmp_path / "f.txt").write_text("keep")
        before = os.stat(target if Path(target).exists() else tmp_path)
        code, stdout, stderr = run(capsys, "solve", SMALL, "--json", target)
        assert code == 2 and says in one_error_line(stderr), stderr
        assert stdout == ""  # nothing was solved
        if Path(target).exists():
            assert stat.S_IFMT(os.stat(target).st_mode) == stat.S_IFMT(before.st_mode)
    assert (tmp_path / "f.txt").read_text() == "keep"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_symlink_is_followed_and_dash_is_standard_output(tmp_path, capsys):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert run(capsys, "solve", SMALL, "--json", link)[0] == 0
    assert link.is_symlink() and json.loads(real.read_text())[0]["status"] == "optimal"
    code, stdout, _ = run(capsys, "solve", SMALL, "--json", "-")
    assert code == 0 and '"status": "optimal"' in stdout


def test_every_written_file_has_the_same_mode_under_the_umask(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        assert run(capsys, "solve", SMALL, "--json", tmp_path / "r.json")[0] == 0
        assert run(capsys, "generate", "topoopt", "-o", tmp_path / "g.toml")[0] == 0
        assert run(capsys, "bound", "netcast.max_channels", "--json", tmp_path / "b.json")[0] == 0
        assert run(capsys, "export", SMALL, "-o", tmp_path / "m.lp")[0] == 0
    finally:
        os.umask(old)
    for name in ("r.json", "g.toml", "b.json", "m.lp"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644, name


# -- one line, never a traceback ------------------------------------------------------------------


def test_commands_that_used_to_raise_give_one_line(tmp_path, capsys):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)))
    cases = [
        (["export", "topoopt/2-stride-n64-d4", "-o", tmp_path / "x.lp"], "cannot be built here"),
        (["generate", "topoopt", "--seed", "-1"], "--seed must be >= 0"),
        (["check", SMALL, garbage], "is not UTF-8 text"),
        (["bound", "netcast.max_channels", "--sweep", "epsilon=0.001:0.01:3", "--plot", tmp_path / "p.txt"],
         "expected a file ending in"),
        (["solve", SMALL, "--time-limit", "nan"], "--time-limit must be a finite number"),
        (["solve", SMALL, "--gap", "nan"], "--gap must be in [0, 1)"),
    ]
    for argv, says in cases:
        code, _, stderr = run(capsys, *argv)
        assert code == 2 and says in one_error_line(stderr), (argv, stderr)
    assert not (tmp_path / "x.lp").exists() and not (tmp_path / "p.txt").exists()


def test_check_of_an_object_that_is_no_solution_says_what_is_missing(tmp_path, capsys):
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"objective": 1.0}')
    code, stdout, stderr = run(capsys, "check", SMALL, wrong)
    assert code == 1 and "INFEASIBLE" in stdout and "checker raised" not in stdout, stdout + stderr


def test_check_matches_report_rows_by_instance_and_says_what_it_skipped(tmp_path, capsys):
    report = tmp_path / "r.json"
    other = "topoopt/0-exact-n6-d4"
    assert run(capsys, "solve", SMALL, other, "--method", "all", "--json", report)[0] == 0
    rows = json.loads(report.read_text())
    mine = [r for r in rows if r["instance"].endswith("0-exact-n6-d2.toml")]
    judged = [r for r in mine if r.get("solution") is not None]  # the bound method's row has none
    code, stdout, _ = run(capsys, "check", SMALL, report)
    assert code == 0
    assert judged and stdout.count("feasible  ") == len(judged)
    assert f"skipped {len(rows) - len(judged)} row(s)" in stdout and "other instance" in stdout
    assert len(judged) == len(mine) or "of no solution" in stdout


def test_a_solution_from_another_solver_on_the_exported_model_is_judged(tmp_path, capsys):
    import highspy

    model = tmp_path / "m.lp"
    assert run(capsys, "export", SMALL, "-o", model)[0] == 0
    header = model.read_text().splitlines()[:2]
    assert header[0].startswith("\\ coopt export of topoopt") and "x this model's objective" in header[1]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(model))
    h.run()
    sol = tmp_path / "m.sol"
    h.writeSolution(str(sol), 0)
    code, stdout, _ = run(capsys, "check", SMALL, "--sol", sol)
    assert code == 0 and stdout.startswith("feasible  --sol"), stdout
    lines = sol.read_text().splitlines()
    # duplex links (the default symmetry) are one variable per unordered pair
    at = next(i for i, line in enumerate(lines) if line.startswith("pair(0_1) "))
    lines[at] = "pair(0_1) 7"  # more links than ports
    sol.write_text("\n".join(lines) + "\n")
    assert run(capsys, "check", SMALL, "--sol", sol)[0] == 1


# -- small things ---------------------------------------------------------------------------------


def test_version_and_shipped_names(capsys, tmp_path):
    import coopt

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"coopt {coopt.__version__}"
    assert run(capsys, "validate", SMALL, "0-exact-n6-d2")[0] == 0
    code, _, stderr = run(capsys, "validate", "nosuch/0-x")
    assert code == 2 and "no such file" in stderr


def test_validate_reports_every_file(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('problem = "topoopt"\nschema_version = 1\n')
    worse = tmp_path / "run[red]1.toml"
    worse.write_text("not toml = = =")
    code, stdout, stderr = run(capsys, "validate", SMALL, bad, worse)
    assert code == 2
    assert stdout.count("ok  ") == 1
    assert str(bad) in stderr and "run[red]1.toml" in stderr


def test_markup_in_a_file_name_is_printed_as_written(tmp_path, capsys):
    odd = tmp_path / "run[red]1.toml"
    odd.write_text(Path(__file__).parent.parent.joinpath("instances", "topoopt", "0-exact-n6-d2.toml").read_text())
    code, stdout, _ = run(capsys, "validate", odd)
    assert code == 0 and "run[red]1.toml" in stdout


def test_a_crashing_heuristic_is_an_error_not_a_failed_check(capsys, monkeypatch, knapsack_only, tmp_path):
    import knapsack

    def broken(instance, seed=0):
        raise ValueError("cannot convert float NaN")

    monkeypatch.setitem(knapsack.PROBLEM.heuristics, "greedy", broken)
    path = tmp_path / "k.toml"
    path.write_text('problem = "knapsack"\nschema_version = 1\nvalues = [3.0, 4.0]\nweights = [2.0, 3.0]\n'
                    "capacity = 4.0\n")
    code, _, stderr = run(capsys, "solve", path, "--method", "greedy")
    assert code == 1 and "ERROR in knapsack greedy" in stderr and "CHECK FAILED" not in stderr


def test_names_users_type_are_never_cut_at_80_columns(monkeypatch, capsys):
    from rich.console import Console

    import coopt.console

    monkeypatch.setattr(coopt.console, "out", Console(width=80, highlight=False, soft_wrap=True))
    import coopt.cli

    code = coopt.cli.main(["list"])
    text = capsys.readouterr().out
    assert code == 0
    from coopt import registry

    for name, problem in registry.problems().items():
        assert name in text
        for method in problem.heuristics:
            assert method in text, f"{method} is cut or folded at 80 columns"


def test_help_imports_no_heavy_library():
    """`coopt --help` and every sub-command's --help start without Pyomo, SymPy, NumPy or matplotlib
    (they cost about a second): commands import them when they run."""
    code = (
        "import sys\n"
        "from coopt.cli import build_parser\n"
        "build_parser()\n"
        "heavy = sorted(m for m in ('pyomo', 'sympy', 'numpy', 'matplotlib', 'networkx', 'highspy', 'scipy') "
        "if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"imported at --help: {result.stdout.strip()}"


@pytest.mark.slow
def test_a_wheel_installed_elsewhere_ships_its_instances(tmp_path):
    """Build the wheel, install it into a fresh venv (its dependencies come from this environment
    through a .pth file, so nothing is downloaded), and run it from an empty folder."""
    import sysconfig

    root = Path(__file__).resolve().parent.parent
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(root), "-w", str(wheels)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("coopt-*.whl")
    venv = tmp_path / "venv"
    # without its own pip (seeding one costs seconds): this environment's pip, reached through the
    # .pth file like the dependencies, run by the venv's interpreter installs into the venv
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "-q",
                                str(wheel)], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    exe = str(venv / "bin" / "coopt")
    listed = subprocess.run([exe, "list"], capture_output=True, text=True, cwd=elsewhere, timeout=300)
    assert listed.returncode == 0 and "small" in listed.stdout, listed.stdout + listed.stderr
    solved = subprocess.run([exe, "solve", SMALL], capture_output=True, text=True, cwd=elsewhere, timeout=300)
    assert solved.returncode == 0 and "optimal" in solved.stdout, solved.stdout + solved.stderr
    shown = subprocess.run([exe, "showcase"], capture_output=True, text=True, cwd=elsewhere, timeout=900)
    assert shown.returncode == 0, shown.stdout[-3000:] + shown.stderr[-3000:]
    assert str(root) not in shown.stdout  # the instances came from the installed package


def test_a_huge_sweep_is_refused_not_run(capsys):
    code, _, stderr = run(capsys, "bound", "netcast.photons_per_mac_shot", "--sweep", "M=1:1e6:10000000")
    assert code == 2 and "COUNT must be at most" in one_error_line(stderr)


def test_generate_never_writes_a_file_its_loader_rejects(capsys, monkeypatch, knapsack_only, tmp_path):
    import knapsack

    broken = knapsack.Problem(**{**knapsack.PROBLEM.__dict__,
                                 "generate": lambda seed, size: knapsack.Instance((1.0,), (-1.0,), 4.0)})
    import coopt.registry

    monkeypatch.setattr(coopt.registry, "_all", lambda: {"knapsack": broken})
    target = tmp_path / "g.toml"
    code, _, stderr = run(capsys, "generate", "knapsack", "-o", target)
    assert code == 2 and "weights[0]" in one_error_line(stderr) and "the generated instance" in stderr
    assert not target.exists()


def test_building_past_the_memory_limit_stops_with_one_line(tmp_path, capsys):
    """The guard stops a model build that outgrows --max-memory, whatever the problem (in a fresh
    process: a long-lived one reuses freed memory, and its resident size would not grow)."""
    big = tmp_path / "big.toml"
    assert run(capsys, "generate", "topoopt", "--size", "20", "--seed", "2", "-o", big)[0] == 0
    code = (
        "import sys\n"
        "from coopt import registry\n"
        "from coopt.cli import main\n"
        "from coopt.limits import resident_bytes\n"
        "registry.problems()\n"
        "import coopt.run\n"
        "limit = (resident_bytes() + 15 * 2**20) / 2**30\n"
        f"sys.exit(main(['solve', {str(big)!r}, '--max-memory', f'{{limit:.4f}}']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "building the model needed more than" in one_error_line(result.stderr.split("\n", 1)[1])
