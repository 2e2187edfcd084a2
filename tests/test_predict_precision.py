"""A precision is priced from its own calibration points or not at all (issue 31): the committed profiles hold
FP16 and BF16 points only, so FP32, TF32, FP8 and INT8 get no predicted time, in one line naming the run that
would add them; the roofline analysis still prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hwprobe.lowering.ops import KernelOp
from hwprobe.predict.calibration import Calibration, ConvTable, SdpaTable, Uncalibrated

ROOT = Path(__file__).resolve().parents[1]
CONV = ROOT / "profiles/h200-sxm/2026-11-26-predict-conv"


def _profile():
    from hwprobe.profile_build import load_profile

    return load_profile(CONV)


def test_the_committed_calibration_has_fp16_and_bf16_points_only():
    cal = Calibration.of(_profile())
    assert cal.precisions == ["bf16", "fp16"]
    assert {p["precision"] for p in cal.conv.points} == {"fp16"}           # from the finding's dtype: float16
    assert {p["precision"] for p in cal.sdpa.points} == {"fp16"}


@pytest.mark.parametrize("precision", ["fp32", "tf32", "fp8", "int8"])
def test_a_precision_without_points_is_refused_not_priced_from_fp16(precision):
    """Before: FP32 fell back to the FP16 table scaled by the ceilings (ResNet-50 b64 at 5.26 ms under its own
    10.7 ms floor)."""
    from hwprobe.predict.model import Predictor

    pred = Predictor(_profile(), "graph")
    with pytest.raises(Uncalibrated) as e:
        pred.time(KernelOp("fc", "gemm", precision, m=64, n=1000, k=2048))
    msg = str(e.value)
    assert "\n" not in msg and f"no {precision} points" in msg and "bf16, fp16" in msg and "predict" in msg


def test_analyze_in_fp32_prints_the_roofline_and_says_why_there_is_no_prediction():
    from hwprobe.analysis import analyze

    a = analyze("resnet50", CONV, batch=64)                                 # analyze's default precision: fp32
    assert a.prediction is None and a.totals["time_s"] > 0
    assert any(n.startswith("no predicted time at fp32") and "gpu.torch_kernels" in n for n in a.notes)
    assert analyze("resnet50", CONV, batch=64, precision="fp16").prediction is not None


def test_an_llm_in_fp8_is_refused_in_one_line_with_exit_2():
    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", "llama-3-8b", "--profile", str(CONV),
                        "--weights", "fp8", "--runtime", "graph"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "no predicted time at fp8" in r.stderr and "Traceback" not in r.stderr


def test_conv_and_sdpa_points_are_used_for_their_own_precision_only():
    """FP16 conv and SDPA points do not price a BF16 convolution or attention."""
    pts = [{"k": 1, "m": m, "cin": c, "cout": c, "time_s": 1e-6 * m * c / 1e4} for m in (49, 3136) for c in (64, 512)]
    table = ConvTable(pts)                                                  # no precision named: FP16 (old profiles)
    assert table.only("fp16") is not None and table.only("bf16") is None
    sdpa = SdpaTable([{"bh": bh, "seq": s, "dim": 64, "causal": False, "time_s": 1e-6, "precision": "bf16"}
                      for bh in (12, 96) for s in (128, 256)])
    assert sdpa.only("fp16") is None and sdpa.only("bf16").time(12, 200, 64, False) is not None


def test_bf16_kernels_on_fp16_conv_and_sdpa_points_are_outside_the_calibration():
    """FP16 and BF16 share a datapath: a BF16 convolution or attention without points of its own is priced from
    the FP16 ones (the LLM validation's BF16 prefill stays within 10%), flagged so no error figure is quoted; an
    FP32 one is not (refused above)."""
    from hwprobe.predict.model import Predictor

    pred = Predictor(_profile(), "graph")
    op = dict(name="c", kind="gemm", m=3136, n=256, k=2304, conv_kernel=3, conv_input_bytes=2 * 3136 * 256)
    fp = pred.time(KernelOp(precision="fp16", **op))
    bf = pred.time(KernelOp(precision="bf16", **op))
    assert fp.source == bf.source == "framework.conv" and fp.covered and not bf.covered
    assert bf.time_s == pytest.approx(fp.time_s) and "no bf16 conv points: the fp16 ones" in bf.note
    att = dict(name="a", kind="attention", m=1024, n=1024, k=128, batch=32, causal=True)
    a16, abf = pred.time(KernelOp(precision="fp16", **att)), pred.time(KernelOp(precision="bf16", **att))
    assert a16.source == abf.source == "framework.sdpa" and a16.covered and not abf.covered
