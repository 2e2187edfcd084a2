"""Measured ceilings in other tools' shapes, each number named (measured, dense, clock)."""

import csv
import io
import json
import subprocess
import sys

import pytest

from hwprobe import roofline
from hwprobe.errors import InputError
from hwprobe.export import COLUMNS, export
from hwprobe.profile_build import load_profile
from tests.refs import H200_FULL

H200 = str(H200_FULL / "profile.json")


@pytest.fixture(scope="module")
def prof():
    return load_profile(H200)


def test_json_flat_rows(prof):
    d = json.loads(export(prof, "json").text)
    assert d["format"] == "hwprobe-ceilings" and d["meta"]["device"] == "NVIDIA H200"
    rows = d["ceilings"]
    lib = next(r for r in rows if r["precision"] == "fp16" and r["unit"] == "tensor_core" and r["path"] == "library"
               and r["sparsity"] == "dense")
    assert lib["value"] == roofline.peak(prof, "fp16", "tensor_core", "library").value
    assert lib["measured"] is True and lib["clock_mhz"] and lib["metric"].startswith("fp16.tensor_core")
    sparse = [r for r in rows if r["sparsity"] and r["sparsity"].startswith("2:4")]
    assert sparse and all(r["path"] == "library" for r in sparse)
    dram = next(r for r in rows if r["kind"] == "memory" and r["level"] == "dram")
    assert dram["value"] == roofline.bandwidth(prof) and dram["value_unit"] == "B/s" and dram["latency_s"]


def test_csv_has_the_same_rows(prof):
    text = export(prof, "csv").text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == len(json.loads(export(prof, "json").text)["ceilings"])


def _viewer_entry(text):
    """The pasted entry as LLM-Viewer's hardware_params module would hold it (Python literals, comments)."""
    import ast

    return ast.literal_eval("{" + text + "}")


def test_llm_viewer_entry(prof):
    text = export(prof, "llm-viewer", name="h200_measured").text
    assert "true" not in text and "null" not in text
    e = _viewer_entry(text)["h200_measured"]
    assert e["bandwidth"] == roofline.bandwidth(prof)
    assert e["FP16"] == roofline.peak(prof, "fp16", "tensor_core", "library").value
    assert e["INT8"] == roofline.peak(prof, "int8", "tensor_core", "library").value
    assert e["onchip_buffer"] == prof.device["regs_per_sm"] * 4 * prof.device["sms"]
    assert "FP16: measured ceiling, fp16.tensor_core" in text                   # provenance as comments
    ins = _viewer_entry(export(prof, "llm-viewer", path="instruction", name="x").text)["x"]
    assert ins["FP16"] == roofline.peak(prof, "fp16", "tensor_core", "instruction").value


def test_llm_viewer_without_int8_is_refused_not_left_to_crash(prof):
    import copy

    p = copy.deepcopy(prof)
    p.compute.pop("int8", None)
    with pytest.raises(InputError, match="llm-viewer needs INT8"):
        export(p, "llm-viewer")
    e = _viewer_entry(export(p, "llm-viewer", name="x", overrides={"INT8": 1.5e15}).text)["x"]
    assert e["INT8"] == 1.5e15


def test_llm_analysis_config_loads_as_its_dataclass(prof):
    with pytest.raises(InputError, match="intra_node_bandwidth_in_GB_per_sec"):     # no p2p link measured
        export(prof, "llm-analysis")
    e = export(prof, "llm-analysis", name="h200-measured",
               overrides={"intra_node_bandwidth_in_GB_per_sec": 450, "intra_node_min_message_latency": 8e-6})
    cfg = json.loads(e.text)
    assert None not in cfg.values()
    assert "peak_i4_TFLOPS" not in cfg and "inter_node_bandwidth_in_GB_per_sec" not in cfg     # omitted, said
    assert any("peak_i4_TFLOPS" in n and "4x" in n for n in e.notes)
    assert cfg["hbm_bandwidth_in_GB_per_sec"] == pytest.approx(roofline.bandwidth(prof) / 1e9)
    assert cfg["peak_fp16_TFLOPS"] == pytest.approx(roofline.peak(prof, "fp16", "tensor_core", "library").value / 1e12)
    assert cfg["mem_per_GPU_in_GB"] == pytest.approx(prof.device["mem_bytes"] / 2**30, abs=1e-3)
    assert e.sidecar["numbers"]["peak_fp16_TFLOPS"]["what"] == "measured ceiling"
    assert e.sidecar["numbers"]["intra_node_min_message_latency"].startswith("given by the user")
    with pytest.raises(InputError, match="no such field"):
        export(prof, "llm-analysis", overrides={"peak_fp8": 1})


def test_ert_roofline_json(prof):
    d = json.loads(export(prof, "ert").text)
    assert set(d) == {"empirical", "spec"}
    gflops = dict(d["empirical"]["gflops"]["data"])
    assert gflops["FP16 tensor core library GFLOPs"] == pytest.approx(
        roofline.peak(prof, "fp16", "tensor_core", "library").value / 1e9, abs=0.01)
    gbytes = dict(d["empirical"]["gbytes"]["data"])
    assert gbytes["DRAM"] == pytest.approx(roofline.bandwidth(prof) / 1e9, abs=0.01) and "L2" in gbytes
    spec = dict(d["spec"]["gflops"]["data"])
    assert spec["FP16 tensor core library GFLOPs"] == pytest.approx(989500.0)      # the datasheet figure
    assert not any(k.startswith("INT") for k in gflops)
    for block in (d["empirical"]["gflops"], d["empirical"]["gbytes"], d["spec"]["gflops"]):
        values = [v for _, v in block["data"]]
        assert values == sorted(values, reverse=True)          # highest roof first: readers size axes from [0]


def test_bad_format(prof):
    with pytest.raises(InputError, match="unknown export format"):
        export(prof, "excel")


def test_cli_writes_only_the_config_into_the_folder(tmp_path):
    folder = tmp_path / "gpu_configs"
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", H200, "--format", "llm-analysis", "-o",
                        f"{folder}/", "--set", "intra_node_bandwidth_in_GB_per_sec=450", "--set",
                        "intra_node_min_message_latency=8e-6", "--provenance", str(tmp_path / "prov.json")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["NVIDIA_H200_measured.json"]        # -o DIR/ writes inside
    assert json.loads((tmp_path / "prov.json").read_text())["numbers"]["peak_fp16_TFLOPS"]["metric"]
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", H200, "--format", "ert", "-o",
                        f"{tmp_path}/ert/"], capture_output=True, text=True)
    assert r.returncode == 0 and (tmp_path / "ert" / "roofline.json").is_file()
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", str(tmp_path / "none"), "--format", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", H200, "--format", "llm-analysis"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--set" in r.stderr


def test_spec_derived_profile_exports_as_expectations():
    p = load_profile("profiles/jetson/agx-xavier/spec-derived")
    e = export(p, "llm-viewer", overrides={"INT8": 1.0e14, "onchip_buffer": 2**20})
    (name, _entry), = _viewer_entry(e.text).items()
    assert name.endswith("_expected") and e.sidecar["meta"]["measured"] is False
    assert e.sidecar["numbers"]["FP16"]["what"] == "spec-derived expectation, not measured"
    assert "(spec-derived)" in e.text.splitlines()[0]
    assert all(r["measured"] is False for r in json.loads(export(p, "json").text)["ceilings"])
    assert json.loads(export(prof_h200(), "json").text)["ceilings"][0]["measured"] is True   # state not kept


def prof_h200():
    return load_profile(H200)


def test_spec_derived_ert_labels():
    d = json.loads(export(load_profile("profiles/jetson/agx-xavier/spec-derived"), "ert").text)
    assert {v["what"] for v in d["empirical"]["metadata"]["numbers"].values()} == {
        "spec-derived expectation, not measured"}


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_set_refuses_a_value_no_rate_size_or_latency_can_take(prof, value):
    with pytest.raises(InputError, match=r"--set bandwidth=.*finite number above 0"):
        export(prof, "llm-viewer", overrides={"bandwidth": float(value)})


def test_set_that_replaces_a_measured_figure_says_so_and_records_it(prof):
    measured = roofline.bandwidth(prof)
    e = export(prof, "llm-viewer", name="h200", overrides={"bandwidth": 3.0e12})
    assert _viewer_entry(e.text)["h200"]["bandwidth"] == 3.0e12
    said = [n for n in e.notes if n.startswith("--set bandwidth=3e+12 replaces the profile's")]
    assert said and f"{measured:g}" in said[0] and "measured ceiling" in said[0]
    comment = next(x for x in e.text.splitlines() if x.startswith("#   bandwidth:"))
    assert "replacing the profile's" in comment and f"{measured:g}" in comment        # recorded in the export
    missing = export(prof, "llm-analysis", overrides={"intra_node_bandwidth_in_GB_per_sec": 450,
                                                      "intra_node_min_message_latency": 8e-6})
    assert not any("replaces" in n for n in missing.notes)                              # filling a gap: no note
    assert missing.sidecar["numbers"]["intra_node_min_message_latency"] == "given by the user (--set), not measured"


@pytest.mark.parametrize("fmt", ["json", "csv", "ert"])
def test_set_is_refused_for_formats_that_take_none(fmt):
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", H200, "-f", fmt, "--set", "x=1"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "--set applies to llm-analysis, llm-viewer exports" in r.stderr and f"not {fmt}" in r.stderr


def test_cli_says_a_replaced_figure_on_stderr():
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", H200, "-f", "llm-viewer", "--set", "FP16=5e14"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "note: --set FP16=5e+14 replaces the profile's" in r.stderr
