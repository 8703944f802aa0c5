"""The bounds base (Bound, Curve, registry, numeric solving) and the `coopt bound` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from coopt.cli import main
from coopt.closed_forms import Bound, Curve, Quantity
from coopt.errors import UsageError
from coopt.registry import closed_form as get
from coopt.registry import closed_forms as registry

MINE = ("netcast", "delocalized", "moesd")


def my_entries():
    return [entry for name, entry in registry().items() if name.split(".")[0] in MINE]


def run(capsys, *argv):
    status = main(["bound", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# -- the base --------------------------------------------------------------------------------


def test_every_entry_evaluates_at_its_defaults():
    for entry in my_entries():
        value = np.asarray(entry.evaluate({}), dtype=float)
        assert np.all(np.isfinite(value)), entry.name


def test_every_closed_form_prints_as_latex_that_names_its_output():
    for entry in my_entries():
        if isinstance(entry, Bound):
            assert entry.latex().split("=")[0].strip(), entry.name


def test_stable_forms_equal_the_printed_ones():
    # Where a bound evaluates a rearranged form, it must be the same function as the printed one.
    for entry in my_entries():
        if isinstance(entry, Bound) and entry.stable is not None:
            printed = sp.lambdify([q.symbol for q in entry.inputs], entry.expr.subs(dict(entry.constants)))
            defaults = [q.default for q in entry.inputs]
            for factor in (0.3, 1.0, 3.0):
                values = dict(zip([q.name for q in entry.inputs], defaults, strict=True))
                values["Delta"] = values["Delta"] / factor
                expected = printed(*values.values())
                assert float(entry.evaluate(values)) == pytest.approx(float(expected), rel=1e-9), entry.name


@pytest.mark.parametrize("name, symbol", [
    ("netcast.min_spacing", "epsilon"), ("netcast.photons_per_mac_shot", "b"), ("netcast.thermal_noise", "C"),
    ("netcast.snr", "n"), ("delocalized.noise_ratio", "n"),
    ("moesd.batch_window_low", "epsilon"), ("moesd.ridge_tokens", "BW"),
])
def test_symbolic_solve_round_trips(name, symbol):
    bound = get(name)
    output = float(bound.evaluate({}))
    solved = float(bound.evaluate({bound.output.name: output}, solve_for=symbol))
    assert solved == pytest.approx(bound.quantity(symbol).default, rel=1e-9)


@pytest.mark.parametrize("name, symbol, output", [
    ("netcast.crosstalk_worst", "Delta", 2.0**-8), ("netcast.crosstalk_bits", "Delta", 10.0),
    ("netcast.calibrated_noise_gain", "R", 1.5), ("moesd.accepted_tokens", "alpha", 3.0),
    ("moesd.expert_layer_time", "t", 2e-3),
])
def test_numeric_solve_hits_the_target(name, symbol, output):
    bound = get(name)
    with pytest.raises(UsageError):
        bound.solve_for(symbol)  # no closed form: the numeric root is the only route
    root = float(bound.evaluate({bound.output.name: output}, solve_for=symbol))
    assert float(bound.evaluate({symbol: root})) == pytest.approx(output, rel=1e-9)


def test_bandwidth_for_n_channels_fits_exactly_n():
    bound = get("netcast.max_channels")
    for n in (1, 7, 20, 64):
        needed = float(bound.evaluate({"N_max": n}, solve_for="B_opt"))
        assert float(bound.evaluate({"B_opt": needed * (1 + 1e-12)})) == n
        assert float(bound.evaluate({"B_opt": needed * (1 - 1e-9)})) == n - 1


def test_exact_min_spacing_is_close_to_the_small_width_form():
    exact = float(get("netcast.crosstalk_worst").evaluate({"epsilon_xt": 2.0**-8}, solve_for="Delta"))
    approximate = float(get("netcast.min_spacing").evaluate({"epsilon": 2.0**-8}))
    assert exact == pytest.approx(approximate, rel=2e-3) and exact < approximate


def test_numeric_solve_without_a_root_is_a_usage_error():
    with pytest.raises(UsageError, match="no alpha"):
        get("moesd.accepted_tokens").evaluate({"sigma": 10.0, "gamma": 3}, solve_for="alpha")


def test_curve_entries_refuse_latex_and_solving():
    curve = get("delocalized.accuracy")
    assert isinstance(curve, Curve)
    with pytest.raises(UsageError, match="no closed form"):
        curve.latex()
    with pytest.raises(UsageError, match="cannot be solved"):
        curve.evaluate({}, solve_for="E")


def test_curve_broadcasts_like_a_bound():
    values = get("delocalized.accuracy").evaluate({"E": np.array([[1e-17], [1e-16]]), "M": np.array([50, 100])})
    assert values.shape == (2, 2)


def test_missing_value_and_bad_relation_are_usage_errors():
    bound = Bound(name="t.x", summary="", source="", output=Quantity("y", "y"), inputs=(Quantity("x", "x"),),
                  expr=2 * Quantity("x", "x").symbol)
    with pytest.raises(UsageError, match="give a value for x"):
        bound.evaluate({})
    assert float(bound.evaluate({"x": 2})) == 4
    with pytest.raises(UsageError, match="needs K < E"):
        get("moesd.batch_window_low").evaluate({"E": 8, "K": 8})


# -- the command -----------------------------------------------------------------------------


def test_list_shows_every_topic(capsys):
    status, out, _ = run(capsys, "list")
    assert status == 0
    for name in ("netcast.crosstalk_worst", "delocalized.accuracy", "moesd.sd_speedup"):
        assert name.split(".")[1][:8] in out


@pytest.mark.parametrize("argv, message", [
    (["no.such.bound"], "unknown bound"),
    (["netcast.snr", "--set", "foo=1"], "no symbol 'foo'"),
    (["netcast.snr", "--solve-for", "foo"], "no symbol 'foo'"),
    (["netcast.snr", "--sweep", "foo=1:2:3"], "no symbol 'foo'"),
    (["netcast.snr", "--set", "eta=1.5"], "must be a number in (0, 1]"),
    (["netcast.max_channels", "--set", "B_opt=-3e12"], "must be a number > 0"),
    (["netcast.snr", "--set", "n=abc"], "expected a number"),
    (["netcast.snr", "--set", "n"], "SYMBOL=VALUE"),
    (["netcast.snr", "--sweep", "n=1:2"], "START:STOP:COUNT"),
    (["netcast.snr", "--sweep", "n=1:2:0"], "COUNT must be an integer >= 1"),
    (["netcast.snr", "--plot", "x.png"], "--plot needs a --sweep"),
    (["netcast.snr", "--solve-for", "n", "--set", "n=1"], "cannot both set and solve"),
    (["delocalized.accuracy", "--latex"], "no closed form"),
    (["moesd.sd_speedup", "--set", "K=9", "--set", "E=8"], "needs K <= E"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert message in err and err.count("\n") == 1


def test_value_solve_and_latex(capsys):
    status, out, _ = run(capsys, "netcast.max_channels", "--set", "epsilon=2^-8")
    assert status == 0 and "N_max = 20   (maximum channel count)" in out
    status, out, _ = run(capsys, "netcast.photons_per_mac_shot", "--set", "M=784", "--latex")
    assert status == 0 and get("netcast.photons_per_mac_shot").latex() in out and "0.326531" in out
    status, out, _ = run(capsys, "netcast.snr", "--solve-for", "n", "--set", "SNR=16", "--set", "M=784", "--set", "C=0")
    assert status == 0 and "n = 0.326531" in out


def test_sweep_json_and_plot(capsys, tmp_path):
    target, picture = tmp_path / "out.json", tmp_path / "plot.png"
    status, out, _ = run(capsys, "netcast.photons_per_mac", "--sweep", "b=1:8:8", "--set", "M=784",
                         "--json", str(target), "--plot", str(picture))
    assert status == 0
    report = json.loads(target.read_text())
    assert report["sweep"]["values"] == list(np.linspace(1, 8, 8))
    expected = get("netcast.photons_per_mac").evaluate({"b": np.linspace(1, 8, 8), "M": 784})
    np.testing.assert_allclose(report["result"], expected, rtol=1e-12)
    assert report["values"]["M"] == 784 and report["latex"]
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_integer_sweeps_round_to_distinct_integers(capsys, tmp_path):
    target = tmp_path / "speedup.json"
    status, _, _ = run(capsys, "moesd.sd_speedup", "--sweep", "B=1:256:12:log", "--json", str(target))
    assert status == 0
    report = json.loads(target.read_text())
    batches = report["sweep"]["values"]
    assert batches == sorted(set(batches)) and all(float(b).is_integer() for b in batches)
    assert batches[0] == 1 and batches[-1] == 256


def test_fit_from_csv(capsys, tmp_path):
    memory = np.geomspace(1e9, 1e11, 8)
    compute = np.geomspace(1e15, 1e11, 8)
    times = 1e-3 + memory / 4e12 + compute / 6e14
    data = tmp_path / "points.csv"
    data.write_text("X_mem,X_comp,T\n" + "".join(f"{m:.17g},{c:.17g},{t:.17g}\n" for m, c, t in zip(memory, compute, times, strict=True)))
    target = tmp_path / "fit.json"
    status, out, _ = run(capsys, "moesd.time_model", "--fit", str(data), "--set", "X_mem=2e10", "--set", "X_comp=3e12",
                         "--json", str(target))
    assert status == 0 and "L1 error" in out
    report = json.loads(target.read_text())
    assert report["fit"]["coefficients"]["c_mem"] == pytest.approx(1 / 4e12, rel=1e-6)
    assert report["result"] == pytest.approx(1e-3 + 2e10 / 4e12 + 3e12 / 6e14, rel=1e-6)

    (tmp_path / "bad.csv").write_text("X_mem,T\n1,2\n")
    status, _, err = run(capsys, "moesd.time_model", "--fit", str(tmp_path / "bad.csv"))
    assert status == 2 and "missing column 'X_comp'" in err
    (tmp_path / "neg.csv").write_text("X_mem,X_comp,T\n1,2,-3\n")
    status, _, err = run(capsys, "moesd.time_model", "--fit", str(tmp_path / "neg.csv"))
    assert status == 2 and "column 'T'" in err
    status, _, err = run(capsys, "moesd.time_model", "--fit", str(tmp_path / "none.csv"))
    assert status == 2 and "cannot read" in err
    status, _, err = run(capsys, "netcast.snr", "--fit", str(data))
    assert status == 2 and "has no fit" in err


def test_relations_on_the_solved_symbol_do_not_use_its_default():
    # K's default (8) exceeds E = 4, but K is the unknown here: 4 (1 - (1 - K/4)^2) = 3 gives K = 2.
    k = float(get("moesd.activated_experts").evaluate({"E": 4, "N_act": 3, "t": 2}, solve_for="K"))
    assert k == pytest.approx(2.0, rel=1e-9)


def parabola(rule_above: bool) -> Bound:
    x = Quantity("x", "x", domain="nonnegative", default=2.5)
    rule = x.symbol >= 2 if rule_above else x.symbol <= 2
    return Bound(name="t.parabola", summary="", source="", output=Quantity("y", "y", domain="real"),
                 inputs=(x,), expr=x.symbol**2 - 4 * x.symbol, relations=(rule,))


@pytest.mark.parametrize("rule_above, expected", [(True, 3.0), (False, 1.0)])
def test_several_symbolic_roots_pick_the_admissible_one(rule_above, expected):
    bound = parabola(rule_above)
    assert len(sp.solve(bound.equation(), bound.quantity("x").symbol)) == 2  # x = 2 +- sqrt(4 + y)
    assert float(bound.evaluate({"y": -3.0}, solve_for="x")) == pytest.approx(expected)


def test_no_admissible_root_is_a_usage_error():
    # y = 5: x = -1 (out of range) or 5 (breaks x <= 2)
    assert float(parabola(True).evaluate({"y": 5.0}, solve_for="x")) == pytest.approx(5.0)
    with pytest.raises(UsageError, match="no root for x"):
        parabola(False).evaluate({"y": 5.0}, solve_for="x")


def test_plot_caption_keeps_every_digit_and_drops_only_the_dimensionless_unit(monkeypatch, tmp_path):
    """The caption of the fixed values is read back from the figure `coopt bound --plot` draws. The
    old caption ran ``.replace(" 1", "")`` over each "name = value unit" and turned M = 100 (unit
    "1") into "M =00", h_nu = 1.28e-19 J into "h_nu =.28e-19 J" and C = 1e-11 F into "C =e-11 F"."""
    from coopt.commands import bound as command

    drawn = []
    real = command.figure
    monkeypatch.setattr(command, "figure", lambda *a: drawn.append(real(*a)) or drawn[-1])
    for name, sweep in (("delocalized.accuracy", "E=1e-17:1e-15:5:log"), ("netcast.snr", "n=1:4:4")):
        status = main(["bound", name, "--sweep", sweep, "--plot", str(tmp_path / "p.png")])
        assert status == 0
    captions = [text.get_text() for fig in drawn for text in fig.texts]
    assert captions == [
        "fixed: M = 100, h_nu = 1.28e-19 J, sigma_e = 520 electrons",
        "fixed: C = 1e-11 F, M = 100, T = 300 K, eta = 1, sigma_adc = 0 electrons",
    ]
