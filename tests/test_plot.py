"""Plots: every kind draws from a committed full run, as PNG and SVG; the roofline tells the units apart, labels
each roof on its line without overlaps, keeps slopes inside the axes and explains the FP16 sweep; a profile
alone draws what it can; a CPU plot speaks of CPU cores; several runs are overlaid."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from hwprobe.profile_build import from_measurements
from hwprobe.report import plots
from hwprobe.report.plots import NoData, gemm, memory, power, roofline
from hwprobe.report.source import Run, load_run, load_runs
from tests.figures import data_lines, outside_limits, points, saved_figures, series, texts
from tests.refs import H100_FULL as H100
from tests.refs import H200_COMPUTE_CLOCKS
from tests.refs import H200_FULL as H200
from tests.test_cli import hw, one_line_error


@pytest.fixture(scope="module")
def h200() -> Run:
    return load_run(H200)


@pytest.fixture(scope="module")
def roofline_fig(h200):
    fig = plots.figure("roofline", [h200])
    fig.canvas.draw()
    yield fig
    plots.close(fig)


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_every_kind_writes_png_and_svg_of_the_runs_data(tmp_path, h200):
    """Each kind is written as PNG and SVG, and what was drawn is the run's data: the series, their labels, and
    limits that hold every point (positions are left to the layout)."""
    with saved_figures() as figs:
        done = plots.draw([h200], tmp_path)
    assert not done.left_out and set(done.files) == set(plots.KINDS)
    for kind in plots.KINDS:
        assert (tmp_path / f"{kind}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (tmp_path / f"{kind}.svg").read_text()
        assert "<svg" in svg and "</svg>" in svg
    assert len(figs) == len(plots.KINDS)
    drawn = dict(zip(plots.KINDS, figs, strict=True))
    for kind, fig in drawn.items():
        assert "H200" in texts(fig), kind
        for ax in fig.axes:
            if ax.get_visible():
                assert not outside_limits(ax).size, (kind, ax.get_title(loc="left"), outside_limits(ax)[:3])
                assert ax.get_ylim()[1] >= max([p.get_height() for p in ax.patches] or [0]), kind
    _roofline_is_the_measured_roofs(drawn["roofline"], h200)
    _gemm_is_the_sweep(drawn["gemm"], h200)
    _bars_are_the_rates(drawn["align"], [(p, r) for p, pts in gemm.align_pairs(h200).items() for r in
                                         [x["rate"] for x in pts] + [x["odd_rate"] for x in pts if x["odd_rate"]]])
    _bars_are_the_rates(drawn["power"], [("", d["rate"]) for _, pts in power.power_points(h200) for d in pts.values()])
    sparse = plots_axes(drawn["sparse"])
    for prec, params in power.sparse_points(h200).items():
        (label,) = [k for k in series(sparse[0]) if k.startswith(prec.upper() + " ")]
        x, y = series(sparse[0])[label]
        pts = params["points"]
        assert x.tolist() == [p["n"] for p in pts] and y.tolist() == [p["speedup"] for p in pts]
        assert series(sparse[1])[f"{prec.upper()} 2:4 sparse"][1].tolist() == [p["sparse"] for p in pts]
    assert sparse[0].get_ylim()[0] == 0 and sparse[0].get_ylim()[1] > 2       # the promised 2x is inside
    lat = drawn["latency"].axes[0]
    assert "ns" in lat.get_ylabel() and lat.get_xscale() == "log"
    for level, (ws, secs) in memory._levels(h200).items():
        assert any(np.allclose(p, (ws, secs * 1e9)) for p in points(lat)), level
    host = next(ax for ax in drawn["bandwidth"].axes if ax.get_title(loc="left").startswith("Host"))
    assert set(series(host)) == {f"{d}, {k}" for d in ("host to device", "device to host", "both ways")
                                 for k in ("pinned", "pageable")}
    assert all(x.size >= 10 and (y > 0).all() for x, y in series(host).values())
    for ax in drawn["gap"].axes:
        if ax.get_visible():
            assert "(FLOP/s)" in ax.get_title(loc="left") or "(OP/s)" in ax.get_title(loc="left")
            assert ax.get_ylim()[0] == 0


def plots_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def _roofline_is_the_measured_roofs(fig, run):
    """A solid flat line at each measured tensor-core and CUDA-core ceiling, inside log-log axes."""
    for ax, unit in zip(fig.axes[:2], ("tensor_core", "cuda_core"), strict=True):
        assert ax.get_xscale() == ax.get_yscale() == "log"
        flat = {float(ln.get_ydata()[0]) for ln in data_lines(ax) if len(ln.get_ydata()) == 2
                and ln.get_linestyle() == "-" and ln.get_ydata()[0] == ln.get_ydata()[1]}
        want = [r.value for r in roofline.roofs(run, unit)]
        assert want and all(any(np.isclose(v, f, rtol=1e-9) for f in flat) for v in want), (unit, want, flat)
        assert ax.get_ylim()[1] > max(want) and ax.get_ylim()[0] < min(want)
        assert "intensity" in ax.get_xlabel() and "per second" in ax.get_ylabel()


def _gemm_is_the_sweep(fig, run):
    """Each precision's panel draws every (size, share of theory) of its 8 paths with the most sizes (the panel's
    cap), labelled with the library and no other, shares on 0..1.05."""
    panels = {ax.get_title(loc="left"): ax for ax in plots_axes(fig)}
    sweep = gemm.series(run)
    assert sweep and {p.upper() for p in sweep} <= set(panels)
    for prec, by_path in sweep.items():
        ax = panels[prec.upper()]
        assert ax.get_ylim() == (0.0, 1.05) and ax.get_xscale() == "log"
        drawn = points(ax)
        kept = sorted(by_path.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:8]
        assert {k for k in series(ax) if "size" not in k} == {gemm._label(base) for base, _ in kept}
        for path, pts in kept:
            for n, _, share in pts:
                assert np.isclose(drawn, (n, share), rtol=1e-9).all(axis=1).any(), (prec, path, n)


def _bars_are_the_rates(fig, want):
    heights = [p.get_height() for ax in fig.axes for p in ax.patches]
    assert want and all(any(np.isclose(h, r, rtol=1e-9) for h in heights) for _, r in want)


def test_roofline_tells_tensor_and_cuda_cores_apart_with_labels_on_the_lines(roofline_fig):
    tensor, cuda = roofline_fig.axes[:2]
    assert tensor.get_title(loc="left") == "Tensor Cores" and cuda.get_title(loc="left") == "CUDA cores"
    cuda_labels = " | ".join(_texts(cuda))
    assert "HFMA2 132 TFLOP/s" in cuda_labels and "INT8 DP4A 134 TOP/s" in cuda_labels
    assert "FP32 FFMA 66.1 TFLOP/s" in cuda_labels and "ridge" in cuda_labels
    tensor_labels = " | ".join(_texts(tensor))
    assert "INT8 wgmma 1.9 POP/s, ridge 429 OP/B, datasheet 1.98 POP/s" in tensor_labels
    assert "FP16/BF16 wgmma 913/915 TFLOP/s" in tensor_labels       # two roofs within 1%: one label, both figures
    assert not roofline_fig.legends and not tensor.get_legend()      # no colour matching: labels sit on lines
    # datasheet roofs are dashed, measured ones solid
    styles = {line.get_linestyle() for line in tensor.lines}
    assert "-" in styles and "--" in styles


def test_roofline_labels_do_not_overlap_and_slopes_stay_inside(roofline_fig):
    renderer = roofline_fig.canvas.get_renderer()
    for ax in roofline_fig.axes[:2]:
        boxes = [t.get_window_extent(renderer) for t in ax.texts if "ridge" in t.get_text() or "wgmma" in t.get_text()]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), "two roof labels overlap"
        top = ax.get_ylim()[1]
        for line in ax.lines:
            assert max(line.get_ydata()) <= top * 1.0001, "a slope runs past the top of the plot"
        slopes = [t for t in _texts(ax) if t.startswith(("DRAM", "L2", "L1"))]
        assert {s.split()[0] for s in slopes} == {"DRAM", "L2", "L1"}


def test_roofline_explains_the_fp16_sweep_under_the_hfma2_roof(roofline_fig):
    note = next(t for t in _texts(roofline_fig.axes[1]) if "FP16 sweep" in t)
    assert "66.4 TFLOP/s" in note and "half the 132 TFLOP/s HFMA2 roof" in note
    assert "FMA pipe only" in note and "HFMA2.MMA" in note and "66.1 TFLOP/s" in note


def test_a_profile_alone_draws_what_it_holds(tmp_path):
    shutil.copy(H200 / "profile.json", tmp_path / "profile.json")
    run = load_run(tmp_path / "profile.json")
    assert not run.measurements
    with pytest.raises(NoData, match="profile.json alone"):
        plots.figure("bandwidth", [run])
    for kind in ("roofline", "align", "sparse", "power", "gap", "latency"):
        plots.close(plots.figure(kind, [run]))


def test_a_compute_only_run_draws_its_roofline_on_dram_theory():
    fig = plots.figure("roofline", [load_run(H200_COMPUTE_CLOCKS)])
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["Tensor Cores"]
    assert any("DRAM 4.81 TB/s theory (not measured in this run)" in t for t in _texts(fig.axes[0]))
    plots.close(fig)


def test_latency_marks_the_near_far_step():
    fig = plots.figure("latency", [load_run(H200)])
    ax = fig.axes[0]
    step = next(t for t in _texts(ax) if "near/far step" in t)
    assert "27.8 MiB" in step and "0.46 of L2" in step and "near 142 ns, far 267 ns" in step
    plots.close(fig)


def test_bandwidth_marks_effective_and_physical_capacities():
    fig = plots.figure("bandwidth", [load_run(H200)])
    texts = " | ".join(t for ax in fig.axes for t in _texts(ax))
    assert "L1 effective 255 KiB (solid), physical 256 KiB (dashed)" in texts
    assert "L2 effective 60 MiB (solid), physical 60 MiB (dashed)" in texts
    assert "DRAM ceiling 4.43 TB/s" in texts and "near L2 partition" in texts
    plots.close(fig)


def test_cpu_roofline_speaks_of_cpu_cores():
    from hwprobe.measurement import Measurement, Theory

    p = from_measurements({"kind": "cpu", "model": "Test CPU", "cores": 8}, [
        Measurement(probe="cpu.fma", metric="fp64.cpu.fma", kind="compute", value=300e9, unit="FLOP/s",
                    precision="fp64", exec_unit="cpu", path="instruction", theory=Theory(at_clock=320e9)),
        Measurement(probe="cpu.stream", metric="dram.stream.triad", kind="memory", value=40e9, unit="B/s",
                    level="dram"),
    ])
    run = Run(p, [], Path("."), "cpu")
    fig = plots.figure("roofline", [run])
    words = " ".join(t.get_text() for t in fig.texts) + " ".join(t for ax in fig.axes for t in _texts(ax))
    assert fig.axes[0].get_title(loc="left") == "CPU cores"
    assert "CUDA" not in words and "dots" not in words and "FP64 FMA 300 GFLOP/s" in words
    with pytest.raises(NoData, match="the CPU suite does not measure it"):
        plots.figure("bandwidth", [run])
    plots.close(fig)


def test_two_runs_are_overlaid():
    runs = load_runs([str(H200), str(H100)])
    assert [r.label for r in runs] == ["H200", "H100 80GB HBM3"]
    fig = plots.figure("roofline", runs)
    labels = " | ".join(_texts(fig.axes[0]))
    assert "INT8 wgmma: H200 1.9, H100 1.91 POP/s" in labels
    plots.close(fig)
    fig = plots.figure("gemm", runs)
    for ax in fig.axes:
        if ax.get_visible() and ax.get_legend():
            names = [t.get_text().split(": ", 1)[1] for t in ax.get_legend().get_texts()]
            assert len(set(names)) == 1, names      # the same library path from both runs
    plots.close(fig)


def test_plot_cli_takes_a_profile_json_and_writes_one_file_or_a_folder(tmp_path):
    r = hw("plot", str(H200 / "profile.json"), "--kind", "roofline,gap", "-o", str(tmp_path / "d"), "-f", "svg")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["gap.svg", "roofline.svg"]
    assert "measured roofline" in (tmp_path / "d" / "roofline.svg").read_text()      # each file its own kind
    assert "from the datasheet to the measured ceiling" in (tmp_path / "d" / "gap.svg").read_text()
    r = hw("plot", str(H200), "--kind", "sparse", "-o", str(tmp_path / "s.png"))
    assert r.returncode == 0 and (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    assert "unknown plot kind nope" in one_line_error(hw("plot", str(H200), "--kind", "nope"))
    assert "does not exist" in one_line_error(hw("plot", str(tmp_path / "missing")))
