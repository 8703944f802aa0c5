"""The CLI end to end on the test knapsack, and every bad input the foundation promises to
reject: exit status 2, one line naming the file, the field and what was expected, no traceback,
nothing written."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from coopt.cli import main

GOOD = """problem = "knapsack"
schema_version = 1
values = [6.0, 5.0, 8.0, 9.0, 6.0, 7.0, 3.0]
weights = [2.0, 3.0, 6.0, 7.0, 5.0, 9.0, 4.0]
capacity = 9.0
"""


def brute_force(values, weights, capacity) -> float:
    n = len(values)
    best = 0.0
    for mask in itertools.product((0, 1), repeat=n):
        if sum(w for w, t in zip(weights, mask, strict=True) if t) <= capacity:
            best = max(best, sum(v for v, t in zip(values, mask, strict=True) if t))
    return best


@pytest.fixture
def good(tmp_path, knapsack_only) -> Path:
    path = tmp_path / "good.toml"
    path.write_text(GOOD)
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_solve_all_writes_documented_json(good, tmp_path, capsys):
    out = tmp_path / "r.json"
    code, stdout, _ = run(capsys, "solve", good, "--method", "all", "--json", out)
    assert code == 0, stdout
    reports = json.loads(out.read_text())
    assert [r["method"] for r in reports] == ["exact", "greedy"]
    keys = {"problem", "instance", "instance_sha256", "method", "status", "sense", "objective_name",
            "objective_unit", "objective", "bound", "gap", "times", "solver", "seed", "threads", "solution",
            "check"}
    for r in reports:
        assert set(r) == keys
        assert set(r["times"]) == {"warm_start", "build", "handoff", "solve", "total"}
        assert r["check"]["feasible"] is True
        assert r["check"]["objective_recomputed"] == pytest.approx(r["objective"])
    exact = reports[0]
    assert exact["status"] == "optimal"
    assert exact["solver"]["name"] == "highs"
    assert exact["objective"] == pytest.approx(brute_force([6, 5, 8, 9, 6, 7, 3], [2, 3, 6, 7, 5, 9, 4], 9))
    assert exact["gap"] == pytest.approx(0, abs=1e-6)
    assert reports[1]["objective"] <= exact["objective"] + 1e-9


def test_check_accepts_report_and_rejects_tampered(good, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert run(capsys, "solve", good, "--method", "all", "--json", out)[0] == 0
    code, stdout, _ = run(capsys, "check", good, out)
    assert code == 0 and stdout.count("feasible") == 2
    reports = json.loads(out.read_text())
    reports[0]["solution"]["take"] = [0, 1, 2, 3, 4, 5, 6]  # far over capacity
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(reports))
    code, stdout, _ = run(capsys, "check", good, bad)
    assert code == 1 and "INFEASIBLE" in stdout and "capacity" in stdout


def test_check_flags_a_false_objective_claim(good, tmp_path, capsys):
    bad = tmp_path / "claim.json"
    bad.write_text(json.dumps({"take": [0], "objective": 100.0}))
    code, stdout, _ = run(capsys, "check", good, bad)
    assert code == 1 and "mismatch" in stdout


@pytest.mark.parametrize("fmt", ["lp", "mps"])
def test_export_round_trip(good, tmp_path, capsys, fmt):
    from coopt.solvers.highs import solve_file

    target = tmp_path / f"model.{fmt}"
    code, _, _ = run(capsys, "export", good, "--format", fmt, "-o", target)
    assert code == 0 and target.exists()
    assert solve_file(target) == pytest.approx(brute_force([6, 5, 8, 9, 6, 7, 3], [2, 3, 6, 7, 5, 9, 4], 9))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("coopt-export-")]


def test_generate_validates_and_is_seeded(tmp_path, capsys, knapsack_only):
    a, b, c = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "c.toml"
    assert run(capsys, "generate", "knapsack", "--seed", "4", "--size", "2", "-o", a)[0] == 0
    assert run(capsys, "generate", "knapsack", "--seed", "4", "--size", "2", "-o", b)[0] == 0
    assert run(capsys, "generate", "knapsack", "--seed", "5", "--size", "2", "-o", c)[0] == 0
    assert a.read_text() == b.read_text() != c.read_text()
    code, stdout, _ = run(capsys, "validate", a, c)
    assert code == 0 and stdout.count("ok") == 2


def test_list_and_showcase(capsys, knapsack_only, monkeypatch, tmp_path):
    import coopt.shipped

    (tmp_path / "knapsack").mkdir()
    (tmp_path / "knapsack" / "0-tiny.toml").write_text(GOOD)
    monkeypatch.setattr(coopt.shipped, "instances_dir", lambda: tmp_path)
    code, stdout, _ = run(capsys, "list")
    assert code == 0 and "knapsack" in stdout and "greedy" in stdout and "1 small" in stdout
    code, stdout, _ = run(capsys, "list", "knapsack")
    assert code == 0 and "0-tiny.toml" in stdout and "textbook" in stdout
    assert run(capsys, "list", "nosuch")[0] == 2
    code, stdout, _ = run(capsys, "showcase")
    assert code == 0
    assert "0.00 %" in stdout  # the exact row's gap to itself
    assert "greedy" in stdout


# -- bad input --------------------------------------------------------------------------------

BAD_CASES = {
    "missing file": (None, "no such file"),
    "malformed TOML": ('problem = "knapsack"\nschema_version = 1\nvalues = [1.0, \n', "not valid TOML"),
    "unknown problem": (GOOD.replace('"knapsack"', '"knapsak"'), "field 'problem': expected one of knapsack"),
    "missing field": (GOOD.replace("capacity = 9.0\n", ""), "field 'capacity': is missing"),
    "unknown field": (GOOD + "colour = 3\n", "field 'colour': unknown field"),
    "wrong type": (GOOD.replace("capacity = 9.0", 'capacity = "nine"'), "field 'capacity': expected a number"),
    "out of range": (GOOD.replace("weights = [2.0,", "weights = [-2.0,"), "field 'weights[0]': expected a number > 0"),
    "wrong length": (GOOD.replace(", 4.0]", "]"), "field 'weights': expected 7 entries, got 6"),
    "inconsistent": (GOOD.replace("capacity = 9.0", "capacity = 1.0"), "field 'capacity': expected at least"),
    "wrong schema": (GOOD.replace("schema_version = 1", "schema_version = 7"), "field 'schema_version'"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
@pytest.mark.parametrize("command", ["solve", "validate", "export"])
def test_bad_input_exit_2_one_line_nothing_written(tmp_path, capsys, knapsack_only, good, case, command):
    text, expected = BAD_CASES[case]
    path = tmp_path / "bad.toml"
    if text is not None:
        path.write_text(text)
    target = tmp_path / "out.json"
    argv = {
        "solve": ["solve", good, path, "--json", target],
        "validate": ["validate", path],
        "export": ["export", path, "-o", tmp_path / "out.lp"],
    }[command]
    code, stdout, stderr = run(capsys, *argv)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert str(path) in lines[0] and expected in lines[0], lines[0]
    assert "Traceback" not in stderr + stdout
    assert not target.exists() and not (tmp_path / "out.lp").exists()


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["solve", "{good}", "--method", "tabu"], "no method 'tabu'"),
        (["solve", "{good}", "--time-limit", "-1"], "--time-limit"),
        (["generate", "nosuch"], "unknown problem 'nosuch'"),
        (["check", "{good}", "{missing}"], "no such file"),
    ],
)
def test_bad_arguments_exit_2(tmp_path, capsys, good, argv, expected):
    argv = [a.format(good=good, missing=tmp_path / "none.json") for a in argv]
    code, _, stderr = run(capsys, *argv)
    assert code == 2 and expected in stderr and len(stderr.strip().splitlines()) == 1
