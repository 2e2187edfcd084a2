"""The error a prediction prints (issue 31): quoted from held-out cases of its own family, runtime and layout, the
in-sample figure only as such, and no figure at all where more than 5% of its time lies outside the calibration.
Before, every prediction printed the in-sample "median 4%, worst 12%" whatever the model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.lowering.ops import KernelOp
from hwprobe.predict.errorbar import MIN_CASES, error_bar, family
from hwprobe.predict.ops import OpTime

ROOT = Path(__file__).resolve().parents[1]
ONNX = ROOT / "profiles/h200-sxm/2026-11-26-validation-cold/onnx"
CONV = ROOT / "profiles/h200-sxm/2026-11-26-predict-conv"


def _case(model, err, split="held_out", fam="cnn", layout="nhwc", runtime="graph"):
    return {"model": model, "family": fam, "runtime": runtime, "layout": layout, "batch": 1, "error_pct": err,
            "gpu": "G", "source": "s", "split": split}


CASES = ([_case("resnet50", 2.0, "seen"), _case("resnet18", -4.0, "seen")]
         + [_case(f"m{i}", e) for i, e in enumerate((-10.0, 30.0, 5.0))]
         + [_case("t", 800.0, fam="transformer"), _case("n", 700.0, layout="nchw"),
            _case("e", 600.0, runtime="eager")])


def test_a_prediction_quotes_the_held_out_cases_of_its_family_runtime_and_layout():
    bar = error_bar("graph", "nhwc", "cnn", 0.0, CASES)
    assert bar.measured and bar.held_out.cases == 3
    assert bar.held_out.median_abs_pct == 10.0 and bar.held_out.max_abs_pct == 30.0     # not the 800% transformer
    assert bar.text().startswith("measured error on 3 held-out cases (cnn models, graph, nhwc): median 10%")


def test_the_seen_figure_is_never_quoted_as_the_error():
    bar = error_bar("graph", "nhwc", "cnn", 0.0, CASES[:2] + CASES[2:2 + MIN_CASES - 1])   # too few held out
    assert not bar.measured and bar.held_out is None and bar.seen.cases == 2
    assert "held-out cnn models, graph, nhwc not measured" in bar.text() and "2 seen cases" in bar.text()
    assert error_bar("graph", "nhwc", "transformer", 0.0, CASES[:2]).text().startswith("no validation of")


def test_more_than_five_percent_outside_the_calibration_quotes_no_figure():
    bar = error_bar("graph", "nhwc", "cnn", 0.06, CASES)
    assert not bar.measured and bar.text() == "error not measured (6% of the time outside the calibration)"
    assert error_bar("graph", "nhwc", "cnn", 0.05, CASES).measured


def test_a_transformers_layout_does_not_split_its_cases():
    cases = [_case(f"t{i}", 5.0, fam="transformer", layout="nchw") for i in range(3)]
    assert error_bar("graph", "nhwc", "transformer", 0.0, cases).held_out.cases == 3


def test_the_family_comes_from_where_the_library_time_goes():
    conv = OpTime(KernelOp("c", "gemm", m=3136, n=64, k=576, conv_kernel=3), 5e-6)
    dw = OpTime(KernelOp("d", "conv_dw", bytes=1e6, conv_kernel=3), 1e-6)
    fc = OpTime(KernelOp("f", "gemm", m=128, n=768, k=768), 4e-6)
    att = OpTime(KernelOp("a", "attention", m=128, n=128, k=64, batch=12), 3e-6)
    assert family([conv, dw, fc]) == "cnn" and family([conv, fc, att]) == "transformer"
    assert family([OpTime(KernelOp("e", "elementwise", bytes=1e6), 1e-6)]) == "transformer"


@pytest.mark.parametrize("name,batch,text", [
    ("resnet50-b8", 8, "held-out cases (cnn models, graph, nhwc): median"),
    ("mobilenet_v2-b64", 64, "error not measured (16% of the time outside the calibration)"),
    ("bert_base-b1-dynamo", 1, "held-out cases (transformer models, graph): median")])
def test_analyze_prints_the_error_bar_it_may_claim(name, batch, text):
    pytest.importorskip("onnx")
    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", str(ONNX / f"{name}.onnx"), "--profile",
                        str(CONV), "-p", "fp16", "--batch", str(batch)], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "COLUMNS": "400"})
    assert r.returncode == 0, r.stderr
    assert text in r.stdout and "median 4%, worst 12% over 16 cases" not in r.stdout
