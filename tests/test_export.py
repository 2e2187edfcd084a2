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
from hwprobe.profile import load_profile

H200 = "profiles/h200-sxm/2026-11-21-full/profile.json"


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


def test_llm_viewer_entry(prof):
    d = json.loads(export(prof, "llm-viewer", name="h200_measured").text)
    e = d["h200_measured"]
    assert e["bandwidth"] == roofline.bandwidth(prof)
    assert e["FP16"] == roofline.peak(prof, "fp16", "tensor_core", "library").value
    assert e["INT8"] == roofline.peak(prof, "int8", "tensor_core", "library").value
    assert e["onchip_buffer"] == prof.device["regs_per_sm"] * 4 * prof.device["sms"]
    assert e["hwprobe"]["numbers"]["FP16"]["what"] == "measured ceiling" and e["hwprobe"]["numbers"]["FP16"]["dense"]
    ins = json.loads(export(prof, "llm-viewer", path="instruction", name="x").text)["x"]
    assert ins["FP16"] == roofline.peak(prof, "fp16", "tensor_core", "instruction").value


def test_llm_analysis_config_loads_as_its_dataclass(prof):
    e = export(prof, "llm-analysis", name="h200-measured")
    cfg = json.loads(e.text)
    keys = ["name", "mem_per_GPU_in_GB", "hbm_bandwidth_in_GB_per_sec", "intra_node_bandwidth_in_GB_per_sec",
            "intra_node_min_message_latency", "peak_fp16_TFLOPS", "peak_i8_TFLOPS", "peak_i4_TFLOPS",
            "inter_node_bandwidth_in_GB_per_sec"]
    assert list(cfg) == keys                                      # exactly GPUConfig's fields: nothing extra
    assert cfg["hbm_bandwidth_in_GB_per_sec"] == pytest.approx(roofline.bandwidth(prof) / 1e9)
    assert cfg["peak_fp16_TFLOPS"] == pytest.approx(roofline.peak(prof, "fp16", "tensor_core", "library").value / 1e12)
    assert cfg["mem_per_GPU_in_GB"] == pytest.approx(prof.device["mem_bytes"] / 2**30, abs=1e-3)
    assert cfg["peak_i4_TFLOPS"] is None and cfg["inter_node_bandwidth_in_GB_per_sec"] is None   # not measured
    assert "peak_i4_TFLOPS" in e.notes[0]
    assert e.sidecar["numbers"]["peak_fp16_TFLOPS"]["what"] == "measured ceiling"


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


def test_bad_format(prof):
    with pytest.raises(InputError, match="unknown export format"):
        export(prof, "excel")


def test_cli_writes_file_and_sidecar(tmp_path):
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", H200, "--format", "llm-analysis", "-o",
                        str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["NVIDIA_H200_measured.json", "NVIDIA_H200_measured.json.hwprobe.json"]
    r = subprocess.run([sys.executable, "-m", "hwprobe", "export", str(tmp_path / "none"), "--format", "json"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr


def test_spec_derived_profile_exports_as_expectations():
    p = load_profile("profiles/jetson/agx-xavier/spec-derived")
    e = json.loads(export(p, "llm-viewer").text)
    (name, entry), = e.items()
    assert name.endswith("_expected") and entry["hwprobe"]["meta"]["measured"] is False
    assert entry["hwprobe"]["numbers"]["FP16"]["what"] == "spec-derived expectation, not measured"
    assert all(r["measured"] is False for r in json.loads(export(p, "json").text)["ceilings"])
    assert json.loads(export(prof_h200(), "json").text)["ceilings"][0]["measured"] is True   # state not kept


def prof_h200():
    return load_profile(H200)


def test_spec_derived_ert_labels():
    d = json.loads(export(load_profile("profiles/jetson/agx-xavier/spec-derived"), "ert").text)
    assert {v["what"] for v in d["empirical"]["metadata"]["numbers"].values()} == {
        "spec-derived expectation, not measured"}
