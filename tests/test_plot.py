"""Plots: every kind draws from a committed full run, as PNG and SVG; the roofline tells the units apart, labels
each roof on its line without overlaps, keeps slopes inside the axes and explains the FP16 sweep; a profile
alone draws what it can; a CPU plot speaks of CPU cores; several runs are overlaid."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hwprobe.profile_build import from_measurements
from hwprobe.report import plots
from hwprobe.report.plots import NoData
from hwprobe.report.source import Run, load_run, load_runs
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


def test_every_kind_writes_png_and_svg(tmp_path, h200):
    done = plots.draw([h200], tmp_path)
    assert not done.left_out and set(done.files) == set(plots.KINDS)
    for kind in plots.KINDS:
        assert (tmp_path / f"{kind}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (tmp_path / f"{kind}.svg").read_text()
        assert "<svg" in svg and "</svg>" in svg


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
    r = hw("plot", str(H200), "--kind", "sparse", "-o", str(tmp_path / "s.png"))
    assert r.returncode == 0 and (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    assert "unknown plot kind nope" in one_line_error(hw("plot", str(H200), "--kind", "nope"))
    assert "does not exist" in one_line_error(hw("plot", str(tmp_path / "missing")))
