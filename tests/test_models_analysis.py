"""The analysis: which ceiling each layer meets, predicted times from the profile's own numbers, alignment
priced with the measured slowdown, the precision what-if, datasheet sources, JSON and the plot."""

import json
import math

import pandas as pd
import pytest

import hwprobe
from hwprobe import roofline
from hwprobe.analysis import analyze
from hwprobe.analysis.roofs import Measured
from hwprobe.errors import InputError
from hwprobe.models.csvfile import load_csv
from hwprobe.models.layers import Layer, Model
from hwprobe.profile_build import from_measurements, load_profile
from hwprobe.roofline import RooflineError
from tests.refs import H200_FULL

H200 = str(H200_FULL / "profile.json")


@pytest.fixture(scope="module")
def prof():
    return load_profile(H200)


def conv(name, cin, cout, m=56, k=3, groups=1):
    macs = m * m * cout * (cin // groups) * k * k
    return Layer(name, "conv", macs=macs, weights=k * k * cin // groups * cout, inputs=m * m * cin,
                 outputs=m * m * cout, cin=cin, cout=cout, groups=groups, kernel=(k, k))


def relu(name, c, m=56):
    e = m * m * c
    return Layer(name, "act", elem_ops=e, inputs=e, outputs=e, cout=c)


def test_public_api_returns_a_dataframe(prof):
    a = hwprobe.analyze("resnet18", H200, precision="fp16")
    assert isinstance(a.layers, pd.DataFrame) and len(a.layers) == 68
    assert {"ops", "bytes", "intensity", "attainable", "bound", "time_s", "datasheet_time_s"} <= set(a.layers)
    b = hwprobe.analyze("resnet18", prof, precision="fp16")          # a loaded Profile works too
    assert b.totals["time_s"] == pytest.approx(a.totals["time_s"])


def test_gemm_layers_on_library_tensor_cores_pointwise_on_instruction_cuda_cores(prof):
    a = analyze(Model("m", [conv("c", 64, 64), relu("r", 64)], "test"), prof, precision="fp16")
    c, r = a.layers.iloc[0], a.layers.iloc[1]
    assert (c["unit"], c["path"], c["precision"]) == ("tensor_core", "library", "fp16")
    assert c["ceiling"] == roofline.peak(prof, "fp16", "tensor_core", "library").metric
    assert (r["unit"], r["path"]) == ("cuda_core", "instruction")
    assert any("library" in n for n in a.notes)


def test_predicted_time_is_the_roofline_from_the_profile(prof):
    a = analyze(Model("m", [conv("c", 256, 256), relu("r", 256)], "test"), prof, precision="fp16")
    c, r = a.layers.iloc[0], a.layers.iloc[1]
    pk = roofline.peak(prof, "fp16", "tensor_core", "library").value
    bw = roofline.bandwidth(prof, "dram")
    ops, nbytes = 2 * 56 * 56 * 256 * 256 * 9, (9 * 256 * 256 + 2 * 56 * 56 * 256) * 2
    assert c["ops"] == ops and c["bytes"] == nbytes
    assert c["time_s"] == pytest.approx(max(ops / pk, nbytes / bw))
    assert c["bound"] == ("compute" if ops / pk > nbytes / bw else "memory")
    assert r["time_s"] == pytest.approx(2 * 56 * 56 * 256 * 2 / bw) and r["bound"] == "memory"
    ds = roofline.datasheet_roof(prof, "fp16", "tensor_core", "library")
    assert c["datasheet_time_s"] == pytest.approx(max(ops / ds.peak, nbytes / ds.bandwidth))


def test_fp32_gemm_stays_on_cuda_cores_tf32_goes_to_tensor_cores(prof):
    m = Model("m", [conv("c", 64, 64)], "test")
    assert analyze(m, prof, precision="fp32").layers.iloc[0]["unit"] == "cuda_core"
    t = analyze(m, prof, precision="tf32").layers.iloc[0]
    assert (t["unit"], t["precision"]) == ("tensor_core", "tf32")
    assert t["bytes"] == analyze(m, prof, precision="fp32").layers.iloc[0]["bytes"]   # TF32 stores FP32


def test_depthwise_runs_on_cuda_cores(prof):
    a = analyze(Model("m", [conv("dw", 64, 64, groups=64)], "test"), prof, precision="int8")
    assert (a.layers.iloc[0]["unit"], a.layers.iloc[0]["precision"]) == ("cuda_core", "int8")


def test_alignment_priced_with_the_measured_slowdown(prof):
    src = Measured(prof)
    f16 = next(f for f in prof.findings if f["metric"] == "align.fp16.slowdown")
    odd = src.alignment("fp16", {"cin": 3, "cout": 64})
    assert odd.dims == {"cin": 3} and odd.factor == pytest.approx(f16["value"])
    assert src.alignment("fp16", {"cin": 64, "cout": 64}) is None
    pts = {p["align"]: p["rate"] for p in next(f for f in prof.findings
                                               if f["metric"] == "align.int8.slowdown")["params"]["points"]}
    eight = src.alignment("int8", {"n": 1000})                       # a multiple of 8, not of 16
    assert eight.factor == pytest.approx(pts[16] / pts[8])
    advice = src.alignment("int8", {"cin": 16})                      # meets 16, not 003's 32
    assert advice.advice_only and advice.factor == pytest.approx(pts[32] / pts[16])
    refused = src.alignment("int8", {"cin": 3})                      # cuBLAS refuses odd INT8 sizes
    lib = roofline.peak(prof, "int8", "tensor_core", "library").value
    assert refused.factor == pytest.approx(lib / roofline.peak(prof, "int8", "cuda_core").value)


def test_misaligned_layer_pays_in_its_time(prof):
    a = analyze(Model("m", [conv("bad", 3, 64, m=224, k=7), conv("good", 8, 64, m=224, k=7)], "test"), prof,
                precision="fp16")
    bad, good = a.layers.iloc[0], a.layers.iloc[1]
    assert bad["align_factor"] > 1 and math.isnan(good["align_factor"])
    pk = roofline.peak(prof, "fp16", "tensor_core", "library").value
    assert bad["time_s"] == pytest.approx(max(bad["ops"] / (pk / bad["align_factor"]), bad["bytes"] / bad["bandwidth"]))
    assert a.totals["misaligned_layers"] == 1


def test_whatif_memory_bound_step_halves_the_bytes(prof):
    from hwprobe.analysis.whatif import step_text

    a = analyze(Model("m", [relu("r", 64)], "test"), prof)
    w = a.whatif.set_index("precision")
    assert w.loc["fp16", "speedup_vs_fp32"] == pytest.approx(2.0)    # half the bytes on the same DRAM slope
    assert w.loc["tf32", "speedup_vs_fp32"] == pytest.approx(1.0)          # TF32: same bytes, same CUDA cores
    text = step_text(a.by_precision["fp16"][0], a.by_precision["fp8"][0])
    assert text.startswith("memory-bound: FP8 (fp16 math on cuda_core) halves the bytes: 2x")


def test_whatif_compute_bound_step_names_the_roofs(prof):
    a = analyze(Model("m", [conv("c", 512, 512, m=56)], "test"), prof)
    w = a.whatif.set_index("precision")
    fp32 = roofline.peak(prof, "fp32", "cuda_core", "library").value
    tf32 = roofline.peak(prof, "tf32", "tensor_core", "library").value
    assert w.loc["tf32", "speedup_vs_fp32"] == pytest.approx(tf32 / fp32, rel=1e-6)
    assert "compute-bound layers: TF32 roof" in w.loc["tf32", "limit"]
    assert w.loc["int8", "vs"] == "fp8"


def test_profile_lacking_a_precision(prof):
    p = load_profile(H200)
    del p.compute["fp8"]
    a = analyze("resnet18", p, precision="fp16")
    w = a.whatif.set_index("precision")
    assert not w.loc["fp8", "available"] and "no measured fp8" in w.loc["fp8", "limit"]
    assert w.loc["int8", "vs"] == "fp16"                               # the chain skips what is missing
    with pytest.raises(RooflineError, match="no measured fp8 ceiling"):
        analyze("resnet18", p, precision="fp8")


def test_library_missing_falls_back_with_a_note():
    p = load_profile(H200)
    del p.compute["fp16"]["tensor_core"]["library"]
    a = analyze(Model("m", [conv("c", 64, 64)], "test"), p, precision="fp16")
    assert a.layers.iloc[0]["path"] == "instruction" and "no library ceiling" in a.layers.iloc[0]["note"]


def test_path_and_level_options(prof):
    ins = analyze(Model("m", [conv("c", 512, 512)], "test"), prof, precision="fp16", path="instruction")
    assert ins.layers.iloc[0]["ceiling"] == roofline.peak(prof, "fp16", "tensor_core", "instruction").metric
    l2 = analyze(Model("m", [relu("r", 64)], "test"), prof, level="l2")
    assert l2.layers.iloc[0]["bandwidth"] == roofline.bandwidth(prof, "l2")
    auto = analyze(Model("m", [relu("r", 64), relu("big", 4096, m=112)], "test"), prof, level="auto")
    assert list(auto.layers["level"]) == ["l2", "dram"]                 # 1.6 MB fits the measured L2, 411 MB not
    with pytest.raises(InputError, match="unknown level"):
        analyze("resnet18", prof, level="l3")


def test_datasheet_only_source():
    a = analyze("resnet18", spec="H100 SXM", precision="fp16")
    assert a.source_label.startswith("datasheet H100 SXM")
    assert a.layers["align"].eq("").all()                              # no measurement: nothing priced
    assert a.layers["time_s"].sum() == pytest.approx(a.layers["datasheet_time_s"].sum())
    with pytest.raises(InputError, match="not both"):
        analyze("resnet18", H200, spec="H100 SXM")


def test_counts_only_without_ceilings():
    a = analyze("vgg16")
    assert "time_s" not in a.layers and a.whatif.empty and a.totals["ops"] > 0


def test_bad_arguments():
    with pytest.raises(InputError, match="unknown precision"):
        analyze("resnet18", H200, precision="int4")
    with pytest.raises(InputError, match="unknown convention"):
        analyze("resnet18", convention="mine")
    with pytest.raises(InputError, match="neither a file nor a built-in"):
        analyze("no_such_model")
    with pytest.raises(InputError, match="batch must be >= 1"):
        analyze("resnet18", batch=0)


def test_json_is_valid_and_complete(prof):
    from hwprobe.analysis.render import to_dict

    a = analyze("mobilenet_v2", prof, precision="int8")
    d = json.loads(json.dumps(to_dict(a), default=str, allow_nan=False))
    assert len(d["layers"]) == len(a.layers) and len(d["top"]) == 5 and d["whatif"]
    assert d["convention"]["name"] == "standard" and "multiply-add = 2" in d["convention"]["description"]


def test_plot_draws_each_layer_at_its_intensity_and_rate(prof, tmp_path):
    """The PNG's figure: one dot per layer with work at (intensity, attainable rate), a legend entry per op,
    the measured FP16 roof at its value, the five slowest layers named, every dot inside the axes."""
    import numpy as np

    from hwprobe.report.plots.layers import plot_layers
    from tests.figures import outside_limits, saved_figures

    a = analyze("resnet18", prof, precision="fp16")
    with saved_figures() as figs:
        out = plot_layers(a, tmp_path / "r.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    (fig,) = figs
    ax = fig.axes[0]
    df = a.layers[(a.layers["ops"] > 0) & a.layers["intensity"].notna()]
    dots = np.concatenate([c.get_offsets() for c in ax.collections if c.get_label().endswith(" layers")])
    want = np.array(sorted(zip(df["intensity"], df["attainable"], strict=True)))
    assert np.allclose(np.array(sorted(map(tuple, dots))), want, rtol=1e-12)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {f"{op} layers" for op in df["op"].unique()} <= set(labels)
    roofs = {c.get_label().split(":")[0]: c.get_segments()[0][0][1] for c in ax.collections
             if c.get_label().startswith("measured fp16")}
    want = {f"measured fp16 {r.unit.replace('_', ' ')} ({r.path}, {r.level})": r.peak
            for _, r in a.layers.drop_duplicates(["precision", "unit", "path", "level"]).iterrows()}
    assert roofs == pytest.approx(want) and len(want) >= 1
    assert ax.get_xscale() == ax.get_yscale() == "log" and "operational intensity" in ax.get_xlabel()
    assert not outside_limits(ax).size
    named = " ".join(t.get_text() for t in ax.texts)
    assert all(name in named for name in df.sort_values("time_s").tail(5)["name"])
    assert "resnet18 at fp16, batch 1" in ax.get_title()
    with pytest.raises(InputError, match="needs ceilings"):
        plot_layers(analyze("resnet18"), tmp_path / "x.png")


@pytest.mark.parametrize("row,match", [
    ("c1,conv,56,3,-4,8,1", "row 2 field cin: -4 is negative"),
    ("c1,convv,56,3,4,8,1", "row 2 field op: unknown op 'convv'"),
    ("c1,conv,56,,4,8,1", "row 2 field k: conv needs a value"),
    ("c1,conv,56,3,4,8,3", "row 2 field groups: 3 does not divide"),
    ("c1,conv,5x6x7,3,4,8,1", "row 2 field m: '5x6x7' is not a size"),
    ("c1,conv,56,3.5,4,8,1", "row 2 field k: '3.5' is not a whole number"),
])
def test_bad_csv_rows(tmp_path, row, match):
    p = tmp_path / "l.csv"
    p.write_text("name,op,m,k,cin,cout,groups\n" + row + "\n")
    with pytest.raises(InputError, match=match):
        load_csv(p)


def test_bad_csv_files(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("name,op,m,k,cin\nc1,conv,56,3,4\n")
    with pytest.raises(InputError, match="missing column\\(s\\) cout, groups"):
        load_csv(p)
    p.write_text("name,op,m,k,cin,cout,groups\ng,gemm,128,256,,,\n")
    with pytest.raises(InputError, match="row 2: a gemm row needs the column n"):
        load_csv(p)
    p.write_text("name,op,m,k,cin,cout,groups\na,relu,8,,4,4,\na,relu,8,,4,4,\n")
    with pytest.raises(InputError, match="duplicate layer name 'a'"):
        load_csv(p)
    with pytest.raises(InputError, match="does not exist"):
        load_csv(tmp_path / "none.csv")


def test_csv_gemm_rows():
    import io  # noqa: F401

    m = load_csv("tests/data/seed002/fc.csv")
    assert m.layers[0].macs == 25088 * 4096 and m.layers[0].op == "gemm"


def test_cpu_profile_puts_every_layer_on_the_cores():
    from tests.helpers import meas

    ms = [meas("fp32.cpu.fma", 1.2e12, precision="fp32", exec_unit="cpu", path="instruction", theory=1.5e12),
          meas("dram.triad", 80e9, kind="memory", unit="B/s", level="dram", theory=100e9)]

    p = from_measurements({"kind": "cpu", "model": "Xeon"}, ms)
    a = analyze("resnet18", p)
    assert set(a.layers["unit"]) == {"cpu"}
    w = a.whatif.set_index("precision")
    assert w.loc["fp32", "available"] and not w.loc["fp16", "available"]


def test_layer_info_alone_classifies_without_times():
    a = analyze("tests/data/tiny_layers.csv", H200, precision="fp16", times="tests/data/times/trtexec_layerinfo.json")
    assert all(g.measured_s == 0 for g in a.timing.groups)
    assert a.layers.set_index("name").loc["conv2", "kernel_unit"] == "cuda_core"
    from hwprobe.analysis.advice import top_consumers

    assert not top_consumers(a, a.timing)[0].measured                 # no times: the predicted top 5


def test_spec_derived_profile_is_never_called_measured():
    a = analyze("resnet18", "profiles/jetson/agx-xavier/spec-derived", precision="int8")
    assert a.source_label.startswith("SPEC-DERIVED profile (expectations, not measured)")
    bn = a.layers.set_index("name").loc["conv1.bn"]                    # the profile has no INT32 CUDA-core ceiling
    assert bn["precision"] == "fp32" and "no int32 cuda_core ceiling: fp32 used" in bn["note"]
