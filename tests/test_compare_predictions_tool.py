"""tools/compare_predictions.py: the committed tables are what the current predictor gives for the committed
profiles (recomputed here for ResNet-18 of the H100 conv lease, from tests/onnx_fixtures.py's stand-in for its
export), and its summary for NCHW merges beside the channels-last one instead of replacing it."""

from __future__ import annotations

import json

import pytest

from tests.helpers import load_tool
from tests.refs import H100_PREDICT, H100_VALIDATION


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


def test_summary_with_a_suffix_keeps_the_other_runtimes():
    mod = load_tool("compare_predictions")
    rows = [{"runtime": "graph", "error_pct": e} for e in (-3.0, 5.0, 9.0)]
    old = {"runtimes": {"graph": {"cases": 16, "median_abs_pct": 3.9}}}
    out = mod.summary(rows, "here", "_nchw", old)["runtimes"]
    assert out["graph"] == old["runtimes"]["graph"]
    assert out["graph_nchw"] == {"cases": 3, "median_abs_pct": 5.0, "max_abs_pct": 9.0, "where": "here"}
    assert set(mod.summary(rows, "here")["runtimes"]) == {"graph"}
