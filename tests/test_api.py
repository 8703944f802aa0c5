"""The public Python API (:mod:`coopt.api`): its documented examples run, a dict is validated as a
file is (the same one-line errors), and ``import coopt`` stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

import coopt
from coopt import api
from coopt.errors import InstanceError, UsageError

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = "topoopt/0-exact-n6-d2"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def readme_api_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## The Python API")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("where", ["docs/api.md", "README.md"])
def test_the_documented_examples_run(where, tmp_path, monkeypatch, capsys):
    text = readme_api_section() if where == "README.md" else (ROOT / where).read_text(encoding="utf-8")
    blocks = python_blocks(text)
    assert blocks, f"{where} has no python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, where, "exec"), namespace)
    printed = capsys.readouterr().out
    # each page quotes what its examples print
    if where == "docs/api.md":
        assert "my-topology: field 'degree': expected a value <= servers - 1 = 5, got 9" in printed
    else:
        assert "<dict>: field 'degree': expected an integer, got 'three'" in printed
    assert "20.0" in printed


def _file_and_dict_errors(tmp_path, data: dict) -> tuple[str, str]:
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    with pytest.raises(InstanceError) as from_file:
        api.load(path)
    with pytest.raises(InstanceError) as from_dict:
        api.from_dict(data, where=str(path))
    return str(from_file.value), str(from_dict.value)


@pytest.mark.parametrize("change", [
    {"degree": "two"},                                # wrong type
    {"degree": 0},                                    # below the declared range
    {"degree": 9},                                    # a cross-field check (degree <= servers - 1)
    {"bandwidht_gbit_per_s": 100.0},                  # unknown key, with the closest field named
    {"degree": 0, "servers": "six", "extra": True},   # several errors at once, one line each
    {"schema_version": 1},                            # an older file version
    {"problem": "topopt"},                            # no such problem
])
def test_a_dict_with_a_bad_field_raises_the_error_a_file_gets(tmp_path, change):
    data = api.read(SHIPPED)
    data.update(change)
    from_file, from_dict = _file_and_dict_errors(tmp_path, data)
    assert from_dict == from_file
    assert str(tmp_path / "bad.toml") in from_dict
    field = next(iter(change))
    assert f"field '{field}'" in from_dict or (field == "bandwidht_gbit_per_s" and "did you mean" in from_dict)


def test_every_error_of_a_dict_is_one_line():
    data = api.read(SHIPPED) | {"degree": 0, "servers": "six"}
    with pytest.raises(InstanceError) as caught:
        api.from_dict(data)
    lines = str(caught.value).splitlines()
    assert len(lines) == len(caught.value.errors) >= 2
    assert all(line.startswith("<dict>: field '") for line in lines)


def test_a_dict_that_is_no_table_is_one_line():
    with pytest.raises(InstanceError, match=r"^<dict>: expected a dict of the file's fields, got list$"):
        api.from_dict([("problem", "topoopt")])
    deep: dict = {}
    inner = deep
    for _ in range(5000):  # far past Python's recursion limit
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(InstanceError, match=r"^<dict>: nests tables or arrays more than \d+ deep$"):
        api.from_dict({"problem": "topoopt", **deep})


def test_a_dict_builds_the_instance_its_file_does():
    data = api.read(SHIPPED)
    del data["schema_version"]  # a dict may leave it out
    data["allreduce"] = tuple(data["allreduce"])  # and hold tuples where a file holds arrays
    built = api.from_dict(data)
    assert built.instance == api.load(SHIPPED).instance
    problem = data.pop("problem")
    assert api.from_dict(data, problem=problem).instance == built.instance
    with pytest.raises(InstanceError, match="field 'problem': expected 'pipeline'"):
        api.from_dict({**data, "problem": "topoopt"}, problem="pipeline")


def test_solve_judges_and_names_what_it_ran():
    item = api.load(SHIPPED)
    report = api.solve(item, "rings_only")
    assert report.method == "rings_only" and report.instance == item.path
    assert report.check["feasible"] and report.objective == report.check["objective_recomputed"]
    assert api.solve(SHIPPED, "rings_only", options=api.SolveOptions(seed=0)).objective == report.objective
    with pytest.raises(UsageError, match="has no method 'nope'; it has exact"):
        api.solve(item, "nope")
    with pytest.raises(UsageError, match="time_limit, gap, threads, seed, memory_limit"):
        api.solve(item, "rings_only", timelimit=3)
    for bad, says in (({"time_limit": -1}, "time_limit must be a finite number > 0"),
                      ({"gap": 1.5}, r"gap must be in \[0, 1\)"), ({"threads": 1.5}, "threads must be an integer")):
        with pytest.raises(UsageError, match=says):
            api.solve(item, "rings_only", **bad)


def test_generate_save_and_load_round_trip(tmp_path):
    made = api.generate("topoopt", seed=2, size=1)
    path = api.save(made, tmp_path / "made.toml")
    assert api.load(path).instance == made.instance
    assert api.from_dict(api.to_dict(made)).sha256 == made.sha256
    with pytest.raises(UsageError, match="unknown problem 'nope'"):
        api.generate("nope")


def test_closed_forms_check_their_symbols():
    assert "netcast.max_channels" in api.closed_form_names()
    with pytest.raises(UsageError, match="has no symbol 'nope'"):
        api.closed_form("netcast.max_channels", nope=1.0)
    with pytest.raises(UsageError, match="unknown bound"):
        api.closed_form("netcast.nope")


def test_the_public_names_are_the_api_and_import_coopt_stays_light():
    assert set(coopt.__all__) == {*api.__all__, "__version__"}
    package = ROOT / "coopt"
    for name in api.__all__:
        # a public name that is also a submodule's would turn into the module once that is imported
        assert not (package / name).exists() and not (package / f"{name}.py").exists(), name
        assert getattr(coopt, name) is getattr(api, name)
    with pytest.raises(AttributeError):
        coopt.not_a_name  # noqa: B018
    code = "import sys, coopt; print(sorted(m for m in sys.modules if m.startswith(('coopt.', 'pyomo', 'sympy'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_solve_shows_the_objective_unit_in_its_header(capsys):
    """rich read "[iterations/s]" in the header as markup and dropped the unit. In process: the
    header goes through the same rich console (coopt.console.out) as in ``python -m coopt``, whose
    piped standard output has the same fixed width as pytest's captured one."""
    from coopt.cli import main

    code = main(["solve", "topoopt/0-exact-n6-d2", "--method", "bound"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "[iterations/s]" in captured.out
