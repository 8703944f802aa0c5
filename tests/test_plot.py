"""``coopt plot`` and the problems' drawings: each drawn problem's small shipped instance renders,
and what the picture shows is read back and compared with the solution it draws."""

from __future__ import annotations

import dataclasses
import math

import pytest

from coopt import api
from coopt.cli import main
from coopt.commands.plot import figure_for

pytest.importorskip("matplotlib")


def _drawn(name: str):
    """(loaded instance, checked exact solution, figure) of a shipped instance."""
    item = api.load(name)
    report = api.solve(item, "exact", time_limit=60)
    assert report.check["feasible"], report.check
    fig = figure_for(item.problem, item.instance, report.solution, "test")
    fig.canvas.draw()  # lay the figure out as a file would: a drawing that cannot render fails here
    return item, report.solution, fig


def _shapes(fig, prefix: str) -> dict[str, tuple[float, float, float, float]]:
    """gid -> (x0, x1, y0, y1) of every drawn bar (collection) whose gid starts with ``prefix``."""
    found = {}
    for ax in fig.axes:
        for c in ax.collections:
            gid = c.get_gid() or ""
            if gid.startswith(prefix):
                v = c.get_paths()[0].vertices
                found[gid] = (v[:, 0].min(), v[:, 0].max(), v[:, 1].min(), v[:, 1].max())
    return found


def test_pipeline_bars_are_the_passes_with_their_times_and_memory_has_a_line_per_device():
    item, solution, fig = _drawn("pipeline/0-p3m4-recompute")
    inst = item.instance
    bars = _shapes(fig, "pass:")
    assert len(bars) == len(solution["passes"]) == len(inst.passes())
    recomputed = {(k, j) for k, j in solution["recompute"]}
    assert recomputed  # the instance is chosen so that the optimum recomputes
    for p in solution["passes"]:
        kind, k, j = p["kind"], p["stage"], p["microbatch"]
        x0, x1, _, _ = bars[f"pass:{kind}:{k}:{j}"]
        length = inst.t_b(k) + inst.t_r(k) if kind == "B" and (k, j) in recomputed else (
            {"F": inst.t_f, "B": inst.t_b, "W": inst.t_w}[kind](k))
        assert math.isclose(x0, p["start"]) and math.isclose(x1, p["start"] + length)
    assert len(_shapes(fig, "recompute:")) == len(recomputed)
    lines = {ln.get_gid(): ln for ax in fig.axes for ln in ax.lines if (ln.get_gid() or "").startswith("memory:")}
    assert sorted(lines) == [f"memory:{d}" for d in range(inst.stages)]
    # every device's drawn peak stays at or under the 4 GB cap of the file, and one reaches it
    peaks = [max(ln.get_ydata()) for ln in lines.values()]
    assert max(peaks) == pytest.approx(4.0) and all(x <= 4.0 + 1e-9 for x in peaks)


def test_pipeline_offload_copies_are_drawn_per_offloaded_item():
    item, solution, fig = _drawn("pipeline/0-p3m3-offload-overtake")
    inst = item.instance
    assert solution["offload"]  # the instance is chosen so that the optimum offloads
    copies = _shapes(fig, "copy:")
    assert len(copies) == 2 * len(solution["offload"])
    for entry in solution["offload"]:
        k, j = entry["stage"], entry["microbatch"]
        assert copies[f"copy:d2h:{k}:{j}"][:2] == pytest.approx((entry["d2h_start"],
                                                                 entry["d2h_start"] + inst.tau_d(k)))
        assert copies[f"copy:h2d:{k}:{j}"][:2] == pytest.approx((entry["h2d_start"],
                                                                 entry["h2d_start"] + inst.tau_u(k)))


def test_chase_bars_are_the_tasks_and_transfers_the_edges_between_devices():
    item, solution, fig = _drawn("chase/0-topcuoglu-10x3")
    tab = item.instance.tables
    bars = _shapes(fig, "task:")
    assert len(bars) == tab.n == len(solution["assignment"])
    device = {name: p for p, name in enumerate(tab.device_names)}
    rows = {}
    for v, name in enumerate(tab.task_names):
        p = device[solution["assignment"][name]]
        x0, x1, y0, y1 = bars[f"task:{name}"]
        assert x0 == pytest.approx(solution["start_s"][name])
        assert x1 == pytest.approx(solution["start_s"][name] + tab.time[v][p])
        rows.setdefault(p, set()).add(round((y0 + y1) / 2, 6))
    assert all(len(ys) == 1 for ys in rows.values())  # one row per device
    assert len({next(iter(ys)) for ys in rows.values()}) == len(rows)
    crossing = [(tab.task_names[u], tab.task_names[v]) for u, v in zip(tab.source, tab.target, strict=True)
                if solution["assignment"][tab.task_names[u]] != solution["assignment"][tab.task_names[v]]]
    assert sorted(_shapes(fig, "transfer:")) == sorted(f"transfer:{u}:{v}" for u, v in crossing)
    assert max(x1 for _, x1, _, _ in bars.values()) == pytest.approx(solution["objective"])


@pytest.mark.parametrize("name", ["topoopt/0-exact-n6-d2", "topoopt/0-exact-n8-d3-directed"])
def test_topoopt_edges_are_the_links(name):
    item, solution, fig = _drawn(name)
    links = solution["links"]
    n = len(links)
    pairs = {f"link:{i}:{j}" for i in range(n) for j in range(n) if links[i][j] > 0
             and (not item.instance.symmetric or i < j)}
    drawn = {p.get_gid() for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("link:")}
    assert drawn == pairs
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts) + " ".join(
        ax.get_title() for ax in fig.axes)
    assert f"theta = {solution['objective']:.6g} iterations/s" in texts


def test_the_command_writes_the_image_and_refuses_a_problem_without_a_drawing(tmp_path, capsys, monkeypatch):
    out = tmp_path / "fabric.png"
    assert main(["plot", "topoopt/0-exact-n6-d2", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import coopt.instance

    real = coopt.instance.load

    def undrawn(source):
        item = real(source)
        return dataclasses.replace(item, problem=dataclasses.replace(item.problem, plot=None))

    monkeypatch.setattr(coopt.instance, "load", undrawn)
    capsys.readouterr()
    missing = tmp_path / "none.png"
    assert main(["plot", "topoopt/0-exact-n6-d2", "-o", str(missing)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "has no drawing yet" in lines[0] and "topoopt" in lines[0]
    assert not missing.exists()


def test_bound_and_a_wrong_suffix_are_refused_before_any_work(tmp_path, capsys):
    assert main(["plot", "topoopt/0-exact-n6-d2", "--method", "bound", "-o", str(tmp_path / "a.png")]) == 2
    assert "not a solution" in capsys.readouterr().err
    assert main(["plot", "topoopt/0-exact-n6-d2", "-o", str(tmp_path / "a.txt")]) == 2
    assert ".png" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def _images(fig, prefix: str) -> dict:
    return {im.get_gid(): im.get_array() for ax in fig.axes for im in ax.images
            if (im.get_gid() or "").startswith(prefix)}


def test_mixnet_heatmaps_hold_each_regions_circuits():
    _, solution, fig = _drawn("mixnet/0-two-regions-zipf")
    images = _images(fig, "circuits:")
    assert sorted(images) == [f"circuits:{r}" for r in range(len(solution["regions"]))] and len(images) == 2
    for r, region in enumerate(solution["regions"]):
        assert images[f"circuits:{r}"].tolist() == region["circuits"]


def test_mixnet_plan_heatmaps_hold_each_segments_circuits():
    _, solution, fig = _drawn("mixnet_plan/0-moe-2layers-4servers-25ms")
    images = _images(fig, "circuits:")
    assert len(images) == len(solution["segments"])
    for s, seg in enumerate(solution["segments"]):
        assert images[f"circuits:{s}"].tolist() == seg["circuits"]
    bars = [p for ax in fig.axes for p in ax.patches if p.get_height() > 0 and p.get_width() == 0.8]
    assert sorted(p.get_height() for p in bars) == pytest.approx(sorted(solution["layer_ms"]))


def _link_row(instance, u: str, v: str) -> int:
    return next(r for r, link in enumerate(instance.links)
                if (link.a, link.b) == (u, v) or (not instance.directed and (link.b, link.a) == (u, v)))


@pytest.mark.parametrize("name, key", [("provisioning/0-six-node-static", "connections"),
                                       ("provisioning/0-six-node-time-expanded", "connections"),
                                       ("provisioning_grooming/0-six-node-grooming-b", "lightpaths")])
def test_provisioning_spectrum_blocks_are_the_channels_on_their_links_and_slots(name, key):
    item, solution, fig = _drawn(name)
    blocks = _shapes(fig, "slot:")
    entries = solution[key]
    assert entries and len(blocks) == sum(len(e["path"]) - 1 for e in entries)
    for i, e in enumerate(entries):
        number = e["request"] if key == "connections" else i
        for u, v in zip(e["path"], e["path"][1:], strict=False):
            row = _link_row(item.instance, u, v)
            x0, x1, y0, y1 = blocks[f"slot:{number}:{row}"]
            assert (x0, x1) == pytest.approx((e["first_slot"], e["first_slot"] + e["slots"]))
            assert (y0 + y1) / 2 == pytest.approx(row)


@pytest.mark.parametrize("name", ["lightcode/0-gpt2-small-energy-sram", "lightcode/0-gpt2-small-makespan"])
def test_lightcode_rows_are_the_assigned_devices(name):
    _, solution, fig = _drawn(name)
    bars = _shapes(fig, "op:")
    assignment = solution["assignment"]
    assert len(bars) == len(assignment)
    devices = sorted(set(assignment.values()) | {"gpu", "ptu"})
    for op, device in assignment.items():
        x0, _, y0, y1 = bars[f"op:{op}"]
        assert (y0 + y1) / 2 == pytest.approx(devices.index(device))
        if "start" in solution:
            assert x0 == pytest.approx(solution["start"][op] * 1e6)


def test_scope_boxes_are_the_clusters_over_their_layers_and_chiplets():
    _, solution, fig = _drawn("scope/0-resnet152-conv4-tail6-m8")
    chain, chips = _shapes(fig, "cluster:"), _shapes(fig, "chiplets:")
    clusters = [(s, c, cl) for s, seg in enumerate(solution["segments"]) for c, cl in enumerate(seg)]
    assert len(chain) == len(chips) == len(clusters)
    for s, c, cl in clusters:
        assert chain[f"cluster:{s}:{c}"][:2] == pytest.approx((cl["first"], cl["last"] + 1))
        x0, x1, _, _ = chips[f"chiplets:{s}:{c}"]
        assert x1 - x0 == pytest.approx(cl["chiplets"])


def test_hecaton_has_three_cost_bars_and_the_option_under_every_block():
    _, solution, fig = _drawn("hecaton/0-mixed-ffn-n16-energy")
    ops = solution["ops"]
    gids = [p.get_gid() for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("time:")]
    assert sorted(gids) == sorted(f"time:{i}:{k}" for i in range(len(ops)) for k in ("compute", "nop", "dram"))
    labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert len(labels) == len(ops)
    for label, op in zip(labels, ops, strict=True):
        assert f"{op['scheme']} {op['rows']}x{op['cols']}" in label and f"mu={op['microbatches']}" in label
        assert (" R" in label) == op["recompute"]


def test_configtuner_scatter_is_the_whole_space_with_the_choice_marked():
    _, solution, fig = _drawn("configtuner/0-gpt1.3b-16xa100")
    found = {c.get_gid(): c.get_offsets() for ax in fig.axes for c in ax.collections if c.get_gid()}
    assert len(found["space"]) == solution["evaluated"]
    assert found["chosen"].tolist()[0] == pytest.approx([solution["memory_gib"], solution["objective"]])


def test_chase_arch_stacks_are_the_device_counts_of_every_rack():
    item, solution, fig = _drawn("chase_arch/0-two-racks-gpu-npu")
    power = {p.get_gid(): p.get_height() for ax in fig.axes for p in ax.patches
             if (p.get_gid() or "").startswith("power:")}
    watts = {t.name: t.device.power for t in item.instance.types}
    drawn = {}
    for gid, height in power.items():
        _, rack, kind = gid.split(":")
        if kind != "switch":
            drawn[(int(rack), kind)] = round(height * 1e3 / watts[kind], 9)
    wanted = {(r, kind): n for r, rack in enumerate(solution["racks"]) for kind, n in rack["devices"].items() if n}
    assert wanted and drawn == wanted


def test_a_method_without_a_solution_draws_nothing_and_exits_1(tmp_path, capsys):
    out = tmp_path / "gpipe.png"
    # GPipe keeps every micro-batch's activations: it cannot meet this file's 6 GB cap
    assert main(["plot", "pipeline/0-p3m4-cap6", "--method", "gpipe", "-o", str(out)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "found no solution" in lines[0]
    assert not out.exists()


def test_the_docs_python_example_runs(tmp_path, monkeypatch):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "plots.md").read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs/plots.md", "exec"), {})
    assert (tmp_path / "fabric.png").read_bytes()[:4] == b"\x89PNG"


def test_solve_plot_draws_what_coopt_plot_draws_and_only_a_checked_solution(tmp_path, capsys):
    """``coopt solve FILE --plot OUT`` writes the very image ``coopt plot`` writes (same bytes); more
    than one run, or ``bound``, is refused before any work; no solution means no image and exit 1."""
    by_plot, by_solve = tmp_path / "plot.png", tmp_path / "solve.png"
    assert main(["plot", "chase/0-topcuoglu-10x3", "--method", "heft", "-o", str(by_plot)]) == 0
    assert main(["solve", "chase/0-topcuoglu-10x3", "--method", "heft", "--plot", str(by_solve)]) == 0
    assert "heft" in capsys.readouterr().out  # the table is printed as without --plot
    assert by_solve.read_bytes() == by_plot.read_bytes()
    refused = tmp_path / "refused.png"
    for argv, says in ((["--method", "heft,cpop"], "one run"), (["--method", "bound"], "not a solution")):
        assert main(["solve", "chase/0-topcuoglu-10x3", *argv, "--plot", str(refused)]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and says in lines[0]
    assert main(["solve", "pipeline/0-p3m4-cap6", "--method", "gpipe", "--plot", str(refused)]) == 1
    assert "found no solution" in capsys.readouterr().err
    assert not refused.exists()


def _label_fits(fig) -> tuple[int, int]:
    """(labels drawn, labels wider than their bar) on a pipeline chart, in display units."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    gantt = fig.axes[0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    bars = []
    for c in gantt.collections:
        if (c.get_gid() or "").startswith("pass:"):
            corners = gantt.transData.transform(c.get_paths()[0].vertices)
            bars.append((corners[:, 0].min(), corners[:, 0].max(), corners[:, 1].min(), corners[:, 1].max()))
    drawn = wider = 0
    for text in gantt.texts:
        box = text.get_window_extent(renderer)
        cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
        home = [b for b in bars if b[0] <= cx <= b[1] and b[2] <= cy <= b[3]]
        drawn += 1
        if not home or box.width > min(b[1] - b[0] for b in home):
            wider += 1
    return drawn, wider


def test_pipeline_labels_stay_inside_their_bars_on_a_crowded_chart():
    """At p = 8, m = 32 a bar is a few points wide: its micro-batch number is left out rather
    than drawn across its neighbours; a small chart still labels every bar."""
    item = api.load("pipeline/2-llama70b-l64-pp8-m32")
    report = api.solve(item, "megatron_full")
    assert report.check["feasible"], report.check
    fig = figure_for(item.problem, item.instance, report.solution, "test")
    drawn, wider = _label_fits(fig)
    assert wider == 0, f"{wider} of {drawn} labels are wider than their bar"
    _, _, small_fig = _drawn("pipeline/0-p3m4-cap6")
    drawn, wider = _label_fits(small_fig)
    bars = sum((c.get_gid() or "").startswith("pass:") for c in small_fig.axes[0].collections)
    assert (drawn, wider) == (bars, 0)
