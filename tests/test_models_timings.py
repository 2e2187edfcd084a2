"""A sample of each timing format (tests/data/times, written from each format's documentation) parsed, joined
to the tiny model's layers, and bad times files refused in one line."""

from pathlib import Path

import pytest

from hwprobe.analysis import analyze
from hwprobe.analysis.timings import parse
from hwprobe.errors import InputError
from tests.refs import H200_FULL

TIMES = Path(__file__).parent / "data" / "times"
TINY = Path(__file__).parent / "data" / "tiny_layers.csv"
PROFILE = str(H200_FULL / "profile.json")


def test_trtexec_profile():
    t = parse(TIMES / "trtexec_profile.json")
    assert t.format == "trtexec --exportProfile" and not t.notes
    r = {x.name: x for x in t.records}
    assert r["conv2"].time_s == pytest.approx(0.0180e-3) and r["conv2"].count == 1000    # medianMs
    assert t.per == "per inference (medianMs)"
    assert r["conv2"].total_s == pytest.approx(18.2e-3) and r["conv2"].percent == 26.4
    assert "conv1 + bn1 + PWN(relu1)" in r


def test_trtexec_profile_without_median():
    t = parse(TIMES / "trtexec_profile_old.json")
    assert len(t.records) == 9 and "no medianMs" in t.notes[0]
    assert {x.name: x for x in t.records}["conv2"].time_s == pytest.approx(0.0182e-3)      # averageMs


def test_trtexec_layer_info():
    t = parse(TIMES / "trtexec_layerinfo.json")
    r = {x.name: x for x in t.records}
    assert r["conv2"].layer_type == "CaskConvolution" and r["conv2"].kernel.startswith("volta_scudnn")
    assert all(x.time_s is None for x in t.records)


def test_trt_profiler_table_as_the_seeds_print_it():
    t = parse(TIMES / "trt_profiler_table.txt")
    names = [x.name for x in t.records]
    assert names[:3] == ["conv1", "bn1", "relu1"] and "total_time_sum" not in names
    assert names[-1] == "a_very_long_layer_name_that_fills_the_column_fully"   # a name wider than its column
    r = {x.name: x for x in t.records}
    assert r["fc"].layer_type == "FullyConnected" and r["fc"].time_s == pytest.approx(0.0044e-3)
    assert r["dw3"].percent == pytest.approx(10.14)


def test_torch_key_averages_table():
    t = parse(TIMES / "torch_key_averages.txt")
    r = {x.name: x for x in t.records}
    assert t.nested and "cudaLaunchKernel" not in r                 # no device time: dropped
    assert r["conv1"].time_s == pytest.approx(18e-6) and r["conv1"].count == 10    # CUDA total / calls
    k = next(x for x in t.records if x.name.startswith("void cutlass"))
    assert k.name.endswith("...") and k.is_kernel and k.count == 20


def test_torch_chrome_trace():
    t = parse(TIMES / "torch_trace.json")
    r = {x.name: x for x in t.records}
    assert r["conv1"].count == 2 and r["conv1"].time_s == pytest.approx(20e-6)   # two ranges: 19 and 21 us
    assert r["conv1"].kernel.startswith("sm90_xmma_fprop") and len(r["conv1"].kernels) == 2
    assert r["conv2"].kernel.startswith("implicit_convolve_sgemm")
    assert "aten::conv2d" not in r                                   # CPU ops are not GPU time
    assert r["Memcpy DtoH (Device -> Pinned)"].is_kernel            # outside every range: kept apart


def test_nsys_kernel_summary_with_quoted_commas():
    t = parse(TIMES / "nsys_cuda_gpu_kern_sum.csv")
    assert len(t.records) == 7 and all(x.is_kernel for x in t.records)
    r = t.records[2]
    assert r.name.startswith("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,")
    assert r.count == 200 and r.time_s == pytest.approx(2671.1e-9) and r.total_s == pytest.approx(534210e-9)


@pytest.mark.parametrize("content,match", [
    ('{"hello": 1}', "JSON of an unknown format"),
    ("[{\"count\": 3}, {\"timeMs\": 1}]", "record 2: not a"),
    ("just some text\nwithout a table\n", "unknown format"),
    ("Time (%),Total Time (ns),Instances,Avg (ns),Name\n1.0,100,1,abc,k\n", "row 2 field Avg \\(ns\\): 'abc'"),
    ("Time (%),Total Time (ns),Instances,Avg (ns),Name\n1.0,100,1,5,k,extra\n", "row 2: 6 fields"),
    ("{not json", "not valid JSON"),
])
def test_bad_times_files(tmp_path, content, match):
    p = tmp_path / "t.txt"
    p.write_text(content)
    with pytest.raises(InputError, match=match):
        parse(p)


def test_missing_times_file(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        parse(tmp_path / "none.json")


def test_join_trtexec_profile_and_layer_info():
    a = analyze(TINY, PROFILE, precision="fp16",
                times=[TIMES / "trtexec_profile.json", TIMES / "trtexec_layerinfo.json"])
    j = a.timing
    groups = {g.name: g for g in j.groups}
    fused = groups["conv1 + bn1 + PWN(relu1)"]
    assert [a.layers.at[i, "name"] for i in fused.layers] == ["conv1", "bn1", "relu1"]
    assert fused.kernel.unit == "tensor_core"                           # tactic from --exportLayerInfo
    assert groups["conv2"].kernel.unit == "cuda_core"                   # volta_scudnn: CUDA cores
    assert [r.name for r in j.reformats] == ["Reformatting CopyNode for Input Tensor 0 to conv2"]
    assert [r.name for r in j.unmatched] == ["copied_squeeze_after_fc"]
    assert j.untimed == ["flatten"]
    # the group's time is split over its layers by predicted share; the sum is the measured time
    sub = a.layers.iloc[fused.layers]
    assert sub["measured_s"].sum() == pytest.approx(21.1e-6)          # the record's medianMs
    assert fused.of_attainable == pytest.approx(sub["time_s"].sum() / 21.1e-6)
    assert fused.achieved == pytest.approx(sub["ops"].sum() / 21.1e-6)


def test_join_advice_flags_cuda_cores_and_alignment():
    from hwprobe.analysis.advice import top_consumers

    a = analyze(TINY, PROFILE, precision="fp16",
                times=[TIMES / "trtexec_profile.json", TIMES / "trtexec_layerinfo.json"])
    top = {c.name: c for c in top_consumers(a, a.timing)}
    assert list(top)[0] == "conv1 + bn1 + PWN(relu1)"                  # the biggest measured time first
    assert any("ran on CUDA cores" in x for x in top["conv2"].advice)
    assert any(x.startswith("align: cin=3") for x in top["conv1 + bn1 + PWN(relu1)"].advice)
    assert any("depthwise" in x for x in top["dw3 + add"].advice)
    assert sum(c.share for c in top_consumers(a, a.timing, n=99)) < 1.0   # reformat and unmatched time count too


def test_join_nsys_kernels_only():
    from hwprobe.analysis.advice import kernel_consumers

    a = analyze(TINY, PROFILE, precision="fp16", times=TIMES / "nsys_cuda_gpu_kern_sum.csv")
    assert not a.timing.groups and len(a.timing.unmatched) == 7
    ks = kernel_consumers(a.timing)
    assert ks[0][2].unit == "tensor_core" and ks[1][2].unit == "cuda_core"
    assert "Tensor Cores" in ks[1][3]
    assert ks[0][1] == pytest.approx(1823456 / 4414311)


def test_times_need_ceilings():
    with pytest.raises(InputError, match="needs ceilings"):
        analyze(TINY, times=TIMES / "trtexec_profile.json")
