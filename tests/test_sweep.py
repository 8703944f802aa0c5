"""``coopt sweep``: one row per (point, method), each as a direct ``coopt solve`` of that point finds,
a tidy CSV, and one clear line (exit 2, nothing written) for a field it cannot sweep."""

from __future__ import annotations

import csv
import json
import math
import tomllib

import pytest
import tomli_w

from coopt.cli import main
from coopt.shipped import resolve

SHIPPED = "topoopt/0-exact-n6-d2"


def _rows(path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    header, body = table[0], table[1:]
    assert all(len(r) == len(header) for r in body), "every row has one cell per column"
    return header, [dict(zip(header, r, strict=True)) for r in body]


def _solve_directly(tmp_path, changes: dict, method: str) -> float | None:
    """The objective `coopt solve` reports for the shipped file with ``changes`` written into it."""
    data = tomllib.loads(resolve(SHIPPED).read_text(encoding="utf-8"))
    data.update(changes)
    point = tmp_path / f"point-{'-'.join(f'{k}{v}' for k, v in changes.items())}.toml"
    point.write_text(tomli_w.dumps(data), encoding="utf-8")
    out = tmp_path / f"{point.stem}-{method}.json"
    assert main(["solve", str(point), "--method", method, "--json", str(out)]) == 0
    return json.loads(out.read_text())[0]["objective"]


def test_a_sweep_over_one_field_matches_direct_solves_row_by_row(tmp_path, capsys):
    out, plot = tmp_path / "sweep.csv", tmp_path / "sweep.png"
    code = main(["sweep", SHIPPED, "--set", "degree=2:4:3", "--method", "exact,link_swap_search",
                 "--csv", str(out), "--plot", str(plot)])
    assert code == 0
    header, rows = _rows(out)
    assert header[:7] == ["degree", "method", "solver", "status", "objective", "bound", "gap"]
    assert "feasible" in header and "time_total" in header and "objective_unit" in header
    assert [(r["degree"], r["method"]) for r in rows] == [
        (str(d), m) for d in (2, 3, 4) for m in ("exact", "link_swap_search")]
    for r in rows:
        assert r["feasible"] == "True"
        direct = _solve_directly(tmp_path, {"degree": int(r["degree"])}, r["method"])
        assert math.isclose(float(r["objective"]), direct, rel_tol=1e-9)
    exact = {int(r["degree"]): float(r["objective"]) for r in rows if r["method"] == "exact"}
    assert all(r["status"] == "optimal" for r in rows if r["method"] == "exact")
    for r in rows:  # max problem: no heuristic above the proven optimum of its point
        assert float(r["objective"]) <= exact[int(r["degree"])] * (1 + 1e-6)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_csv_is_tidy_for_pandas(tmp_path):
    pandas = pytest.importorskip("pandas")
    out = tmp_path / "sweep.csv"
    assert main(["sweep", SHIPPED, "--set", "bandwidth_gbit_per_s=25:100:4", "--set", "degree=2,3",
                 "--method", "bound,link_swap_search", "--csv", str(out)]) == 0
    frame = pandas.read_csv(out)
    assert len(frame) == 4 * 2 * 2
    assert list(frame.columns[:3]) == ["bandwidth_gbit_per_s", "degree", "method"]
    assert frame["bandwidth_gbit_per_s"].tolist()[::4] == [25.0, 50.0, 75.0, 100.0]
    assert frame["objective"].dtype.kind == "f" and frame["bound"].dtype.kind == "f"
    bound = frame[frame.method == "bound"]
    assert bound["objective"].isna().all() and bound["bound"].notna().all()
    heuristic = frame[frame.method == "link_swap_search"]
    # at a fixed degree the rate grows with the port bandwidth
    for _, group in heuristic.groupby("degree"):
        assert group["objective"].is_monotonic_increasing


def test_nested_fields_and_integer_grids(tmp_path):
    out = tmp_path / "sweep.csv"
    assert main(["sweep", SHIPPED, "--set", "degree=2:5:5", "--set", "prices.tier.nic_usd=700",
                 "--method", "bound", "--csv", str(out)]) == 0
    _, rows = _rows(out)
    # 2:5:5 is 2, 2.75, 3.5, 4.25, 5 on an integer field: the nearest integers, each once
    assert [r["degree"] for r in rows] == ["2", "3", "4", "5"]
    assert {r["prices.tier.nic_usd"] for r in rows} == {"700.0"}


@pytest.mark.parametrize("spec, says", [
    ("bandwith_gbit_per_s=1:2:2", "no field 'bandwith_gbit_per_s'; did you mean 'bandwidth_gbit_per_s'?"),
    ("link_symmetry=1:2:2", "field 'link_symmetry' is a string, not a number"),
    ("allreduce=1:2:2", "field 'allreduce' is a table, not a number"),
    ("degree=0:3:4", "expected values in the field's declared range (>= 1"),
    ("degree=2.5", "expected integers"),
    ("degree=2:9:3", "(degree=6): field 'degree': expected a value <= servers - 1 = 5, got 6"),
    ("bandwidth_gbit_per_s=a:b:3", "expected a number, got 'a'"),
    ("prices.tier[7].nic_usd=100", "'tier' has 4 entries, no [7]"),
])
def test_a_field_it_cannot_sweep_is_one_line_and_nothing_is_written(tmp_path, capsys, spec, says):
    out = tmp_path / "sweep.csv"
    assert main(["sweep", SHIPPED, "--set", spec, "--method", "bound", "--csv", str(out)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("coopt: error:")]
    assert lines and says in lines[0], err
    assert "0-exact-n6-d2" in lines[0] and "Traceback" not in err
    if spec == "degree=2:9:3":  # every refused point is named, before anything runs
        assert len(lines) == 2 and "(degree=9)" in lines[1]
    assert not out.exists()


def test_parallel_runs_give_the_serial_rows(tmp_path):
    serial, parallel = tmp_path / "serial.csv", tmp_path / "parallel.csv"
    args = ["sweep", SHIPPED, "--set", "degree=2:4:3", "--method", "link_swap_search,bound"]
    assert main([*args, "--csv", str(serial)]) == 0
    assert main([*args, "--csv", str(parallel), "--jobs", "2"]) == 0
    keep = ("degree", "method", "status", "objective", "bound", "feasible")
    assert [[r[k] for k in keep] for r in _rows(serial)[1]] == [[r[k] for k in keep] for r in _rows(parallel)[1]]


def test_an_array_field_is_set_everywhere_and_a_declined_run_says_why(tmp_path):
    out = tmp_path / "sweep.csv"
    # every stage's cap: 4 GB is too little for 1F1B on this file, 6 GB is enough
    assert main(["sweep", "pipeline/0-p3m4-cap6", "--set", "memory_cap_gb=4,6", "--method", "1f1b",
                 "--csv", str(out)]) == 0
    _, rows = _rows(out)
    assert [(r["memory_cap_gb"], r["status"]) for r in rows] == [("4.0", "no_solution"), ("6.0", "feasible")]
    assert "does not apply" in rows[0]["note"] and rows[0]["feasible"] == ""
    assert rows[1]["note"] == "" and rows[1]["feasible"] == "True"


def test_a_dask_cluster_gives_the_serial_rows(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    serial, remote = tmp_path / "serial.csv", tmp_path / "dask.csv"
    args = ["sweep", SHIPPED, "--set", "degree=2,3", "--method", "link_swap_search,bound"]
    assert main([*args, "--csv", str(serial)]) == 0
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert main([*args, "--csv", str(remote), "--scheduler", cluster.scheduler_address]) == 0
    keep = ("degree", "method", "status", "objective", "bound", "feasible")
    assert [[r[k] for k in keep] for r in _rows(serial)[1]] == [[r[k] for k in keep] for r in _rows(remote)[1]]
