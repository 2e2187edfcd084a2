"""tools/compare_predictions.py: the committed tables are what the current predictor gives for the committed
profiles (recomputed here for ResNet-18 of the H100 conv lease, from tests/onnx_fixtures.py's stand-in for its
export), and its summary for NCHW merges beside the channels-last one instead of replacing it."""

from __future__ import annotations

import json

import pytest

from tests.helpers import load_tool
from tests.refs import H100_PREDICT, H100_VALIDATION, ROOT


def test_committed_nchw_rows_are_what_the_predictor_gives_now(tmp_path):
    pytest.importorskip("onnx")
    from hwprobe.profile_build import load_profile
    from tests.onnx_fixtures import cnn_exports

    mod = load_tool("compare_predictions")
    measured = mod.read_json(H100_VALIDATION / "validate_models.json.gz")
    measured["cases"] = [c for c in measured["cases"] if c["model"] == "resnet18"]
    rows = mod.compare(measured, cnn_exports(tmp_path), load_profile(H100_PREDICT), {"bn_folded"})
    committed = {(r["model"], r["batch"], r["runtime"]): r for r in
                 json.loads((H100_VALIDATION / "predictions-nchw.json").read_text())}
    assert len(rows) == 4
    for r in rows:
        c = committed[(r["model"], r["batch"], r["runtime"])]
        assert r["measured_ms"] == c["measured_ms"] and r["predicted_ms"] == pytest.approx(c["predicted_ms"])


def test_summary_files_cases_with_their_split_and_replaces_only_the_same_case():
    mod = load_tool("compare_predictions")
    row = dict(variant="bn_folded", batch=1, runtime="graph", layout="nchw", family="cnn", uncovered_pct=0.0,
               gpu="G")
    rows = [dict(row, model="resnet50", error_pct=-3.0), dict(row, model="densenet121", error_pct=25.0)]
    old = {"cases": [{"model": "resnet50", "batch": 1, "runtime": "graph", "layout": "nchw", "source": "here",
                      "error_pct": 99.0},
                     {"model": "resnet50", "batch": 1, "runtime": "graph", "layout": "nhwc", "source": "here",
                      "error_pct": 7.0}]}
    out = mod.summary(rows, "here", old)
    by = {(c["model"], c["layout"]): c for c in out["cases"]}
    assert out["schema"] == 2 and len(out["cases"]) == 3
    assert by[("resnet50", "nchw")]["error_pct"] == -3.0 and by[("resnet50", "nchw")]["split"] == "seen"
    assert by[("resnet50", "nhwc")]["error_pct"] == 7.0                      # another layout: kept
    assert by[("densenet121", "nchw")]["split"] == "held_out"
    assert json.loads(mod.dump_summary(out)) == out


def test_the_committed_validation_file_is_what_the_tool_writes_and_follows_the_split_rule():
    """Every committed case names its family, layout, GPU and split; the split is tools/zoo_heldout.py's rule."""
    mod = load_tool("compare_predictions")
    split_of = mod.split_rule()
    path = ROOT / "hwprobe/predict/validation.json"
    doc = json.loads(path.read_text())
    assert path.read_text() == mod.dump_summary(doc)
    assert doc["cases"] and all(c["split"] == split_of(c["model"]) for c in doc["cases"])
    assert {c["family"] for c in doc["cases"]} == {"cnn", "transformer"}
    assert {c["gpu"] for c in doc["cases"]} == {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}


def test_onnx_folder_or_its_committed_archive(tmp_path):
    """--onnx takes the exports' folder or the committed onnx.tgz (unpacked for the run, then removed)."""
    import tarfile

    mod = load_tool("compare_predictions")
    src = tmp_path / "onnx"
    src.mkdir()
    (src / "m-b1.onnx").write_bytes(b"x")
    with mod.onnx_dir(src) as d:
        assert d == src
    with tarfile.open(tmp_path / "onnx.tgz", "w:gz") as tar:
        tar.add(src, arcname="onnx")
    with mod.onnx_dir(tmp_path / "onnx.tgz") as d:
        assert mod.onnx_for(d, "m", 1) == d / "m-b1.onnx" and mod.onnx_for(d, "m", 2) is None
        kept = d
    assert not kept.exists()
